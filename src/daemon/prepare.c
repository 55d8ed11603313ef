/*
 * prepare.c - struct mp_fs filled from a validated pack and the options,
 * before mounting.
 *
 * The tree's inode arithmetic and the counters, PACK.manifest.json as
 * clients see it, every node's owner, mode and times, the identity the
 * watcher compares against, the largest request (what libfuse can still
 * splice, reply.c) and the request buffers, and the fixed facts of
 * status.json.  moepackfs.c calls daemon_prepare_fs once daemon_open_pack
 * (openpack.c) has passed.
 */
#include "config.h"

#include "daemon/prepare.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

/* The inode arithmetic (with the .f32 files when asked) and the counters. */
static int prepare_tree(struct daemon *d)
{
	struct mp_fs *fs = &d->fs;
	struct mp_error err = {0};
	enum mp_err rc;

	fs->pack = d->pack;
	/* from mirrors: the name the pack will have once filled, not the partial's */
	rc = d->remote_name ? mp_tree_init(&fs->tree, d->pack->m.layer_ids,
					   d->pack->m.layer_count, d->pack->m.num_experts,
					   d->remote_name, d->pack->index_digest, &err)
			    : mp_tree_init_pack(&fs->tree, d->pack, &err);
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
		fprintf(stderr, PROG ": %s: %s\n", pack->file.manifest_path, err.msg);
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
		.size = pack->file.size,
		.mtime = pack->file.mtime,
		.ctime = pack->file.ctime,
		.nlink = (nlink_t)pack->file.nlink,
	};

	fs->attr.uid = d->opt.uid_given ? d->opt.uid : getuid();
	fs->attr.gid = d->opt.gid_given ? d->opt.gid : getgid();
	fs->attr.umask = d->opt.umask;
	fs->attr.status_mode = d->opt.status_mode_given ? d->opt.status_mode : STATUS_MODE;
	fs->attr.blksize = mp_attr_blksize(pack->m.alignment);
	fs->attr.mtime = pack->file.mtime;
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
	d->manifest_real = realpath(pack->file.manifest_path, NULL);
	fs->status = (struct mp_status_info){
		.pack_path = pack->file.real_path,
		.manifest_path = d->manifest_real ? d->manifest_real
						  : pack->file.manifest_path,
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
		.nwarnings = pack->file.nwarnings < MP_MAX_WARNINGS ? pack->file.nwarnings
							       : MP_MAX_WARNINGS,
		.warnings = pack->file.warnings,
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
int daemon_prepare_fs(struct daemon *d)
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
