/*
 * mountpoint.c - the mount point: checked before anything long, mounted
 * under a lock, and the mount's read-ahead window once it is there.
 *
 * moepackfs.c calls daemon_check_mountpoint while parsing the command
 * line (a usage error, exit 2, with the way out in the message), then
 * daemon_mount_locked once the pack is valid, and daemon_setup_readahead
 * right after.  The mount point is never stat()ed once our own mount may
 * be there: nobody answers its requests until the loop runs, so what is
 * mounted where comes from /proc/self/mountinfo.
 */
#include "config.h"

#include "daemon/mountpoint.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "namespace/mountinfo.h"
#include "base/text.h"

#define FUSE_DEVICE "/dev/fuse"

/*
 * major:minor of the FUSE mount at `mountpoint` (of file system type
 * `type`, or any fuse type when NULL), from /proc/self/mountinfo.  Never
 * stat() the mount point: nobody answers its requests yet.
 */
static bool find_fuse_mount(const char *mountpoint, const char *want_type,
			    char *dev, size_t dev_len)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	bool found;

	if (!f)
		return false;
	found = mp_mountinfo_find_fuse(f, mountpoint, want_type, dev, dev_len);
	fclose(f);
	return found;
}

/*
 * Buffered reads and mmap faults arrive in read-ahead sized requests, and
 * a FUSE mount starts at 128 KiB.  The kernel takes the smaller of this
 * and init's max_readahead, so both are set (fs.c does init).  Whatever
 * happened, the window the kernel really uses is read back for
 * status.json; a failure is a warning (stderr and status.json), since the
 * mount works, only slower.
 */
void daemon_setup_readahead(struct daemon *d)
{
	const char *mnt = d->cmd.mountpoint;
	char dev[64], path[128], text[32], why[256];
	long kb;
	int fd, len;
	ssize_t n;

	if (!find_fuse_mount(mnt, NULL, dev, sizeof dev)) {
		snprintf(why, sizeof why, "%s not found in /proc/self/mountinfo", mnt);
		goto unknown;
	}
	snprintf(path, sizeof path, "/sys/class/bdi/%s/read_ahead_kb", dev);
	if (d->fs.readahead) {
		fd = open(path, O_WRONLY | O_CLOEXEC);
		len = snprintf(text, sizeof text, "%u\n", d->opt.readahead_kb);
		n = fd < 0 ? -1 : write(fd, text, (size_t)len);
		if (n != len) {
			bool denied = n < 0 && (errno == EACCES || errno == EPERM);

			snprintf(why, sizeof why, "cannot set the read-ahead window to %u "
				 "KiB: %s: %s", d->opt.readahead_kb, path,
				 n < 0 ? strerror(errno) : "short write");
			/* a mount by another user than root always lands here */
			fprintf(stderr, PROG ": warning: %s (%s-o readahead_kb=0 keeps the "
				"kernel's window and silences this)\n", why,
				denied ? "only root may set it; " : "");
			mp_fs_warn(&d->fs, "%s", why);
		}
		if (fd >= 0)
			close(fd);
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	n = fd < 0 ? -1 : read(fd, text, sizeof text - 1);
	if (fd >= 0)
		close(fd);
	if (n <= 0) {
		snprintf(why, sizeof why, "%s: %s", path,
			 n < 0 ? strerror(errno) : "empty");
		goto unknown;
	}
	text[n] = '\0';
	kb = strtol(text, NULL, 10);
	d->fs.status.readahead_kb = kb;
	if (d->fs.readahead && kb != (long)d->opt.readahead_kb)
		mp_fs_warn(&d->fs, "the read-ahead window is %ld KiB, not the %u KiB "
			   "asked for", kb, d->opt.readahead_kb);
	return;
unknown:
	fprintf(stderr, PROG ": warning: cannot read the read-ahead window of %s (%s)\n",
		mnt, why);
	mp_fs_warn(&d->fs, "cannot read the read-ahead window of the mount (%s)", why);
}

/*
 * True, with the message, when `real` (a canonical path) is a moepackfs
 * mount already: mounting again would stack a second one silently.
 */
static bool already_mounted(const char *real, const char *given)
{
	char shown[1024], dev[64];

	if (!find_fuse_mount(real, "fuse." PROG, dev, sizeof dev))
		return false;
	mp_text_escape(shown, sizeof shown, given, strlen(given), 0);
	fprintf(stderr, PROG ": %s is already a moepackfs mount; unmount it first "
		"with `fusermount3 -u %s`\n", shown, shown);
	return true;
}

/*
 * Two moepackfs started at once on one mount point both pass the check
 * of daemon_check_mountpoint() and then both mount, one on top of the other.  So
 * the check is made again just before mounting, under an exclusive flock
 * on the mount point directory held until mount(2) has returned: the
 * second one in waits for the lock and then finds the first's mount in
 * mountinfo.  A check after mounting could not replace this: both would
 * see two mounts and neither could tell whether it was the one to go.
 * Locking the directory itself needs no lock file and works for any user
 * who can read it; a directory we cannot open is not locked.  The lock is
 * held for milliseconds, so one held for 30 s is someone else's (any
 * reader of the directory can take it): an error, never a hang.
 * Returns the locked descriptor, -1 when unlocked, or -2 on that error.
 */
static int lock_mountpoint(const char *m)
{
	struct timespec pause = { 0, 10 * 1000 * 1000 };
	char shown[1024];
	int fd, i;

	fd = open(m, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	for (i = 0; flock(fd, LOCK_EX | LOCK_NB) != 0; i++) {
		if (errno != EWOULDBLOCK && errno != EINTR) {
			close(fd);
			return -1;
		}
		if (i == 3000) {
			mp_text_escape(shown, sizeof shown, m, strlen(m), 0);
			fprintf(stderr, PROG ": mount point %s: another process has held "
				"a lock (flock) on it for 30 s; cannot check that it is "
				"not being mounted\n", shown);
			close(fd);
			return -2;
		}
		nanosleep(&pause, NULL);
	}
	return fd;
}

/*
 * The mount point is not a directory.  When PACK is one, the two were
 * given the wrong way round: say so, with the order meant.
 */
static int not_a_directory(const struct daemon *d, const char *shown)
{
	char pack[1024];
	struct stat st;

	if (!d->opt.pack || stat(d->opt.pack, &st) != 0 || !S_ISDIR(st.st_mode))
		return daemon_usage_failure("mount point %s is not a directory", shown);
	mp_text_escape(pack, sizeof pack, d->opt.pack, strlen(d->opt.pack), 0);
	return daemon_usage_failure("mount point %s is not a directory, and PACK %s is one: PACK "
			     "comes first (" PROG " [OPTIONS] %s %s)", shown, pack, shown, pack);
}

/*
 * The mount point, before libfuse sees it and before a long validation:
 * a directory, not already a moepackfs mount, not a dead FUSE mount.  A
 * usage error (exit 2) with the way out in the message.
 */
int daemon_check_mountpoint(struct daemon *d)
{
	const char *m = d->opt.mountpoint;
	char shown[1024], *real;
	struct statfs sfs;
	struct stat st;

	/* mount.fuse3 drop_privileges: an open /dev/fuse, checked by libfuse */
	if (!m || strncmp(m, "/dev/fd/", 8) == 0)
		return 0;
	mp_text_escape(shown, sizeof shown, m, strlen(m), 0);
	/*
	 * statfs() always reaches a FUSE daemon, where stat() may be answered
	 * from attributes the kernel still holds: it is what tells a dead one.
	 */
	if (statfs(m, &sfs) != 0 || stat(m, &st) != 0) {
		if (errno == ENOTCONN) {
			fprintf(stderr, PROG ": mount point %s: %s (the FUSE daemon "
				"that served it has died); unmount it first with "
				"`fusermount3 -u %s`\n", shown, strerror(ENOTCONN), shown);
			return EXIT_USAGE;
		}
		if (errno == ENOENT)
			return daemon_usage_failure("mount point %s: %s (create it first: mkdir -p %s)",
					     shown, strerror(ENOENT), shown);
		return daemon_usage_failure("mount point %s: %s", shown, strerror(errno));
	}
	if (!S_ISDIR(st.st_mode))
		return not_a_directory(d, shown);
	real = realpath(m, NULL);
	if (real && already_mounted(real, m)) {
		free(real);
		return EXIT_USAGE;
	}
	free(real);
	return 0;
}

/*
 * A mount point with files in it is mounted over, with a warning.  Looked
 * at under the mount point lock, after the last already_mounted() check:
 * earlier, a moepackfs mounting there at the same moment would show its
 * own files and draw a false warning.
 */
static void warn_if_not_empty(struct daemon *d)
{
	const char *m = d->opt.mountpoint;
	char shown[1024];
	struct dirent *e;
	DIR *dir = opendir(m);

	while (dir && (e = readdir(dir))) {
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
			mp_text_escape(shown, sizeof shown, m, strlen(m), 0);
			fprintf(stderr, PROG ": warning: mount point %s is not empty: "
				"its files are hidden while mounted\n", shown);
			mp_fs_warn(&d->fs, "mount point %s is not empty: its files are "
				   "hidden while mounted", shown);
			break;
		}
	}
	if (dir)
		closedir(dir);
}

/*
 * Why a mount failed when it is /dev/fuse that this user may not open (a
 * mount by root never fails so): the device's mode and owners, and the way
 * out, into hint[len] ("" otherwise); returns hint.
 */
static const char *fuse_device_hint(char *hint, size_t len)
{
	struct group *g;
	struct stat st;
	int fd = open(FUSE_DEVICE, O_RDWR | O_CLOEXEC);

	hint[0] = '\0';
	if (fd >= 0)
		close(fd);
	if (fd >= 0 || (errno != EACCES && errno != EPERM) || stat(FUSE_DEVICE, &st) != 0)
		return hint;
	g = getgrgid(st.st_gid);
	if (st.st_gid != 0 && (st.st_mode & 0060) == 0060)
		snprintf(hint, len, ": " FUSE_DEVICE " (mode %04o, group %s) is not open "
			 "to uid %ld: join its group (`usermod -aG %s USER`, then log in again)",
			 (unsigned)(st.st_mode & 07777), g ? g->gr_name : "?", (long)getuid(),
			 g ? g->gr_name : "GROUP");
	else
		snprintf(hint, len, ": " FUSE_DEVICE " (mode %04o, group %s) is not open "
			 "to uid %ld: its usual mode is 0666 (as root: `chmod 0666 " FUSE_DEVICE
			 "`), or 0660 with a group such as fuse that the user joins",
			 (unsigned)(st.st_mode & 07777), g ? g->gr_name : "?", (long)getuid());
	return hint;
}

/*
 * Mount under the mount point's lock (see lock_mountpoint), which goes as
 * soon as the mount is in mountinfo: the daemon must not inherit it.
 */
int daemon_mount_locked(struct daemon *d, struct fuse_session *se)
{
	int status = 0, lock = -1;

	/* mount.fuse3's /dev/fd/N is mounted already */
	if (strncmp(d->cmd.mountpoint, "/dev/fd/", 8) != 0) {
		lock = lock_mountpoint(d->cmd.mountpoint);
		if (lock == -2)
			return EXIT_IO;
		/* fuse_parse_cmdline() made the mount point canonical */
		if (already_mounted(d->cmd.mountpoint, d->opt.mountpoint))
			status = EXIT_USAGE;
		else
			warn_if_not_empty(d);
	}
	if (status == 0 && fuse_session_mount(se, d->cmd.mountpoint) != 0) {
		char pack[1024], mnt[1024], hint[512];

		mp_text_escape(pack, sizeof pack, d->opt.pack, strlen(d->opt.pack), 0);
		mp_text_escape(mnt, sizeof mnt, d->cmd.mountpoint, strlen(d->cmd.mountpoint), 0);
		fprintf(stderr, PROG ": cannot mount %s on %s%s\n", pack, mnt,
			fuse_device_hint(hint, sizeof hint));
		status = EXIT_IO;
	}
	if (lock >= 0)
		close(lock);
	return status;
}
