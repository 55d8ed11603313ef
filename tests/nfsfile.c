/*
 * nfsfile.c - a minimal NFSv4 client as a FUSE file system, for
 * tests/bitrot-nfs.test where the kernel has no NFS client.
 *
 *   nfsfile URL MOUNTPOINT NAME...
 *
 * URL is an export, nfs://127.0.0.1/PATH?version=4&nfsport=N; MOUNTPOINT
 * then holds the files NAME... of that export's top directory, read only,
 * in the foreground until unmounted.  Every read is an NFSv4 READ (libnfs,
 * loaded with dlopen: no data cache of its own); the kernel keeps what was
 * read in the mount's page cache across opens, as the kernel's NFS client
 * does, and O_DIRECT readers bypass it.  Each file's attributes are those
 * GETATTR gave at start, for the mount's life: a client whose attribute
 * cache has not expired (mount -o actimeo=N), so that a change on the
 * server is seen by nothing but the bytes that come over the wire.
 *
 * One libnfs context serves every request, under a lock (libnfs's
 * synchronous calls are not thread-safe).  Built by the test itself.
 */
#define _GNU_SOURCE
#define FUSE_USE_VERSION 31

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_FILES 8

/* libnfs 4.0 (libnfs.so.13), declared here: its headers are not needed */
struct nfs_url_v {
	char *server, *path, *file;
};
struct nfs_stat64_v {
	uint64_t dev, ino, mode, nlink, uid, gid, rdev, size, blksize, blocks;
	uint64_t atime, mtime, ctime, atime_nsec, mtime_nsec, ctime_nsec, used;
};

struct nfslib {
	void *(*init_context)(void);
	char *(*get_error)(void *);
	int (*set_version)(void *, int);
	void (*set_client_name)(void *, const char *);
	struct nfs_url_v *(*parse_url_dir)(void *, const char *);
	int (*mount)(void *, const char *, const char *);
	int (*open)(void *, const char *, int, void **);
	int (*stat64)(void *, const char *, struct nfs_stat64_v *);
	int (*pread)(void *, void *, uint64_t, uint64_t, void *);
};

struct nfile {
	const char *name;
	void *fh;
	struct stat st;
};

struct nfsfs {
	struct nfslib lib;
	void *ctx;
	pthread_mutex_t lock;
	struct nfile file[MAX_FILES];
	unsigned nfiles;
};

static struct nfsfs *fs_of(void)
{
	return fuse_get_context()->private_data;
}

static int load_lib(struct nfslib *l)
{
	static const char *const names[] = { "libnfs.so.13", "libnfs.so.14", "libnfs.so.15" };
	void *h = NULL;

	for (size_t i = 0; !h && i < sizeof names / sizeof names[0]; i++)
		h = dlopen(names[i], RTLD_NOW);
	if (!h) {
		fprintf(stderr, "nfsfile: libnfs (4.x, libnfs.so.13-15) not found: %s\n", dlerror());
		return -1;
	}
	*(void **)&l->init_context = dlsym(h, "nfs_init_context");
	*(void **)&l->get_error = dlsym(h, "nfs_get_error");
	*(void **)&l->set_version = dlsym(h, "nfs_set_version");
	*(void **)&l->set_client_name = dlsym(h, "nfs4_set_client_name");
	*(void **)&l->parse_url_dir = dlsym(h, "nfs_parse_url_dir");
	*(void **)&l->mount = dlsym(h, "nfs_mount");
	*(void **)&l->open = dlsym(h, "nfs_open");
	*(void **)&l->stat64 = dlsym(h, "nfs_stat64");
	*(void **)&l->pread = dlsym(h, "nfs_pread");
	if (!l->init_context || !l->get_error || !l->set_version || !l->set_client_name ||
	    !l->parse_url_dir || !l->mount || !l->open || !l->stat64 || !l->pread) {
		fprintf(stderr, "nfsfile: libnfs lacks a function this needs\n");
		return -1;
	}
	return 0;
}

static int nfs_fail(struct nfsfs *fs, const char *what)
{
	fprintf(stderr, "nfsfile: %s: %s\n", what, fs->lib.get_error(fs->ctx));
	return -1;
}

/* Mount the export, open and GETATTR each file once. */
static int connect_export(struct nfsfs *fs, const char *url)
{
	struct nfs_url_v *u;
	char name[64], path[4096];

	fs->ctx = fs->lib.init_context();
	if (!fs->ctx)
		return -1;
	fs->lib.set_version(fs->ctx, 4);
	snprintf(name, sizeof name, "moepack-nfsfile-%ld", (long)getpid());
	fs->lib.set_client_name(fs->ctx, name);
	u = fs->lib.parse_url_dir(fs->ctx, url);
	if (!u)
		return nfs_fail(fs, url);
	if (fs->lib.mount(fs->ctx, u->server, u->path) != 0)
		return nfs_fail(fs, "mount");
	for (unsigned i = 0; i < fs->nfiles; i++) {
		struct nfile *f = &fs->file[i];
		struct nfs_stat64_v s;

		snprintf(path, sizeof path, "/%s", f->name);
		if (fs->lib.open(fs->ctx, path, O_RDONLY, &f->fh) != 0 ||
		    fs->lib.stat64(fs->ctx, path, &s) != 0)
			return nfs_fail(fs, f->name);
		f->st.st_mode = S_IFREG | 0444;
		f->st.st_nlink = 1;
		f->st.st_size = (off_t)s.size;
		f->st.st_blksize = 4096;
		f->st.st_blocks = (blkcnt_t)((s.size + 511) / 512);
		f->st.st_mtim = (struct timespec){ (time_t)s.mtime, (long)s.mtime_nsec };
		f->st.st_ctim = (struct timespec){ (time_t)s.ctime, (long)s.ctime_nsec };
		f->st.st_atim = f->st.st_mtim;
	}
	return 0;
}

static struct nfile *file_of(struct nfsfs *fs, const char *path)
{
	for (unsigned i = 0; i < fs->nfiles; i++)
		if (path[0] == '/' && strcmp(path + 1, fs->file[i].name) == 0)
			return &fs->file[i];
	return NULL;
}

static int nf_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	struct nfile *f = file_of(fs_of(), path);

	(void)fi;
	if (strcmp(path, "/") == 0) {
		memset(st, 0, sizeof *st);
		st->st_mode = S_IFDIR | 0555;
		st->st_nlink = 2;
		return 0;
	}
	if (!f)
		return -ENOENT;
	*st = f->st;
	return 0;
}

static int nf_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
		      struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	struct nfsfs *fs = fs_of();

	(void)off, (void)fi, (void)flags;
	if (strcmp(path, "/") != 0)
		return -ENOTDIR;
	fill(buf, ".", NULL, 0, 0);
	fill(buf, "..", NULL, 0, 0);
	for (unsigned i = 0; i < fs->nfiles; i++)
		fill(buf, fs->file[i].name, &fs->file[i].st, 0, 0);
	return 0;
}

static int nf_open(const char *path, struct fuse_file_info *fi)
{
	struct nfile *f = file_of(fs_of(), path);

	if (!f)
		return -ENOENT;
	if ((fi->flags & O_ACCMODE) != O_RDONLY)
		return -EROFS;
	fi->fh = (uint64_t)(f - fs_of()->file);
	/* as the NFS client: cached pages stay while the attributes do */
	fi->keep_cache = 1;
	return 0;
}

static int nf_read(const char *path, char *buf, size_t size, off_t off,
		   struct fuse_file_info *fi)
{
	struct nfsfs *fs = fs_of();
	struct nfile *f = &fs->file[fi->fh];
	size_t done = 0;
	int n = 0;

	(void)path;
	if (off >= f->st.st_size)
		return 0;
	if ((uint64_t)off + size > (uint64_t)f->st.st_size)
		size = (size_t)(f->st.st_size - off);
	pthread_mutex_lock(&fs->lock);
	while (done < size) {
		n = fs->lib.pread(fs->ctx, f->fh, (uint64_t)off + done, size - done, buf + done);
		if (n <= 0)
			break;
		done += (size_t)n;
	}
	pthread_mutex_unlock(&fs->lock);
	if (n < 0 && done == 0)
		return -EIO;
	return (int)done;
}

static void *nf_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	(void)conn;
	cfg->attr_timeout = 86400;
	cfg->entry_timeout = 86400;
	cfg->kernel_cache = 1;
	return fs_of();
}

static const struct fuse_operations ops = {
	.getattr = nf_getattr,
	.readdir = nf_readdir,
	.open = nf_open,
	.read = nf_read,
	.init = nf_init,
};

int main(int argc, char **argv)
{
	static struct nfsfs fs;
	char *fargv[] = { argv[0], "-f", "-o", "ro,fsname=nfsfile,subtype=nfsfile", NULL, NULL };

	if (argc < 4 || argc - 3 > MAX_FILES) {
		fprintf(stderr, "usage: nfsfile URL MOUNTPOINT NAME... (at most %d)\n", MAX_FILES);
		return 2;
	}
	for (int i = 3; i < argc; i++)
		fs.file[fs.nfiles++].name = argv[i];
	if (pthread_mutex_init(&fs.lock, NULL) != 0 || load_lib(&fs.lib) != 0 ||
	    connect_export(&fs, argv[1]) != 0)
		return 3;
	fargv[4] = argv[2];
	return fuse_main(5, fargv, &ops, &fs);
}
