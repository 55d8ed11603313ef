#!/usr/bin/env python3
"""unit_expand.py [--exec] UNIT-FILE KEY - the command line systemd would
run for the [Service] setting KEY (ExecStart, ExecStop) of UNIT-FILE.

systemd cannot start the unit where the tests run (it is not PID 1
there), so this follows systemd's documented rules, as systemd 252 states
them: systemd.syntax(7) for line continuations and quoting (a quote opens
only at the start of a word and closes only before whitespace; C-style
escapes), systemd.unit(5) for the specifiers %i %I %n %N %p %P %%,
systemd.exec(5) for Environment= (quoted assignments) and
EnvironmentFile= (a leading "-" makes it optional; # and ; comments;
KEY=VALUE with an unquoted, '-quoted or "-quoted value), whose values
override Environment='s, and systemd.service(5) "COMMAND LINES" for the
substitution: "${FOO}" anywhere in a word is FOO's value, "$FOO" as a whole
word is FOO's value split into words by the quoting rules, an unset
variable is empty, "$$" is "$".  The instance is what follows the "@" of
UNIT-FILE's name.

Prints the argv as a JSON list; with --exec, runs it in place of itself.
Exits 2 when the unit uses what this does not implement (another
specifier, several commands in one line, a command prefix other than "-").
"""
import json
import os
import re
import sys

ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t",
           "v": "\v", "\\": "\\", '"': '"', "'": "'", "s": " "}


def die(msg):
    print("unit_expand.py: " + msg, file=sys.stderr)
    sys.exit(2)


def unit_settings(text):
    """(section, key, value) of each setting, continuation lines joined."""
    out, section, pending = [], None, None
    for raw in text.splitlines():
        line = raw.strip()
        if pending is not None and line[:1] in ("#", ";"):
            continue  # a comment inside a continued setting is dropped
        if pending is not None:
            line = pending + line
            pending = None
        elif not line or line[0] in "#;":
            continue
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
            continue
        key, eq, value = line.partition("=")
        if not eq:
            die("not a setting: %r" % line)
        out.append((section, key.strip(), value.strip()))
    if pending is not None:
        out.append((section,) + tuple(s.strip() for s in pending.partition("=")[::2]))
    return out


def specifiers(value, unit_name):
    prefix, _, rest = unit_name.partition("@")
    instance = rest.rsplit(".", 1)[0]
    table = {"i": instance, "I": instance, "n": unit_name,
             "N": unit_name.rsplit(".", 1)[0], "p": prefix, "P": prefix, "%": "%"}

    def one(m):
        if m.group(1) not in table:
            die("specifier %%%s is not implemented" % m.group(1))
        return table[m.group(1)]
    return re.sub(r"%(.)", one, value)


def unescape(s):
    out, i = "", 0
    while i < len(s):
        if s[i] == "\\" and i + 1 < len(s):
            c = s[i + 1]
            if c == "x" and re.match(r"[0-9a-fA-F]{2}", s[i + 2:i + 4]):
                out += chr(int(s[i + 2:i + 4], 16))
                i += 4
                continue
            if c not in ESCAPES:
                die("unknown escape \\%s" % c)
            out += ESCAPES[c]
            i += 2
        else:
            out += s[i]
            i += 1
    return out


def split_words(s):
    """systemd.syntax(7)'s quoting: a quote wraps a whole item only."""
    words, i = [], 0
    while True:
        while i < len(s) and s[i] in " \t\n":
            i += 1
        if i >= len(s):
            return words
        if s[i] in "'\"":
            q = s[i]
            j = i + 1
            while j < len(s) and s[j] != q:
                j += 2 if s[j] == "\\" else 1
            if j >= len(s) or (j + 1 < len(s) and s[j + 1] not in " \t\n"):
                die("quote not closed before whitespace: %r" % s[i:])
            words.append(unescape(s[i + 1:j]))
            i = j + 1
        else:
            j = i
            while j < len(s) and s[j] not in " \t\n":
                j += 2 if s[j] == "\\" else 1
            words.append(unescape(s[i:j]))
            i = j


def env_file_value(v):
    v = v.strip(" \t\r")
    if len(v) >= 2 and v[0] == v[-1] == "'":
        return v[1:-1]
    if len(v) >= 2 and v[0] == v[-1] == '"':
        return re.sub(r'\\([$`"\\\n])', r"\1", v[1:-1])
    return re.sub(r"\\(.)", r"\1", v)


def read_env_file(path, env):
    optional = path.startswith("-")
    path = path[1:] if optional else path
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        if optional:
            return
        die("EnvironmentFile %s: no such file" % path)
    text = re.sub(r"\\\n", "", text)
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in "#;" or "=" not in line:
            continue
        key, _, value = line.partition("=")
        env[key.strip()] = env_file_value(value)


def substitute(words, env):
    argv = []
    for w in words:
        m = re.fullmatch(r"\$([A-Za-z_][A-Za-z0-9_]*)", w)
        if m:
            argv.extend(split_words(env.get(m.group(1), "")))
            continue
        w = re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", lambda m: env.get(m.group(1), ""), w)
        argv.append(w.replace("$$", "$"))
    return argv


def expand(path, key):
    name = os.path.basename(path)
    env, files, command = {}, [], None
    with open(path, encoding="utf-8") as f:
        settings = unit_settings(f.read())
    for section, k, v in settings:
        if section != "Service":
            continue
        v = specifiers(v, name)
        if k == "Environment":
            for word in split_words(v):
                var, eq, value = word.partition("=")
                if eq:
                    env[var] = value
        elif k == "EnvironmentFile":
            files.append(v)
        elif k == key:
            command = v
    if command is None:
        die("%s has no %s=" % (path, key))
    for f in files:
        read_env_file(f, env)
    if command.startswith("-"):
        command = command[1:]
    if command[:1] in "@:+!":
        die("the command prefix %r is not implemented" % command[0])
    words = split_words(command)
    if ";" in words:
        die("several commands in one %s= are not implemented" % key)
    return substitute(words, env)


def main(argv):
    run = len(argv) > 1 and argv[1] == "--exec"
    args = argv[2:] if run else argv[1:]
    if len(args) != 2:
        die("usage: unit_expand.py [--exec] UNIT-FILE KEY")
    cmd = expand(args[0], args[1])
    if run:
        os.execv(cmd[0], cmd)
    print(json.dumps(cmd))


if __name__ == "__main__":
    main(sys.argv)
