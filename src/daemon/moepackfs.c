/*
 * moepackfs.c - validate a pack, then mount it read-only with FUSE: main.
 *
 * The order matters: options, then the same validation as `moepack verify`
 * (same messages, same exit statuses), and only a valid pack is mounted.
 * The mount happens before daemonizing, and fuse_daemonize()'s parent
 * waits for the child, so when `moepackfs PACK MNT` returns 0 the mount
 * is there (requests wait for the loop, they do not fail).
 *
 * main() runs the steps in that order, each a file of its own: the
 * options (options.c), the session (here: libfuse refuses an unknown
 * option before a long validation), the pack (openpack.c), the metrics
 * file's checks (metricsfile.c), struct mp_fs (prepare.c), the mount
 * (mountpoint.c); then it daemonizes and runs the loop between the
 * threads it needs (the watcher, the lease's, the seal's workers).
 */
#include "config.h"

#include "daemon/daemon.h"
#include "daemon/fs.h"
#include "daemon/lease.h"
#include "daemon/metricsfile.h"
#include "daemon/mountpoint.h"
#include "daemon/openpack.h"
#include "daemon/options.h"
#include "daemon/prepare.h"
#include "daemon/prog.h"
#include "daemon/remotepack.h"
#include "daemon/watch.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <fuse_opt.h>

#include "base/text.h"

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

	/* a write that already failed (the text is longer than stdio's
	 * buffer) left its errno: keep it (the callers clear errno first) */
	if (!ferror(stdout))
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
	errno = 0;
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
	status = daemon_check_remote_options(d);
	if (status == 0)
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
 * not wait for a full digest of a large pack.  Only when libfuse refuses
 * them are the options tried one by one, to name the one at fault.
 */
static int new_session(struct daemon *d, struct fuse_args *args, struct fuse_session **se)
{
	int status;

	d->pack_real = realpath(d->opt.pack, NULL);
	if (!add_mount_options(d, args)) {
		fprintf(stderr, PROG ": out of memory\n");
		return EXIT_IO;
	}
	fuse_set_log_func(no_log);
	*se = fuse_session_new(args, &mp_fs_ops, sizeof mp_fs_ops, &d->fs);
	fuse_set_log_func(NULL);
	if (*se)
		return 0;
	status = unknown_option(d);
	return status ? status : daemon_usage_failure("libfuse refused the mount options");
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
	if (status == 0)
		status = daemon_remote_start(d);
	if (status == 0) {
		if (run_loop(d, se) < 0)
			status = EXIT_IO;
		/* readers waiting for a chunk let go before the seal's workers */
		daemon_remote_stop(d);
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
	d->se = se;
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
	if (status == 0 && daemon_source_is_url(d.opt.pack))
		status = daemon_open_remote(&d);
	if (status == 0)
		status = daemon_open_pack(&d);
	if (status == 0 && d.opt.metrics_file)
		status = daemon_check_metrics_file(&d);
	if (status == 0)
		status = daemon_prepare_fs(&d);
	if (status == 0)
		status = serve(&d, se);
	if (se)
		fuse_session_destroy(se);
	daemon_free(&d);
	fuse_opt_free_args(&args);
	return status < 0 ? 0 : status;
}
