#!/usr/bin/env python3
"""layers.py SRC_DIR RULES - check src/'s includes against src/LAYERS.

Prints one line per violation, "FILE:LINE: what is wrong", and exits 1
when there is any; exits 0 with nothing printed when the tree keeps the
rules.  The rules: every source file sits in a folder LAYERS names (a layer,
"pack", or a format's folder inside one, "pack/kimi"); an include of our
own headers names its folder ("pack/pack.h", "pack/kimi/index.h") and
that folder is the file's own or one LAYERS allows, so a format's folder
is reached only from the folders LAYERS lists it for; a system header LAYERS
reserves ("!fuse daemon") is included only there; and no two modules
(x.c with x.h) depend on each other through a chain of includes.
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def read_rules(path):
    allowed, reserved = {}, {}
    for raw in open(path, encoding="utf-8"):
        line = raw.split("#", 1)[0].split()
        if not line:
            continue
        if line[0].startswith("!"):
            reserved[line[0][1:]] = set(line[1:])
        else:
            allowed[line[0]] = set(line[1:]) | {line[0]}
    return allowed, reserved


def source_files(src):
    for dirpath, _, names in os.walk(src):
        for name in sorted(names):
            if name.endswith((".c", ".h")):
                yield os.path.relpath(os.path.join(dirpath, name), src)


def check_file(src, rel, allowed, reserved, problems, edges):
    folder = os.path.dirname(rel)
    if folder not in allowed:
        problems.append("%s: not in a folder that src/LAYERS names" % rel)
        return
    module = rel[:-2]
    with open(os.path.join(src, rel), encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            kind, target = m.groups()
            where = "%s:%d" % (rel, number)
            if kind == "<":
                top = re.split(r"[/.]", target)[0]
                for prefix, folders in reserved.items():
                    if top.startswith(prefix) and folder not in folders:
                        problems.append("%s: <%s> belongs to %s only" %
                                        (where, target, ", ".join(sorted(folders))))
                continue
            if target == "config.h":
                continue
            tfolder = os.path.dirname(target)
            if not tfolder:
                problems.append('%s: "%s" does not name its folder' % (where, target))
                continue
            if not os.path.exists(os.path.join(src, target)):
                problems.append('%s: "%s" does not exist' % (where, target))
                continue
            if tfolder not in allowed.get(folder, ()):
                problems.append('%s: %s may not include "%s" (src/LAYERS)' %
                                (where, folder, target))
            dep = target[:-2]
            if dep != module:
                edges.setdefault(module, set()).add(dep)


def find_cycle(edges):
    """One cycle of the module graph as a list of modules, or None."""
    state = {}

    def visit(node, stack):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt, stack)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state:
            found = visit(node, [])
            if found:
                return found
    return None


def main(argv):
    if len(argv) != 3:
        print("usage: layers.py SRC_DIR RULES", file=sys.stderr)
        return 2
    src, rules = argv[1], argv[2]
    allowed, reserved = read_rules(rules)
    problems, edges = [], {}
    for rel in source_files(src):
        check_file(src, rel, allowed, reserved, problems, edges)
    cycle = find_cycle(edges)
    if cycle:
        problems.append("module cycle: %s" % " -> ".join(cycle))
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
