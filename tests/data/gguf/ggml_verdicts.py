#!/usr/bin/env python3
"""Record what ggml's own gguf_init_from_file() makes of each GGUF file: the
table tests/check_gguf.c compares moepack's verdicts with (see README).

    python3 ggml_verdicts.py FILE.gguf...  > corpus/ggml-verdicts.txt
    python3 ggml_verdicts.py --probe       (exit 0 and the version when usable,
                                           else exit 77 and the reason)

ggml is libggml-base.so, loaded by tests/ggml.py (which says where it looks).
Each file is read in a child process: ggml abort()s on some inputs, and a
crash is a refusal.  One line per file:

    NAME ok N HEXNAME:TYPE ...     ggml loaded it: N tensors, in file order,
                                   each name (as ggml holds it) in hex
    NAME refused WHY               gguf_init_from_file() returned NULL, or
                                   the child died (WHY = crash:SIGNAL)
"""
import os
import signal
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
import ggml  # noqa: E402


def child(path):
    tensors = ggml.get().gguf_load(path)
    if tensors is None:
        print("refused null")
        return 0
    out = ["ok", str(len(tensors))]
    for name, t in tensors:
        out.append("%s:%d" % (name.hex() or "-", t))
    print(" ".join(out))
    return 0


def verdict(path):
    p = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", path],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=120)
    if p.returncode < 0:
        return "refused crash:%s" % signal.Signals(-p.returncode).name
    if p.returncode != 0 or not p.stdout.strip():
        return "refused exit:%d" % p.returncode
    return p.stdout.decode().strip()


def main(argv):
    if argv[:1] == ["--child"]:
        return child(argv[1])
    why = ggml.unusable()
    if argv[:1] == ["--probe"]:
        if why:
            print("ggml cannot be used: %s" % why)
            return 77
        g = ggml.get()
        print("ggml %s (%s)" % (g.version, g.commit))
        return 0
    if why:
        print("ggml_verdicts.py: ggml cannot be used: %s" % why, file=sys.stderr)
        return 77
    g = ggml.get()
    print("# gguf_init_from_file() of ggml %s (%s), written by ggml_verdicts.py"
          % (g.version, g.commit))
    for f in argv:
        print("%s %s" % (os.path.basename(f), verdict(f)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
