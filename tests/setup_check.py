#!/usr/bin/env python3
"""setup_check.py COMMAND FILE [ARG] - facts about the set-up files, for
tests/setup.test and tests/builddeps.test, which compare them.

  requires CONFIGURE_AC   what configure.ac requires, one line each:
                          "KIND NAME PACKAGE [NAMED]": KIND is pkg (a
                          pkg-config module), lib (a library it links),
                          header, or tool (a macro that needs a program to
                          run autoreconf or configure); PACKAGE is the Debian
                          package that provides it, from the table below, or
                          "?" when the table does not know it; NAMED is the
                          package configure's own error message names
                          (MP_REQUIRE_PKG's third argument), if any
  build-depends CONTROL   debian/control's Build-Depends, one relation a
                          line, versions dropped, alternatives as "a|b"
  apt-lines README TITLE  the packages of each `apt-get install` in the
                          README section TITLE, one install a line
  code-lines README TITLE the lines of the section's code blocks
  commands SCRIPT MODE    the programs the `MODE)` arm of the shell script's
                          case runs, through the functions it calls, one a
                          line: the literal first word of every simple
                          command (a command named by a variable is not
                          one), heredocs and comments left out

Exits 0, or 2 on a usage error or a file it cannot parse.
"""
import re
import sys

# pkg-config modules, libraries and headers configure may require, and the
# Debian package that provides each (Debian 12).  build-essential stands
# for libc6-dev, gcc and make, which every package build has.
MODULES = {
    "fuse3": "libfuse3-dev",
    "jansson": "libjansson-dev",
    "libcrypto": "libssl-dev",
    "libssl": "libssl-dev",
    "openssl": "libssl-dev",
    "check": "check",
    "ncursesw": "libncurses-dev",
    "ncurses": "libncurses-dev",
    "tinfo": "libncurses-dev",
    "systemd": "systemd",
    "bash-completion": "bash-completion",
    "libcurl": "libcurl4-openssl-dev",
}
LIBRARIES = {
    "c": "build-essential", "m": "build-essential", "pthread": "build-essential",
    "rt": "build-essential", "dl": "build-essential",
    "fuse3": "libfuse3-dev", "jansson": "libjansson-dev", "crypto": "libssl-dev",
    "ssl": "libssl-dev", "check": "check", "ncursesw": "libncurses-dev",
    "ncurses": "libncurses-dev", "tinfo": "libncurses-dev",
    "curl": "libcurl4-openssl-dev",
}
HEADERS = {
    "fuse_lowlevel.h": "libfuse3-dev", "fuse3/fuse_lowlevel.h": "libfuse3-dev",
    "jansson.h": "libjansson-dev", "check.h": "check", "curl/curl.h": "libcurl4-openssl-dev",
    "curses.h": "libncurses-dev", "ncurses.h": "libncurses-dev",
    "ncursesw/curses.h": "libncurses-dev", "ncursesw/ncurses.h": "libncurses-dev",
}
HEADER_PREFIXES = {"openssl/": "libssl-dev"}
# Macros whose checks only run with a program installed.
TOOLS = {
    "AC_INIT": "autoconf",
    "AM_INIT_AUTOMAKE": "automake",
    "AC_PROG_CC": "build-essential",
    "PKG_PROG_PKG_CONFIG": "pkg-config",
    "PKG_CHECK_MODULES": "pkg-config",
    "MP_REQUIRE_PKG": "pkg-config",
}

# The macros that name requirements, and which bracketed argument holds them.
REQUIRING = {
    "MP_REQUIRE_PKG": ("pkg", 1),
    "PKG_CHECK_MODULES": ("pkg", 1),
    "AC_CHECK_LIB": ("lib", 0),
    "AC_SEARCH_LIBS": ("lib", 1),
    "AC_CHECK_HEADER": ("header", 0),
    "AC_CHECK_HEADERS": ("header", 0),
}


def die(msg):
    print("setup_check.py: " + msg, file=sys.stderr)
    sys.exit(2)


def read(path):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as e:
        die("%s: %s" % (path, e.strerror))


def m4_args(text, start):
    """The bracketed arguments of the macro call whose "(" is at start."""
    args, depth, cur, i = [], 0, "", start + 1
    while i < len(text):
        c = text[i]
        if c == "[":
            depth += 1
            if depth == 1:
                i += 1
                continue
        elif c == "]":
            depth -= 1
            if depth == 0:
                i += 1
                continue
        elif depth == 0 and c in ",)":
            args.append(cur.strip())
            if c == ")":
                return args
            cur = ""
            i += 1
            continue
        cur += c
        i += 1
    die("unterminated macro call at offset %d" % start)


def strip_m4_comments(text):
    return "\n".join(re.sub(r"(^|\s)(dnl\b|#).*", "", line) for line in text.splitlines())


def module_names(arg):
    """The module names of a pkg-config list: "fuse3 >= 3.14 jansson"."""
    words = arg.split()
    names, skip = [], False
    for w in words:
        if skip:
            skip = False
        elif w in ("<", "<=", "=", ">=", ">", "!="):
            skip = True
        else:
            names.append(w.rstrip(","))
    return names


def header_package(h):
    if h in HEADERS:
        return HEADERS[h]
    for prefix, pkg in HEADER_PREFIXES.items():
        if h.startswith(prefix):
            return pkg
    return "?"


def cmd_requires(path):
    text = strip_m4_comments(read(path))
    seen_tools = set()
    for m in re.finditer(r"\b([A-Z][A-Z0-9_]+)\b(\(?)", text):
        macro = m.group(1)
        if macro in TOOLS and TOOLS[macro] not in seen_tools:
            seen_tools.add(TOOLS[macro])
            print("tool %s %s" % (macro, TOOLS[macro]))
        if macro not in REQUIRING or not m.group(2):
            continue
        kind, index = REQUIRING[macro]
        args = m4_args(text, m.end() - 1)
        if len(args) <= index:
            die("%s: %s() without its argument %d" % (path, macro, index + 1))
        named = args[2] if macro == "MP_REQUIRE_PKG" and len(args) > 2 else ""
        if kind == "pkg":
            names = module_names(args[index])
        else:
            names = args[index].split()
        for name in names:
            if kind == "pkg":
                pkg = MODULES.get(name, "?")
            elif kind == "lib":
                pkg = LIBRARIES.get(name, "?")
            else:
                pkg = header_package(name)
            print(("%s %s %s %s" % (kind, name, pkg, named)).rstrip())


def control_field(text, name):
    m = re.search(r"^%s:(.*(?:\n[ \t].*)*)" % re.escape(name), text, re.M | re.I)
    return m.group(1) if m else None


def cmd_build_depends(path):
    field = control_field(read(path), "Build-Depends")
    if field is None:
        die("%s has no Build-Depends" % path)
    for rel in field.replace("\n", " ").split(","):
        alts = [re.sub(r"[\s(\[<].*", "", a.strip()) for a in rel.split("|")]
        alts = [a for a in alts if a]
        if alts:
            print("|".join(alts))


def section(text, title, path):
    """The body of the markdown section whose heading starts with title."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"^(#+)\s+(.*)", line)
        if m and m.group(2).startswith(title):
            level = len(m.group(1))
            body = []
            for rest in lines[i + 1:]:
                n = re.match(r"^(#+)\s", rest)
                if n and len(n.group(1)) <= level:
                    break
                body.append(rest)
            return body
    die("%s has no section %r" % (path, title))


def code_and_spans(lines):
    """The section's code: each code-block command (backslash continuations
    joined), then each inline code span of its prose (which may wrap)."""
    code, prose, fenced, pending = [], [], False, ""
    for line in lines:
        if line.startswith("```"):
            fenced = not fenced
        elif fenced or (line.startswith("    ") and line.strip()):
            pending += line.strip()
            if pending.endswith("\\"):
                pending = pending[:-1] + " "
            else:
                code.append(pending)
                pending = ""
        else:
            prose.append(line)
    spans = re.findall(r"`([^`]*)`", "\n".join(prose))
    return code, [" ".join(s.split()) for s in spans]


def cmd_apt_lines(path, title):
    code, spans = code_and_spans(section(read(path), title, path))
    for text in code + spans:
        for m in re.finditer(r"apt-get install\b([^#;&|]*)", text):
            # options and local .deb files are not packages
            pkgs = [w for w in m.group(1).split() if not w.startswith("-") and "/" not in w]
            if pkgs:
                print(" ".join(pkgs))


def cmd_code_lines(path, title):
    for line in code_and_spans(section(read(path), title, path))[0]:
        print(line)


# ---- the shell script -----------------------------------------------------

KEYWORDS_BEFORE_COMMAND = {"if", "then", "else", "elif", "do", "while", "until", "!", "{", "time"}
KEYWORDS = {"fi", "done", "esac", "case", "for", "in", "}"}


def shell_functions(text):
    """name -> body of each `name() {` ... `}` defined at column 0."""
    funcs = {}
    for m in re.finditer(r"^([A-Za-z_][A-Za-z0-9_]*)\(\)\s*\{(?:\n(.*?)^\}|([^\n]*)\}$)",
                         text, re.M | re.S):
        funcs[m.group(1)] = m.group(2) if m.group(2) is not None else m.group(3)
    return funcs


def top_level(text):
    """What runs in every mode: the script without its functions and its
    case statement."""
    text = re.sub(r"^[A-Za-z_][A-Za-z0-9_]*\(\)\s*\{(?:\n.*?^\}|[^\n]*\}$)", "", text,
                  flags=re.M | re.S)
    return re.sub(r"^case .*?^esac$", "", text, flags=re.M | re.S)


def case_arm(text, mode, path):
    m = re.search(r"^%s\)\n(.*?)^\s*;;" % re.escape(mode), text, re.M | re.S)
    if not m:
        die("%s has no case arm %r" % (path, mode))
    return m.group(1)


def drop_heredocs(text):
    out, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        line = lines[i]
        out.append(line)
        m = re.search(r"<<-?\s*['\"]?([A-Za-z_]+)['\"]?", line)
        i += 1
        if m:
            while i < len(lines) and lines[i].strip() != m.group(1):
                i += 1
            i += 1
    return "\n".join(out)


def command_words(text):
    """The literal first words of the simple commands of text."""
    words, i, n = [], 0, len(text)
    at_command, word, literal = True, "", True

    def end_word():
        nonlocal word, literal, at_command
        if word:
            if at_command:
                if re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", word):
                    pass  # an assignment before the command
                elif word in KEYWORDS_BEFORE_COMMAND:
                    pass
                elif word in KEYWORDS:
                    at_command = False
                else:
                    if literal:
                        words.append(word)
                    at_command = False
            elif word in ("then", "do", "else"):
                at_command = True
        word, literal = "", True

    while i < n:
        c = text[i]
        if c == "\\" and i + 1 < n:
            if text[i + 1] != "\n":
                word += text[i + 1]
            i += 2
        elif c == "#" and not word:
            while i < n and text[i] != "\n":
                i += 1
        elif c == "'":
            j = text.index("'", i + 1)
            word += text[i + 1:j]
            i = j + 1
        elif c == '"':
            j, inner = i + 1, ""
            while text[j] != '"':
                if text[j] == "\\":
                    inner += text[j:j + 2]
                    j += 2
                elif text.startswith("$(", j):
                    k = matching_paren(text, j + 1)
                    words.extend(command_words(text[j + 2:k]))
                    inner += "$"
                    j = k + 1
                else:
                    inner += text[j]
                    j += 1
            if "$" in inner and not word:
                literal = False
            word += inner
            i = j + 1
        elif text.startswith("$((", i) or text.startswith("${", i):
            # arithmetic and parameter expansions run no command
            close = "))" if text[i + 1] == "(" else "}"
            j = text.index(close, i) + len(close)
            literal = literal and bool(word)
            word += text[i:j]
            i = j
        elif text.startswith("$(", i):
            k = matching_paren(text, i + 1)
            words.extend(command_words(text[i + 2:k]))
            literal = literal and bool(word)
            word += "$"
            i = k + 1
        elif c == "$" and not word:
            literal = False
            word += c
            i += 1
        elif c in " \t":
            end_word()
            i += 1
        elif c in "\n;|&(){}":
            end_word()
            if c != ")" and c != "}":
                at_command = True
            i += 1
        elif c in "<>":
            end_word()
            # a redirection: skip its target
            i += 1
            while i < n and text[i] in "<>&0123456789":
                i += 1
            while i < n and text[i] in " \t":
                i += 1
            while i < n and text[i] not in " \t\n;|&)":
                i += 1
        else:
            word += c
            i += 1
    end_word()
    return words


def matching_paren(text, open_at):
    depth, i = 0, open_at
    while i < len(text):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i
        elif text[i] == "'":
            i = text.index("'", i + 1)
        i += 1
    die("unbalanced $( at offset %d" % open_at)


def cmd_commands(path, mode):
    text = read(path)
    funcs = shell_functions(text)
    seen, todo, programs = set(), [top_level(text), case_arm(text, mode, path)], []
    while todo:
        for w in command_words(drop_heredocs(todo.pop())):
            if w in funcs:
                if w not in seen:
                    seen.add(w)
                    todo.append(funcs[w])
            elif w not in programs:
                programs.append(w)
    for p in programs:
        print(p)


def main(argv):
    commands = {
        "requires": (1, cmd_requires),
        "build-depends": (1, cmd_build_depends),
        "apt-lines": (2, cmd_apt_lines),
        "code-lines": (2, cmd_code_lines),
        "commands": (2, cmd_commands),
    }
    if len(argv) < 2 or argv[1] not in commands or len(argv) != 2 + commands[argv[1]][0]:
        die("usage: setup_check.py requires|build-depends FILE, "
            "apt-lines|code-lines README TITLE, commands SCRIPT MODE")
    commands[argv[1]][1](*argv[2:])


if __name__ == "__main__":
    main(sys.argv)
