#!/usr/bin/env python3
"""Record what ggml's own gguf_init_from_file() makes of each GGUF file: the
table tests/check_gguf.c compares moepack's verdicts with (see README).

    python3 ggml_verdicts.py ORACLE_DIR FILE.gguf...  > corpus/ggml-verdicts.txt
    python3 ggml_verdicts.py --probe    ORACLE_DIR    (exit 0 when usable)

ORACLE_DIR holds ggml_oracle.py, which loads libggml-base.so through ctypes.
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


def load(oracle_dir):
    sys.path.insert(0, oracle_dir)
    import ggml_oracle  # noqa: E402
    return ggml_oracle


def child(oracle_dir, path):
    go = load(oracle_dir)
    g = go.get()
    L = g.lib
    ctx = L.gguf_init_from_file(os.fsencode(path), go.GGUFInitParams(True, None))
    if not ctx:
        print("refused null")
        return 0
    out = ["ok", str(L.gguf_get_n_tensors(ctx))]
    for i in range(L.gguf_get_n_tensors(ctx)):
        name = L.gguf_get_tensor_name(ctx, i)  # bytes up to ggml's NUL
        out.append("%s:%d" % (name.hex() or "-", L.gguf_get_tensor_type(ctx, i)))
    L.gguf_free(ctx)
    print(" ".join(out))
    return 0


def verdict(oracle_dir, path):
    p = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", oracle_dir, path],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=60)
    if p.returncode < 0:
        return "refused crash:%s" % signal.Signals(-p.returncode).name
    if p.returncode != 0 or not p.stdout.strip():
        return "refused exit:%d" % p.returncode
    return p.stdout.decode().strip()


def main(argv):
    if argv[:1] == ["--child"]:
        return child(argv[1], argv[2])
    if argv[:1] == ["--probe"]:
        try:
            go = load(argv[1])
            g = go.get()
            print("ggml %s (%s)" % (g.version, g.commit))
            return 0
        except Exception as e:  # noqa: BLE001 - any failure means "not usable"
            print("ggml oracle not usable: %s" % e)
            return 1
    oracle_dir, files = argv[0], argv[1:]
    go = load(oracle_dir)
    g = go.get()
    print("# gguf_init_from_file() of ggml %s (%s), written by ggml_verdicts.py"
          % (g.version, g.commit))
    for f in files:
        print("%s %s" % (os.path.basename(f), verdict(oracle_dir, f)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
