/*
 * commands.c - what each moepack subcommand is called, takes and says:
 * its name, summary, operands, usage line and --help prose, and which
 * options table, option hook and run() of its cmd_*.c file it uses.
 * cli.c turns a table into getopt, --help, usage errors and
 * --list-options; moepack.c dispatches on cli_commands[].  Reading this
 * file top to bottom is reading the command line of moepack.
 */
#include "config.h"

#include "cli/commands.h"

/*
 * Short letters mean one long option in every command (tests/cli-table.test
 * checks it): -f is --force and -s is --seal wherever they exist.  The
 * letters that meant something else before 0.2.0 say what to write now.
 */
static const struct cli_retired verify_retired[] = {
	{'f', "full", "--force"},
	{0, NULL, NULL},
};
static const struct cli_retired mkdemo_retired[] = {
	{'s', "seed", "--seal"},
	{0, NULL, NULL},
};
static const struct cli_retired check_gguf_retired[] = {
	{'s', "set", "--seal"},
	{0, NULL, NULL},
};

const struct cli_command cli_verify_command = {
	.name = "verify",
	.summary = "check a pack and its manifest as the loader does",
	.operands = "PACK",
	.about = "Check PACK and its manifest the way the reference loader does: manifest,\n"
		 "header, every index entry, trailing bytes, index SHA-256 and, with --full,\n"
		 "the SHA-256 of the whole file; with --payload, also the payload itself.\n",
	.epilogue = "\n"
		    "Exit status: 0 valid, 1 invalid (or the payload scan found a problem, a\n"
		    "chunk differs from its seal, the seal is not the pack's, the signature is\n"
		    "missing or does not verify),\n"
		    "2 usage error (including --full when the manifest has no whole-file\n"
		    "digest: no expert_pack.sha256, no or a null pack_sha256), 3 a file\n"
		    "cannot be read.\n",
	.options = cli_verify_options,
	.retired = verify_retired,
	.on_option = cli_verify_on_option,
	.run = cli_verify_run,
};

const struct cli_command cli_info_command = {
	.name = "info",
	.summary = "describe a pack's model, roles and layout",
	.operands = "PACK",
	.about = "Validate PACK (as 'moepack verify' without --full) and describe it: model\n"
		 "dimensions, each role's quant type, size, shape and offset in an expert\n"
		 "object, alignment, data start, index and digests, file size.\n",
	.epilogue = "\n"
		    "Exit status: 0 valid, 1 invalid, 2 usage error, 3 a file cannot be read.\n",
	.options = cli_info_options,
	.run = cli_info_run,
};

const struct cli_command cli_ls_command = {
	.name = "ls",
	.summary = "list index entries (name, layer, expert, role, offset, size)",
	.operands = "PACK [LAYER [EXPERT]]",
	.number_operands = "PACK LAYER EXPERT...",
	.about = "Validate PACK and list its index entries in file order, one per line:\n"
		 "tensor name, layer, expert, role, offset and size in bytes.  LAYER is a\n"
		 "real layer id (1..92); EXPERT is 0..num_experts-1.\n",
	.epilogue = "\n"
		    "Exit status: 0 listed, 1 invalid pack, 2 usage error or no such layer or\n"
		    "expert, 3 a file cannot be read.\n",
	.options = cli_ls_options,
	.run = cli_ls_run,
};

const struct cli_command cli_cat_command = {
	.name = "cat",
	.summary = "write one expert payload to standard output",
	.operands = "PACK LAYER EXPERT ROLE",
	.completion = "PACK LAYER EXPERT up|gate|down|object",
	.number_operands = "PACK LAYER EXPERT",
	.about = "Validate PACK and write the raw payload of one expert's role to standard\n"
		 "output.  LAYER is a real layer id (1..92), EXPERT is 0..num_experts-1,\n"
		 "ROLE is up, gate, down, or object (the three contiguous roles).\n",
	.epilogue = "\n"
		    "Exit status: 0 written, 1 invalid pack, 2 usage error or no such entry,\n"
		    "3 read or write error.\n",
	.options = cli_cat_options,
	.run = cli_cat_run,
};

const struct cli_command cli_dump_command = {
	.name = "dump",
	.summary = "dequantize one expert's role to float32 (or text, stats)",
	.operands = "PACK LAYER EXPERT ROLE",
	.completion = "PACK LAYER EXPERT up|gate|down",
	.usage = "moepack dump [--f32 | --text | --stats] [--json] PACK LAYER EXPERT ROLE",
	.about = "Validate PACK and dequantize one expert's role (up, gate or down) to\n"
		 "float32 exactly as ggml's reference dequantizer does.  Rows follow the\n"
		 "logical shape: its first number is the row length.\n",
	.epilogue = "\n"
		    "min, max, mean and standard deviation are over the finite values only.\n"
		    "\n"
		    "Exit status: 0 written, 1 invalid pack, 2 usage error or no such entry,\n"
		    "3 read or write error.\n",
	.options = cli_dump_options,
	.on_option = cli_dump_on_option,
	.run = cli_dump_run,
};

const struct cli_command cli_mkdemo_command = {
	.name = "mkdemo",
	.summary = "write a valid demo pack, manifest and config",
	.operands = "",
	.usage = "moepack mkdemo --out PACK [OPTIONS]\n"
		 "       moepack mkdemo --gguf DIR [--experts N] [--hidden N] [--inter N] ...",
	.about = "Write a valid pack (layers 1..92, up/gate Q2_K, down Q3_K, well-formed\n"
		 "blocks), its manifest and a model config PACK.config.json.  Files are\n"
		 "written beside their targets and renamed into place at the end; an\n"
		 "existing PACK is replaced only with --force.\n",
	.epilogue = "\n"
		    "--alignment and --gap take K, M, G or T suffixes (powers of 1024).\n"
		    "Kimi K3 geometry: --experts 896 --hidden 3584 --inter 3072 --sparse\n"
		    "(up and gate [3584, 3072], down [3072, 3584]; the row length comes first).\n"
		    "\n"
		    "With --gguf DIR, write instead a small Kimi-K3-shaped GGUF checkpoint to\n"
		    "try build on: DIR/kimi-k3-demo-0000i-of-00003.gguf (i = 1..3) and\n"
		    "DIR/config.json, 92 MoE layers of --experts (default 2) experts, --hidden\n"
		    "(default 512) x --inter (default 1024), seeded by --seed; DIR is created\n"
		    "if missing, existing files are replaced only with --force.  It is not\n"
		    "Kimi-K3's geometry: check-gguf and build want --any-geometry.\n"
		    "\n"
		    "--format expertpack-v1 writes SGLang's SGLANG-EXPERTPACK-v1 pack instead\n"
		    "(DeepSeek-V4-Flash: 2 layers of 4 MXFP4 experts, top-k 2, hidden 256,\n"
		    "inter 512 by default), built as build builds it from a GGUF written beside\n"
		    "it, PACK.source.gguf, with PACK.config.json; --sparse makes the full\n"
		    "DeepSeek-V4-Flash geometry (43 x 256, top-k 6, hidden 4096, inter 2048:\n"
		    "147 GB) with the data a hole, no source file (the source fields describe a GGUF\n"
		    "that is not there) and no pack_sha256.  With --gguf DIR it writes\n"
		    "DIR/deepseek-v4-flash-demo.gguf and DIR/config.json for check-gguf and\n"
		    "build.\n"
		    "\n"
		    "Exit status: 0 written, 2 usage error, 3 a file cannot be written.\n",
	.extra_hint = " (the pack is given with --out)",
	.options = cli_mkdemo_options,
	.retired = mkdemo_retired,
	.run = cli_mkdemo_run,
};

const struct cli_command cli_check_gguf_command = {
	.name = "check-gguf",
	.summary = "check a Kimi-K3 or DeepSeek-V4-Flash GGUF checkpoint",
	.operands = "FILE.gguf...",
	.about = "Read the tensor infos of each GGUF file (a whole checkpoint or the parts\n"
		 "of a split one) and check the quant types the Kimi-K3 loader requires:\n"
		 "blk.N.attn_k_b.weight Q4_0, blk.N.attn_v_b.weight Q2_K,\n"
		 "blk.N.ffn_up_exps.weight and blk.N.ffn_gate_exps.weight Q2_K,\n"
		 "blk.N.ffn_down_exps.weight Q3_K.  Other tensors are not judged.  A file\n"
		 "ggml's own GGUF reader would refuse (duplicate names or keys, data not at\n"
		 "the offsets ggml computes, ...) is refused too; names are judged as ggml\n"
		 "reads them, up to a NUL.  The first violation in each file is reported.\n"
		 "\n"
		 "A shard of a split checkpoint (NAME-0000i-of-0000N.gguf) is checked with\n"
		 "its whole set, as build reads it: the shard numbering, split.no,\n"
		 "split.count, split.tensors.count, architecture kimi-k3 (general.* may be\n"
		 "in the first shard only), no tensor in two shards, the MLA K/V types, and\n"
		 "all 276 routed expert tensors (layers 1..92 x up, gate, down) with their\n"
		 "types and one consistent shape, Kimi-K3's unless --any-geometry.  Every\n"
		 "problem is reported, then one summary line for the set.  A set is checked\n"
		 "once however many of its shards are named (a glob names them all).\n"
		 "\n"
		 "A file whose blk.0.ffn_gate_exps.weight is MXFP4 is judged instead as the\n"
		 "source of SGLang's expert pack (DeepSeek-V4-Flash), as build\n"
		 "--format expertpack-v1 judges it: routed tensors of layers 0..L-1, MXFP4,\n"
		 "3-D with the expert count last, one role size (L and the experts from\n"
		 "--config, else from the tensors).  --format forces either rule set.\n",
	.epilogue = "\n"
		    "Exit status: 0 all files pass, 1 a file breaks a rule or is not a valid\n"
		    "GGUF, 2 usage error, 3 a file cannot be read (the highest status wins).\n",
	.options = cli_check_gguf_options,
	.retired = check_gguf_retired,
	.run = cli_check_gguf_run,
};

const struct cli_command cli_build_command = {
	.name = "build",
	.summary = "build a pack and manifest from a GGUF checkpoint",
	.operands = "",
	.usage = "moepack build --gguf SHARD --config CONFIG.json [OPTIONS]",
	.about = "Build the expert pack of a Kimi-K3 GGUF checkpoint, byte for byte the one\n"
		 "the reference builder writes, and its manifest.  SHARD is any shard of a\n"
		 "split checkpoint (NAME-0000i-of-0000N.gguf) or a single GGUF file; the\n"
		 "whole set is discovered and checked first.  The pack is then validated as\n"
		 "at mount time and payload samples are compared with their GGUF slices.\n"
		 "\n"
		 "With --format expertpack-v1 (the default when the GGUF's routed experts\n"
		 "are MXFP4), build SGLang's SGLANG-EXPERTPACK-v1 pack of one\n"
		 "DeepSeek-V4-Flash GGUF instead, byte for byte the reference builder's\n"
		 "(default DeepSeek-V4-Flash.expert-pack beside the GGUF), every byte\n"
		 "checked against the GGUF before it is renamed into place.\n",
	.epilogue = "\n"
		    "Exit status: 0 built (or valid), 1 the checkpoint, config or pack is\n"
		    "invalid, 2 usage error, 3 a file cannot be read or written.\n",
	.escape_extra = true,
	.options = cli_build_options,
	.on_option = cli_build_on_option,
	.run = cli_build_run,
};

const struct cli_command cli_top_command = {
	.name = "top",
	.summary = "a live view of what loaders read from a mount",
	.operands = "MOUNT",
	.about = "A live view of a moepackfs mount, refreshed every second: pack state and\n"
		 "validation, read throughput now and since mounting, the hottest layers\n"
		 "and experts, a heat map of reads over layers x experts, and errors.\n"
		 "Keys: q quits, l chooses a layer (empty: all), s cycles the sort of the\n"
		 "experts (reads, now, id).\n",
	.epilogue = "\n"
		    "Exit status: 0 success, 2 usage error, 3 MOUNT cannot be read.\n",
	.options = cli_top_options,
	.run = cli_top_run,
};

const struct cli_command cli_seal_command = {
	.name = "seal",
	.summary = "write PACK.seal: a SHA-256 for every chunk of the pack",
	.operands = "PACK",
	.about = "Validate PACK, hash every chunk of it on all cores together with the\n"
		 "SHA-256 of the whole file, and write PACK.seal (see moepack-pack(5)).\n"
		 "The whole-file SHA-256 must equal the manifest's expert_pack.sha256;\n"
		 "an --unanchored seal records none, as build's seal without\n"
		 "--full-sha256 (the same bytes give the same seal).\n",
	.epilogue = "\n"
		    "Exit status: 0 sealed, 1 invalid pack (or its SHA-256 differs from the\n"
		    "manifest's), 2 usage error (including a manifest without expert_pack.sha256\n"
		    "and no --unanchored), 3 a file cannot be read or written.\n",
	.options = cli_seal_options,
	.run = cli_seal_run,
};

const struct cli_command cli_sign_command = {
	.name = "sign",
	.summary = "sign a sealed pack with an Ed25519 key (PACK.sig)",
	.operands = "PACK",
	.usage = "moepack sign --key=KEY.pem [OPTIONS] PACK",
	.about = "Sign a sealed PACK with an Ed25519 private key: write the statement\n"
		 "PACK.statement (the pack's size and SHA-256, index and seal digests,\n"
		 "the manifest's digest without the pack's path, which relocate\n"
		 "rewrites, and the key's fingerprint) and its signature PACK.sig.\n"
		 "Every chunk is checked against the seal first.\n",
	.epilogue = "\n"
		    "Check a signature with stock OpenSSL:\n"
		    "  openssl pkeyutl -verify -pubin -inkey PUB.pem -rawin \\\n"
		    "      -in PACK.statement -sigfile PACK.sig\n"
		    "\n"
		    "Exit status: 0 signed, 1 invalid pack or seal, 2 usage error or unusable\n"
		    "key, 3 a file cannot be read or written.\n",
	.options = cli_sign_options,
	.run = cli_sign_run,
};

const struct cli_command cli_relocate_command = {
	.name = "relocate",
	.summary = "point a moved or copied pack's manifest at the pack",
	.operands = "PACK",
	.about = "Rewrite the pack's path in PACK's manifest (expert_pack.path, or\n"
		 "pack_path for SGLANG-EXPERTPACK-v1) to PACK's absolute path\n"
		 "(realpath), after the pack and its manifest were moved or copied.\n"
		 "Only the bytes of that JSON string change, so a signature (a v2\n"
		 "PACK.statement) still verifies.  The pack is validated with the new\n"
		 "manifest as 'moepack verify' does before anything is written; the\n"
		 "manifest is then replaced atomically (a temporary beside it, synced,\n"
		 "renamed; never written through a symbolic link) and the pack validated\n"
		 "again.  A manifest that already names the pack is left as it is.\n",
	.epilogue = "\n"
		    "Exit status: 0 relocated (or already right), 1 the pack or manifest is\n"
		    "invalid, 2 usage error (the manifest is the pack, a file beside it or a\n"
		    "symbolic link), 3 a file cannot be read or written.\n",
	.options = cli_relocate_options,
	.run = cli_relocate_run,
};

const struct cli_command cli_fetch_command = {
	.name = "fetch",
	.summary = "copy a sealed pack from mirrors, every chunk checked as it arrives",
	.operands = "SOURCE...",
	.about = "Copy the pack that each SOURCE (http://, https://, file:// or\n"
		 "s3://BUCKET/KEY) mirrors, with its manifest, seal and signature from\n"
		 "beside it.  The seal must be trusted first: signed by a key of --trust,\n"
		 "or of the digest --expect-seal-sha256 gives.  Then whole seal chunks\n"
		 "are fetched with parallel range requests and each is hashed against\n"
		 "the seal before it is written to PACK.partial; a chunk that fails is\n"
		 "fetched again from another mirror.  PACK.partial is renamed to PACK\n"
		 "only when every chunk passed, so PACK mounts with -o verify=seal at\n"
		 "once.  Run the same command again to resume: every chunk kept is\n"
		 "hashed again first.  s3:// requests are signed (AWS Signature V4) with\n"
		 "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN, or the\n"
		 "AWS_PROFILE of ~/.aws/credentials; the proxy variables are honoured.\n",
	.epilogue = "\n"
		    "Exit status: 0 fetched, 1 a chunk no mirror served right, or the seal\n"
		    "or signature does not verify, 2 usage error (no root of trust), 3 a\n"
		    "mirror or a file failed.\n",
	.options = cli_fetch_options,
	.run = cli_fetch_run,
};

const struct cli_command cli_metalink_command = {
	.name = "metalink",
	.summary = "write a Metalink 4 file of a verified pack, for aria2c",
	.operands = "PACK URL...",
	.about = "Check every chunk of PACK against its seal (and, with --trust, the\n"
		 "signature), then write an RFC 5854 Metalink 4 file naming the URLs\n"
		 "that mirror PACK, with the SHA-256 of the whole file and of every\n"
		 "1 MiB piece, so that aria2c --check-integrity=true checks each piece\n"
		 "it downloads.  The seal's own chunks follow the pack's regions and\n"
		 "are not of one length, which a Metalink needs: the pieces are hashed\n"
		 "from the pack only after the seal check passed.\n",
	.epilogue = "\n"
		    "Exit status: 0 written, 1 the pack, seal or signature does not verify,\n"
		    "2 usage error, 3 a file cannot be read or written.\n",
	.options = cli_metalink_options,
	.run = cli_metalink_run,
};

const struct cli_command *const cli_commands[] = {
	&cli_verify_command,
	&cli_info_command,
	&cli_ls_command,
	&cli_cat_command,
	&cli_dump_command,
	&cli_mkdemo_command,
	&cli_check_gguf_command,
	&cli_build_command,
	&cli_top_command,
	&cli_seal_command,
	&cli_sign_command,
	&cli_relocate_command,
	&cli_fetch_command,
	&cli_metalink_command,
};

const size_t cli_command_count = sizeof cli_commands / sizeof cli_commands[0];
