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

It also builds the graph of calls between files: the external functions
each .c file defines (a definition starts a line with its return type and
name, `enum mp_err mp_ep_open(`; one that starts `static` is the file's
own), and which of them every file calls (a name followed by `(` inside
braces, comments, strings and character literals left out, as a regular
expression can).  No two modules may call each other through a chain
either ("call cycle: a -> b -> a"): a file that calls a phase is above it.
A call through a function pointer is invisible here by design: it is how
the core reaches a format, through its table (struct mp_pack_format).
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


# Comments, strings and character literals, to be blanked before the
# names are looked for (a string's "(" or a comment's "foo()" is no call).
NOISE = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'',
                   re.S)
DEFINITION = re.compile(r'^(?!static\b|typedef\b|extern\b|#)[A-Za-z_][^;{}()=]*?'
                        r'\b([A-Za-z_]\w*)\s*\(', re.M)
STATIC = re.compile(r'^static\b[^;{}()=]*?\b([A-Za-z_]\w*)\s*\(', re.M)
CALL = re.compile(r'\b([A-Za-z_]\w*)\s*\(')


def code_of(src, rel):
    with open(os.path.join(src, rel), encoding="utf-8", errors="replace") as f:
        text = NOISE.sub(lambda m: "\n" * m.group(0).count("\n") or " ", f.read())
    # preprocessor lines (a macro's body) are not followed: best effort
    return re.sub(r'^\s*#.*?(?<!\\)$', "", text, flags=re.M | re.S)


def defined_functions(code):
    """The external functions a .c file defines: a definition, not a
    declaration, is followed by its body before any ';'."""
    names = set()
    for m in DEFINITION.finditer(code):
        rest = code[m.end():]
        brace, semi = rest.find("{"), rest.find(";")
        if brace >= 0 and (semi < 0 or brace < semi):
            names.add(m.group(1))
    return names


def called_names(code):
    """Every name followed by "(" inside braces: in a body, not a prototype."""
    names, depth, start = set(), 0, 0
    for i, ch in enumerate(code):
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
            if depth == 0:
                names.update(m.group(1) for m in CALL.finditer(code, start, i))
    return names


def call_edges(src, files):
    """module -> the modules whose external functions it calls."""
    codes = {rel: code_of(src, rel) for rel in files}
    owner, twice = {}, set()
    for rel, code in codes.items():
        if rel.endswith(".c"):
            for name in defined_functions(code):
                if name in owner and owner[name] != rel[:-2]:
                    twice.add(name)
                owner[name] = rel[:-2]
    edges = {}
    for rel, code in codes.items():
        own = set(STATIC.findall(code))
        for name in called_names(code) - own - twice:
            dep = owner.get(name)
            if dep and dep != rel[:-2]:
                edges.setdefault(rel[:-2], set()).add(dep)
    return edges


def find_cycles(edges):
    """One shortest cycle in each strongly connected part of the graph,
    each as a list of modules from its first by name back to it."""
    index, low, stack, on, parts = {}, {}, [], set(), []

    def connect(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            part = set()
            while True:
                top = stack.pop()
                on.discard(top)
                part.add(top)
                if top == node:
                    break
            if len(part) > 1:
                parts.append(part)

    for node in sorted(edges):
        if node not in index:
            connect(node)
    cycles = []
    for part in parts:
        first = min(part)
        paths, queue = {first: [first]}, [first]
        for node in queue:
            for nxt in sorted(edges.get(node, ())):
                if nxt == first:
                    cycles.append(paths[node] + [first])
                    queue = []
                    break
                if nxt in part and nxt not in paths:
                    paths[nxt] = paths[node] + [nxt]
                    queue.append(nxt)
            if not queue:
                break
    return sorted(cycles)


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
    for cycle in find_cycles(call_edges(src, list(source_files(src)))):
        problems.append("call cycle: %s" % " -> ".join(cycle))
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
