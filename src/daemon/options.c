/*
 * options.c - moepackfs's command line: option_spec, what each option
 * sets, --help and --list-options.
 *
 * fuse_opt hands every argument to option_proc, which fills struct
 * options (options.h) and keeps the first usage error in it; what is
 * libfuse's goes on to it unchanged, what mount(8) or fstab adds that
 * means nothing here is dropped.  moepackfs.c parses the command line
 * with mp_opt_parse and then acts on what was asked (the checks between
 * options, --help, --version); nothing here reads a file or the pack.
 */
#include "config.h"

#include "daemon/options.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fuse_opt.h>

#include "daemon/prog.h"
#include "fetch/source.h"
#include "pack/role.h"
#include "seal/sealcheck.h"
#include "base/text.h"

/* -o seal_cache_mb at most 64 GiB */
#define SEAL_CACHE_MB_MAX 65536u
/* -o readahead_kb at most 1 GiB: the kernel's window, in KiB */
#define READAHEAD_KB_MAX (1u << 20)

static const char usage_text[] =
	"Usage: " PROG " [OPTIONS] PACK MOUNTPOINT\n"
	"Validate an expert pack like `moepack verify` and mount it read-only.\n"
	"\n"
	"Pack options (-o NAME=VALUE):\n"
	"  -o manifest=FILE        the manifest (default: PACK.manifest.json)\n"
	"  -o expect_layers=N      require the pack's layer count to be N\n"
	"  -o expect_experts=N     require its experts per layer to be N\n"
	"  -o config=FILE          require its config SHA-256 to be FILE's\n"
	"  -o expect_top_k=N, -o expect_source_sha256=HEX,\n"
	"  -o expect_model_identity_sha256=HEX, -o expect_config_sha256=HEX\n"
	"                          SGLANG-EXPERTPACK-v1: the loader's expectations\n"
	"  -o source=GGUF          SGLANG-EXPERTPACK-v1: check the pack against its\n"
	"                          source (sizes, digests, 96 sampled slices)\n"
	"  -o verify=MODE          index (the default without PACK.seal), full (also\n"
	"                          the whole-file SHA-256), payload (the scan of\n"
	"                          `moepack verify --payload`) or full+payload\n"
	"  -o verify=seal          check every read from storage against PACK.seal\n"
	"                          (the default when PACK.seal exists; full+seal also\n"
	"                          checks the whole-file SHA-256; see moepackfs(1))\n"
	"  -o verify=entries       check every read from storage against the SHA-256\n"
	"                          the index records for each role (SGLANG-EXPERTPACK-v1;\n"
	"                          its default without PACK.seal; also full+entries)\n"
	"  -o seal=FILE            the seal (default: PACK.seal); implies verify=seal\n"
	"  -o seal_ahead=N         with verify=seal, check up to N chunks ahead of a\n"
	"                          sequential reader (default 16; 0: off)\n"
	"  -o seal_cache_mb=N      with verify=seal, keep up to N MiB of checked\n"
	"                          chunks for the requests that share them (default 64)\n"
	"  -o trust=PUB.pem[:...]  require PACK.sig by one of these Ed25519 keys\n"
	"                          over this pack and seal (implies verify=seal;\n"
	"                          ':' or an escaped '\\,' separates them)\n"
	"  -o dequant              add up.f32, gate.f32 and down.f32 (float32,\n"
	"                          decoded on read) beside each expert's roles\n"
	"  -o nolease              take no read lease on the pack: writers are not\n"
	"                          held up, changes are found by stat checks only\n"
	"  -o quiet                print no notes (which verify mode was chosen);\n"
	"                          warnings and errors still\n"
	"  -o client_root=PATH     where clients see the mount, for\n"
	"                          PACK.manifest.json (default: MOUNTPOINT)\n"
	"  -o readahead_kb=N       the mount's read-ahead window (default: the\n"
	"                          largest read request, 1008 KiB; 0: kernel default)\n"
	"  -o uid=N, -o gid=N      owner of every file (default: the caller)\n"
	"  -o umask=M              permission bits to remove from 0555/0444\n"
	"  -o status_mode=M        who reads status.json, metrics and the read\n"
	"                          counts of layers (default 0440: owner and group)\n"
	"  -o metrics_file=PATH    also write the metrics to PATH (absolute),\n"
	"                          atomically, for node_exporter's textfile collector\n"
	"  -o metrics_interval=S   rewrite it every S seconds (default 15)\n"
	"\n"
	"A pack from its mirrors: " PROG " [OPTIONS] SOURCE MOUNTPOINT, SOURCE an\n"
	"http(s)://, s3:// or file:// URL of PACK (as `moepack fetch` takes):\n"
	"  -o cache=DIR            fill DIR/NAME.pack while serving (required)\n"
	"  -o mirror=SOURCE2       another mirror of the same pack (repeatable)\n"
	"  -o trust=PUB.pem[:...], -o expect_seal_sha256=HEX\n"
	"                          the root of trust: one of them is required\n"
	"  -o remote_timeout=S     a read of a chunk no mirror sends fails with EIO\n"
	"                          after S seconds (default 30)\n"
	"  -o fill=MODE            on (the default) or off: fetch only what is read\n"
	"  -o fill_rate=BYTES      cap the background fill at BYTES per second\n"
	"  -o s3_endpoint=URL      s3:// sources: the endpoint (default:\n"
	"                          AWS_ENDPOINT_URL, else AWS's for AWS_REGION)\n"
	"  -o s3_virtual_hosted    s3:// sources: BUCKET.HOST/KEY, not HOST/BUCKET/KEY\n"
	"\n"
	"FUSE options:\n"
	"  -f                      stay in the foreground\n"
	"  -d, -o debug            log every request (implies -f)\n"
	"  -s                      single-threaded\n"
	"  -o allow_other          let other users in (see fuse(8))\n"
	"  -o auto_unmount         unmount when the daemon dies (by fusermount3)\n"
	"  -o max_threads=N        threads serving requests (default 192)\n"
	"  -o max_idle_threads=N   idle threads kept at most\n"
	"  -o clone_fd             one /dev/fuse descriptor per thread\n"
	"  -o max_read=N           largest read request in bytes\n"
	"  -o fsname=NAME, -o subtype=NAME\n"
	"                          as in fuse(8) (default: moepackfs:PACK, moepackfs)\n"
	"  -h, --help              show this help and exit\n"
	"  -V, --version           show the version and exit\n"
	"\n"
	"Exit status: 0 mounted, 1 invalid pack, 2 usage error, 3 a file cannot be\n"
	"read or the mount failed.  See moepackfs(1).\n";

enum {
	KEY_MANIFEST,
	KEY_EXPECT_LAYERS,
	KEY_EXPECT_EXPERTS,
	KEY_EXPECT_TOP_K,
	KEY_EXPECT_SOURCE,
	KEY_EXPECT_IDENTITY,
	KEY_EXPECT_CONFIG,
	KEY_SOURCE,
	KEY_CONFIG,
	KEY_VERIFY,
	KEY_DEQUANT,
	KEY_NOLEASE,
	KEY_QUIET,
	KEY_SEAL,
	KEY_TRUST,
	KEY_CLIENT_ROOT,
	KEY_READAHEAD,
	KEY_UID,
	KEY_GID,
	KEY_UMASK,
	KEY_STATUS_MODE,
	KEY_MAX_READ,
	KEY_METRICS_FILE,
	KEY_METRICS_INTERVAL,
	KEY_SEAL_AHEAD,
	KEY_SEAL_CACHE,
	KEY_MAX_THREADS,
	KEY_FSNAME,
	KEY_SUBTYPE,
	KEY_HELP,
	KEY_VERSION,
	KEY_LIST_OPTIONS,
	KEY_CACHE,
	KEY_MIRROR,
	KEY_EXPECT_SEAL,
	KEY_REMOTE_TIMEOUT,
	KEY_FILL,
	KEY_FILL_RATE,
	KEY_S3_ENDPOINT,
	KEY_S3_VHOST,
	KEY_FUSE,
	KEY_DROP,
};

/* The -o options come first, then the program's and libfuse's. */
static const struct fuse_opt option_spec[] = {
	FUSE_OPT_KEY("manifest=", KEY_MANIFEST),
	FUSE_OPT_KEY("expect_layers=", KEY_EXPECT_LAYERS),
	FUSE_OPT_KEY("expect_experts=", KEY_EXPECT_EXPERTS),
	FUSE_OPT_KEY("expect_top_k=", KEY_EXPECT_TOP_K),
	FUSE_OPT_KEY("expect_source_sha256=", KEY_EXPECT_SOURCE),
	FUSE_OPT_KEY("expect_model_identity_sha256=", KEY_EXPECT_IDENTITY),
	FUSE_OPT_KEY("expect_config_sha256=", KEY_EXPECT_CONFIG),
	FUSE_OPT_KEY("source=", KEY_SOURCE),
	FUSE_OPT_KEY("config=", KEY_CONFIG),
	FUSE_OPT_KEY("verify=", KEY_VERIFY),
	FUSE_OPT_KEY("dequant", KEY_DEQUANT),
	FUSE_OPT_KEY("nolease", KEY_NOLEASE),
	FUSE_OPT_KEY("quiet", KEY_QUIET),
	FUSE_OPT_KEY("seal=", KEY_SEAL),
	FUSE_OPT_KEY("seal_ahead=", KEY_SEAL_AHEAD),
	FUSE_OPT_KEY("seal_cache_mb=", KEY_SEAL_CACHE),
	FUSE_OPT_KEY("trust=", KEY_TRUST),
	FUSE_OPT_KEY("client_root=", KEY_CLIENT_ROOT),
	FUSE_OPT_KEY("readahead_kb=", KEY_READAHEAD),
	FUSE_OPT_KEY("uid=", KEY_UID),
	FUSE_OPT_KEY("gid=", KEY_GID),
	FUSE_OPT_KEY("umask=", KEY_UMASK),
	FUSE_OPT_KEY("status_mode=", KEY_STATUS_MODE),
	FUSE_OPT_KEY("max_read=", KEY_MAX_READ),
	FUSE_OPT_KEY("metrics_file=", KEY_METRICS_FILE),
	FUSE_OPT_KEY("metrics_interval=", KEY_METRICS_INTERVAL),
	FUSE_OPT_KEY("cache=", KEY_CACHE),
	FUSE_OPT_KEY("mirror=", KEY_MIRROR),
	FUSE_OPT_KEY("expect_seal_sha256=", KEY_EXPECT_SEAL),
	FUSE_OPT_KEY("remote_timeout=", KEY_REMOTE_TIMEOUT),
	FUSE_OPT_KEY("fill=", KEY_FILL),
	FUSE_OPT_KEY("fill_rate=", KEY_FILL_RATE),
	FUSE_OPT_KEY("s3_endpoint=", KEY_S3_ENDPOINT),
	FUSE_OPT_KEY("s3_virtual_hosted", KEY_S3_VHOST),
	FUSE_OPT_KEY("fsname=", KEY_FSNAME),
	FUSE_OPT_KEY("subtype=", KEY_SUBTYPE),
	FUSE_OPT_KEY("-h", KEY_HELP),
	FUSE_OPT_KEY("--help", KEY_HELP),
	FUSE_OPT_KEY("-V", KEY_VERSION),
	FUSE_OPT_KEY("--version", KEY_VERSION),
	FUSE_OPT_KEY("--list-options", KEY_LIST_OPTIONS),
	/* libfuse's own, handed over as they are (listed for the completion) */
	FUSE_OPT_KEY("-f", KEY_FUSE),
	FUSE_OPT_KEY("-d", KEY_FUSE),
	FUSE_OPT_KEY("-s", KEY_FUSE),
	FUSE_OPT_KEY("debug", KEY_FUSE),
	FUSE_OPT_KEY("allow_other", KEY_FUSE),
	FUSE_OPT_KEY("auto_unmount", KEY_FUSE),
	FUSE_OPT_KEY("max_threads=", KEY_MAX_THREADS),
	FUSE_OPT_KEY("max_idle_threads=", KEY_FUSE),
	FUSE_OPT_KEY("clone_fd", KEY_FUSE),
	/*
	 * What mount(8), fstab and mount.fuse3 may hand over that means
	 * nothing for a read-only FUSE file system (and that libfuse would
	 * reject as unknown).  "rw" is not here: libfuse knows it, and the
	 * "ro" added last wins.
	 */
	FUSE_OPT_KEY("defaults", KEY_DROP),
	FUSE_OPT_KEY("auto", KEY_DROP),
	FUSE_OPT_KEY("noauto", KEY_DROP),
	FUSE_OPT_KEY("user", KEY_DROP),
	FUSE_OPT_KEY("nouser", KEY_DROP),
	FUSE_OPT_KEY("users", KEY_DROP),
	FUSE_OPT_KEY("owner", KEY_DROP),
	FUSE_OPT_KEY("group", KEY_DROP),
	FUSE_OPT_KEY("nofail", KEY_DROP),
	FUSE_OPT_KEY("_netdev", KEY_DROP),
	FUSE_OPT_KEY("relatime", KEY_DROP),
	FUSE_OPT_KEY("norelatime", KEY_DROP),
	FUSE_OPT_KEY("strictatime", KEY_DROP),
	FUSE_OPT_KEY("nostrictatime", KEY_DROP),
	FUSE_OPT_KEY("lazytime", KEY_DROP),
	FUSE_OPT_KEY("nolazytime", KEY_DROP),
	FUSE_OPT_KEY("diratime", KEY_DROP),
	FUSE_OPT_KEY("nodiratime", KEY_DROP),
	FUSE_OPT_KEY("iversion", KEY_DROP),
	FUSE_OPT_KEY("noiversion", KEY_DROP),
	FUSE_OPT_KEY("silent", KEY_DROP),
	FUSE_OPT_KEY("loud", KEY_DROP),
	/* no symlinks, no locks to enforce: nothing for them to change */
	FUSE_OPT_KEY("nosymfollow", KEY_DROP),
	FUSE_OPT_KEY("symfollow", KEY_DROP),
	FUSE_OPT_KEY("mand", KEY_DROP),
	FUSE_OPT_END,
};

static void usage_error(struct options *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void usage_error(struct options *o, const char *fmt, ...)
{
	va_list ap;

	if (o->error[0])
		return;
	va_start(ap, fmt);
	vsnprintf(o->error, sizeof o->error, fmt, ap);
	va_end(ap);
}

/* Plain decimal (or octal) digits only: no sign, no spaces, no junk. */
static bool parse_number(const char *text, unsigned base, uint64_t max, uint64_t *out)
{
	bool overflow;
	const char *end = mp_scan_u64(text, base, out, &overflow);

	return *text && !*end && !overflow && *out <= max;
}

static const char *value_of(const char *arg)
{
	return strchr(arg, '=') + 1;
}

static void number_option(struct options *o, const char *arg, unsigned base, uint64_t min,
			  uint64_t max, uint64_t *out)
{
	const char *v = value_of(arg);
	int name_len = (int)(v - arg - 1);

	if (!parse_number(v, base, max, out) || *out < min)
		usage_error(o, "invalid value '%s' for -o %.*s (%s from %" PRIu64
			    " to %" PRIu64 ")", v, name_len, arg,
			    base == 8 ? "an octal number" : "a number", min, max);
}

static int replace_string(struct options *o, char **slot, const char *value)
{
	char *copy = strdup(value);

	if (!copy)
		return -1;
	free(*slot);
	*slot = copy;
	return 0;
}

/* -o verify=MODE; "+", not ",": a comma would end the -o option. */
static const struct {
	const char *name;
	bool full, payload, seal, entries;
} verify_modes[] = {
	{"index", false, false, false, false},
	{"full", true, false, false, false},
	{"payload", false, true, false, false},
	{"full+payload", true, true, false, false},
	{"payload+full", true, true, false, false},
	{"seal", false, false, true, false},
	{"full+seal", true, false, true, false},
	{"seal+full", true, false, true, false},
	{"entries", false, false, false, true},
	{"full+entries", true, false, false, true},
	{"entries+full", true, false, false, true},
};

#define VERIFY_MODES (sizeof verify_modes / sizeof verify_modes[0])

static void verify_option(struct options *o, const char *value)
{
	o->verify_given = true;
	for (size_t i = 0; i < VERIFY_MODES; i++) {
		if (strcmp(value, verify_modes[i].name) == 0) {
			o->full = verify_modes[i].full;
			o->payload = verify_modes[i].payload;
			o->entries = verify_modes[i].entries;
			o->verify_not_seal = !verify_modes[i].seal;
			/* -o trust= and -o seal= keep the seal whatever comes after */
			o->seal = verify_modes[i].seal || (o->seal && (o->trust || o->seal_path));
			return;
		}
	}
	usage_error(o, "invalid value '%s' for -o verify (index, full, "
		    "payload, full+payload, seal, full+seal, entries or full+entries)", value);
}

/* The options with a number; returns what fuse_opt wants: 1 keeps the
 * option for libfuse (max_read), 0 drops it. */
static int numeric_option(struct options *o, const char *arg, int key)
{
	uint64_t v = 0;

	switch (key) {
	case KEY_EXPECT_LAYERS:
		number_option(o, arg, 10, 1, UINT64_MAX, &o->expect_layers);
		return 0;
	case KEY_EXPECT_EXPERTS:
		number_option(o, arg, 10, 1, UINT64_MAX, &o->expect_experts);
		return 0;
	case KEY_EXPECT_TOP_K:
		number_option(o, arg, 10, 1, UINT64_MAX, &o->expect_top_k);
		return 0;
	case KEY_READAHEAD:
		number_option(o, arg, 10, 0, READAHEAD_KB_MAX, &v);
		o->readahead_kb = (unsigned)v;
		o->readahead_given = true;
		return 0;
	case KEY_UID:
		number_option(o, arg, 10, 0, UINT32_MAX - 1, &v);
		o->uid = (uid_t)v;
		o->uid_given = true;
		return 0;
	case KEY_GID:
		number_option(o, arg, 10, 0, UINT32_MAX - 1, &v);
		o->gid = (gid_t)v;
		o->gid_given = true;
		return 0;
	case KEY_UMASK:
		number_option(o, arg, 8, 0, 0777, &v);
		o->umask = (mode_t)v;
		return 0;
	case KEY_STATUS_MODE:
		number_option(o, arg, 8, 0, 0444, &v);
		if (v & ~0444ull)
			usage_error(o, "invalid value '%s' for -o status_mode (read bits "
				    "only: 0444, 0440, 0400 ...)", value_of(arg));
		o->status_mode = (mode_t)v;
		o->status_mode_given = true;
		return 0;
	case KEY_METRICS_INTERVAL:
		number_option(o, arg, 10, 1, 86400, &o->metrics_interval);
		return 0;
	case KEY_SEAL_AHEAD:
		number_option(o, arg, 10, 0, MP_SEALCHECK_AHEAD_MAX, &o->seal_ahead);
		o->seal_ahead_given = true;
		return 0;
	case KEY_SEAL_CACHE:
		number_option(o, arg, 10, 0, SEAL_CACHE_MB_MAX, &o->seal_cache_mb);
		o->seal_cache_given = true;
		return 0;
	default: /* KEY_MAX_READ */
		/* libfuse needs it too; init must repeat it (fs.c) */
		number_option(o, arg, 10, MP_PAGE, UINT32_MAX, &v);
		o->max_read = (unsigned)v;
		return 1;
	}
}

/* PACK, then MOUNTPOINT (which goes on to fuse_parse_cmdline too). */
static int operand(struct options *o, const char *arg)
{
	if (!o->pack)
		return replace_string(o, &o->pack, arg);
	if (!o->mountpoint && replace_string(o, &o->mountpoint, arg) != 0)
		return -1;
	return 1;
}

/* An option of no key: libfuse's, or fstab's that mean nothing here. */
static int unkeyed_option(struct options *o, const char *arg, struct fuse_args *out)
{
	/*
	 * -fs, -fd, -dfs...: the synopsis's [-fds] combined, as getopt would
	 * take them.  libfuse knows only the single letters, so each goes on
	 * as its own argument.
	 */
	if (arg[0] == '-' && arg[1] && arg[2] && strspn(arg + 1, "fds") == strlen(arg + 1)) {
		for (const char *c = arg + 1; *c; c++) {
			char one[3] = {'-', *c, '\0'};

			if (fuse_opt_add_arg(out, one) != 0)
				return -1;
		}
		return 0;
	}
	/* fstab-only options (x-systemd.*, comment=...) */
	if (strncmp(arg, "x-", 2) == 0 || strncmp(arg, "comment=", 8) == 0)
		return 0;
	if (o->nunkeyed < UNKEYED_MAX && !(o->unkeyed[o->nunkeyed++] = strdup(arg)))
		return -1;
	return 1;
}

/* -o client_root= and -o metrics_file=: absolute paths. */
static int path_option(struct options *o, const char *arg, int key)
{
	char **slot = key == KEY_CLIENT_ROOT ? &o->client_root : &o->metrics_file;

	if (replace_string(o, slot, value_of(arg)) != 0)
		return -1;
	if (key == KEY_CLIENT_ROOT && o->client_root[0] != '/')
		usage_error(o, "-o client_root must be an absolute path, "
			    "not '%s'", o->client_root);
	else if (key == KEY_METRICS_FILE && o->metrics_file[0] != '/')
		usage_error(o, "-o metrics_file must be an absolute path, "
			    "not '%s'", o->metrics_file);
	else if (key == KEY_METRICS_FILE &&
		 o->metrics_file[strlen(o->metrics_file) - 1] == '/')
		usage_error(o, "-o metrics_file must name a file, not the "
			    "directory '%s'", o->metrics_file);
	return 0;
}

/* -o seal=, -o trust=: both ask for the seal to be checked. */
static int seal_option(struct options *o, const char *arg, int key)
{
	/* naming a seal asks for it to be used; a signature covers the seal's digest */
	o->seal = true;
	o->verify_given = true;
	return replace_string(o, key == KEY_SEAL ? &o->seal_path : &o->trust, value_of(arg));
}

/* -o s3_endpoint=URL: checked as fetch checks --s3-endpoint's (source.h). */
static int s3_endpoint_option(struct options *o, const char *v)
{
	const char *why = mp_fetch_s3_endpoint_problem(v);

	if (why)
		usage_error(o, "invalid value '%s' for -o s3_endpoint: %s", v, why);
	return replace_string(o, &o->s3_endpoint, v);
}

/* The options of a pack from its mirrors; 0 (none goes to libfuse), -1
 * out of memory. */
static int remote_option(struct options *o, const char *arg, int key)
{
	const char *v = strchr(arg, '=') ? value_of(arg) : "";

	o->remote_given = true;
	switch (key) {
	case KEY_S3_ENDPOINT:
		return s3_endpoint_option(o, v);
	case KEY_S3_VHOST:
		o->s3_virtual_hosted = true;
		return 0;
	case KEY_CACHE:
		return replace_string(o, &o->cache, v);
	case KEY_MIRROR:
		if (o->nmirrors == MIRRORS_MAX) {
			usage_error(o, "-o mirror: more than %d mirrors", MIRRORS_MAX);
			return 0;
		}
		return (o->mirrors[o->nmirrors++] = strdup(v)) ? 0 : -1;
	case KEY_EXPECT_SEAL:
		if (strlen(v) != 64 || strspn(v, "0123456789abcdefABCDEF") != 64)
			usage_error(o, "invalid value '%s' for -o expect_seal_sha256 (64 hex "
				    "digits)", v);
		return replace_string(o, &o->expect_seal, v);
	case KEY_REMOTE_TIMEOUT:
		number_option(o, arg, 10, 1, 86400, &o->remote_timeout);
		return 0;
	case KEY_FILL_RATE:
		number_option(o, arg, 10, 1024, UINT64_MAX / 2, &o->fill_rate);
		o->fill_rate_given = true;
		return 0;
	default: /* KEY_FILL */
		if (strcmp(v, "on") != 0 && strcmp(v, "off") != 0)
			usage_error(o, "invalid value '%s' for -o fill (on or off)", v);
		o->fill_off = strcmp(v, "off") == 0;
		return 0;
	}
}

/* The keys that only set a flag; returns what fuse_opt wants. */
static int flag_option(struct options *o, int key)
{
	switch (key) {
	case KEY_DEQUANT:
		o->dequant = true;
		return 0;
	case KEY_NOLEASE:
		o->nolease = true;
		return 0;
	case KEY_QUIET:
		o->quiet = true;
		return 0;
	case KEY_FSNAME:
		o->has_fsname = true;
		return 1;
	case KEY_SUBTYPE:
		o->has_subtype = true;
		return 1;
	case KEY_HELP:
		o->show_help = true;
		return 0;
	case KEY_VERSION:
		o->show_version = true;
		return 0;
	case KEY_LIST_OPTIONS:
		o->list_options = true;
		return 0;
	case KEY_DROP:
		return 0;
	}
	return 1;
}

static int option_proc(void *data, const char *arg, int key, struct fuse_args *out)
{
	struct options *o = data;

	switch (key) {
	case FUSE_OPT_KEY_NONOPT:
		return operand(o, arg);
	case FUSE_OPT_KEY_OPT:
		return unkeyed_option(o, arg, out);
	case KEY_MANIFEST:
		return replace_string(o, &o->manifest, value_of(arg));
	case KEY_CONFIG:
		return replace_string(o, &o->config, value_of(arg));
	case KEY_SOURCE:
		return replace_string(o, &o->source, value_of(arg));
	case KEY_EXPECT_SOURCE:
		return replace_string(o, &o->expect_source, value_of(arg));
	case KEY_EXPECT_IDENTITY:
		return replace_string(o, &o->expect_identity, value_of(arg));
	case KEY_EXPECT_CONFIG:
		return replace_string(o, &o->expect_config, value_of(arg));
	case KEY_CLIENT_ROOT:
	case KEY_METRICS_FILE:
		return path_option(o, arg, key);
	case KEY_VERIFY:
		verify_option(o, value_of(arg));
		return 0;
	case KEY_SEAL:
	case KEY_TRUST:
		return seal_option(o, arg, key);
	case KEY_EXPECT_LAYERS:
	case KEY_EXPECT_EXPERTS:
	case KEY_EXPECT_TOP_K:
	case KEY_READAHEAD:
	case KEY_UID:
	case KEY_GID:
	case KEY_UMASK:
	case KEY_STATUS_MODE:
	case KEY_MAX_READ:
	case KEY_METRICS_INTERVAL:
	case KEY_SEAL_AHEAD:
	case KEY_SEAL_CACHE:
		return numeric_option(o, arg, key);
	case KEY_MAX_THREADS:
		o->max_threads_given = true;
		return 1;
	case KEY_CACHE:
	case KEY_MIRROR:
	case KEY_EXPECT_SEAL:
	case KEY_REMOTE_TIMEOUT:
	case KEY_FILL:
	case KEY_FILL_RATE:
	case KEY_S3_ENDPOINT:
	case KEY_S3_VHOST:
		return remote_option(o, arg, key);
	}
	return flag_option(o, key);
}

/*
 * The hidden `moepackfs --list-options` (the bash completion's source):
 * option_spec and the -o verify modes as they are parsed, one option a
 * line, "TEMPLATE KIND [VALUE...]": KIND is pack (moepackfs's own), fuse
 * (handed to libfuse), program (-h, -V) or ignored (mount(8)'s, dropped).
 */
void mp_opt_list(void)
{
	for (const struct fuse_opt *spec = option_spec; spec->templ; spec++) {
		const char *kind = "pack";

		switch (spec->value) {
		case KEY_LIST_OPTIONS:
			continue;
		case KEY_FUSE:
		case KEY_MAX_THREADS:
		case KEY_MAX_READ:
		case KEY_FSNAME:
		case KEY_SUBTYPE:
			kind = "fuse";
			break;
		case KEY_HELP:
		case KEY_VERSION:
			kind = "program";
			break;
		case KEY_DROP:
			kind = "ignored";
			break;
		}
		printf("%s %s", spec->templ, kind);
		for (size_t i = 0; spec->value == KEY_VERIFY && i < VERIFY_MODES; i++)
			printf(" %s", verify_modes[i].name);
		putchar('\n');
	}
}

int mp_opt_parse(struct options *o, struct fuse_args *args)
{
	return fuse_opt_parse(args, o, option_spec, option_proc);
}

void mp_opt_print_help(void)
{
	fputs(usage_text, stdout);
}

/* The -o options of option_spec, for mp_text_nearest() ("" for -f, -h...). */
static const char *option_name(size_t i, const void *arg)
{
	(void)arg;
	return option_spec[i].templ[0] == '-' ? "" : option_spec[i].templ;
}

const char *mp_opt_nearest(const char *key)
{
	return mp_text_nearest(key, option_name, NULL,
			       sizeof option_spec / sizeof option_spec[0] - 1);
}
