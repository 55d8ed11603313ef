#!/usr/bin/env python3
"""checkpack.py - judge a built pack and manifest from the GGUF shards alone.

    python3 checkpack.py PACK MANIFEST CONFIG SHARD...      # the pack and manifest
    python3 checkpack.py --mount MNT SHARD...               # a moepackfs mount of it

Shares no code with moepack: it parses the shards with its own GGUF reader,
lays the pack out from the rules of the format (header, entries layer 1..92
/ expert / up, gate, down, each payload at the next 4096 boundary, zeros
between), compares every byte of PACK with that, recomputes
source.inventory_sha256 with Python's canonical json.dumps, and checks the
manifest's keys and values.  With --mount, every role file and object file
of the mount must equal its GGUF slices.  Prints one line per problem and
exits 1 if there is any.
"""
import hashlib
import json
import os
import struct
import sys

TYPE_NAMES = {0: "F32", 1: "F16", 2: "Q4_0", 10: "Q2_K", 11: "Q3_K", 12: "Q4_K"}
BLOCK = {0: (1, 4), 1: (1, 2), 2: (32, 18), 10: (256, 84), 11: (256, 110), 12: (256, 144)}
FIXED = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
ROLES = ("up", "gate", "down")
PAGE = 4096
problems = []


def problem(msg):
    problems.append(msg)
    print("FAIL: " + msg)


def read_gguf(path):
    with open(path, "rb") as f:
        data = f.read(16 << 20)
    pos = 0

    def take(fmt):
        nonlocal pos
        v = struct.unpack_from(fmt, data, pos)
        pos += struct.calcsize(fmt)
        return v[0]

    def string():
        nonlocal pos
        n = take("<Q")
        s = data[pos:pos + n]
        pos += n
        return s.decode()

    def value(t):
        nonlocal pos
        if t == 8:
            return string()
        if t == 9:
            et, n = take("<I"), take("<Q")
            return [value(et) for _ in range(n)]
        fmt = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f",
               7: "<?", 10: "<Q", 11: "<q", 12: "<d"}[t]
        return take(fmt)

    assert data[:4] == b"GGUF"
    pos = 4
    take("<I")
    nt, nkv = take("<Q"), take("<Q")
    kv = {}
    for _ in range(nkv):
        k = string()
        kv[k] = value(take("<I"))
    tensors = []
    for _ in range(nt):
        name = string()
        nd = take("<I")
        ne = [take("<Q") for _ in range(nd)]
        t = take("<I")
        off = take("<Q")
        tensors.append((name, ne, t, off))
    align = kv.get("general.alignment", 32)
    start = (pos + align - 1) // align * align
    out = []
    for name, ne, t, off in tensors:
        bw, bb = BLOCK[t]
        n = ne[0] // bw * bb
        for d in ne[1:]:
            n *= d
        out.append({"name": name, "shape": ne, "dtype": TYPE_NAMES[t], "dtype_id": t,
                    "data_offset": start + off, "nbytes": n})
    return kv, start, out


def load(shards):
    inv_shards, tensors, by_name = [], [], {}
    for i, path in enumerate(shards):
        kv, start, ts = read_gguf(path)
        with open(path, "rb") as f:
            meta = f.read(start)
        inv_shards.append({"index": i, "path": os.path.realpath(path),
                           "size": os.path.getsize(path), "metadata_nbytes": start,
                           "metadata_sha256": hashlib.sha256(meta).hexdigest(),
                           "tensor_count": len(ts)})
        for t in ts:
            t["shard_index"] = i
            tensors.append(t)
            by_name[t["name"]] = (path, t)
        if i == 0:
            arch = kv["general.architecture"]
    summary = {"architecture": arch, "shard_count": len(shards),
               "tensor_count": len(tensors),
               "total_bytes": sum(s["size"] for s in inv_shards),
               "full_source_hashes": False}
    return {"summary": summary, "shards": inv_shards,
            "tensors": sorted(tensors, key=lambda t: t["name"])}, by_name


def slices(by_name):
    """[(layer, expert, role, shard path, offset, nbytes)] in pack order."""
    experts = by_name["blk.1.ffn_up_exps.weight"][1]["shape"][2]
    out = []
    for layer in range(1, 93):
        for e in range(experts):
            for role in ROLES:
                path, t = by_name["blk.%d.ffn_%s_exps.weight" % (layer, role)]
                n = t["nbytes"] // experts
                out.append((layer, e, role, path, t["data_offset"] + e * n, n))
    return experts, out


def read_at(path, off, n):
    with open(path, "rb") as f:
        f.seek(off)
        return f.read(n)


def check_pack(pack, manifest_path, config, shards):
    inv, by_name = load(shards)
    experts, sl = slices(by_name)
    count = len(sl)
    data_start = (40 + count * 152 + PAGE - 1) // PAGE * PAGE
    head = b"GGMLMOEPACKv1\0\0\0" + struct.pack("<IIQQ", 1, 40, count, data_start)
    cursor = data_start
    entries = b""
    layout = []
    for layer, e, role, path, off, n in sl:
        cursor = (cursor + PAGE - 1) // PAGE * PAGE
        name = ("blk.%d.ffn_%s_exps.weight" % (layer, role)).encode()
        entries += name + b"\0" * (128 - len(name)) + struct.pack("<iIQQ", e, 0, cursor, n)
        layout.append((cursor, path, off, n))
        cursor += n
    size = cursor
    if os.path.getsize(pack) != size:
        problem("pack is %d bytes, the layout gives %d" % (os.path.getsize(pack), size))
        return
    h = hashlib.sha256()
    with open(pack, "rb") as f:
        prefix = f.read(data_start)
        h.update(prefix)
        want = head + entries
        if prefix != want + bytes(data_start - len(want)):
            problem("header, index or padding differs from the layout")
        at = data_start
        for start, path, off, n in layout:
            gap = f.read(start - at)
            if gap != bytes(start - at):
                problem("padding before byte %d is not zero" % start)
            body = f.read(n)
            h.update(gap + body)
            if body != read_at(path, off, n):
                problem("payload at pack byte %d differs from %s byte %d" % (start, path, off))
            at = start + n
    full = h.hexdigest()

    m = json.load(open(manifest_path))
    canon = json.dumps(inv, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    inv_sha = hashlib.sha256(canon.encode("utf-8")).hexdigest()
    src = m.get("source", {})
    if src.get("inventory_sha256") != inv_sha:
        problem("source.inventory_sha256 %s, recomputed %s" % (src.get("inventory_sha256"), inv_sha))
    for k in ("summary", "shards", "tensors"):
        if src.get(k) != inv[k]:
            problem("source.%s differs from the shards" % k)
    want_keys = {
        "": ["complete", "format", "created_at", "sglang_git_sha", "hard_constraints",
             "model", "source", "expert_pack", "verification"],
        "model": ["config_path", "config_sha256", "architecture", "num_hidden_layers",
                  "active_moe_layer_ids", "num_experts", "num_experts_per_token",
                  "num_shared_experts", "hidden_size", "routed_expert_hidden_size",
                  "moe_intermediate_size", "hidden_act"],
        "expert_pack": ["path", "size", "magic", "version", "header_bytes", "entry_bytes",
                        "index_count", "data_start", "alignment", "index_sha256",
                        "physical_role_order", "active_moe_layer_ids", "num_experts",
                        "top_k", "object_bytes", "roles", "payload_samples_verified",
                        "full_pack_hash"],
        "verification": ["structure", "payload_samples", "full_source_hashes",
                         "full_pack_hash"],
    }
    for where, keys in want_keys.items():
        obj = m if not where else m.get(where, {})
        for k in keys:
            if k not in obj:
                problem("manifest has no %s%s" % (where + "." if where else "", k))
    ep, model = m.get("expert_pack", {}), m.get("model", {})
    cfg = json.load(open(config))
    cfg = cfg.get("text_config", cfg)
    up = by_name["blk.1.ffn_up_exps.weight"][1]
    checks = [
        ("complete", m.get("complete"), True),
        ("format", m.get("format"), "SGLANG-KIMI-GGMLMOEPACK-ADAPTER-v1"),
        ("hard_constraints", m.get("hard_constraints"),
         {"top_k": 16, "top_k_is_immutable": True, "all_selected_experts_must_execute": True,
          "expert_pruning_allowed": False, "requantization_allowed": False}),
        ("model.config_sha256", model.get("config_sha256"),
         hashlib.sha256(open(config, "rb").read()).hexdigest()),
        ("model.config_path", model.get("config_path"), os.path.realpath(config)),
        ("model.architecture", model.get("architecture"), "KimiLinearForCausalLM"),
        ("model.active_moe_layer_ids", model.get("active_moe_layer_ids"), list(range(1, 93))),
        ("model.num_experts", model.get("num_experts"), cfg["num_experts"]),
        ("model.hidden_size", model.get("hidden_size"), cfg["hidden_size"]),
        ("expert_pack.path", ep.get("path"), os.path.realpath(pack)),
        ("expert_pack.size", ep.get("size"), size),
        ("expert_pack.magic", ep.get("magic"), "GGMLMOEPACKv1"),
        ("expert_pack.index_count", ep.get("index_count"), count),
        ("expert_pack.data_start", ep.get("data_start"), data_start),
        ("expert_pack.alignment", ep.get("alignment"), PAGE),
        ("expert_pack.index_sha256", ep.get("index_sha256"),
         hashlib.sha256(head + entries).hexdigest()),
        ("expert_pack.physical_role_order", ep.get("physical_role_order"), list(ROLES)),
        ("expert_pack.num_experts", ep.get("num_experts"), experts),
        ("expert_pack.object_bytes", ep.get("object_bytes"), sum(x[5] for x in sl[:3])),
        ("expert_pack.roles.up.logical_shape", ep.get("roles", {}).get("up", {}).get("logical_shape"),
         up["shape"][:2]),
        ("expert_pack.roles.down.logical_shape",
         ep.get("roles", {}).get("down", {}).get("logical_shape"), up["shape"][1::-1]),
        ("expert_pack.roles.down.entry_count",
         ep.get("roles", {}).get("down", {}).get("entry_count"), 92 * experts),
        ("verification.structure", m.get("verification", {}).get("structure"), "complete"),
    ]
    tok = m.get("tokenizer")
    if tok is not None:
        files = []
        for name in sorted(os.listdir(tok["path"])):
            p = os.path.join(tok["path"], name)
            if os.path.isfile(p):
                files.append({"name": name, "size": os.path.getsize(p),
                              "sha256": hashlib.sha256(open(p, "rb").read()).hexdigest()})
        checks.append(("tokenizer.files", tok.get("files"), files))
        checks.append(("tokenizer.inventory_sha256", tok.get("inventory_sha256"),
                       hashlib.sha256(json.dumps(files, sort_keys=True, separators=(",", ":"),
                                                 ensure_ascii=False).encode()).hexdigest()))
    if ep.get("full_pack_hash"):
        checks.append(("expert_pack.sha256", ep.get("sha256"), full))
    for name, have, want in checks:
        if have != want:
            problem("%s is %r, expected %r" % (name, have, want))


def check_mount(mnt, shards):
    _, by_name = load(shards)
    experts, sl = slices(by_name)
    objects = {}
    for layer, e, role, path, off, n in sl:
        want = read_at(path, off, n)
        d = os.path.join(mnt, "layers", "%03d" % layer, "%03d" % e)
        with open(os.path.join(d, role), "rb") as f:
            if f.read() != want:
                problem("%s/%s differs from its GGUF slice" % (d, role))
        objects.setdefault(d, b"")
        objects[d] += want
    for d, want in objects.items():
        with open(os.path.join(d, "object"), "rb") as f:
            if f.read() != want:
                problem("%s/object differs from its GGUF slices" % d)
    print("compared %d role files and %d object files" % (len(sl), len(objects)))


def main(argv):
    if argv[1] == "--mount":
        check_mount(argv[2], argv[3:])
    else:
        check_pack(argv[1], argv[2], argv[3], argv[4:])
    if problems:
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
