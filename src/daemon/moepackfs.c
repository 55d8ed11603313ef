/*
 * moepackfs.c - validate a pack, then mount it read-only with FUSE.
 *
 * The order matters: options, then the same validation as `moepack verify`
 * (same messages, same exit statuses), and only a valid pack is mounted.
 * The mount happens before daemonizing, and fuse_daemonize()'s parent
 * waits for the child, so when `moepackfs PACK MNT` returns 0 the mount
 * is there (requests wait for the loop, they do not fail).
 */
#include "config.h"

#include "daemon/daemon.h"
#include "daemon/fs.h"
#include "daemon/mountpoint.h"
#include "daemon/openpack.h"
#include "daemon/options.h"
#include "daemon/prog.h"
#include "daemon/lease.h"
#include "daemon/watch.h"
#include "daemon/metricsfile.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <grp.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include <fuse_opt.h>

#include "pack/manifest.h"
#include "seal/entryseal.h"
#include "seal/seal.h"
#include "seal/sealsample.h"
#include "seal/sign.h"
#include "pack/progress.h"
#include "payload/scan.h"
#include "payload/scanreport.h"
#include "namespace/mountinfo.h"
#include "namespace/sharedmaps.h"
#include "base/outfile.h"
#include "base/text.h"

/* Entries and attributes never change while mounted. */
#define CACHE_TIMEOUT (30.0 * 86400.0)
#define HOTTEST_EXPERTS 16
#define MAX_REQUEST (1u << 20)
#define MIN_REQUEST (128u << 10)
/*
 * status.json and metrics say who reads which expert and where the pack
 * lives: under allow_other, only the owner and group read them unless
 * -o status_mode says otherwise.
 */
#define STATUS_MODE 0440
/* the request buffers kept for reuse at most (the rest are freed) */
#define REQUEST_BUFFERS_KEPT 32
/* -o metrics_file's period: node_exporter is scraped every 15 s or more */
#define METRICS_INTERVAL 15

/*
 * Largest read request that libfuse can still answer by splice.  It
 * vmsplices the 16-byte reply header and splices the payload into one pipe,
 * which it grows to the reply plus three pages; when the kernel refuses
 * (fs.pipe-max-size, 1 MiB by default, or the per-user pipe limits) it
 * silently copies instead.  So try exactly that on a pipe of our own, from
 * 1 MiB (the kernel's request limit) down: 1008 KiB with the defaults.
 */
static unsigned splice_request_size(void)
{
	long page = sysconf(_SC_PAGESIZE);
	unsigned size = MAX_REQUEST;
	int fds[2];

	if (page <= 0)
		page = MP_PAGE;
	if (pipe2(fds, O_CLOEXEC) != 0)
		return MIN_REQUEST;
	for (; size > MIN_REQUEST; size -= (unsigned)page)
		if (fcntl(fds[0], F_SETPIPE_SZ, size + 3 * (unsigned)page + 16) >= 0)
			break;
	close(fds[0]);
	close(fds[1]);
	return size;
}

static void add_arg(struct fuse_args *args, const char *arg, bool *ok)
{
	if (fuse_opt_add_arg(args, arg) != 0)
		*ok = false;
}

/* -o NAME=VALUE with VALUE's commas and backslashes escaped for fuse_opt. */
static void add_escaped_option(struct fuse_args *args, const char *name,
			       const char *value, bool *ok)
{
	char *text = malloc(strlen(name) + strlen(value) + 1);
	char *opts = NULL;

	if (!text) {
		*ok = false;
		return;
	}
	sprintf(text, "%s%s", name, value);
	if (fuse_opt_add_opt_escaped(&opts, text) != 0) {
		*ok = false;
	} else {
		add_arg(args, "-o", ok);
		add_arg(args, opts, ok);
	}
	free(opts);
	free(text);
}

/* The inode arithmetic (with the .f32 files when asked) and the counters. */
static int prepare_tree(struct daemon *d)
{
	struct mp_fs *fs = &d->fs;
	struct mp_error err = {0};
	enum mp_err rc;

	fs->pack = d->pack;
	rc = mp_tree_init_pack(&fs->tree, d->pack, &err);
	if (rc == MP_OK && d->opt.dequant)
		mp_tree_add_dequant(&fs->tree);
	if (rc == MP_OK) {
		rc = mp_stats_init(&fs->stats, d->pack->m.layer_count, d->pack->m.num_experts,
				   &err);
		d->stats_ok = rc == MP_OK;
	}
	if (rc != MP_OK) {
		return daemon_pack_failure(d, rc, &err);
	}
	return 0;
}

/* CLIENT_ROOT/<pack name>: what an unmodified loader resolves. */
static int prepare_client_manifest(struct daemon *d)
{
	struct mp_fs *fs = &d->fs;
	const struct mp_pack *pack = d->pack;
	const char *root = d->opt.client_root ? d->opt.client_root : d->cmd.mountpoint;
	size_t root_len = strlen(root);
	struct mp_error err = {0};
	enum mp_err rc;

	while (root_len > 1 && root[root_len - 1] == '/')
		root_len--;
	d->client_path = malloc(root_len + strlen(fs->tree.pack_name) + 2);
	if (!d->client_path) {
		fprintf(stderr, PROG ": out of memory\n");
		return EXIT_IO;
	}
	sprintf(d->client_path, "%.*s/%s", (int)(root_len == 1 ? 0 : root_len), root,
		fs->tree.pack_name);
	rc = mp_pack_manifest_with_path(pack, d->client_path, &d->client_manifest,
					&fs->attr.client_manifest_len, &err);
	if (rc != MP_OK) {
		fprintf(stderr, PROG ": %s: %s\n", pack->manifest_path, err.msg);
		return mp_err_exit_status(rc);
	}
	fs->client_manifest = d->client_manifest;
	return 0;
}

/* Owner, mode, times, and the identity the watcher compares against. */
static int prepare_attributes(struct daemon *d)
{
	struct mp_fs *fs = &d->fs;
	const struct mp_pack *pack = d->pack;
	/*
	 * The identity taken once the pack was opened and its lease held,
	 * before validation read it: a change during a long verify=full shows
	 * at once after mounting.
	 */
	struct mp_pack_id id = {
		.size = pack->file_size,
		.mtime = pack->file_mtime,
		.ctime = pack->file_ctime,
		.nlink = (nlink_t)pack->file_nlink,
	};

	fs->attr.uid = d->opt.uid_given ? d->opt.uid : getuid();
	fs->attr.gid = d->opt.gid_given ? d->opt.gid : getgid();
	fs->attr.umask = d->opt.umask;
	fs->attr.status_mode = d->opt.status_mode_given ? d->opt.status_mode : STATUS_MODE;
	fs->attr.blksize = mp_attr_blksize(pack->m.alignment);
	fs->attr.mtime = pack->file_mtime;
	if (!mp_fs_setup(fs, &id)) {
		fprintf(stderr, PROG ": cannot create the watcher's lock\n");
		return EXIT_IO;
	}
	d->fs_ok = true;
	fs->foreground = d->cmd.foreground;
	fs->timeout = CACHE_TIMEOUT;
	return 0;
}

/* Largest request, max_read, the read-ahead window, the request buffers. */
static int prepare_io_sizes(struct daemon *d)
{
	struct mp_fs *fs = &d->fs;

	fs->max_request = splice_request_size();
	fs->max_background = d->opt.max_threads_given ? d->cmd.max_threads : DEFAULT_THREADS;
	fs->max_read = d->opt.max_read;
	/* the kernel sends no more than max_read either */
	if (fs->max_read && fs->max_read < fs->max_request)
		fs->max_request = fs->max_read / MP_PAGE * MP_PAGE;
	if (!d->opt.readahead_given)
		d->opt.readahead_kb = fs->max_request / 1024;
	fs->readahead = d->opt.readahead_kb * 1024u;
	/* a direct read is rounded out to a page at each end */
	if (!mp_bufpool_init(&d->reqbufs, fs->max_request + 2 * MP_BUF_ALIGN,
			     REQUEST_BUFFERS_KEPT)) {
		fprintf(stderr, PROG ": out of memory\n");
		return EXIT_IO;
	}
	d->reqbufs_ok = true;
	fs->reqbufs = &d->reqbufs;
	fs->storage = &d->storage;
	return 0;
}

/* The fixed facts of status.json. */
static void prepare_status(struct daemon *d)
{
	struct mp_fs *fs = &d->fs;
	const struct mp_pack *pack = d->pack;

	/* after daemonizing the working directory is "/" */
	d->manifest_real = realpath(pack->manifest_path, NULL);
	fs->status = (struct mp_status_info){
		.pack_path = pack->real_path,
		.manifest_path = d->manifest_real ? d->manifest_real
						  : pack->manifest_path,
		.mountpoint = d->cmd.mountpoint,
		.verify = d->opt.seal ? (pack->full_checked ? "full+seal" : "seal")
			  : d->opt.entries ? (pack->full_checked ? "full+entries" : "entries")
			  : d->opt.payload ? (pack->full_checked ? "full+payload" : "payload")
					   : (pack->full_checked ? "full" : "index"),
		.full_digest_checked = pack->full_checked,
		.dequant = d->opt.dequant,
		.index_sha256 = pack->m.index_sha256,
		.inode_generation = fs->tree.inode_generation,
		.mounted_at = time(NULL),  /* with fs->started below */
		.layer_ids = pack->m.layer_ids,
		.nwarnings = pack->nwarnings < MP_MAX_WARNINGS ? pack->nwarnings
							       : MP_MAX_WARNINGS,
		.warnings = pack->warnings,
		.hottest = HOTTEST_EXPERTS,
		.max_request = fs->max_request,
		.max_threads = d->opt.max_threads_given ? d->cmd.max_threads : DEFAULT_THREADS,
		.max_background = fs->max_background,
		.storage = &d->storage,
		.readahead_kb = -1, /* read back once mounted */
	};
	clock_gettime(CLOCK_MONOTONIC, &fs->started);
	fs->metrics_file = d->opt.metrics_file;
	fs->metrics_interval = d->opt.metrics_interval ? (unsigned)d->opt.metrics_interval
						      : METRICS_INTERVAL;
	if (d->check_ok) {
		struct mp_status_seal *ss = &d->status_seal;

		mp_sha256_hex(d->seal->seal_digest, d->seal_hex);
		*ss = (struct mp_status_seal){
			.chunk_size = d->seal->chunk_size,
			.chunk_count = d->seal->chunk_count,
			/* verify=entries: no seal file, the index's digests */
			.seal_digest = d->opt.entries ? NULL : d->seal_hex,
			.from_index = d->opt.entries,
			/* a claim is only reported as such once proven here */
			.anchored = !mp_seal_unanchored(d->seal) &&
				    (d->opt.trust || pack->full_checked),
			.anchored_claim = !mp_seal_unanchored(d->seal),
			.trusted = d->opt.trust != NULL,
			.checked = &d->check.count.checked,
			.checked_ahead = &d->check.count.checked_ahead,
			.failed = &d->check.count.failed,
			.bytes_hashed = &d->check.count.bytes_hashed,
			.bytes_served = &d->check.count.bytes_served,
		};
		fs->status.seal = ss;
		fs->seal = &d->check;
	}
}

/* Tree, counters, the client manifest and the fixed facts of status.json. */
static int prepare_fs(struct daemon *d)
{
	int status = prepare_tree(d);

	if (status == 0)
		status = prepare_client_manifest(d);
	if (status == 0)
		status = prepare_attributes(d);
	if (status != 0)
		return status;
	status = prepare_io_sizes(d);
	if (status == 0)
		prepare_status(d);
	return status;
}

/* The mount options moepackfs always wants, after the user's. */
static bool add_mount_options(struct daemon *d, struct fuse_args *args)
{
	bool ok = true;

	if (!d->opt.has_subtype)
		add_arg(args, "-osubtype=" PROG, &ok);
	if (!d->opt.has_fsname)
		add_escaped_option(args, "fsname=" PROG ":",
				   d->pack_real ? d->pack_real : d->opt.pack, &ok);
	/* last, so that "rw", "dev" or "suid" from fstab or mount.fuse3 lose */
	add_arg(args, "-oro,nosuid,nodev,default_permissions", &ok);
	return ok;
}

static int run_loop(struct daemon *d, struct fuse_session *se)
{
	struct fuse_loop_config *cfg;
	int rc;

	if (d->cmd.singlethread)
		return fuse_session_loop(se);
	cfg = fuse_loop_cfg_create();
	if (!cfg)
		return -ENOMEM;
	fuse_loop_cfg_set_clone_fd(cfg, (unsigned)d->cmd.clone_fd);
	fuse_loop_cfg_set_max_threads(cfg, d->opt.max_threads_given ? d->cmd.max_threads
								   : DEFAULT_THREADS);
	if (d->cmd.max_idle_threads != UINT_MAX)
		fuse_loop_cfg_set_idle_threads(cfg, d->cmd.max_idle_threads);
	rc = fuse_session_loop_mt(se, cfg);
	fuse_loop_cfg_destroy(cfg);
	return rc;
}

/*
 * What --help, --version and --list-options printed reached stdout: -1
 * (all said), or EXIT_IO after "moepackfs: write error: ..." (none for a
 * reader that went away, EPIPE), as moepack's commands do.
 */
static int stdout_done(void)
{
	int e;

	errno = 0;
	if (fflush(stdout) == 0 && !ferror(stdout))
		return -1;
	e = errno;
	if (e != EPIPE)
		fprintf(stderr, PROG ": write error: %s\n", e ? strerror(e) : "unknown error");
	return EXIT_IO;
}

/* Options and operands; -1 when --help or --version said all there is. */
static int parse_command_line(struct daemon *d, struct fuse_args *args)
{
	int status;

	if (mp_opt_parse(&d->opt, args) != 0)
		return daemon_usage_failure("cannot parse the options");
	if (d->opt.show_help) {
		mp_opt_print_help();
		return stdout_done();
	}
	if (d->opt.show_version) {
		printf(PROG " %s (libfuse %s)\n", PACKAGE_VERSION, fuse_pkgversion());
		return stdout_done();
	}
	if (d->opt.list_options) {
		mp_opt_list();
		return stdout_done();
	}
	if (d->opt.error[0])
		return daemon_usage_failure("%s", d->opt.error);
	if (d->opt.entries && d->opt.seal)
		return daemon_usage_failure("-o verify=entries checks against the pack's index: "
				     "-o %s needs -o verify=seal",
				     d->opt.trust ? "trust" : "seal");
	if (d->opt.seal_ahead_given && d->opt.verify_given && !d->opt.seal && !d->opt.entries)
		return daemon_usage_failure("-o seal_ahead needs -o verify=seal or verify=entries");
	if (d->opt.seal_cache_given && d->opt.verify_given && !d->opt.seal && !d->opt.entries)
		return daemon_usage_failure("-o seal_cache_mb needs -o verify=seal or verify=entries");
	status = daemon_check_mountpoint(d);
	if (status != 0)
		return status;
	if (fuse_parse_cmdline(args, &d->cmd) != 0)
		return daemon_usage_failure("invalid arguments");
	if (!d->opt.pack || !d->cmd.mountpoint)
		return daemon_usage_failure("missing %s", d->opt.pack ? "MOUNTPOINT"
							       : "PACK and MOUNTPOINT");
	return 0;
}

/* -o trust='s list into its key files, once, before anything is read. */
static int split_trust(struct daemon *d)
{
	d->trust_split = strdup(d->opt.trust);
	if (!d->trust_split) {
		fprintf(stderr, PROG ": out of memory\n");
		return EXIT_IO;
	}
	d->ntrust = mp_trust_list_split(d->trust_split, d->trust_keys);
	if (d->ntrust < 0)
		return daemon_usage_failure("-o trust: more than %d keys", MP_MAX_TRUSTED_KEYS);
	if (d->ntrust == 0)
		return daemon_usage_failure("-o trust: no key file given");
	return 0;
}

/* libfuse's messages, while options are tried one by one */
static void no_log(enum fuse_log_level level, const char *fmt, va_list ap)
{
	(void)level;
	(void)fmt;
	(void)ap;
}

/* Whether libfuse's session takes the one option arg (as -o arg, or as
 * it is when it begins with '-'). */
static bool fuse_takes(const char *arg)
{
	struct fuse_args one = FUSE_ARGS_INIT(0, NULL);
	struct fuse_session *se = NULL;
	bool ok = true;

	add_arg(&one, PROG, &ok);
	if (arg[0] == '-')
		add_arg(&one, arg, &ok);
	else
		add_escaped_option(&one, "", arg, &ok);
	if (ok) {
		fuse_set_log_func(no_log);
		se = fuse_session_new(&one, &mp_fs_ops, sizeof mp_fs_ops, NULL);
		fuse_set_log_func(NULL);
	}
	if (se)
		fuse_session_destroy(se);
	fuse_opt_free_args(&one);
	/* out of memory: not known to be unknown */
	return se != NULL || !ok;
}

/*
 * The unknown option among those handed to libfuse, in one line with the
 * option meant when it is near one; 0 when none is unknown by itself.
 */
static int unknown_option(const struct daemon *d)
{
	for (unsigned i = 0; i < d->opt.nunkeyed; i++) {
		const char *arg = d->opt.unkeyed[i], *eq = strchr(arg, '=');
		char key[MP_TEXT_TYPO_MAX + 2], shown[1024], near[80] = "";
		const char *meant;

		if (fuse_takes(arg))
			continue;
		/* "metrics_fille=/x" is compared as "metrics_fille=" */
		snprintf(key, sizeof key, "%.*s", eq ? (int)(eq - arg + 1) : (int)strlen(arg), arg);
		meant = arg[0] == '-' ? NULL : mp_opt_nearest(key);
		if (meant)
			snprintf(near, sizeof near, " (did you mean -o %s?)", meant);
		mp_text_escape(shown, sizeof shown, arg, strlen(arg), 0);
		fprintf(stderr, PROG ": unknown option %s%s%s; '" PROG " --help' lists them\n",
			arg[0] == '-' ? "" : "-o ", shown, near);
		return EXIT_USAGE;
	}
	return 0;
}

/*
 * The session before the pack: it rejects unknown options, and that should
 * not wait for a full digest of a large pack.
 */
static int new_session(struct daemon *d, struct fuse_args *args, struct fuse_session **se)
{
	int status = unknown_option(d);

	if (status != 0)
		return status;
	d->pack_real = realpath(d->opt.pack, NULL);
	if (!add_mount_options(d, args)) {
		fprintf(stderr, PROG ": out of memory\n");
		return EXIT_IO;
	}
	*se = fuse_session_new(args, &mp_fs_ops, sizeof mp_fs_ops, &d->fs);
	if (!*se)
		return daemon_usage_failure("libfuse refused the options (its message is above)");
	return 0;
}

/* -o verify=seal: the workers that share a request's loads and check ahead. */
static int start_seal_workers(struct daemon *d)
{
	struct mp_error err = {0};
	unsigned ahead = d->opt.seal_ahead_given ? (unsigned)d->opt.seal_ahead
						 : MP_SEALCHECK_AHEAD_DEFAULT;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	/* one a core: each hashes 1.4-1.8 GB/s */
	unsigned threads = cpus < 1 ? 1 : cpus > MP_SEALCHECK_THREADS_MAX
					? MP_SEALCHECK_THREADS_MAX : (unsigned)cpus;

	if (!d->check_ok || mp_sealcheck_start(&d->check, threads, ahead, &err) == MP_OK)
		return 0;
	fprintf(stderr, PROG ": %s\n", err.msg);
	return EXIT_IO;
}

/* The lease thread and the seal's threads around the loop. */
static int run_with_lease(struct daemon *d, struct fuse_session *se)
{
	int status;

	if (mp_fs_lease_start(&d->fs) != 0) {
		fprintf(stderr, PROG ": cannot start the lease thread\n");
		return EXIT_IO;
	}
	status = start_seal_workers(d);
	if (status == 0) {
		if (run_loop(d, se) < 0)
			status = EXIT_IO;
		if (d->check_ok)
			mp_sealcheck_stop(&d->check);
	}
	mp_fs_lease_stop(&d->fs);
	return status;
}

/* Daemonize, then the threads (they do not survive fuse_daemonize()'s fork). */
static int run_daemon(struct daemon *d, struct fuse_session *se)
{
	int status;

	if (fuse_daemonize(d->cmd.foreground) != 0)
		return EXIT_IO;
	if (mp_fs_watch_start(&d->fs, se) != 0) {
		fprintf(stderr, PROG ": cannot start the watcher thread\n");
		return EXIT_IO;
	}
	status = run_with_lease(d, se);
	mp_fs_watch_stop(&d->fs);
	return status;
}

/* Mount, serve until unmounted or signalled, unmount. */
static int serve(struct daemon *d, struct fuse_session *se)
{
	int status = daemon_lease_still_held(d);

	if (status != 0)
		return status;
	if (fuse_set_signal_handlers(se) != 0)
		return EXIT_IO;
	status = daemon_mount_locked(d, se);
	if (status == 0) {
		if (d->verify_note[0] && !d->opt.quiet)
			fprintf(stderr, PROG ": %s\n", d->verify_note);
		daemon_setup_readahead(d);
		status = daemon_first_metrics_file(d);
		if (status == 0)
			status = run_daemon(d, se);
		fuse_session_unmount(se);
		mp_fs_metrics_remove(&d->fs);
	}
	fuse_remove_signal_handlers(se);
	return status;
}

/* options -> session -> pack -> fs -> serve, as passthrough_ll's main. */
int main(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct daemon d;
	struct fuse_session *se = NULL;
	int status;

	memset(&d, 0, sizeof d);
	/* before any thread: only the lease thread takes the lease's signal */
	mp_fs_block_signals();
	status = parse_command_line(&d, &args);
	if (status == 0 && d.opt.trust)
		status = split_trust(&d);
	if (status == 0)
		status = new_session(&d, &args, &se);
	if (status == 0)
		status = daemon_open_pack(&d);
	if (status == 0 && d.opt.metrics_file)
		status = daemon_check_metrics_file(&d);
	if (status == 0)
		status = prepare_fs(&d);
	if (status == 0)
		status = serve(&d, se);
	if (se)
		fuse_session_destroy(se);
	daemon_free(&d);
	fuse_opt_free_args(&args);
	return status < 0 ? 0 : status;
}
