/*
 * options.h - moepackfs's options as parsed (options.c).
 */
#ifndef MOEPACK_DAEMON_OPTIONS_H
#define MOEPACK_DAEMON_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct fuse_args;

/* Unkeyed options kept to name the one libfuse refuses (more are handed
 * over unnamed) */
#define UNKEYED_MAX 32

/* -o mirror= at most this many times (the SOURCE is one more) */
#define MIRRORS_MAX 63

/* fuse_opt hands out arguments in buffers it reuses: strings are copied. */
struct options {
	char *pack;
	char *manifest;
	char *config;
	char *client_root;
	char *metrics_file;
	uint64_t metrics_interval;
	char *mountpoint;         /* as given, for the checks before libfuse's */
	uint64_t expect_layers;
	uint64_t expect_experts;
	uint64_t expect_top_k;
	char *expect_source, *expect_identity, *expect_config; /* hex digests */
	char *source;             /* -o source=GGUF */
	bool full;
	bool payload;             /* -o verify=payload: the scan before mounting */
	bool dequant;             /* -o dequant: the .f32 files */
	bool nolease;             /* -o nolease: no read lease, the stat checks */
	bool quiet;               /* -o quiet: no notes, only warnings and errors */
	bool seal;                /* -o verify=seal (or -o trust=) */
	bool entries;             /* -o verify=entries: the index's role digests */
	char *seal_path;          /* -o seal=PATH */
	bool verify_given;        /* -o verify=, -o seal= or -o trust= */
	bool verify_not_seal;     /* -o verify= named a mode without the seal */
	bool seal_ahead_given;
	uint64_t seal_ahead;      /* -o seal_ahead=N chunks */
	bool seal_cache_given;
	uint64_t seal_cache_mb;   /* -o seal_cache_mb=N */
	bool max_threads_given;   /* -o max_threads=N (libfuse's) */
	char *trust;              /* -o trust=PUB.pem[:PUB2.pem...] */
	bool readahead_given;
	unsigned readahead_kb;
	bool uid_given, gid_given;
	uid_t uid;
	gid_t gid;
	mode_t umask;
	bool status_mode_given;
	mode_t status_mode;       /* -o status_mode=: status.json, metrics */
	unsigned max_read;
	bool has_fsname, has_subtype;
	bool show_help, show_version, list_options;
	/* the options handed to libfuse that no key names: the ones it may
	 * not know, each tried alone before the session is made */
	char *unkeyed[UNKEYED_MAX];
	unsigned nunkeyed;
	/* a SOURCE that is a mirror's URL (fetch/remote.h) */
	char *cache;              /* -o cache=DIR: where the pack is filled */
	char *mirrors[MIRRORS_MAX]; /* -o mirror=SOURCE2, repeated */
	unsigned nmirrors;
	char *expect_seal;        /* -o expect_seal_sha256=HEX */
	uint64_t remote_timeout;  /* -o remote_timeout=S; 0: not given */
	bool fill_off;            /* -o fill=off */
	bool fill_rate_given;
	uint64_t fill_rate;       /* -o fill_rate=BYTES per second */
	char *s3_endpoint;        /* -o s3_endpoint=URL; NULL: AWS_ENDPOINT_URL */
	bool s3_virtual_hosted;   /* -o s3_virtual_hosted: BUCKET.HOST/KEY */
	bool remote_given;        /* any of the above: they need a URL SOURCE */
	char error[256];          /* the first usage error */
};

/*
 * Parse args into o (zeroed by the caller) with fuse_opt: what is libfuse's
 * stays in args for fuse_parse_cmdline().  Nonzero when fuse_opt fails
 * (out of memory); a usage error is kept in o->error instead, the first
 * one only, for the caller to print.  The strings in o are malloc'd.
 */
int mp_opt_parse(struct options *o, struct fuse_args *args);

/* --help's text, to stdout. */
void mp_opt_print_help(void);

/*
 * The hidden --list-options, to stdout: option_spec and the -o verify
 * modes as they are parsed, one option a line (the bash completion's source).
 */
void mp_opt_list(void);

/*
 * The -o option nearest the unknown `key` ("NAME=" or "NAME"), to suggest
 * it, or NULL when none is near (mp_text_nearest).
 */
const char *mp_opt_nearest(const char *key);

#endif
