#!/usr/bin/env python3
"""Write the crafted GGUF corpus of tests/check_gguf.c: variants of valid.gguf
that each break one rule ggml's gguf_init_from_file() enforces, or sit on the
edge of one, plus the moepack verdict each must get (corpus/expect.txt).

    python3 mkcorpus.py [DIR]      (DIR defaults to this script's directory)

Needs only Python 3: valid.gguf is parsed and re-serialized here, so the
files are reproducible byte for byte.  What ggml itself makes of each file
is recorded separately by ggml_verdicts.py (corpus/ggml-verdicts.txt).
"""
import os
import struct
import sys

HERE = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(__file__))
OUT = os.path.join(HERE, "corpus")

# ggml type id -> (block weights, block bytes), for the types the fixtures use
TYPES = {0: (1, 4), 2: (32, 18), 8: (32, 34), 10: (256, 84), 11: (256, 110),
         12: (256, 144)}
FIXED = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


def u32(v):
    return struct.pack("<I", v & 0xFFFFFFFF)


def u64(v):
    return struct.pack("<Q", v & 0xFFFFFFFFFFFFFFFF)


def gstr(b):
    return u64(len(b)) + b


class Reader:
    def __init__(self, data):
        self.d, self.p = data, 0

    def take(self, n):
        b = self.d[self.p:self.p + n]
        assert len(b) == n
        self.p += n
        return b

    def u32(self):
        return struct.unpack("<I", self.take(4))[0]

    def u64(self):
        return struct.unpack("<Q", self.take(8))[0]

    def str(self):
        return self.take(self.u64())

    def value(self, t):
        start = self.p
        if t == 8:
            self.str()
        elif t == 9:
            et, n = self.u32(), self.u64()
            for _ in range(n):
                self.value(et)
        else:
            self.take(FIXED[t])
        return self.d[start:self.p]


def parse(path):
    """-> dict(version, kvs=[(key, type, raw value)], tensors=[dict])"""
    r = Reader(open(path, "rb").read())
    assert r.take(4) == b"GGUF"
    version, nt, nkv = r.u32(), r.u64(), r.u64()
    kvs = []
    for _ in range(nkv):
        k = r.str()
        t = r.u32()
        kvs.append((k, t, r.value(t)))
    infos = []
    for _ in range(nt):
        name = r.str()
        nd = r.u32()
        ne = [r.u64() for _ in range(nd)]
        infos.append(dict(name=name, ne=ne, type=r.u32(), offset=r.u64()))
    align = 32
    for k, t, v in kvs:
        if k == b"general.alignment":
            align = struct.unpack("<I", v)[0]
    start = (r.p + align - 1) // align * align
    for t in infos:
        t["data"] = r.d[start + t["offset"]:start + t["offset"] + nbytes(t["type"], t["ne"])]
    return dict(version=version, kvs=kvs, tensors=infos)


def nbytes(t, ne):
    n = 1
    for d in ne:
        n *= d
    bw, bb = TYPES[t]
    return n // bw * bb


def pad(n, a):
    return (n + a - 1) // a * a


def write(path, g, align=None, cut=0):
    """Serialize g; a tensor's "offset" key, when present, overrides the one
    ggml would compute; its data then goes there (overlaps allowed)."""
    if align is None:
        align = 32
        for k, t, v in g["kvs"]:
            if k == b"general.alignment" and t == 4:
                align = struct.unpack("<I", v)[0]
    out = bytearray(b"GGUF" + u32(g["version"]) + u64(len(g["tensors"])) + u64(len(g["kvs"])))
    for k, t, v in g["kvs"]:
        out += gstr(k) + u32(t) + v
    offsets, at = [], 0
    for t in g["tensors"]:
        off = t.get("set_offset", at)
        offsets.append(off)
        at = max(at, off + pad(len(t["data"]), align))
        out += gstr(t["name"]) + u32(len(t["ne"])) + b"".join(u64(d) for d in t["ne"])
        out += u32(t["type"]) + u64(off)
    out += b"\0" * (pad(len(out), align) - len(out))
    data = bytearray(at)
    for t, off in zip(g["tensors"], offsets):
        data[off:off + len(t["data"])] = t["data"]
    out += data
    if cut:
        out = out[:-cut]
    with open(path, "wb") as f:
        f.write(out)


def copy(g):
    return dict(version=g["version"], kvs=list(g["kvs"]),
                tensors=[dict(t) for t in g["tensors"]])


def find(g, name):
    for i, t in enumerate(g["tensors"]):
        if t["name"] == name:
            return i
    raise KeyError(name)


def filler(n, seed):
    return bytes((seed * 31 + i * 7) & 0xFF for i in range(n))


BASE = parse(os.path.join(HERE, "valid.gguf"))
DOWN = b"blk.1.ffn_down_exps.weight"
NORM = b"output_norm.weight"
CASES = []  # (file, moepack code, message fragment)


def case(fname, code, words, g, **kw):
    write(os.path.join(OUT, fname), g, **kw)
    CASES.append((fname, code, words))


def variant(fn):
    g = copy(BASE)
    fn(g)
    return g


def retype(g, name, t, newname=None):
    i = find(g, name)
    x = g["tensors"][i]
    x["type"] = t
    x["data"] = filler(nbytes(t, x["ne"]), i)
    if newname is not None:
        x["name"] = newname


def add_tensor(g, name, t, ne, at=None):
    x = dict(name=name, ne=ne, type=t, data=filler(nbytes(t, ne), 7))
    g["tensors"].insert(len(g["tensors"]) if at is None else at, x)


def set_kv(g, key, t, raw):
    g["kvs"] = [(k, tt, v) if k != key else (key, t, raw) for k, tt, v in g["kvs"]]


os.makedirs(OUT, exist_ok=True)

# ---- accepted by ggml, and by moepack -----------------------------------
case("ok_same.gguf", "ok", "", copy(BASE))
case("ok_v2.gguf", "ok", "", variant(lambda g: g.update(version=2)))
case("ok_no_tensors.gguf", "ok", "", variant(lambda g: g.update(tensors=[])))
case("ok_align64.gguf", "ok", "",
     variant(lambda g: set_kv(g, b"general.alignment", 4, u32(64))))
case("ok_align1.gguf", "ok", "",
     variant(lambda g: set_kv(g, b"general.alignment", 4, u32(1))))
case("ok_no_align_key.gguf", "ok", "",
     variant(lambda g: g.update(kvs=[kv for kv in g["kvs"] if kv[0] != b"general.alignment"])))
case("ok_empty_tensors.gguf", "ok", "",
     variant(lambda g: (add_tensor(g, b"empty.0", 0, [0], 3),
                        add_tensor(g, b"empty.1", 10, [256, 0, 4], 5))))
case("ok_scalar.gguf", "ok", "", variant(lambda g: add_tensor(g, b"scalar", 0, [], 2)))
case("ok_name_63.gguf", "ok", "", variant(lambda g: add_tensor(g, b"n" * 63, 0, [32])))
case("ok_empty_name.gguf", "ok", "", variant(lambda g: add_tensor(g, b"", 0, [32])))
case("ok_nul_name.gguf", "ok", "",
     variant(lambda g: retype(g, DOWN, 11, DOWN + b"\0junk")))
case("ok_ctrl_name.gguf", "ok", "",
     variant(lambda g: add_tensor(g, b"evil\x1b[2J\xff\x07.weight", 0, [32])))
case("ok_empty_array.gguf", "ok", "",
     variant(lambda g: g["kvs"].append((b"x.empty", 9, u32(8) + u64(0)))))
case("ok_bool_2.gguf", "ok", "",
     variant(lambda g: g["kvs"].append((b"x.bool", 7, b"\x02"))))
case("ok_key_nul.gguf", "ok", "",
     variant(lambda g: g["kvs"].append((b"general.name\0", 8, gstr(b"other")))))

# ---- accepted by ggml, refused by a Kimi-K3 rule -------------------------
# ggml cuts the name at the NUL and loads blk.1.ffn_down_exps.weight as Q4_K
case("nul_name_q4k.gguf", "gguf_expert_type",
     "routed expert tensor has the wrong quant type: blk.1.ffn_down_exps.weight is Q4_K (12)",
     variant(lambda g: retype(g, DOWN, 12, DOWN + b"\0")))
case("nul_name_junk_q4k.gguf", "gguf_expert_type",
     "blk.1.ffn_down_exps.weight is Q4_K (12), must be Q3_K (11)",
     variant(lambda g: retype(g, DOWN, 12, DOWN + b"\0.bak")))

# ---- accepted by ggml (it reads no data), refused by moepack -------------
case("data_past_end.gguf", "gguf_format",
     "tensor output_norm.weight data ends at byte", copy(BASE), cut=1)

# ggml loads an empty tensor of any shape; moepack counts a 0 as 1 when it
# bounds the element count, and so refuses this one
case("empty_huge.gguf", "gguf_format", "tensor empty.2 of shape (0, 4611686018427387904, 2, 1) "
     "has too many elements", variant(lambda g: add_tensor(g, b"empty.2", 0, [0, 1 << 62, 2])))

# ---- refused by ggml ------------------------------------------------------
case("name_64.gguf", "gguf_format", "name of 64 bytes is too long, ggml takes at most 63",
     variant(lambda g: add_tensor(g, b"n" * 64, 0, [32])))
case("name_64_nul.gguf", "gguf_format", "name of 64 bytes is too long",
     variant(lambda g: add_tensor(g, b"short\0" + b"n" * 58, 0, [32])))
case("dup_name.gguf", "gguf_format",
     "tensor info 14: duplicate tensor name output_norm.weight (tensor info 13 has it too)",
     variant(lambda g: add_tensor(g, NORM, 0, [32])))
case("dup_name_nul.gguf", "gguf_format",
     "duplicate tensor name output_norm.weight",
     variant(lambda g: add_tensor(g, NORM + b"\0.bak", 0, [32], 1)))
# names reach messages: control bytes and invalid UTF-8 must come out escaped
case("dup_ctrl_name.gguf", "gguf_format",
     "duplicate tensor name evil\\x1b[2J\\xff\\x07.weight (tensor info 14 has it too)",
     variant(lambda g: (add_tensor(g, b"evil\x1b[2J\xff\x07.weight", 0, [32]),
                        add_tensor(g, b"evil\x1b[2J\xff\x07.weight", 0, [32]))))
case("dup_key.gguf", "gguf_format",
     "KV pair 11: duplicate key \"general.name\" (KV pair 1 has it too)",
     variant(lambda g: g["kvs"].append((b"general.name", 8, gstr(b"again")))))
case("empty_key.gguf", "gguf_format", "KV pair 11: the key is empty",
     variant(lambda g: g["kvs"].append((b"", 8, gstr(b"nameless")))))
case("dup_alignment.gguf", "gguf_format", "general.alignment appears twice",
     variant(lambda g: g["kvs"].append((b"general.alignment", 4, u32(32)))))


def overlap(g):
    g["tensors"][3]["set_offset"] = g_offsets(g)[2]


def g_offsets(g):
    out, at = [], 0
    for t in g["tensors"]:
        out.append(at)
        at += pad(len(t["data"]), 32)
    return out


case("overlap.gguf", "gguf_format",
     "tensor blk.1.attn_v_b.weight data at offset 640 overlaps the data of tensor "
     "blk.1.attn_k_b.weight (tensor info 2, offsets 640 to 1792)",
     variant(overlap))


def gap(g):
    offs = g_offsets(g)
    for i in range(5, len(g["tensors"])):
        g["tensors"][i]["set_offset"] = offs[i] + 32


case("offset_gap.gguf", "gguf_format",
     "tensor blk.1.ffn_up_exps.weight data offset 3840 is not the 3808 ggml expects",
     variant(gap))


def swap(g):
    offs = g_offsets(g)
    t = g["tensors"]
    t[1], t[2] = t[2], t[1]
    t[1]["set_offset"], t[2]["set_offset"] = offs[2], offs[1]


case("offset_swap.gguf", "gguf_format",
     "tensor blk.1.attn_k_b.weight data offset 640 is not the 512 ggml expects",
     variant(swap))


def set_dims(name, ne):
    def fn(g):
        g["tensors"][find(g, name)]["ne"] = ne
    return fn


case("dims_5.gguf", "gguf_format", "tensor output_norm.weight has 5 dimensions, at most 4",
     variant(set_dims(NORM, [32, 1, 1, 1, 1])))
case("ne_negative.gguf", "gguf_format", "tensor output_norm.weight dimension 1 is negative (-1)",
     variant(set_dims(NORM, [32, (1 << 64) - 1])))
case("ne_overflow.gguf", "gguf_format",
     "tensor output_norm.weight of shape (4611686018427387904, 2, 1, 1) has too many elements",
     variant(set_dims(NORM, [1 << 62, 2])))
case("ne_overflow_edge.gguf", "gguf_format", "has too many elements for ggml",
     variant(set_dims(NORM, [(1 << 63) - 1])))
case("ne_huge_bytes.gguf", "gguf_format", "has a size in bytes that overflows 64 bits",
     variant(set_dims(NORM, [(1 << 63) - 2])))


def set_type(name, t):
    def fn(g):
        g["tensors"][find(g, name)]["type"] = t
    return fn


case("type_43.gguf", "gguf_format", "tensor output_norm.weight has type 43, ggml knows types 0 to 42",
     variant(set_type(NORM, 43)))
case("type_neg.gguf", "gguf_format", "has type 4294967295, ggml knows types 0 to 42",
     variant(set_type(NORM, 0xFFFFFFFF)))
case("type_removed_4.gguf", "gguf_format", "has type Q4_2 (4), which ggml no longer loads",
     variant(set_type(NORM, 4)))
case("type_removed_31.gguf", "gguf_format", "has type Q4_0_4_4 (31), which ggml no longer loads",
     variant(set_type(NORM, 31)))
case("row_partial.gguf", "gguf_format",
     "tensor blk.1.attn_v_b.weight row of 128 weights is not a whole number of Q2_K blocks",
     variant(set_dims(b"blk.1.attn_v_b.weight", [128, 8, 2])))
case("nested_array.gguf", "gguf_format", "KV pair 11: array of arrays, which ggml does not read",
     variant(lambda g: g["kvs"].append((b"x.nested", 9, u32(9) + u64(1) + u32(0) + u64(1) + b"\0"))))
case("value_type_13.gguf", "gguf_format", "KV pair 11: unknown value type 13",
     variant(lambda g: g["kvs"].append((b"x.bad", 13, b"\0" * 8))))
case("align_3.gguf", "gguf_format", "general.alignment is 3, must be a power of two",
     variant(lambda g: set_kv(g, b"general.alignment", 4, u32(3))))
case("align_u64.gguf", "gguf_format", "general.alignment has value type 10, must be u32",
     variant(lambda g: set_kv(g, b"general.alignment", 10, u64(32))))
case("version_4.gguf", "gguf_format", "unsupported version 4",
     variant(lambda g: g.update(version=4)))

with open(os.path.join(OUT, "expect.txt"), "w") as f:
    f.write("# written by mkcorpus.py: FILE moepack-code message-fragment\n")
    for name, code, words in CASES:
        f.write("%s %s %s\n" % (name, code, words))
print("%d files in %s" % (len(CASES), OUT))
