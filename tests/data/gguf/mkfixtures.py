#!/usr/bin/env python3
"""Write the GGUF fixtures of tests/check_gguf.c and tests/cli.test with ggml's
own GGUF writer, through the ggml_oracle tool (see README here).

    python3 mkfixtures.py ORACLE_DIR OUT_DIR

Two Kimi-K3-like layers (blk.1, blk.2) of small tensors, plus tensors no rule
judges; each bad variant changes the quant type of one tensor.
"""
import os
import sys

sys.path.insert(0, sys.argv[1])
import ggml_oracle as go  # noqa: E402

OUT = sys.argv[2]

# name suffix -> (type in a valid file, ne); ne[0] is a whole number of blocks
# of every type a variant uses (256 for the K-quants).
LAYER = [
    ("attn_norm.weight", "F32", [32]),
    ("attn_k_b.weight", "Q4_0", [256, 4, 2]),
    ("attn_v_b.weight", "Q2_K", [256, 4, 2]),
    ("ffn_gate_exps.weight", "Q2_K", [256, 8, 2]),
    ("ffn_up_exps.weight", "Q2_K", [256, 8, 2]),
    ("ffn_down_exps.weight", "Q3_K", [256, 8, 2]),
]

KV = {
    "general.architecture": "deepseek2",
    "general.name": "moepack check-gguf fixture",
    "general.alignment": ("u32", 32),
    "general.file_type": ("u32", 10),
    "deepseek2.block_count": ("u32", 3),
    "deepseek2.expert_count": ("u64", 2),
    "deepseek2.rope.freq_base": ("f32", 50000.0),
    "deepseek2.expert_weights_norm": ("bool", True),
    "tokenizer.ggml.tokens": ("arr[str]", ["<unk>", "a", "bb", "ccc", ""]),
    "tokenizer.ggml.token_type": ("arr[i32]", [2, 1, 1, 1, 3]),
    "tokenizer.ggml.scores": ("arr[f32]", [0.0, -1.0, -2.0, -3.0, -4.0]),
}


def tensors(overrides):
    specs = [("token_embd.weight", "F32", [32, 4])]
    for layer in (1, 2):
        for suffix, t, ne in LAYER:
            name = "blk.%d.%s" % (layer, suffix)
            specs.append((name, overrides.get(name, t), ne))
    specs.append(("output_norm.weight", "F32", [32]))
    out = []
    for i, (name, t, ne) in enumerate(specs):
        nrows = 1
        for d in ne[1:]:
            nrows *= d
        src = go.gaussian_f32(ne[0] * nrows, seed=1000 + i, sigma=0.02)
        data = src.tobytes() if t == "F32" else go.quantize(t, src, nrows=nrows,
                                                             n_per_row=ne[0])
        out.append((name, t, ne, data))
    return out


FIXTURES = {
    "valid.gguf": {},
    "v_b_q4_k.gguf": {"blk.2.attn_v_b.weight": "Q4_K"},
    "k_b_q8_0.gguf": {"blk.1.attn_k_b.weight": "Q8_0"},
    "down_q2_k.gguf": {"blk.1.ffn_down_exps.weight": "Q2_K"},
}

for fname, overrides in FIXTURES.items():
    path = os.path.join(OUT, fname)
    ts = tensors(overrides)
    go.write_gguf(path, ts, KV)
    back = go.read_gguf(path, with_data=True)
    assert [(t["name"], t["type_name"], t["data"]) for t in back["tensors"]] == \
        [(n, go.get().type_names[go.get().type_id(t)], d) for n, t, _, d in ts], fname
    print("%s: %d bytes, %d tensors, re-read by gguf_init_from_file: OK"
          % (path, os.path.getsize(path), len(ts)))
