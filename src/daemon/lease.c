/*
 * lease.c - the read lease on the pack, and the thread that answers its break.
 *
 * openpack.c takes the lease as the pack is opened (before validation
 * reads it) and checks just before mounting that no writer came
 * meanwhile; moepackfs.c starts the thread after daemonizing.  A writer that opens or
 * truncates the pack waits in the kernel for the break: the mount enters
 * the pack-changed state, lets the reads in flight finish, drops the
 * kernel's pages of every file with pack bytes and only then gives the
 * lease back (lease_broken).  Where no lease can be had the per-read stat
 * checks of reply.c remain.
 */
#include "config.h"

#include "daemon/lease.h"
#include "daemon/snapshots.h"
#include "daemon/watch.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "base/text.h"

void mp_fs_block_signals(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, MP_FS_LEASE_SIGNAL);
	/* what the kernel sends instead when the signal queue is full */
	sigaddset(&set, SIGIO);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
}

int mp_fs_lease_take(struct mp_fs *fs, int fd, bool off)
{
	char fsname[64];
	struct statfs sfs;

	if (off) {
		snprintf(fs->lease_reason, sizeof fs->lease_reason,
			 "disabled by -o nolease");
		atomic_store(&fs->lease, MP_LEASE_FALLBACK);
		return MP_LEASE_FALLBACK;
	}
	if (fstatfs(fd, &sfs) == 0 &&
	    !mp_lease_fs_sees_writers((long)sfs.f_type, fsname, sizeof fsname)) {
		snprintf(fs->lease_reason, sizeof fs->lease_reason,
			 "no read lease on the pack: a lease on %s does not see every "
			 "writer", fsname);
		atomic_store(&fs->lease, MP_LEASE_FALLBACK);
		return MP_LEASE_FALLBACK;
	}
	if (fcntl(fd, F_SETSIG, MP_FS_LEASE_SIGNAL) != 0 ||
	    fcntl(fd, F_SETLEASE, F_RDLCK) != 0) {
		int e = errno;

		if (e == EAGAIN)
			return -1;
		snprintf(fs->lease_reason, sizeof fs->lease_reason,
			 "no read lease on the pack: %s%s", strerror(e),
			 e == EINVAL ? " (its file system has no leases, e.g. NFS)"
			 : e == EACCES || e == EPERM ? " (not the pack's owner and no "
						       "CAP_LEASE)" : "");
		atomic_store(&fs->lease, MP_LEASE_FALLBACK);
		return MP_LEASE_FALLBACK;
	}
	atomic_store(&fs->lease, MP_LEASE_HELD);
	return MP_LEASE_HELD;
}

bool mp_fs_lease_intact(const struct mp_fs *fs, int fd)
{
	/* a lease being broken reads as what it is broken to: F_UNLCK */
	return atomic_load(&fs->lease) != MP_LEASE_HELD || fcntl(fd, F_GETLEASE) == F_RDLCK;
}

void mp_fs_lease_release(struct mp_fs *fs, int fd)
{
	if (atomic_load(&fs->lease) == MP_LEASE_HELD)
		fcntl(fd, F_SETLEASE, F_UNLCK);
	atomic_store(&fs->lease, MP_LEASE_NONE);
}

/*
 * A writer opened or truncated the pack and waits in the kernel for us.
 * The order is the guarantee: the pack-changed state first, then every
 * read that began before it is let finish, then the kernel's pages of
 * every file with pack bytes are dropped, and only then the lease goes,
 * so the writer's descriptor comes after the last byte served.
 */
static void lease_broken(struct mp_fs *fs)
{
	struct timespec pause = {0, 100000};
	struct stat st;
	bool mine;

	mine = mp_pack_state_enter(&fs->ps, fstat(fs->pack->file.fd, &st) == 0 ? &st : NULL, true);
	/* given back below; status.json says so from the next snapshot */
	atomic_store(&fs->lease, MP_LEASE_BROKEN);
	/* replies in flight are bounded by the threads: this ends */
	while (atomic_load(&fs->inflight) != 0)
		nanosleep(&pause, NULL);
	if (mine) {
		char path[MP_STATUS_PATH_MAX];
		const char *p = fs->status.pack_path ? fs->status.pack_path : "";

		mp_text_escape(path, sizeof path, p, strlen(p), 0);
		mp_fs_log(fs, "%s: the pack was opened for writing or truncated while "
			 "mounted (its read lease broke, before any write): every read "
			 "of pack bytes now fails with EIO; remount to serve it again",
			 path);
	}
	mp_fs_snap_publish(fs);
	mp_fs_invalidate_pack_files(fs);
	fcntl(fs->pack->file.fd, F_SETLEASE, F_UNLCK);
}

static void *lease_main(void *arg)
{
	struct mp_fs *fs = arg;
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, MP_FS_LEASE_SIGNAL);
	sigaddset(&set, SIGIO);
	while (!atomic_load(&fs->lease_stop)) {
		siginfo_t si;
		int sig = sigwaitinfo(&set, &si);

		if (sig < 0 || atomic_load(&fs->lease_stop))
			continue;
		/* our own wake-up (mp_fs_lease_stop) is SI_TKILL */
		if (si.si_code == SI_TKILL && si.si_pid == getpid())
			continue;
		if (atomic_load(&fs->lease) == MP_LEASE_HELD)
			lease_broken(fs);
		else
			fcntl(fs->pack->file.fd, F_SETLEASE, F_UNLCK);
	}
	return NULL;
}

int mp_fs_lease_start(struct mp_fs *fs)
{
	int rc;

	if (atomic_load(&fs->lease) != MP_LEASE_HELD)
		return 0;
	/*
	 * fuse_daemonize() forked: the signal goes to the lease's owner,
	 * which was the parent.  Setting the lease again from here makes us
	 * its owner; it fails (EAGAIN) when a writer came in between and is
	 * waiting for it, which is a break like any other.
	 */
	if (fcntl(fs->pack->file.fd, F_SETOWN, getpid()) != 0 ||
	    fcntl(fs->pack->file.fd, F_SETLEASE, F_RDLCK) != 0)
		lease_broken(fs);
	rc = pthread_create(&fs->lease_thread, NULL, lease_main, fs);
	fs->lease_thread_on = rc == 0;
	return rc;
}

void mp_fs_lease_stop(struct mp_fs *fs)
{
	if (!fs->lease_thread_on)
		return;
	atomic_store(&fs->lease_stop, true);
	pthread_kill(fs->lease_thread, MP_FS_LEASE_SIGNAL);
	pthread_join(fs->lease_thread, NULL);
	fs->lease_thread_on = false;
}
