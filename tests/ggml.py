"""ggml.py - ggml itself, for the tests' cross-checks (standard library only).

The tests compare moepack with ggml's own code: its Q2_K/Q3_K/MXFP4
quantizer and dequantizer, and gguf_init_from_file().  ggml is libggml-base.so from
the prebuilt npm package @node-llama-cpp/linux-x64 (version 3.21.1: ggml
0.23.0), loaded with ctypes; only that library is used (it needs libc,
libm, libstdc++, libgcc_s), so the results are ggml's portable reference
code, the same on every CPU.

Where the library is looked for, first hit wins:
  GGML_LIB                  the file itself;
  GGML_NODE_MODULES         a node_modules directory (or several, ':'
                            between them) the package was installed into;
  $top_builddir/ggml/node_modules, /var/cache/moepackfs-ggml/node_modules
                            where contrib/bootstrap.sh test installs it.
Install it by hand with
  npm install --ignore-scripts --prefix DIR @node-llama-cpp/linux-x64@3.21.1
and set GGML_NODE_MODULES=DIR/node_modules.

    python3 tests/ggml.py        prints the library and its version, or
                                 why it cannot be used (exit 77)

Every user treats "cannot load" as a skip with the reason; see unusable().
"""
import array
import ctypes
import glob
import os
import sys

PACKAGE = "@node-llama-cpp/linux-x64@3.21.1"

# enum ggml_type values: (id, ggml's name, bytes, weights per block),
# checked against ggml_type_name(), ggml_type_size() and ggml_blck_size()
# when loading
TYPES = {"Q2_K": (10, "q2_K", 84, 256), "Q3_K": (11, "q3_K", 110, 256),
         "MXFP4": (39, "mxfp4", 17, 32)}


class Unusable(Exception):
    """ggml cannot be loaded here; the message says why and what to do."""


def node_modules_dirs():
    dirs = []
    env = os.environ.get("GGML_NODE_MODULES")
    if env:
        dirs += [d for d in env.split(":") if d]
    top = os.environ.get("top_builddir")
    if top:
        dirs.append(os.path.join(top, "ggml", "node_modules"))
    dirs.append("/var/cache/moepackfs-ggml/node_modules")
    return dirs


def find_lib():
    path = os.environ.get("GGML_LIB")
    if path:
        if not os.path.isfile(path):
            raise Unusable("GGML_LIB=%s is not a file" % path)
        return path
    dirs = node_modules_dirs()
    for d in dirs:
        hits = sorted(glob.glob(os.path.join(glob.escape(d), "@node-llama-cpp", "*",
                                             "bins", "*", "libggml-base.so")))
        if hits:
            return hits[0]
    raise Unusable("libggml-base.so is not under %s (npm install --ignore-scripts %s "
                   "there, or set GGML_NODE_MODULES or GGML_LIB)"
                   % (" or ".join(dirs), PACKAGE))


class GGUFInitParams(ctypes.Structure):
    # struct gguf_init_params { bool no_alloc; struct ggml_context **ctx; }
    _fields_ = [("no_alloc", ctypes.c_bool), ("ctx", ctypes.POINTER(ctypes.c_void_p))]


class Ggml:
    def __init__(self, path=None):
        self.path = path or find_lib()
        try:
            lib = ctypes.CDLL(self.path)
        except OSError as e:
            raise Unusable("cannot load %s: %s" % (self.path, e)) from e
        c = ctypes
        signatures = {
            "ggml_version": (c.c_char_p, []),
            "ggml_commit": (c.c_char_p, []),
            "ggml_type_name": (c.c_char_p, [c.c_int]),
            "ggml_type_size": (c.c_size_t, [c.c_int]),
            "ggml_blck_size": (c.c_int64, [c.c_int]),
            "ggml_quantize_chunk": (c.c_size_t, [c.c_int, c.c_void_p, c.c_void_p, c.c_int64,
                                                  c.c_int64, c.c_int64, c.c_void_p]),
            "dequantize_row_q2_K": (None, [c.c_void_p, c.c_void_p, c.c_int64]),
            "dequantize_row_q3_K": (None, [c.c_void_p, c.c_void_p, c.c_int64]),
            "dequantize_row_mxfp4": (None, [c.c_void_p, c.c_void_p, c.c_int64]),
            "gguf_init_from_file": (c.c_void_p, [c.c_char_p, GGUFInitParams]),
            "gguf_free": (None, [c.c_void_p]),
            "gguf_get_n_tensors": (c.c_int64, [c.c_void_p]),
            "gguf_get_tensor_name": (c.c_char_p, [c.c_void_p, c.c_int64]),
            "gguf_get_tensor_type": (c.c_int, [c.c_void_p, c.c_int64]),
        }
        for name, (res, args) in signatures.items():
            fn = getattr(lib, name, None)
            if fn is None:
                raise Unusable("%s has no %s: not the ggml these tests know" % (self.path, name))
            fn.restype, fn.argtypes = res, args
        self.lib = lib
        self.version = lib.ggml_version().decode()
        self.commit = lib.ggml_commit().decode()
        # the enum values and block sizes this file assumes must be ggml's
        for t, (tid, name, size, weights) in TYPES.items():
            got = (lib.ggml_type_name(tid), lib.ggml_blck_size(tid), lib.ggml_type_size(tid))
            if got != (name.encode(), weights, size):
                raise Unusable("ggml %s: type %d is %r, expected %s (%d, %d bytes)"
                               % (self.version, tid, got, name, weights, size))

    def quantize(self, t, floats, nrows):
        """floats (array('f'), nrows rows of a multiple of the block) ->
        blocks, through ggml_quantize_chunk(), as llama-quantize calls it."""
        tid, _, size, weights = TYPES[t]
        n = len(floats)
        per_row = n // nrows
        if per_row * nrows != n or per_row % weights:
            raise ValueError("%d floats are not %d rows of a multiple of %d"
                             % (n, nrows, weights))
        out = ctypes.create_string_buffer(n // weights * size)
        got = self.lib.ggml_quantize_chunk(tid, floats.buffer_info()[0], out, 0, nrows,
                                           per_row, None)
        if got != len(out):
            raise RuntimeError("ggml_quantize_chunk wrote %d bytes, not %d" % (got, len(out)))
        return out.raw

    def dequantize(self, t, blocks):
        """Block bytes -> array('f') through ggml's dequantize_row_*()."""
        _, name, size, weights = TYPES[t]
        blocks = bytes(blocks)
        if len(blocks) % size:
            raise ValueError("%d bytes are not whole %s blocks" % (len(blocks), t))
        n = len(blocks) // size * weights
        src = ctypes.create_string_buffer(blocks, len(blocks))
        out = array.array("f", bytes(4 * n))
        getattr(self.lib, "dequantize_row_" + name)(src, out.buffer_info()[0], n)
        return out

    def gguf_load(self, path):
        """What gguf_init_from_file() makes of PATH (metadata only): None
        when it refuses the file, else [(name bytes, type id)] in file
        order.  ggml abort()s on some inputs: call it in a child process."""
        ctx = self.lib.gguf_init_from_file(os.fsencode(path), GGUFInitParams(True, None))
        if not ctx:
            return None
        try:
            return [(self.lib.gguf_get_tensor_name(ctx, i), self.lib.gguf_get_tensor_type(ctx, i))
                    for i in range(self.lib.gguf_get_n_tensors(ctx))]
        finally:
            self.lib.gguf_free(ctx)


_loaded = None


def get():
    """The loaded library (once per process); raises Unusable."""
    global _loaded
    if _loaded is None:
        _loaded = Ggml()
    return _loaded


def unusable():
    """None when ggml can be used, else the one-line reason."""
    try:
        get()
    except Unusable as e:
        return str(e)
    return None


def describe():
    g = get()
    return "ggml %s (%s), %s" % (g.version, g.commit, g.path)


if __name__ == "__main__":
    why = unusable()
    if why:
        print("ggml cannot be used: %s" % why)
        sys.exit(77)
    print(describe())
