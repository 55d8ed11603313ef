#!/usr/bin/env python3
"""mkcorpus.py - SGLANG-EXPERTPACK-v1 packs for tests/check_expertpack.c and
the bench.

    python3 mkcorpus.py corpus OUTDIR
    python3 mkcorpus.py sparse OUT.pack [--layers 43] [--experts 256]
                        [--top-k 6] [--hidden 4096] [--inter 2048]
                        [--alignment 4096] [--data-start N]
    python3 mkcorpus.py pack OUT.pack [--layers 2] [--experts 4] [--top-k 2]
                        [--hidden 256] [--inter 512] [--alignment 4096]
                        [--vary-shapes 0]
    python3 mkcorpus.py sample SEED N K
    python3 mkcorpus.py refbuild GGUF CONFIG OUT

corpus writes a small valid pack (2 layers x 4 experts, top-k 2, MXFP4
roles of 64 x 32 weights, 1088 bytes, objects of 3264 bytes on a stride of
3328), its manifest and the source GGUF it was built from, then one variant
per check of moepack-pack(5)'s SGLANG-EXPERTPACK-v1 section and per spot
where the reference is lax, and OUTDIR/expect.txt: one line per variant,

    NAME <TAB> OPTIONS <TAB> CODE <TAB> REFERENCE <TAB> FRAGMENT...

OPTIONS is "-" or a comma list of what the test passes to mp_ep_open()
(layers=N, experts=N, topk=N, src=HEX, model=HEX, config=HEX, runtime,
full, source=FILE, samples=N, nosamples, pack=FILE, manifest=FILE; files relative to
OUTDIR); CODE the moepack error code ("ok": valid); REFERENCE what SGLang's
runtime (ExpertPackStore) or offline validator does with the file, for the
reader; every FRAGMENT must be in the message (for "ok": in a warning;
"nowarn": no warning at all).  Each variant breaks one thing and repairs
what it would break besides (index_sha256, pack_sha256, pack_size), unless
those are what it is about; the "order" variants break two, and the check
the reference reaches first must win.

sparse writes a pack of full geometry whose data region is a hole, with a
manifest (no pack_sha256: hashing 147 GB is not what it is for) and no
source file; the tensors' source fields describe a GGUF that is not there.
--data-start puts the objects further in (the zeros after the index, which
the format allows, a hole as well).

pack writes one valid pack, its manifest and its source OUT.pack.gguf, for
the mount tests; with --vary-shapes 1 expert 1 of every layer records other
shapes than the rest (vary_shapes), as both checkers allow.

refbuild writes OUT and OUT.manifest.json from a DeepSeek-V4-Flash GGUF and
its config.json as SGLang's reference builder (build.py, driven by
prepare_deepseek_pack.py) does, with a GGUF reader of its own: what
`moepack build --format expertpack-v1` must match byte for byte (the
manifest but for created_at, builder.* and transform.tool_sha256).

sample prints random.Random(SEED).sample(range(N), K), for comparing
moepack's copy of Python's generator (src/pack/pyrandom.c) with Python's.

Plain Python 3, no network, no third-party module.
"""
import copy
import hashlib
import json
import os
import random
import re
import struct
import sys

MAGIC = b"SGLANG-EXPERTPACK-v1\0\0\0\0"
HEADER = struct.Struct("<24sIIIIQQQIIII32s32s32s")
ENTRY = struct.Struct("<HHBBH16s80sQQQQQQ32s32s32s4Q16s16sQQ")
ROLES = ("gate", "up", "down")
MXFP4 = 39
BLOCK, BLOCK_BYTES = 32, 17
GGUF_ALIGN = 32


def sha(b):
    return hashlib.sha256(b).hexdigest()


def align_up(v, a):
    return (v + a - 1) // a * a


def tensor_name(layer, role):
    return "blk.%d.ffn_%s_exps.weight" % (layer, role)


def generation(model_hex, source_hex, layer, expert):
    d = hashlib.sha256(("%s:%s:%d:%d" % (model_hex, source_hex, layer, expert)).encode()).digest()
    return int.from_bytes(d[:8], "little") or 1


# ---- the source GGUF --------------------------------------------------------

def gstr(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def write_gguf(layers, experts, hidden, inter, seed):
    """-> (bytes, [tensor dict]) of a GGUF v3 file with the routed tensors
    blk.L.ffn_{gate,up,down}_exps.weight (MXFP4, stacked by expert) and two
    small F32 tensors."""
    rng = random.Random(seed)
    specs = [("token_embd.weight", 0, [16, 4])]
    for layer in range(layers):
        for role in ROLES:
            ne = [hidden, inter] if role != "down" else [inter, hidden]
            specs.append((tensor_name(layer, role), MXFP4, ne + [experts]))
    specs.append(("output_norm.weight", 0, [16]))
    kv = (gstr("general.architecture") + struct.pack("<I", 8) + gstr("deepseek4") +
          gstr("general.alignment") + struct.pack("<II", 4, GGUF_ALIGN) +
          gstr("deepseek4.block_count") + struct.pack("<II", 4, layers))
    infos, datas, offset = b"", [], 0
    for name, typ, ne in specs:
        n = 1
        for d in ne:
            n *= d
        nbytes = n * 4 if typ == 0 else n // BLOCK * BLOCK_BYTES
        if typ == MXFP4:  # whole 17-byte blocks: an E8M0 scale, 16 bytes of nibbles
            data = b"".join(bytes([rng.randrange(118, 136)]) + rng.randbytes(16)
                            for _ in range(nbytes // BLOCK_BYTES))
        else:
            data = b"".join(struct.pack("<f", rng.gauss(0, 0.02)) for _ in range(n))
        infos += gstr(name) + struct.pack("<I", len(ne)) + b"".join(
            struct.pack("<Q", d) for d in ne) + struct.pack("<IQ", typ, offset)
        datas.append((name, typ, ne, offset, data))
        offset = align_up(offset + nbytes, GGUF_ALIGN)
    head = b"GGUF" + struct.pack("<IQQ", 3, len(specs), 3) + kv + infos
    data_start = align_up(len(head), GGUF_ALIGN)
    out = bytearray(head + bytes(data_start - len(head)))
    tensors = []
    for name, typ, ne, off, data in datas:
        out += bytes(data_start + off - len(out))
        out += data
        tensors.append({"name": name, "typ": typ, "ne": ne, "offset": data_start + off,
                        "nbytes": len(data), "sha256": sha(data)})
    return bytes(out), tensors, data_start


# ---- the pack ---------------------------------------------------------------

def fixed(s, n):
    b = s if isinstance(s, bytes) else s.encode()
    return b + bytes(n - len(b)) if len(b) < n else b[:n]


def pack_header(h):
    return HEADER.pack(fixed(h["magic"], 24), h["version"], h["header_bytes"],
                       h["entry_bytes"], h["flags"], h["index_count"], h["data_start"],
                       h["alignment"], h["num_layers"], h["num_experts"], h["top_k"],
                       h["role_count"], bytes.fromhex(h["model"]),
                       bytes.fromhex(h["source"]), bytes.fromhex(h["config"]))


def pack_entry(e):
    shape = list(e["shape"]) + [0] * (4 - len(e["shape"]))
    return ENTRY.pack(e["layer"], e["expert"], e["role_id"], e["rank"], e["dtype_id"],
                      fixed(e["dtype"], 16), fixed(e["tensor_name"], 80),
                      e["source_tensor_offset"], e["source_tensor_nbytes"],
                      e["source_slice_offset"], e["source_slice_nbytes"],
                      e["pack_offset"], e["pack_nbytes"],
                      bytes.fromhex(e["source_tensor_sha256"]),
                      bytes.fromhex(e["source_slice_sha256"]), bytes.fromhex(e["checksum"]),
                      *shape, fixed(e["quant_scheme"], 16), fixed(e["transform_id"], 16),
                      e["block_size"], e["generation"])


class Pack:
    """A pack as fields (header, entries, manifest) and its data bytes."""

    def serialize(self):
        """-> (file bytes, index bytes).  The data stays where the builder
        put it (data_at), whatever the header now says."""
        index = b"".join(pack_entry(e) if isinstance(e, dict) else e for e in self.entries)
        head = pack_header(self.header) + index
        blob = bytearray(head + bytes(self.data_at - len(head)))
        blob += self.data
        if self.size is not None:
            blob = blob[:self.size] + bytes(max(0, self.size - len(blob)))
        return bytes(blob), index


def build(layers=2, experts=4, top_k=2, hidden=64, inter=32, alignment=256, seed=7,
          source=None, payload=True, config_sha=None, role_bytes=None):
    """A valid pack of that geometry, built as SGLang's builder lays it out
    (role_bytes: the source's, when given, rather than hidden x inter's)."""
    if source is None:
        source = write_gguf(layers, experts, hidden, inter, seed)
    src_bytes, tensors, gguf_data = source
    by_name = {t["name"]: t for t in tensors}
    source_sha = sha(src_bytes) if payload else sha(b"sparse bench source")
    config_sha = config_sha or sha(b'{"model": "tiny-deepseek-v4-flash"}\n')
    model_sha = sha(("sglang-deepseek-expert-pack-v1:%s:%s" % (source_sha, config_sha)).encode())
    role_bytes = role_bytes or hidden * inter // BLOCK * BLOCK_BYTES
    routed = {tensor_name(l, r) for l in range(layers) for r in ROLES}
    stride = align_up(3 * role_bytes, alignment)
    count = layers * experts * 3
    data_start = align_up(HEADER.size + count * ENTRY.size, alignment)
    p = Pack()
    p.size, p.data_at, p.post = None, data_start, None
    p.header = dict(magic=MAGIC, version=1, header_bytes=HEADER.size, entry_bytes=ENTRY.size,
                    flags=3, index_count=count, data_start=data_start, alignment=alignment,
                    num_layers=layers, num_experts=experts, top_k=top_k, role_count=3,
                    model=model_sha, source=source_sha, config=config_sha)
    p.entries, data = [], bytearray()
    zero_sha = sha(bytes(role_bytes)) if not payload else None
    for layer in range(layers):
        for expert in range(experts):
            gen = generation(model_sha, source_sha, layer, expert)
            for r, role in enumerate(ROLES):
                t = by_name[tensor_name(layer, role)]
                slice_off = t["offset"] + expert * role_bytes
                if payload:
                    piece = src_bytes[slice_off:slice_off + role_bytes]
                    data += piece
                slice_sha = sha(piece) if payload else zero_sha
                p.entries.append(dict(
                    layer=layer, expert=expert, role_id=r, rank=2, dtype_id=MXFP4,
                    dtype="MXFP4", tensor_name=t["name"], source_tensor_offset=t["offset"],
                    source_tensor_nbytes=t["nbytes"], source_slice_offset=slice_off,
                    source_slice_nbytes=role_bytes,
                    pack_offset=data_start + (layer * experts + expert) * stride + r * role_bytes,
                    pack_nbytes=role_bytes, source_tensor_sha256=t["sha256"],
                    source_slice_sha256=slice_sha, checksum=slice_sha, shape=t["ne"][:2],
                    quant_scheme="MXFP4", transform_id="identity-v1", block_size=32,
                    generation=gen))
            if payload:
                data += bytes(stride - 3 * role_bytes)
    p.data = data
    if not payload:
        p.size = data_start + layers * experts * stride
    p.source = src_bytes
    p.manifest = {
        "format": "SGLANG-EXPERTPACK-v1", "version": 1, "complete": True,
        "created_at": "2026-12-02T00:00:00+00:00", "layout": "triplet_identity",
        "role_order": list(ROLES), "alignment": alignment, "pack_path": None,
        "pack_size": None, "pack_sha256": None, "header_bytes": HEADER.size,
        "index_count": count, "index_entry_bytes": ENTRY.size, "index_sha256": None,
        "data_start": data_start, "object_count": layers * experts,
        "object_payload_bytes": 3 * role_bytes, "object_stride": stride,
        "role_bytes": role_bytes, "payload_bytes": count * role_bytes,
        "padding_bytes": layers * experts * (stride - 3 * role_bytes),
        "model": {"ref": "tiny-deepseek-v4-flash", "model_identity_sha256": model_sha,
                  "config_sha256": config_sha, "num_layers": layers,
                  "num_routed_experts": experts, "top_k": top_k, "single_gpu": True},
        "source": {"path": None, "size": len(src_bytes) if payload else 0,
                   "sha256": source_sha, "gguf_data_offset": gguf_data,
                   "gguf_metadata_sha256": sha(src_bytes[:gguf_data]),
                   "inventory_path": None, "inventory_sha256": sha(b"inventory"),
                   "tensor_count": len(tensors)},
        "coverage": {"layers": list(range(layers)), "experts_per_layer": experts,
                     "roles": list(ROLES), "routed_tensor_count": 3 * layers,
                     "non_routed_tensor_count": len(tensors) - 3 * layers},
        "transform": {"id": "identity-v1", "reversible": True,
                      "description": "Contiguous source bytes; no value transform"},
        "builder": {"command": "mkcorpus.py"},
        "tensors": [{
            "name": t["name"], "shape": t["ne"], "type": GGML_TYPES[t["typ"]][0],
            "type_id": t["typ"], "source_offset": t["offset"], "source_nbytes": t["nbytes"],
            "source_payload_sha256": t["sha256"],
            "category": "routed_expert" if t["name"] in routed else "non_routed",
            "mapping": ("expert_pack_identity" if t["name"] in routed
                        else "gguf_direct_identity"),
            "scale_storage": "inline_quant_block" if t["typ"] == MXFP4 else "tensor_native",
        } for t in sorted(tensors, key=lambda t: t["name"])],
    }
    return p


# ---- writing a variant -------------------------------------------------------

class Corpus:
    def __init__(self, out):
        self.out = os.path.abspath(out)
        os.makedirs(self.out, exist_ok=True)
        self.lines = []
        self.base = build()
        self.source_path = os.path.join(self.out, "source.gguf")
        with open(self.source_path, "wb") as f:
            f.write(self.base.source)

    def path(self, name):
        return os.path.join(self.out, name)

    def write(self, name, p, fix=("index", "size", "full"), raw_manifest=None, source=None,
              after=None):
        """name.pack and name.pack.manifest.json from p (a Pack)."""
        pack_path = self.path(name + ".pack")
        m = p.manifest
        if m.get("pack_path", 0) is None:
            m["pack_path"] = pack_path
        if isinstance(m.get("source"), dict) and m["source"].get("path", 0) is None:
            m["source"]["path"] = self.source_path
        blob, index = p.serialize()
        if "index" in fix and "index_sha256" in m:
            m["index_sha256"] = sha(index)
        if "size" in fix and "pack_size" in m:
            m["pack_size"] = len(blob)
        if "full" in fix and "pack_sha256" in m:
            m["pack_sha256"] = sha(blob)
        if after:
            after(m)
        if p.post:
            blob = p.post(blob)
        with open(pack_path, "wb") as f:
            f.write(blob)
        text = raw_manifest if raw_manifest is not None else (
            json.dumps(m, ensure_ascii=False, indent=2, sort_keys=True) + "\n").encode()
        with open(pack_path + ".manifest.json", "wb") as f:
            f.write(text)
        if source is not None:
            with open(self.path(name + ".gguf"), "wb") as f:
                f.write(source)

    def case(self, name, opts, code, ref, *frags, mutate=None, **kw):
        """name.pack: the valid pack with mutate applied, and its expectation."""
        p = copy.deepcopy(self.base)
        if mutate:
            mutate(p)
        self.write(name, p, **kw)
        self.expect(name, opts, code, ref, *frags)

    def expect(self, name, opts, code, ref, *frags):
        self.lines.append("\t".join((name, opts, code, ref) + frags))

    def finish(self):
        with open(self.path("expect.txt"), "w") as f:
            f.write("# written by mkcorpus.py: NAME OPTIONS CODE REFERENCE FRAGMENT...\n")
            f.write("\n".join(self.lines) + "\n")


def ent(i, **kv):
    def f(p):
        p.entries[i].update(kv)
    return f


def hdr(**kv):
    def f(p):
        p.header.update(kv)
    return f


def man(path, value, delete=False):
    def f(p):
        keys = path.split(".")
        d = p.manifest
        for k in keys[:-1]:
            d = d[int(k)] if isinstance(d, list) else d[k]
        last = int(keys[-1]) if isinstance(d, list) else keys[-1]
        if delete:
            del d[last]
        else:
            d[last] = value
    return f


def both(*fs):
    def f(p):
        for g in fs:
            g(p)
    return f


def restride(stride):
    """Objects on another stride: offsets, data and manifest follow."""
    def f(p):
        h = p.header
        rb = p.entries[0]["pack_nbytes"]
        old = p.manifest["object_stride"]
        data = bytearray()
        for k in range(h["num_layers"] * h["num_experts"]):
            data += p.data[k * old:k * old + 3 * rb] + bytes(stride - 3 * rb)
        p.data = data
        for e in p.entries:
            k = e["layer"] * h["num_experts"] + e["expert"]
            e["pack_offset"] = h["data_start"] + k * stride + e["role_id"] * rb
        p.manifest["object_stride"] = stride
    return f


def vary_shapes(p):
    """Expert 1 of every layer records other shapes of the same weights
    than the others: gate's dimensions swapped, up's as one row of rank 1,
    down's second dimension split in two (rank 3).  Both checkers leave
    shapes free, so the pack stays valid."""
    for e in p.entries:
        if e["expert"] != 1:
            continue
        ne0, ne1 = e["shape"][:2]
        e["rank"], e["shape"] = ((2, [ne1, ne0]), (1, [ne0 * ne1]),
                                 (3, [ne0, ne1 // 2, 2]))[e["role_id"]]


def raw_entry(i, offset, b):
    """Entry i's bytes at offset replaced by b (after serialization)."""
    def f(p):
        raw = bytearray(pack_entry(p.entries[i]))
        raw[offset:offset + len(b)] = b
        p.entries[i] = bytes(raw)
    return f


def post(fn):
    def f(p):
        p.post = fn
    return f


def corpus(out):
    c = Corpus(out)
    base = c.base
    h = base.header
    src_hex, model_hex, config_hex = h["source"], h["model"], h["config"]
    dims = "layers=2,experts=4,topk=2"
    direct = "direct I/O"
    A = c.case

    # ---- valid packs, and what the reference leaves free
    A("valid", "-", "ok", "passes", direct)
    A("valid_opts", dims + ",src=%s,model=%s,config=%s" % (src_hex, model_hex, config_hex),
      "ok", "passes: the loader's arguments")
    A("valid_upper", "src=%s" % src_hex.upper(), "ok",
      "runtime 7: an upper-case digest never matches (moepack compares either case)")
    c.write("valid_full", copy.deepcopy(base))
    c.expect("valid_full", "full,source=source.gguf", "ok", "validate.py --full passes")
    c.expect("valid_runtime", "runtime,pack=valid.pack", "ok", "passes")
    c.expect("valid_nosamples", "source=source.gguf,nosamples,pack=valid.pack", "ok", "passes")
    with open(c.path("valid.pack.manifest.json"), "rb") as f, open(c.path("other.json"), "wb") as g:
        g.write(f.read())
    c.expect("valid_manifest_given", "pack=valid.pack,manifest=other.json", "ok", "passes")
    os.symlink("valid.pack", c.path("link.pack"))
    c.expect("valid_link", "pack=link.pack", "ok",
             "runtime 1: the manifest is looked for beside the resolved pack")
    A("ok_unsorted", "-", "ok", "passes: neither checker wants entries in order",
      "not in (layer, expert, role) order: entry 3 is (0, 0, 0) after (0, 1, 2)",
      mutate=lambda p: setattr(p, "entries", p.entries[3:6] + p.entries[0:3] + p.entries[6:]))
    A("ok_flags_extra", "-", "ok", "passes: extra flag bits are free", mutate=hdr(flags=0xff))
    A("ok_generation_zero", "-", "ok", "passes: generation values are free",
      mutate=both(ent(3, generation=0), ent(4, generation=0), ent(5, generation=0)))
    A("ok_text_after_nul", "-", "ok", "passes: text after the first NUL is ignored",
      mutate=raw_entry(0, 8, b"MXFP4\0junk"))
    A("ok_shape_tail", "-", "ok", "passes: shape beyond rank is not read",
      mutate=raw_entry(2, 248 + 16, struct.pack("<Q", 5)))
    A("ok_shape_per_expert", "-", "ok",
      "passes: shapes are free; the model reads expert 0's of each layer", mutate=vary_shapes)
    A("ok_pack_path_relative", "-", "ok",
      "validate.py resolves pack_path against the current directory; moepack against "
      "the manifest's", mutate=man("pack_path", "ok_pack_path_relative.pack"))
    A("ok_pack_sha_absent", "-", "ok", "passes: pack_sha256 is read only to verify",
      mutate=man("pack_sha256", None, delete=True))
    A("ok_pack_sha_null", "-", "ok", "passes: pack_sha256 is read only to verify",
      mutate=man("pack_sha256", None), fix=("index", "size"))
    c.expect("ok_pack_sha_null_runtime", "runtime,pack=ok_pack_sha_null.pack", "ok", "passes")
    A("minimal_manifest", "runtime", "ok",
      "runtime: only complete and object_stride are read",
      mutate=lambda p: setattr(p, "manifest", {"complete": True,
                                               "object_stride": p.manifest["object_stride"]}))
    c.expect("minimal_manifest_strict", "pack=minimal_manifest.pack",
             "manifest_missing_key", "validate.py: KeyError", "manifest key is missing: format")
    big = build(hidden=256, inter=512, alignment=4096)
    c.write("ok_page_aligned", big, source=big.source)
    c.expect("ok_page_aligned", "full,source=ok_page_aligned.gguf", "ok",
             "passes, and the loader's direct I/O takes it", "nowarn")

    # ---- runtime 1-3: files, JSON, complete
    c.write("manifest_missing", copy.deepcopy(base))
    os.unlink(c.path("manifest_missing.pack.manifest.json"))
    c.expect("manifest_missing", "-", "manifest_io", "runtime 1: FileNotFoundError",
             "cannot read manifest", "manifest_missing.pack.manifest.json")
    c.expect("source_missing", "source=nonexistent.gguf,pack=valid.pack", "gguf_io",
             "validate.py: FileNotFoundError", "nonexistent.gguf")
    for name, text, code, frag, ref in (
            ("manifest_not_json", b'{"complete": true,', "manifest_json", ":1:", "JSONDecodeError"),
            ("manifest_bom", b'\xef\xbb\xbf{"complete": true}', "manifest_json", "", "JSONDecodeError"),
            ("manifest_array", b"[1, 2]", "manifest_wrong_type", "top level", "AttributeError"),
            ("manifest_bad_utf8", b'{"complete": true, "x": "\xff"}', "manifest_json", "",
             "UnicodeDecodeError"),
            ("manifest_dup_key", b'{"complete": true, "complete": true}', "manifest_json",
             "duplicate", "passes step 2 (last key wins); moepack refuses duplicates")):
        c.write(name, copy.deepcopy(base), raw_manifest=text)
        c.expect(name, "-", code, "runtime 2: " + ref, *((frag,) if frag else ()))
    A("complete_missing", "-", "manifest_missing_key", "runtime 3: not complete", "complete",
      mutate=man("complete", None, delete=True))
    A("complete_false", "-", "incomplete", "runtime 3: not complete", "complete is false",
      mutate=man("complete", False))
    for name, v, ref in (("complete_string", "false", "passes: \"false\" is truthy"),
                         ("complete_one", 1, "passes: 1 is truthy"),
                         ("complete_zero", 0, "runtime 3: not complete"),
                         ("complete_null", None, "runtime 3: not complete")):
        A(name, "-", "manifest_wrong_type", ref, "complete is", mutate=man("complete", v))

    # ---- runtime 4: the header
    A("header_short", "-", "ep_header_truncated", "runtime 4: header is truncated",
      "has 100 bytes", mutate=post(lambda b: b[:100]))
    A("header_empty", "-", "ep_header_truncated", "runtime 4: header is truncated",
      "has 0 bytes", mutate=post(lambda b: b""))
    A("magic_v2", "-", "header_magic", "runtime 4: magic or version", "SGLANG-EXPERTPACK-v2",
      mutate=hdr(magic=b"SGLANG-EXPERTPACK-v2"))
    A("magic_tail", "-", "header_magic", "runtime 4: magic or version", "\\x00X",
      mutate=hdr(magic=b"SGLANG-EXPERTPACK-v1\0\0\0X"))
    A("magic_kimi", "-", "header_magic", "runtime 4: magic or version", "GGMLMOEPACKv1",
      mutate=hdr(magic=b"GGMLMOEPACKv1"))
    A("version_2", "-", "header_version", "runtime 4: magic or version", "version is 2",
      mutate=hdr(version=2))
    A("header_bytes", "-", "ep_struct_sizes", "runtime 4: struct sizes", "header_bytes is 177",
      mutate=hdr(header_bytes=177))
    A("entry_bytes", "-", "ep_struct_sizes", "runtime 4: struct sizes", "entry_bytes 329",
      mutate=hdr(entry_bytes=329))
    A("index_count", "-", "ep_header_coverage", "runtime 4: coverage", "index_count is 25",
      mutate=hdr(index_count=25))
    A("role_count", "-", "ep_header_coverage", "runtime 4: coverage", "role_count is 4",
      mutate=hdr(role_count=4))
    for flags in (0, 1, 2):
        A("flags_%d" % flags, "-", "ep_header_flags", "runtime 4: not identity triplet layout",
          "flags is 0x%x" % flags, mutate=hdr(flags=flags))
    A("alignment_0", "-", "alignment", "runtime 4: alignment is invalid (validate.py: "
      "ZeroDivisionError)", "header alignment is 0", mutate=hdr(alignment=0))
    A("alignment_3", "-", "alignment", "runtime 4: alignment is invalid",
      "header alignment is 3", mutate=hdr(alignment=3))
    A("data_start_low", "-", "data_overlaps_index", "runtime 4: data offset is invalid",
      "data_start is 8000", "ends at byte 8048", mutate=hdr(data_start=8000))
    A("data_start_unaligned", "-", "ep_data_start", "runtime 4: data offset is invalid",
      "data_start 8200", mutate=hdr(data_start=8200))
    huge = 65535 * 65535 * 3
    huge_start = align_up(176 + 328 * huge, 256)
    A("huge_header", "-", "ep_entry_role_rank",
      "runtime 5: role or rank invalid in the zero padding (validate.py: MemoryError)",
      "entry 24 has rank 0",
      mutate=hdr(num_layers=65535, num_experts=65535, index_count=huge, data_start=huge_start))
    A("huge_header_truncated", "-", "index_truncated", "runtime 5: index is truncated",
      "entry 24 of %d" % huge,
      mutate=both(hdr(num_layers=65535, num_experts=65535, index_count=huge,
                      data_start=huge_start), post(lambda b: b[:176 + 24 * 328])))

    # ---- runtime 5: every entry read
    A("index_truncated", "-", "index_truncated", "runtime 5: index is truncated",
      "entry 11 of 24", mutate=post(lambda b: b[:4000]))
    A("role_3", "-", "ep_entry_role_rank", "runtime 5: role or rank", "entry 5 has role_id 3",
      mutate=ent(5, role_id=3))
    A("rank_0", "-", "ep_entry_role_rank", "runtime 5: role or rank", "entry 6 has rank 0",
      mutate=ent(6, rank=0))
    A("rank_5", "-", "ep_entry_role_rank", "runtime 5: role or rank", "entry 6 has rank 5",
      mutate=ent(6, rank=5, shape=[64, 32, 1, 1]))
    for name, off, b, field in (("text_name", 24 + 4, b"\xff", "tensor_name"),
                                ("text_dtype", 8 + 2, b"\xc3\x28", "dtype"),
                                ("text_quant", 280 + 1, b"\xed\xa0\x80", "quant_scheme"),
                                ("text_transform", 296, b"\xf4\x90\x80\x80", "transform_id")):
        A(name, "-", "ep_entry_text", "runtime 5: UnicodeDecodeError",
          "entry 7 %s is" % field, mutate=raw_entry(7, off, b))

    # ---- runtime 6, 7: the caller's dimensions and digests
    A("dims_layers", "layers=3,experts=4,topk=2", "expect_layers",
      "runtime 6: dimensions (2, 4, 2) != (3, 4, 2)", "num_layers is 2, expected 3")
    A("dims_experts", "layers=2,experts=5,topk=2", "expect_experts",
      "runtime 6: dimensions", "num_experts is 4, expected 5")
    A("dims_topk", "layers=2,experts=4,topk=6", "expect_top_k", "runtime 6: dimensions",
      "top_k is 2, expected 6")
    other = sha(b"another")
    for name, key, field in (("digest_source", "src", "source_blob_sha256"),
                             ("digest_model", "model", "model_identity_sha256"),
                             ("digest_config", "config", "config_sha256")):
        A(name, "%s=%s" % (key, other), "expect_digest",
          "runtime 7: %s does not match configured digest" % field, "header " + field)

    # ---- runtime 8: the entries, keyed, in file order
    A("duplicate", "-", "ep_entry_duplicate", "runtime 8: duplicate entry",
      "(0, 0, 0): entry 1 repeats entry 0", mutate=ent(1, role_id=0))
    A("dtype", "-", "ep_entry_dtype", "runtime 8: unsupported dtype",
      "(0, 1, 0): entry 3 dtype is \"Q4_K\"", mutate=ent(3, dtype="Q4_K"))
    A("quant_scheme", "-", "ep_entry_dtype",
      "runtime 8: unsupported dtype (it names dtype)", "entry 3 quant_scheme is \"MXFP8\"",
      mutate=ent(3, quant_scheme="MXFP8"))
    A("transform", "-", "ep_entry_transform", "runtime 8: unsupported transform",
      "transform_id is \"identity-v2\"", mutate=ent(8, transform_id="identity-v2"))
    A("block_size", "-", "ep_entry_transform", "runtime 8: unsupported transform",
      "block_size is 16", mutate=ent(8, block_size=16))
    A("identity_size", "-", "ep_entry_identity_size", "runtime 8: non-identity size",
      "pack_nbytes is 1088, source_slice_nbytes 1087", mutate=ent(4, source_slice_nbytes=1087))
    A("role_size", "-", "ep_role_size", "runtime 8: roles are not fixed size",
      "entry 7 (0, 2, 1) has pack_nbytes 1105",
      mutate=ent(7, pack_nbytes=1105, source_slice_nbytes=1105))
    A("generation", "-", "ep_generation", "runtime 8: mixed generation",
      "object (0, 1): entry 5 (down)", mutate=ent(5, generation=12345))
    A("outside_duplicate", "-", "ep_entry_duplicate", "runtime 8: duplicate (0, 9, 0)",
      "(0, 9, 0): entry 9 repeats entry 6",
      mutate=both(ent(6, expert=9), ent(9, expert=9, role_id=0)))
    A("outside_generation", "-", "ep_generation", "runtime 8: mixed generation in (0, 9)",
      "object (0, 9): entry 10",
      mutate=both(ent(9, expert=9), ent(10, expert=9, generation=77)))

    # ---- runtime 9 to 12
    empty = build(layers=0)
    c.write("empty", empty)
    c.expect("empty", "-", "ep_empty", "runtime 9: AssertionError", "num_layers is 0")
    A("stride_missing", "-", "manifest_missing_key", "runtime 10: KeyError", "object_stride",
      mutate=man("object_stride", None, delete=True))
    A("stride_string", "-", "manifest_wrong_type", "passes: int() takes \"3328\"",
      "object_stride is a string", mutate=man("object_stride", "3328"))
    A("stride_real", "-", "manifest_wrong_type", "passes: int() takes 3328.0",
      "object_stride is a real number", mutate=man("object_stride", 3328.0))
    A("stride_small", "-", "ep_object_stride", "runtime 10: stride smaller than payload",
      "object_stride is 3263", mutate=man("object_stride", 3263))
    A("stride_negative", "-", "ep_object_stride", "runtime 10: stride smaller than payload",
      "object_stride is -1", mutate=man("object_stride", -1))
    A("file_long", "-", "ep_file_size", "runtime 11: size does not match",
      "the pack has 34817 bytes", mutate=lambda p: p.data.extend(b"\0"))
    A("file_short", "-", "ep_file_size", "runtime 11: size does not match",
      "the pack has 31488 bytes", mutate=lambda p: p.data.__delitem__(slice(-3328, None)))
    A("stride_other", "-", "ep_file_size", "runtime 11: size does not match",
      "object_stride 3584", mutate=man("object_stride", 3584))
    A("outside_expert", "-", "ep_entry_missing", "runtime 12: KeyError((0, 3, 2))",
      "no entry for (0, 3, 2): entry 11 is (0, 9, 2), outside 2 layers x 4 experts",
      mutate=ent(11, expert=9))
    A("outside_layer", "-", "ep_entry_missing", "runtime 12: KeyError((1, 0, 0))",
      "no entry for (1, 0, 0): entry 12 is (7, 0, 0)", mutate=ent(12, layer=7))
    A("layout", "-", "ep_object_layout", "runtime 12: layout mismatch at (0, 1, 1)",
      "(0, 1, 1): entry 4 pack_offset is 12672, must be 12608",
      mutate=ent(4, pack_offset=base.entries[4]["pack_offset"] + 64))
    A("layout_swapped", "-", "ep_object_layout", "runtime 12: layout mismatch at (0, 0, 0)",
      "(0, 0, 0): entry 0 pack_offset is 9280",
      mutate=both(ent(0, pack_offset=base.entries[1]["pack_offset"]),
                  ent(1, pack_offset=base.entries[0]["pack_offset"])))

    # ---- runtime 13 and the full read
    A("pack_sha", "full", "full_digest", "runtime 13: SHA-256 does not match",
      "pack_sha256 " + "0" * 64, mutate=man("pack_sha256", "0" * 64), fix=("index", "size"))
    A("pack_sha_missing", "full", "full_digest_missing",
      "runtime 13: an absent pack_sha256 never matches",
      "the manifest has no whole-file digest: no pack_sha256 in",
      "'moepack mkdemo --format expertpack-v1' does without --sparse",
      mutate=man("pack_sha256", None, delete=True))
    A("pack_sha_null", "full", "full_digest_missing",
      "runtime 13: a null pack_sha256 is taken as none, and never matches",
      "the manifest has no whole-file digest: no pack_sha256 in",
      mutate=man("pack_sha256", None), fix=("index", "size"))
    A("pack_sha_number", "full", "manifest_wrong_type",
      "runtime 13: a pack_sha256 that is not a string never matches",
      "pack_sha256 is an integer, must be a string",
      mutate=man("pack_sha256", 5), fix=("index", "size"))

    def flip_payload(p):
        p.data[3 * 3328 + 1088 + 5] ^= 0x40  # object (0, 3), up
    A("payload_flip", "full", "ep_entry_digest", "validate.py --full: checksum mismatch",
      "(0, 3, 1) bytes hash to", mutate=flip_payload)
    c.expect("payload_flip_quiet", "pack=payload_flip.pack", "ok",
             "passes: the runtime reads no payload")

    # ---- stricter: the manifest
    A("format_missing", "-", "manifest_missing_key", "validate.py: not a complete manifest",
      "format", mutate=man("format", None, delete=True))
    A("format_other", "-", "format", "validate.py: not a complete manifest",
      "SGLANG-KIMI-GGMLMOEPACK-ADAPTER-v1",
      mutate=man("format", "SGLANG-KIMI-GGMLMOEPACK-ADAPTER-v1"))
    c.expect("format_other_runtime", "runtime,pack=format_other.pack", "ok",
             "passes: the runtime reads no format")
    A("pack_path_missing", "-", "manifest_missing_key", "validate.py: KeyError", "pack_path",
      mutate=man("pack_path", None, delete=True))
    A("pack_path_other", "-", "pack_path", "validate.py: pack path does not match",
      "valid.pack", mutate=man("pack_path", c.path("valid.pack")))
    A("pack_path_none", "-", "pack_path", "validate.py: pack path does not match",
      "nowhere.pack", mutate=man("pack_path", "/nonexistent/nowhere.pack"))
    A("pack_path_number", "-", "manifest_wrong_type", "validate.py: TypeError",
      "pack_path is an integer", mutate=man("pack_path", 7))
    A("pack_size", "-", "pack_size", "validate.py: pack size does not match",
      "pack_size is 34815", mutate=man("pack_size", 34815), fix=("index", "full"))
    A("pack_size_string", "-", "manifest_wrong_type", "passes: int() takes \"34816\"",
      "pack_size is a string", mutate=man("pack_size", "34816"), fix=("index", "full"))
    A("index_sha", "-", "index_digest", "validate.py: index SHA-256 does not match "
      "(the runtime never checks it)", "index_sha256 " + other,
      mutate=man("index_sha256", other), fix=("size", "full"))
    A("index_sha_upper", "-", "manifest_bad_value", "validate.py: index SHA-256 does not match",
      "index_sha256 must be 64 lowercase hex digits",
      after=lambda m: m.update(index_sha256=m["index_sha256"].upper()))
    for key, value, frag in (
            ("model.model_identity_sha256", other, "header model_identity_sha256"),
            ("source.sha256", other, "header source_blob_sha256"),
            ("model.config_sha256", other, "header config_sha256"),
            ("model.num_layers", 3, "header num_layers is 2, model.num_layers is 3"),
            ("model.num_routed_experts", 5, "num_experts is 4, model.num_routed_experts is 5"),
            ("model.top_k", 6, "header top_k is 2, model.top_k is 6"),
            ("index_count", 25, "header index_count is 24, index_count is 25"),
            ("data_start", 8448, "header data_start is 8192, data_start is 8448"),
            ("alignment", 512, "header alignment is 256, alignment is 512")):
        A("manifest_" + key.replace(".", "_"), "-", "ep_header_manifest",
          "validate.py: pack header %s does not match manifest" % key, frag,
          mutate=man(key, value))
    A("manifest_num_layers_string", "-", "manifest_wrong_type",
      "validate.py: \"2\" != 2, header does not match", "model.num_layers is a string",
      mutate=man("model.num_layers", "2"))
    A("top_k_zero", "-", "ep_top_k", "passes: top-k is free", "header top_k is 0",
      mutate=both(hdr(top_k=0), man("model.top_k", 0)))
    A("top_k_large", "-", "ep_top_k", "passes: top-k is free", "header top_k is 5, num_experts 4",
      mutate=both(hdr(top_k=5), man("model.top_k", 5)))
    A("pack_sha_bad", "-", "manifest_bad_value", "passes: pack_sha256 is read only to verify",
      "pack_sha256 must be 64", mutate=man("pack_sha256", "xyz"), fix=("index", "size"))
    A("tensors_missing", "-", "manifest_missing_key", "validate.py: KeyError", "tensors",
      mutate=man("tensors", None, delete=True))
    A("tensor_category_missing", "-", "manifest_missing_key", "validate.py: KeyError",
      "tensors[3].category", mutate=man("tensors.3.category", None, delete=True))
    A("coverage_non_routed", "-", "ep_tensor_coverage", "validate.py: non-routed coverage",
      "tensors has 2 non_routed, coverage.non_routed_tensor_count is 3",
      mutate=man("coverage.non_routed_tensor_count", 3))
    A("coverage_routed", "-", "ep_tensor_coverage", "validate.py: routed coverage",
      "tensors has 6 routed_expert", mutate=man("coverage.routed_tensor_count", 5))
    A("tensor_duplicate", "-", "ep_tensor_coverage",
      "passes: the last of the two wins (no entry names it)",
      "tensors[7].name \"output_norm.weight\" is also tensors[6]'s",
      mutate=man("tensors.7.name", "output_norm.weight"))
    A("tensor_offset_string", "-", "manifest_wrong_type",
      "validate.py: the entry's offset != \"...\"", "tensors[0].source_offset is a string",
      mutate=man("tensors.0.source_offset", "416"))

    # ---- stricter: each entry (validate.py's, then moepack's own)
    A("object_unaligned", "-", "ep_object_alignment", "validate.py: object (0, 1) is not aligned",
      "object (0, 1) starts at byte 11456", mutate=restride(3264))
    c.expect("object_unaligned_runtime", "runtime,pack=object_unaligned.pack",
             "ok", "passes: the runtime does not align objects", direct)
    A("shape_zero", "-", "ep_entry_shape", "validate.py: invalid role shape (64, 0)",
      "(0, 0, 1) entry 1: shape[1] is 0", mutate=ent(1, shape=[64, 0]))
    A("name_no_nul", "-", "ep_entry_name", "validate.py: tensor_name is too long",
      "(0, 0, 2) entry 2 tensor_name fills its 80 bytes", mutate=ent(2, tensor_name="a" * 80))
    A("name_unknown", "-", "ep_entry_tensor", "validate.py: does not map to a routed tensor",
      "\"blk.0.ffn_gate_exps.bias\" is not in tensors",
      mutate=ent(3, tensor_name="blk.0.ffn_gate_exps.bias"))
    A("name_non_routed", "-", "ep_entry_tensor", "validate.py: does not map to a routed tensor",
      "\"token_embd.weight\" is tensors[", mutate=ent(3, tensor_name="token_embd.weight"))
    A("name_other_role", "-", "ep_entry_source",
      "validate.py: source tensor offset mismatch (the name is routed, of another role)",
      "(0, 1, 0) entry 3 source_tensor_offset is", mutate=ent(3, tensor_name=tensor_name(0, "up")))
    A("checksum", "-", "ep_entry_checksum", "validate.py: not an auditable identity transform",
      "(1, 2, 1) entry 19 checksum differs", mutate=ent(19, checksum=other))
    A("source_offset", "-", "ep_entry_source", "validate.py: source tensor offset mismatch",
      "source_tensor_offset is", mutate=lambda p: p.entries[13].update(
          source_tensor_offset=p.entries[13]["source_tensor_offset"] + 17))
    A("source_nbytes", "-", "ep_entry_source", "validate.py: source tensor size mismatch",
      "source_tensor_nbytes is 4369", mutate=ent(13, source_tensor_nbytes=4369))
    A("source_sha", "-", "ep_entry_source", "validate.py: source tensor hash mismatch",
      "source_tensor_sha256 differs", mutate=ent(13, source_tensor_sha256=other))
    A("slice_offset", "-", "ep_entry_slice", "validate.py: source slice offset mismatch",
      "(1, 1, 0) entry 15 source_slice_offset", mutate=lambda p: p.entries[15].update(
          source_slice_offset=p.entries[15]["source_slice_offset"] + 1088))

    def short_tensor(p):
        """The manifest and every entry say blk.1.ffn_down is 3 slices long."""
        t = next(t for t in p.manifest["tensors"] if t["name"] == tensor_name(1, "down"))
        t["source_nbytes"] = 3 * 1088
        for e in p.entries:
            if e["tensor_name"] == t["name"]:
                e["source_tensor_nbytes"] = 3 * 1088
    A("slice_outside", "-", "ep_entry_slice", "validate.py: source slice is out of bounds",
      "(1, 3, 2) entry 23 slice ends past its tensor", mutate=short_tensor)

    def renamed(p):
        """gate of layer 0 under another name, in the manifest as in the index"""
        t = next(t for t in p.manifest["tensors"] if t["name"] == tensor_name(0, "gate"))
        t["name"] = "blk.0.ffn_gate_shexp.weight"
        for e in p.entries:
            if e["tensor_name"] == tensor_name(0, "gate"):
                e["tensor_name"] = t["name"]
    A("name_not_canonical", "-", "ep_entry_name", "passes: any routed tensor name is taken",
      "tensor_name is \"blk.0.ffn_gate_shexp.weight\", must be \"blk.0.ffn_gate_exps.weight\"",
      mutate=renamed)
    A("dtype_id", "-", "ep_entry_dtype", "passes: dtype_id is not checked",
      "(0, 2, 2) entry 8: dtype_id is 10", mutate=ent(8, dtype_id=10))
    A("shape_bytes", "-", "ep_entry_shape", "passes: shape is not compared with the size",
      "(0, 0, 0) entry 0: its row of 64 weights", mutate=ent(0, shape=[64, 16]))
    A("shape_row", "-", "ep_entry_shape", "passes: shape is not compared with the size",
      "its row of 48 weights", mutate=ent(0, shape=[48, 32]))

    def long_tensor(p):
        t = next(t for t in p.manifest["tensors"] if t["name"] == tensor_name(1, "up"))
        t["source_nbytes"] += 17
        for e in p.entries:
            if e["tensor_name"] == t["name"]:
                e["source_tensor_nbytes"] = t["source_nbytes"]
    A("tensor_long", "-", "ep_entry_source", "passes: slices lie inside the tensor",
      "source_tensor_nbytes is 4369, num_experts x role_bytes is 4352", mutate=long_tensor)

    # ---- the source file
    A("source_size", "source=source.gguf", "ep_source_size", "validate.py: source size",
      "source.size is %d" % (len(base.source) + 1),
      mutate=man("source.size", len(base.source) + 1))
    A("source_tensor_sha", "full,source=source.gguf", "ep_source_tensor",
      "validate.py --full: source tensor hash mismatch", "tensors[6] (output_norm.weight)",
      mutate=man("tensors.6.source_payload_sha256", other))
    c.expect("source_tensor_sha_quiet",
             "source=source.gguf,pack=source_tensor_sha.pack", "ok",
             "passes: only --full hashes the source tensors")
    meta = bytearray(base.source)
    meta[40] ^= 1  # inside the metadata: no tensor's bytes
    c.write("source_meta", copy.deepcopy(base), source=bytes(meta))
    c.expect("source_meta", "full,source=source_meta.gguf", "ep_source_digest",
             "validate.py --full: source file SHA-256 does not match", "source.sha256 is")
    c.expect("source_meta_quiet", "source=source_meta.gguf,pack=source_meta.pack",
             "ok", "passes: the sampled slices are intact")
    slice_bad = bytearray(base.source)
    slice_bad[base.entries[20]["source_slice_offset"] + 100] ^= 0x10
    c.write("source_slice", copy.deepcopy(base), source=bytes(slice_bad))
    c.expect("source_slice", "source=source_slice.gguf", "ep_source_bytes",
             "validate.py: source/pack bytes differ for (1, 2, 2)",
             "entry (1, 2, 2): entry 20, byte 100 of the slice")
    c.expect("source_slice_full", "full,source=source_slice.gguf,"
             "pack=source_slice.pack", "ep_source_tensor",
             "validate.py --full: source tensor hash mismatch", "blk.1.ffn_down_exps.weight")
    c.expect("source_slice_nosamples", "source=source_slice.gguf,nosamples,"
             "pack=source_slice.pack", "ok",
             "validate.py --source-range-samples 0 passes")

    # the validator's sample of 3 of the 24 entries: a slice it draws, one it does not
    picks = random.Random(int(src_hex[:16], 16)).sample(range(len(base.entries)), 3)
    unpicked = next(j for j in range(len(base.entries)) if j not in picks)
    for name, j, code in (("source_sampled", picks[1], "ep_source_bytes"),
                          ("source_unsampled", unpicked, "ok")):
        bad = bytearray(base.source)
        bad[base.entries[j]["source_slice_offset"] + 7] ^= 0x01
        c.write(name, copy.deepcopy(base), source=bytes(bad))
        e = base.entries[j]
        c.expect(name, "source=%s.gguf,samples=3" % name, code,
                 "validate.py --source-range-samples 3 draws entries %s" % picks,
                 *(("entry (%d, %d, %d): entry %d, byte 7" % (e["layer"], e["expert"],
                                                             e["role_id"], j),)
                   if code != "ok" else ()))

    # ---- order: two faults, the check the reference reaches first wins
    A("order_flags_role", "-", "ep_header_flags", "runtime 4 before 5", "flags is 0x1",
      mutate=both(hdr(flags=1), ent(2, role_id=3)))
    A("order_role_dims", "layers=3,experts=4,topk=2", "ep_entry_role_rank",
      "runtime 5 (every entry) before 6", "entry 23 has rank 0", mutate=ent(23, rank=0))
    A("order_dims_digest", "layers=3,src=" + other, "expect_layers", "runtime 6 before 7",
      "num_layers is 2")
    A("order_digests", "src=%s,model=%s" % (other, other), "expect_digest",
      "runtime 7: source digest first", "source_blob_sha256")
    A("order_digest_dup", "config=" + other, "expect_digest", "runtime 7 before 8",
      "config_sha256", mutate=ent(1, role_id=0))
    A("order_gen_dtype", "-", "ep_generation", "runtime 8: file order, entry 4 first",
      "entry 4", mutate=both(ent(4, generation=5), ent(10, dtype="F16")))
    A("order_dtype_gen", "-", "ep_entry_dtype", "runtime 8: file order, entry 2 first",
      "entry 2", mutate=both(ent(2, dtype="F16"), ent(4, generation=5)))
    A("order_outside_dtype", "-", "ep_entry_dtype", "runtime 8 before 12", "entry 20",
      mutate=both(ent(11, expert=9), ent(20, dtype="F16")))
    A("order_dup_stride", "-", "ep_entry_duplicate", "runtime 8 before 10", "(0, 0, 0)",
      mutate=both(ent(1, role_id=0), man("object_stride", 100)))
    A("order_outside_stride", "-", "ep_object_stride", "runtime 10 before 12",
      "object_stride is 100", mutate=both(ent(11, expert=9), man("object_stride", 100)))
    A("order_stride_size", "-", "ep_object_stride", "runtime 10 before 11", "object_stride is 100",
      mutate=both(man("object_stride", 100), lambda p: p.data.extend(b"\0")))
    A("order_size_layout", "-", "ep_file_size", "runtime 11 before 12", "34817 bytes",
      mutate=both(lambda p: p.data.extend(b"\0"), ent(4, pack_offset=9000)))
    A("order_layout_format", "-", "ep_object_layout", "runtime before stricter", "(0, 1, 1)",
      mutate=both(ent(4, pack_offset=9000), man("format", "other")))
    A("order_full_format", "full", "full_digest", "runtime 13 before stricter",
      "pack SHA-256", mutate=both(man("pack_sha256", other), man("format", "other")),
      fix=("index", "size"))
    A("order_format_path", "-", "format", "validate.py: format before pack_path", "format is",
      mutate=both(man("format", "other"), man("pack_path", "/nonexistent")))
    A("order_index_header", "-", "index_digest", "validate.py: index digest before header",
      "index_sha256", mutate=both(man("index_sha256", other), man("model.top_k", 9)),
      fix=("size", "full"))
    A("order_key_not_file", "-", "ep_entry_checksum",
      "validate.py walks keys: (0, 1, 0) before (1, 0, 0) whatever the file order",
      "(0, 1, 0) entry 4 checksum",
      mutate=both(ent(3, checksum=other), ent(12, source_tensor_sha256=other),
                  lambda p: p.entries.insert(0, p.entries.pop(12))))
    A("order_role_before_align", "-", "ep_entry_checksum",
      "validate.py: object (0, 0)'s roles before object (0, 1)'s alignment",
      "(0, 0, 2) entry 2 checksum", mutate=both(restride(3264), ent(2, checksum=other)))
    A("order_align_before_role", "-", "ep_object_alignment",
      "validate.py: object (0, 1)'s alignment before its roles", "object (0, 1)",
      mutate=both(restride(3264), ent(3, checksum=other)))
    A("order_ref_before_ours", "-", "ep_entry_checksum",
      "validate.py's check at (1, 3, 2) before moepack's own at (0, 0, 0)",
      "(1, 3, 2) entry 23", mutate=both(ent(0, dtype_id=10), ent(23, checksum=other)))
    A("order_strict_digest", "full", "format", "stricter checks before entry checksums",
      "format is", mutate=both(flip_payload, man("format", "other")))
    A("order_digest_source", "full,source=source.gguf", "ep_entry_digest",
      "entry checksums before the source", "(0, 3, 1)",
      mutate=both(flip_payload, man("source.size", 1)))
    c.finish()


# ---- the full-geometry sparse pack --------------------------------------------

def sparse(out, layers, experts, top_k, hidden, inter, alignment, data_start=0):
    """Header and index of that geometry, the data a hole; no source file.
    data_start (a multiple of alignment, past the index; 0: right after it)
    puts the objects that far in, the zeros before them a hole too."""
    role = hidden * inter // BLOCK * BLOCK_BYTES
    tensors, offset = [{"name": "token_embd.weight", "typ": 0, "ne": [hidden, 1024],
                        "offset": 1 << 20, "nbytes": hidden * 1024 * 4}], 0
    offset = align_up((1 << 20) + hidden * 1024 * 4, GGUF_ALIGN)
    zero_tensor = hashlib.sha256()
    chunk = bytes(1 << 24)
    left = experts * role
    while left:
        zero_tensor.update(chunk[:min(left, len(chunk))])
        left -= min(left, len(chunk))
    for layer in range(layers):
        for r in ROLES:
            ne = [hidden, inter] if r != "down" else [inter, hidden]
            tensors.append({"name": tensor_name(layer, r), "typ": MXFP4, "ne": ne + [experts],
                            "offset": offset, "nbytes": experts * role,
                            "sha256": zero_tensor.hexdigest()})
            offset = align_up(offset + experts * role, GGUF_ALIGN)
    tensors[0]["sha256"] = sha(b"token_embd")
    p = build(layers, experts, top_k, hidden, inter, alignment,
              source=(b"", tensors, 1 << 20), payload=False)
    if data_start:
        shift = data_start - p.header["data_start"]
        p.header["data_start"] = p.manifest["data_start"] = data_start
        for e in p.entries:
            e["pack_offset"] += shift
        p.size += shift
    p.manifest["pack_path"] = os.path.abspath(out)
    p.manifest["source"]["path"] = "/nonexistent/sparse-source.gguf"
    del p.manifest["pack_sha256"]
    blob_head = pack_header(p.header) + b"".join(pack_entry(e) for e in p.entries)
    p.manifest["index_sha256"] = sha(blob_head[HEADER.size:])
    p.manifest["pack_size"] = p.size
    with open(out, "wb") as f:
        f.write(blob_head)
        f.truncate(p.size)
    with open(out + ".manifest.json", "w") as f:
        f.write(json.dumps(p.manifest, ensure_ascii=False, indent=2, sort_keys=True) + "\n")


def single(out, layers, experts, top_k, hidden, inter, alignment, vary=0):
    """One valid pack OUT, its manifest and its source OUT.gguf (for the
    mount tests: a geometry whose objects can be 4096-aligned); vary: its
    experts 1 record other shapes (vary_shapes)."""
    p = build(layers, experts, top_k, hidden, inter, alignment,
              source=write_gguf(layers, experts, hidden, inter, 11))
    if vary:
        vary_shapes(p)
    c = Corpus.__new__(Corpus)
    c.out = os.path.dirname(os.path.abspath(out))
    c.source_path = os.path.abspath(out) + ".gguf"
    with open(c.source_path, "wb") as f:
        f.write(p.source)
    c.write(os.path.basename(out)[:-len(".pack")], p)


# ---- the reference builder, for byte identity --------------------------------

# GGML types: id -> (gguf-py name, weights per block, bytes per block)
GGML_TYPES = {0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20),
              6: ("Q5_0", 32, 22), 7: ("Q5_1", 32, 24), 8: ("Q8_0", 32, 34),
              9: ("Q8_1", 32, 36), 10: ("Q2_K", 256, 84), 11: ("Q3_K", 256, 110),
              12: ("Q4_K", 256, 144), 13: ("Q5_K", 256, 176), 14: ("Q6_K", 256, 210),
              15: ("Q8_K", 256, 292), 24: ("I8", 1, 1), 25: ("I16", 1, 2), 26: ("I32", 1, 4),
              27: ("I64", 1, 8), 28: ("F64", 1, 8), 30: ("BF16", 1, 2),
              MXFP4: ("MXFP4", BLOCK, BLOCK_BYTES)}
GGUF_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q",
                11: "q", 12: "d"}


def read_gguf(path):
    """-> (tensors [{name, ne, typ, offset (absolute), nbytes}], data offset)."""
    with open(path, "rb") as f:
        b = f.read()
    pos = [0]

    def take(fmt):
        v = struct.unpack_from("<" + fmt, b, pos[0])
        pos[0] += struct.calcsize("<" + fmt)
        return v[0]

    def text():
        n = take("Q")
        pos[0] += n
        return b[pos[0] - n:pos[0]].decode()

    def value(t):
        if t == 8:
            return text()
        if t == 9:
            et, n = take("I"), take("Q")
            return [value(et) for _ in range(n)]
        return take(GGUF_SCALARS[t])

    assert b[:4] == b"GGUF" and take("4s") and take("I") in (2, 3)
    count, nkv = take("Q"), take("Q")
    kv = {}
    for _ in range(nkv):
        k = text()
        kv[k] = value(take("I"))
    infos = []
    for _ in range(count):
        name = text()
        ne = [take("Q") for _ in range(take("I"))]
        infos.append((name, ne, take("I"), take("Q")))
    align = kv.get("general.alignment", 32)
    data = align_up(pos[0], align)
    tensors = []
    for name, ne, typ, off in infos:
        n = 1
        for d in ne:
            n *= d
        _, blk, size = GGML_TYPES[typ]
        tensors.append({"name": name, "ne": ne, "typ": typ, "offset": data + off,
                        "nbytes": n // blk * size})
    return b, tensors, data


def ref_slices(tensors, layers, experts):
    """The reference builder's checks, in its order; -> (by name, role bytes)."""
    by_name = {t["name"]: t for t in tensors}
    want = {tensor_name(l, r) for l in range(layers) for r in ROLES}
    have = {n for n in by_name if re.fullmatch(r"blk\.\d+\.ffn_(gate|up|down)_exps\.weight", n)}
    if want - have or have - want:
        raise SystemExit("routed-expert tensor coverage mismatch: missing=%s extra=%s"
                         % (sorted(want - have), sorted(have - want)))
    sizes = set()
    for layer in range(layers):
        for role in ROLES:
            t = by_name[tensor_name(layer, role)]
            if len(t["ne"]) != 3 or t["ne"][2] != experts:
                raise SystemExit("unexpected expert shape for layer=%d role=%s: %s"
                                 % (layer, role, t["ne"]))
            if t["nbytes"] % experts:
                raise SystemExit("expert tensor is not evenly sliceable: " + t["name"])
            _, blk, size = GGML_TYPES[t["typ"]]
            sl, want_sl = t["nbytes"] // experts, t["ne"][0] * t["ne"][1] // blk * size
            if sl != want_sl:
                raise SystemExit("quantized slice size mismatch for %s: %d != %d"
                                 % (t["name"], sl, want_sl))
            sizes.add(sl)
    if len(sizes) != 1:
        raise SystemExit("triplet v1 requires uniform role sizes, got %s" % sorted(sizes))
    return by_name, sizes.pop()


def inventory_sha256(tensors):
    h = hashlib.sha256()
    for t in sorted(tensors, key=lambda t: t["name"]):
        h.update((json.dumps({"kind": "tensor", "name": t["name"], "shape": t["ne"],
                              "type": GGML_TYPES[t["typ"]][0], "type_id": t["typ"],
                              "offset": t["offset"], "nbytes": t["nbytes"],
                              "sha256": t["sha256"]}, sort_keys=True) + "\n").encode())
    return h.hexdigest()


def refbuild(gguf, config, out, alignment=4096):
    src, tensors, data_offset = read_gguf(gguf)
    with open(config, "rb") as f:
        config_bytes = f.read()
    cfg = json.loads(config_bytes)
    layers, experts = cfg["num_hidden_layers"], cfg["n_routed_experts"]
    top_k = cfg["num_experts_per_tok"]
    for t in tensors:
        t["sha256"] = sha(src[t["offset"]:t["offset"] + t["nbytes"]])
    _, role_bytes = ref_slices(tensors, layers, experts)
    source_sha, config_sha = sha(src), sha(config_bytes)
    p = build(layers, experts, top_k, 0, 0, alignment, source=(src, tensors, data_offset),
              config_sha=config_sha, role_bytes=role_bytes)
    blob, index = p.serialize()
    man = p.manifest
    man["pack_path"] = os.path.realpath(out)
    man["pack_size"], man["pack_sha256"], man["index_sha256"] = len(blob), sha(blob), sha(index)
    man["created_at"] = "2026-12-02T00:00:00+00:00"
    man["model"]["ref"] = "deepseek-v4-flash"
    man["source"].update(path=os.path.realpath(gguf), size=len(src),
                         inventory_sha256=inventory_sha256(tensors))
    man["transform"] = {"id": "identity-v1", "reversible": True, "tool_sha256": sha(b""),
                        "description": "Contiguous source bytes; no dequantization, "
                                       "requantization, or value transform"}
    man["builder"] = {"git_sha": "unknown", "python": sys.version, "command": " ".join(sys.argv),
                      "started_at": man["created_at"], "elapsed_s": 0.0}
    with open(out, "wb") as f:
        f.write(blob)
    with open(out + ".manifest.json", "w", encoding="utf-8") as f:
        f.write(json.dumps(man, ensure_ascii=False, indent=2, sort_keys=True) + "\n")


def geometry_options(rest, opts):
    while rest:
        if rest[0] not in opts or len(rest) < 2:
            sys.exit("mkcorpus.py: unknown option " + rest[0])
        opts[rest[0]] = int(rest[1])
        rest = rest[2:]
    return [opts[k] for k in ("--layers", "--experts", "--top-k", "--hidden", "--inter",
                              "--alignment", "--vary-shapes") if k in opts]


def main(argv):
    if len(argv) == 2 and argv[0] == "corpus":
        corpus(argv[1])
        return 0
    if len(argv) == 4 and argv[0] == "sample":
        seed, n, k = (int(v) for v in argv[1:])
        print(" ".join(str(v) for v in random.Random(seed).sample(range(n), k)))
        return 0
    if len(argv) >= 2 and argv[0] == "sparse":
        opts = {"--layers": 43, "--experts": 256, "--top-k": 6, "--hidden": 4096,
                "--inter": 2048, "--alignment": 4096, "--data-start": 0}
        sparse(argv[1], *geometry_options(argv[2:], opts), data_start=opts["--data-start"])
        return 0
    if len(argv) == 4 and argv[0] == "refbuild":
        refbuild(*argv[1:])
        return 0
    if len(argv) >= 2 and argv[0] == "pack" and argv[1].endswith(".pack"):
        single(argv[1], *geometry_options(argv[2:], {
            "--layers": 2, "--experts": 4, "--top-k": 2, "--hidden": 256,
            "--inter": 512, "--alignment": 4096, "--vary-shapes": 0}))
        return 0
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
