/*
 * metricsfile.c - -o metrics_file: the metrics written out for
 * node_exporter's textfile collector.
 *
 * Before mounting, its name is checked (daemon_check_metrics_file): a
 * directory that exists, outside the mount point, where no other user
 * can replace the file, and no file the mount reads.  Once right after
 * mounting (daemon_first_metrics_file, where a failure can still be told
 * and refuse the mount), then from the watcher every
 * fs->metrics_interval seconds (watch.c), each time a fresh snapshot
 * written through a temporary and a rename (base/outfile.h); at a clean
 * unmount the file is removed if it is still the one the last write made.
 */
#include "config.h"

#include "daemon/metricsfile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/daemon.h"
#include "daemon/snapshots.h"
#include "base/outfile.h"
#include "base/text.h"

bool mp_fs_metrics_write(struct mp_fs *fs, struct mp_error *err)
{
	struct mp_status_snap *snap;
	struct stat st;
	enum mp_err rc;

	if (!mp_fs_snap_refresh(fs, err)) {
		mp_fail(err, MP_E_NOMEM, "out of memory: rendering the metrics");
		atomic_fetch_add(&fs->metrics_write_errors, 1);
		return false;
	}
	snap = mp_snap_slot_get(&fs->snaps);
	rc = mp_output_write_atomic_as(fs->metrics_file, MP_TMP_PRIVATE, MP_E_PACK_IO,
				       snap->metrics, snap->metrics_len, &st, err);
	mp_snap_put(snap);
	if (rc == MP_OK) {
		fs->metrics_written_dev = st.st_dev;
		fs->metrics_written_ino = st.st_ino;
	}
	atomic_fetch_add(rc == MP_OK ? &fs->metrics_writes : &fs->metrics_write_errors, 1);
	return rc == MP_OK;
}

void mp_fs_metrics_remove(struct mp_fs *fs)
{
	struct stat st;

	/* ours only: the file the last write made, not one put there since */
	if (fs->metrics_file && fs->metrics_written_ino && lstat(fs->metrics_file, &st) == 0 &&
	    st.st_dev == fs->metrics_written_dev && st.st_ino == fs->metrics_written_ino)
		unlink(fs->metrics_file);
}

/*
 * -o metrics_file, from the watcher: one log line when writing starts to
 * fail, one when it works again, never one per period.
 */
void mp_fs_metrics_write_logged(struct mp_fs *fs, bool *failing)
{
	struct mp_error err = {0};
	bool ok = mp_fs_metrics_write(fs, &err);

	if (fs->se)
		mp_fs_snap_settle(fs);
	if (!ok && !*failing)
		mp_fs_log(fs, "-o metrics_file: %s (retrying every %u s)", err.msg,
			 fs->metrics_interval);
	else if (ok && *failing)
		mp_fs_log(fs, "-o metrics_file: writing works again");
	*failing = !ok;
}

static bool same_file(const struct stat *a, const char *path)
{
	struct stat b;

	return path && stat(path, &b) == 0 && a->st_dev == b.st_dev && a->st_ino == b.st_ino;
}

/* Whether `path` is `dir` or lies under it (both real paths). */
static bool path_within(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (strcmp(dir, "/") == 0)
		return true;
	return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* The files a mount reads, by what they are to it. */
struct mount_inputs {
	size_t n;
	const char *path[7 + MP_MAX_TRUSTED_KEYS];
	const char *what[7 + MP_MAX_TRUSTED_KEYS];
	char *own[3];              /* the malloc'd paths among them */
};

static void add_input(struct mount_inputs *in, const char *path, const char *what)
{
	if (path) {
		in->path[in->n] = path;
		in->what[in->n++] = what;
	}
}

/*
 * Every file the mount reads, from the options it was parsed into: the
 * pack, its manifest, -o config, -o source, the seal, the signed statement
 * and signature, and each -o trust key as the signature check splits them.
 */
static void mount_inputs_of(const struct daemon *d, struct mount_inputs *in)
{
	memset(in, 0, sizeof *in);
	in->own[0] = daemon_seal_path_of(d);
	in->own[1] = mp_path_with_suffix(d->opt.pack, MP_STATEMENT_SUFFIX);
	in->own[2] = mp_path_with_suffix(d->opt.pack, MP_SIG_SUFFIX);
	add_input(in, d->pack->file.real_path, "the pack");
	add_input(in, d->pack->file.manifest_path, "its manifest");
	add_input(in, d->opt.config, "the config file");
	add_input(in, d->opt.source, "the pack's source checkpoint (-o source)");
	add_input(in, in->own[0], "the seal");
	add_input(in, in->own[1], "the pack's signed statement or signature");
	add_input(in, in->own[2], "the pack's signed statement or signature");
	for (int i = 0; i < d->ntrust; i++)
		add_input(in, d->trust_keys[i], "a trusted key");
}

/*
 * Whether the metrics file's name is one of the mount's inputs (the name
 * itself, or the file behind it): the rename would replace it, and the
 * unmount remove it.  What it is (for the message) in *what, or NULL.
 */
static bool names_an_input(struct daemon *d, const char *path, const char **what)
{
	struct stat self, behind;
	bool have_self = lstat(path, &self) == 0, have_behind = stat(path, &behind) == 0;
	struct mount_inputs in;

	*what = NULL;
	mount_inputs_of(d, &in);
	for (size_t i = 0; !*what && i < in.n; i++)
		if ((have_self && same_file(&self, in.path[i])) ||
		    (have_behind && same_file(&behind, in.path[i])))
			*what = in.what[i];
	for (size_t i = 0; i < sizeof in.own / sizeof in.own[0]; i++)
		free(in.own[i]);
	return *what != NULL;
}

/*
 * A directory where another user could replace the metrics file, or take
 * its name: writable by others and not sticky, or sticky with the file
 * there owned by someone else.  The reason in *why, or NULL.
 */
static bool unsafe_metrics_dir(const char *real_dir, const char *path, const char **why)
{
	struct stat dir, file;

	*why = NULL;
	if (stat(real_dir, &dir) != 0 || !(dir.st_mode & S_IWOTH))
		return false;
	if (!(dir.st_mode & S_ISVTX))
		*why = "its directory is writable by every user and not sticky: anyone could "
		       "replace the file";
	else if (lstat(path, &file) == 0 && file.st_uid != geteuid())
		*why = "it belongs to another user, in a directory every user may write to";
	return *why != NULL;
}

/*
 * -o metrics_file: its directory must exist, lie outside the mount point
 * (the daemon would wait for its own answer) and not let other users
 * replace the file, and the file must not be one of the mount's inputs,
 * which the rename would replace.
 */
int daemon_check_metrics_file(struct daemon *d)
{
	const char *path = d->opt.metrics_file, *what;
	char shown[1024], *dir = strdup(path), *real_dir = NULL, *real_mnt = NULL, *slash;
	int status = 0, dir_errno;

	if (!dir) {
		fprintf(stderr, PROG ": out of memory\n");
		return EXIT_IO;
	}
	mp_text_escape(shown, sizeof shown, path, strlen(path), 0);
	/* absolute, not ending in '/': there is a last slash, maybe the first */
	slash = strrchr(dir, '/');
	if (slash == dir)
		slash[1] = '\0';
	else
		*slash = '\0';
	real_dir = realpath(dir, NULL);
	dir_errno = errno;
	real_mnt = realpath(d->cmd.mountpoint, NULL);
	if (!real_dir)
		status = daemon_usage_failure("-o metrics_file=%s: its directory: %s", shown,
				       strerror(dir_errno));
	else if (real_mnt && path_within(real_dir, real_mnt))
		status = daemon_usage_failure("-o metrics_file=%s is inside the mount point; "
				       "write it elsewhere", shown);
	else if (names_an_input(d, path, &what))
		status = daemon_usage_failure("-o metrics_file=%s is %s, which it would replace", shown,
				       what);
	else if (unsafe_metrics_dir(real_dir, path, &what))
		status = daemon_usage_failure("-o metrics_file=%s: %s", shown, what);
	free(dir);
	free(real_dir);
	free(real_mnt);
	return status;
}

/* -o metrics_file: once right after mounting, where a failure can still be told. */
int daemon_first_metrics_file(struct daemon *d)
{
	struct mp_error err = {0};

	if (!d->fs.metrics_file || mp_fs_metrics_write(&d->fs, &err))
		return 0;
	fprintf(stderr, PROG ": -o metrics_file: %s\n", err.msg);
	return EXIT_IO;
}
