#!/usr/bin/env python3
"""Write the DeepSeek-V4-Flash-shaped GGUF fixtures of tests/ep-build.test
with ggml's own quantizer and GGUF writer, through the ggml_oracle tool
(see README here).

    python3 mkgguf.py ORACLE_DIR OUT_DIR

deepseek.gguf: two MoE layers (blk.0, blk.1) of routed experts
blk.L.ffn_{gate,up,down}_exps.weight, MXFP4, 4 experts of 64 x 32 weights
(gate and up [64, 32, 4], down [32, 64, 4]), quantized by
ggml_quantize_chunk from Random(2000 + i).gauss(0, 0.02); and two F32
tensors no rule judges.  The variants break one rule of the builder each.
"""
import os
import sys

sys.path.insert(0, sys.argv[1])
import ggml_oracle as go  # noqa: E402

OUT = sys.argv[2]
HIDDEN, INTER, EXPERTS = 64, 32, 4

KV = {
    "general.architecture": "deepseek4",
    "general.name": "moepack expert-pack fixture",
    "general.alignment": ("u32", 32),
    "deepseek4.block_count": ("u32", 2),
    "deepseek4.expert_count": ("u32", EXPERTS),
}


def specs(layers=2, down=None, types=None):
    out = [("token_embd.weight", "F32", [16, 4])]
    for layer in range(layers):
        for role in ("gate", "up", "down"):
            name = "blk.%d.ffn_%s_exps.weight" % (layer, role)
            ne = [INTER, HIDDEN, EXPERTS] if role == "down" else [HIDDEN, INTER, EXPERTS]
            if role == "down" and down and layer in down:
                ne = down[layer]
            out.append((name, (types or {}).get(name, "MXFP4"), ne))
    out.append(("output_norm.weight", "F32", [16]))
    return out


def tensors(spec):
    g = go.get()
    out = []
    for i, (name, typ, ne) in enumerate(spec):
        nrows = 1
        for d in ne[1:]:
            nrows *= d
        src = go.gaussian_f32(ne[0] * nrows, 2000 + i, sigma=0.02)
        data = bytes(src.tobytes()) if typ == "F32" else g.quantize(typ, src, nrows=nrows,
                                                                    n_per_row=ne[0])
        out.append((name, typ, ne, data))
    return out


VARIANTS = {
    "deepseek.gguf": specs(),
    # blk.1.ffn_up_exps.weight left out
    "missing.gguf": [s for s in specs() if s[0] != "blk.1.ffn_up_exps.weight"],
    # a third layer the config does not have
    "extra.gguf": specs(layers=3),
    # a routed tensor ggml quantized as Q8_0
    "q8.gguf": specs(types={"blk.1.ffn_down_exps.weight": "Q8_0"}),
    # blk.0's down of 64 x 64 weights: a role size unlike the others
    "roles.gguf": specs(down={0: [64, 64, EXPERTS]}),
}

for name, spec in VARIANTS.items():
    path = os.path.join(OUT, name)
    go.write_gguf(path, tensors(spec), KV)
    back = go.read_gguf(path)
    assert [t["name"] for t in back["tensors"]] == [s[0] for s in spec], name
    print(name, os.path.getsize(path))
