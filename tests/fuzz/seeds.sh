#!/bin/sh
# seeds.sh MOEPACK SRCDIR OUTDIR - write the fuzz targets' seed corpora.
#
# Seeds are made at build time, never committed: a 1-expert demo pack with
# 256x256 roles (the smallest mkdemo makes: 92 layers x 3 entries, a 42 KB
# header and index), and the GGUF fixtures of tests/data/gguf.
#
#   OUTDIR/pack.pack, OUTDIR/pack.pack.manifest.json
#                         the reference pack the targets check against
#   OUTDIR/manifest/      manifests (the reference's, one with
#                         expert_pack.sha256 and 4096 alignment, a minimal
#                         JSON object)
#   OUTDIR/pack/          pack heads: header and index of the reference
#                         (what fuzz_pack reads), and its header alone
#   OUTDIR/ep.pack, OUTDIR/ep.pack.manifest.json
#                         an SGLANG-EXPERTPACK-v1 demo pack (1 layer x 2
#                         experts), fuzz_ep's reference
#   OUTDIR/ep/            its head (header and index) and its header alone
#   OUTDIR/gguf/          the GGUF fixtures
#   OUTDIR/build/         a shard set and config (mkbuildseed.py)
#   OUTDIR/ggml/          the GGUF fixtures and the crafted corpus
set -eu
moepack=$1 srcdir=$2 out=$3

rm -rf "$out.tmp"
mkdir -p "$out.tmp/manifest" "$out.tmp/pack" "$out.tmp/gguf" "$out.tmp/other" \
	"$out.tmp/seal" "$out.tmp/build" "$out.tmp/ep"
# The reference's manifest must name where it will live, so write it in place.
abs_out=$(mkdir -p "$out" && cd "$out" && pwd)
abs_tmp=$(cd "$out.tmp" && pwd)
"$moepack" mkdemo -q --force --out "$abs_out/pack.pack" --experts 1 --hidden 256 --inter 256 \
	--alignment 64
"$moepack" mkdemo -q --out "$abs_tmp/other/a.pack" --experts 1 --sparse \
	--alignment 4096 --full-sha256

# data_start: little-endian u64 at byte 32 of the header.
head_of() {
	ds=$(od -An -t u8 -j 32 -N 8 "$1" | tr -d ' ')
	head -c "$ds" "$1" >"$2"
}
head_of "$abs_out/pack.pack" "$out.tmp/pack/seed-1-expert"
head -c 40 "$abs_out/pack.pack" >"$out.tmp/pack/seed-header-only"
# fuzz_ep: an SGLang pack's header and index (data_start: u64 at byte 48)
"$moepack" mkdemo -q --force --format expertpack-v1 --layers 1 --experts 2 \
	--out "$abs_out/ep.pack"
rm -f "$abs_out/ep.pack.source.gguf" "$abs_out/ep.pack.config.json"
head -c "$(od -An -t u8 -j 48 -N 8 "$abs_out/ep.pack" | tr -d ' ')" "$abs_out/ep.pack" \
	>"$out.tmp/ep/seed-1-layer"
head -c 176 "$abs_out/ep.pack" >"$out.tmp/ep/seed-header-only"
cp "$abs_out/pack.pack.manifest.json" "$out.tmp/manifest/seed-reference.json"
# Its path made relative to the reference: relative paths resolve against
# the manifest's directory, which the target says is OUTDIR.
sed "s|\"$abs_tmp/other/a.pack\"|\"pack.pack\"|" "$out.tmp/other/a.pack.manifest.json" \
	>"$out.tmp/manifest/seed-full-sha256.json"
printf '{}' >"$out.tmp/manifest/seed-empty-object.json"
cp "$srcdir"/tests/data/gguf/*.gguf "$out.tmp/gguf/"
# seal target: a first byte 0 then a seal, 1 then a statement
"$moepack" seal -q --unanchored --chunk-size 64K "$abs_out/pack.pack"
{ printf '\0'; cat "$abs_out/pack.pack.seal"; } >"$out.tmp/seal/seed-seal"
rm -f "$abs_out/pack.pack.seal"
h=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
printf '\001moepack-statement v1\npack_size 12345\npack_sha256 %s\nindex_sha256 %s\nseal_sha256 %s\nmanifest_sha256 %s\nanchored no\nkey_sha256 %s\n' \
	$h $h $h $h $h >"$out.tmp/seal/seed-statement"
printf '\001moepack-statement v2\npack_size 12345\npack_sha256 %s\nindex_sha256 %s\nseal_sha256 %s\nmanifest_sha256_without_path %s\nanchored yes\nkey_sha256 %s\n' \
	$h $h $h $h $h >"$out.tmp/seal/seed-statement-v2"
# fuzz_build: the build test's checkpoint, metadata only (needs python3)
if command -v python3 >/dev/null 2>&1; then
	python3 "$srcdir/tests/fuzz/mkbuildseed.py" "$srcdir" "$out.tmp/build/seed-3-shards"
fi
rm -rf "$out.tmp/other" "$out/manifest" "$out/pack" "$out/gguf" "$out/seal" "$out/build" \
	"$out/ggml" "$out/ep"
mv "$out.tmp/manifest" "$out.tmp/pack" "$out.tmp/gguf" "$out.tmp/seal" "$out.tmp/build" \
	"$out.tmp/ep" "$out/"
# fuzz_ggml starts from the GGUF fixtures and the crafted corpus
mkdir -p "$out/ggml" && cp "$srcdir"/tests/data/gguf/*.gguf "$srcdir"/tests/data/gguf/corpus/*.gguf "$out/ggml/"
rmdir "$out.tmp"
