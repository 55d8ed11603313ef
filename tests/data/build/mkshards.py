#!/usr/bin/env python3
"""mkshards.py - a small Kimi-K3-shaped split GGUF checkpoint for tests/build.test.

    python3 mkshards.py OUTDIR [--variant NAME] [--experts N] [--sparse]
    python3 mkshards.py OUTDIR --oracle ORACLE_DIR   # compare with ggml's writer

Writes OUTDIR/kimi-k3-test-0000i-of-00003.gguf (i = 1..3) and
OUTDIR/config.json.  The checkpoint has every tensor kind the builder looks
at: 92 MoE layers (1..92) of routed experts (up and gate Q2_K
[512, 1024, E], down Q3_K [1024, 512, E]), the MLA k_b (Q4_0) and v_b
(Q2_K) projections of layers 0..92, per-layer norms, token_embd and
output_norm.  The split keys are the ones llama.cpp's gguf-split writes
(split.no u16, split.count u16, split.tensors.count i32) in every shard;
general.* keys only in the first shard, the stock layout.

The GGUF writer here is plain Python (CI has no ggml).  It writes the same
bytes as ggml's own writer (gguf_write_to_file): with --oracle it writes
every shard both ways, through the ggml_oracle tool, and compares them
(see README).

Variants (each breaks one rule build and check-gguf must refuse):
  ok             the valid set
  arch           general.architecture "deepseek2"
  split-count    shard 2 says split.count 4
  duplicate      token_embd.weight also in shard 2
  v-q4k          blk.5.attn_v_b.weight is Q4_K
  up-q4k         blk.7.ffn_up_exps.weight is Q4_K
  everywhere     (valid) general.* in every shard, the reference's layout
  arch2          general.* in every shard, shard 2 says "llama"
  bad-name       (for build) output_norm.weight has a byte that is not UTF-8

--extra N adds N small 4-dimensional F32 tensors to each shard (a large
inventory, for the manifest limits).

--hidden and --inter change the expert geometry: --hidden 3584 --inter
3072 --experts 896 --sparse is Kimi-K3's, ~1 TB of holes.
"""
import argparse
import json
import os
import random
import struct
import sys

ALIGNMENT = 32  # ggml's default; no general.alignment key
SHARDS = 3
PREFIX = "kimi-k3-test"
HIDDEN = 512     # row length of up and gate
INTER = 1024     # row length of down
EMBD = 64

# ggml type id, weights per block, bytes per block
TYPES = {
    "F32": (0, 1, 4),
    "Q4_0": (2, 32, 18),
    "Q2_K": (10, 256, 84),
    "Q3_K": (11, 256, 110),
    "Q4_K": (12, 256, 144),
}

GGUF_U16, GGUF_U32, GGUF_I32, GGUF_STRING = 2, 4, 5, 8


def nbytes(tname, ne):
    _, bw, bb = TYPES[tname]
    n = ne[0] // bw * bb
    for d in ne[1:]:
        n *= d
    return n


def n_dims(ne):
    """ggml_n_dims(): trailing dimensions of 1 are not written."""
    n = 1
    for i, d in enumerate(ne):
        if d > 1:
            n = i + 1
    return n


def pad(n):
    return (n + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT


def gguf_string(s):
    b = s if isinstance(s, bytes) else s.encode()
    return struct.pack("<Q", len(b)) + b


def kv_bytes(key, value):
    vtype, v = value
    out = gguf_string(key) + struct.pack("<i", vtype)
    if vtype == GGUF_STRING:
        return out + gguf_string(v)
    fmt = {GGUF_U16: "<H", GGUF_U32: "<I", GGUF_I32: "<i"}[vtype]
    return out + struct.pack(fmt, v)


def write_gguf(path, tensors, kv, sparse=False):
    """tensors: [(name, type name, ne, data bytes or None)]; kv: [(key, (type, value))].
    None data is zeros, written as a hole when sparse."""
    meta = b"GGUF" + struct.pack("<IqQ", 3, len(tensors), len(kv))
    for key, value in kv:
        meta += kv_bytes(key, value)
    offset = 0
    for name, tname, ne, _ in tensors:
        meta += gguf_string(name) + struct.pack("<I", n_dims(ne))
        meta += b"".join(struct.pack("<q", d) for d in ne[:n_dims(ne)])
        meta += struct.pack("<iQ", TYPES[tname][0], offset)
        offset += pad(nbytes(tname, ne))
    meta += b"\0" * (pad(len(meta)) - len(meta))
    with open(path, "wb") as f:
        f.write(meta)
        for name, tname, ne, data in tensors:
            n = nbytes(tname, ne)
            if data is None and sparse:
                f.seek(pad(n), os.SEEK_CUR)
                continue
            if data is None:
                data = bytes(n)
            assert len(data) == n, name
            f.write(data)
            f.write(b"\0" * (pad(n) - n))
        f.truncate(f.tell())


def checkpoint(variant, experts, extra=0):
    """The shards' tensors and KV pairs: [([tensor], [kv])] * SHARDS."""
    def tensor(name, tname, ne, seed):
        return [name, tname, ne, seed]

    layers = []
    seed = 1
    for layer in range(0, 93):
        t = [tensor("blk.%d.attn_norm.weight" % layer, "F32", [EMBD], seed),
             tensor("blk.%d.attn_k_b.weight" % layer, "Q4_0", [128, 64, 2], seed + 1),
             tensor("blk.%d.attn_v_b.weight" % layer, "Q2_K", [256, 128, 2], seed + 2)]
        seed += 3
        if layer >= 1:
            for role in ("gate", "up"):  # llama.cpp's order, not the pack's
                t.append(tensor("blk.%d.ffn_%s_exps.weight" % (layer, role), "Q2_K",
                                [HIDDEN, INTER, experts], seed))
                seed += 1
            t.append(tensor("blk.%d.ffn_down_exps.weight" % layer, "Q3_K",
                            [INTER, HIDDEN, experts], seed))
            seed += 1
        layers.append(t)
    shards = [[tensor("token_embd.weight", "F32", [EMBD, 32], 0)], [], []]
    for layer in range(93):
        shards[min(layer // 31, SHARDS - 1)].extend(layers[layer])
    shards[-1].append(tensor("output_norm.weight", "F32", [EMBD], seed))

    for s in shards:
        for t in s:
            if variant == "v-q4k" and t[0] == "blk.5.attn_v_b.weight":
                t[1] = "Q4_K"
            if variant == "up-q4k" and t[0] == "blk.7.ffn_up_exps.weight":
                t[1] = "Q4_K"
    if variant == "duplicate":
        shards[1].insert(0, list(shards[0][0]))
    if variant == "bad-name":
        shards[-1][-1][0] = b"output_norm\xff.weight"
    for i, s in enumerate(shards):
        s.extend(tensor("x.%d.%d" % (i, k), "F32", [32, 2, 2, 2], 0) for k in range(extra))

    total = sum(len(s) for s in shards)
    out = []
    for i, s in enumerate(shards):
        kv = []
        # the reference's layout has general.* in every shard
        if i == 0 or variant in ("everywhere", "arch2"):
            arch = "deepseek2" if variant == "arch" else "kimi-k3"
            if variant == "arch2" and i == 1:
                arch = "llama"
            kv += [("general.architecture", (GGUF_STRING, arch)),
                   ("general.name", (GGUF_STRING, "Kimi-K3 test checkpoint")),
                   ("kimi-k3.block_count", (GGUF_U32, 93))]
        count = 4 if variant == "split-count" and i == 1 else SHARDS
        kv += [("split.no", (GGUF_U16, i)),
               ("split.count", (GGUF_U16, count)),
               ("split.tensors.count", (GGUF_I32, total))]
        out.append((s, kv))
    return out


def tensor_data(tname, ne, seed, zeros):
    if zeros:
        return None
    return random.Random(seed).randbytes(nbytes(tname, ne))


def config(experts):
    return {
        "architectures": ["KimiK3LinearForCausalLM"],
        "model_type": "kimi_linear",
        "text_config": {
            "num_hidden_layers": 93,
            "first_k_dense_replace": 1,
            "num_experts": experts,
            "num_experts_per_token": 16,
            "num_shared_experts": 2,
            "hidden_size": 7168,
            "routed_expert_hidden_size": HIDDEN,
            "moe_intermediate_size": INTER,
            "hidden_act": "situ",
            "activation_situ_beta": 4.0,
            "activation_situ_linear_beta": 25.0,
        },
    }


def shard_path(outdir, i):
    return os.path.join(outdir, "%s-%05d-of-%05d.gguf" % (PREFIX, i + 1, SHARDS))


def main():
    global HIDDEN, INTER
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--variant", default="ok")
    ap.add_argument("--experts", type=int, default=2)
    ap.add_argument("--extra", type=int, default=0, help="tiny tensors added to each shard")
    ap.add_argument("--hidden", type=int, default=HIDDEN, help="up/gate row length")
    ap.add_argument("--inter", type=int, default=INTER, help="down row length")
    ap.add_argument("--sparse", action="store_true",
                    help="zero payloads, as holes (for refusals: fast)")
    ap.add_argument("--oracle", help="directory of ggml_oracle.py: compare with ggml")
    a = ap.parse_args()
    HIDDEN, INTER = a.hidden, a.inter
    os.makedirs(a.outdir, exist_ok=True)
    plan = checkpoint(a.variant, a.experts, a.extra)
    for i, (tensors, kv) in enumerate(plan):
        ts = [(n, t, ne, tensor_data(t, ne, seed, a.sparse)) for n, t, ne, seed in tensors]
        write_gguf(shard_path(a.outdir, i), ts, kv, a.sparse)
        if a.oracle:
            sys.path.insert(0, a.oracle)
            import ggml_oracle as go
            ref = shard_path(a.outdir, i) + ".ggml"
            go.write_gguf(ref, [(n, t, ne, d if d is not None else bytes(nbytes(t, ne)))
                                for n, t, ne, d in ts],
                          {k: ({GGUF_U16: "u16", GGUF_U32: "u32", GGUF_I32: "i32",
                                GGUF_STRING: "str"}[v[0]], v[1]) for k, v in kv})
            with open(ref, "rb") as f1, open(shard_path(a.outdir, i), "rb") as f2:
                same = f1.read() == f2.read()
            os.unlink(ref)
            print("%s: %s" % (os.path.basename(shard_path(a.outdir, i)),
                              "identical to ggml's writer" if same else "DIFFERS"))
            if not same:
                sys.exit(1)
    with open(os.path.join(a.outdir, "config.json"), "w") as f:
        json.dump(config(a.experts), f, indent=2, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
