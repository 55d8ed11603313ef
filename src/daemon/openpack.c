/*
 * openpack.c - the pack, validated before anything is mounted, and what
 * reads of it will be checked against.
 *
 * daemon_open_pack makes the same checks as `moepack verify` with the same
 * messages and exit statuses, taking the read lease as the pack is opened
 * (lease.c); then -o verify=payload's scan, the choice of -o verify when
 * none was given, the storage reads come from, and the seal (-o
 * verify=seal, PACK.seal, -o trust=) or the index's own digests (-o
 * verify=entries) that every fill is checked against.  Any refusal is
 * one line.  moepackfs.c calls it once the session exists, and
 * daemon_lease_still_held just before mounting.
 */
#include "config.h"

#include "daemon/openpack.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "daemon/lease.h"
#include "daemon/remotepack.h"
#include "fetch/trust.h"
#include "pack/progress.h"
#include "payload/scan.h"
#include "payload/scanreport.h"
#include "seal/entryseal.h"
#include "seal/sealsample.h"
#include "namespace/sharedmaps.h"
#include "base/text.h"

struct first_problem {
	bool found;
	char text[MP_MSG_MAX];
};

static void keep_first(const struct mp_scan_problem *p, void *arg)
{
	struct first_problem *f = arg;

	if (!f->found)
		mp_scan_problem_describe(f->text, sizeof f->text, p);
	f->found = true;
}

/*
 * -o verify=payload: the scan of `moepack verify --payload`, and with
 * full the digest from the same read (and, where the index records each
 * role's SHA-256, a second read checking them).  Anything found refuses
 * the mount with one line: the first problem and the counts.
 */
static int scan_payload(struct daemon *d)
{
	struct mp_pack *pack = d->pack;
	struct progress_bar bar;
	struct mp_scan_opts so = {.hash = d->opt.full, .progress = progress_bar_update,
				  .progress_arg = &bar};
	unsigned char digest[MP_SHA256_LEN] = {0};
	struct first_problem first = {0};
	struct mp_scan_summary sum;
	struct mp_error err = {0};
	enum mp_err rc = MP_OK;
	uint64_t problems;

	if (d->opt.full && !pack->m.sha256[0]) {
		rc = mp_pack_check_digest(pack, digest, &err);
	} else {
		progress_bar_init(&bar, stderr, d->opt.full ? "sha256+scan" : "scan", true);
		rc = mp_scan_pack(pack, &so, keep_first, &first, &sum, digest, &err);
		progress_bar_finish(&bar);
		if (rc == MP_OK && d->opt.full) {
			rc = mp_pack_check_digest(pack, digest, &err);
			pack->full_checked = rc == MP_OK;
		}
	}
	/* -o verify=full's check of every role against its index entry, which
	 * the scan's read does not make */
	if (rc == MP_OK && d->opt.full && mp_entry_seal_possible(pack)) {
		progress_bar_init(&bar, stderr, "entries", true);
		rc = mp_entry_seal_check(pack, 0, progress_bar_update, &bar, &err);
		progress_bar_finish(&bar);
	}
	if (rc != MP_OK) {
		return daemon_pack_failure(d, rc, &err);
	}
	problems = mp_scan_problem_total(&sum);
	d->fs.scan = (struct mp_metrics_scan){
		.ran = true,
		.experts = sum.experts,
		.roles = sum.roles,
		.blocks = sum.blocks,
		.bytes_read = sum.bytes_read,
		.problems = problems,
	};
	if (problems) {
		char shown[1024], counts[MP_MSG_MAX];

		mp_text_escape(shown, sizeof shown, d->opt.pack, strlen(d->opt.pack), 0);
		mp_scan_counts_describe(counts, sizeof counts, &sum);
		fprintf(stderr, PROG ": %s: payload scan found %llu problem%s (%s), the "
			"first: %s; not mounted (`moepack verify --payload` lists them all)\n",
			shown, (unsigned long long)problems, problems == 1 ? "" : "s", counts,
			first.text);
		return mp_err_exit_status(MP_E_PAYLOAD);
	}
	return 0;
}

/*
 * The pack's open (mp_open_opts.opened): the read lease first, so that the
 * identity the mount watches and every byte validated come with it held.
 * A pack open for writing somewhere is refused.
 */
static enum mp_err lease_on_open(int fd, void *arg, struct mp_error *err)
{
	struct daemon *d = arg;

	if (mp_fs_lease_take(&d->fs, fd, d->opt.nolease) < 0)
		return mp_fail(err, MP_E_PACK_IO, "the pack is open for writing (no read "
			       "lease can be taken); not mounted: close the writer first");
	return MP_OK;
}

/*
 * Where no lease can be had, the stat checks of every read remain: say
 * so, and refuse a pack that a process maps shared and writable, whose
 * stores those checks would not see (sharedmaps.h).
 */
static int check_without_lease(struct daemon *d)
{
	char shown[1024];
	struct stat st;
	pid_t pid;

	if (atomic_load(&d->fs.lease) != MP_LEASE_FALLBACK)
		return 0;
	mp_text_escape(shown, sizeof shown, d->opt.pack, strlen(d->opt.pack), 0);
	if (fstat(d->pack->file.fd, &st) == 0 &&
	    (pid = mp_maps_find_shared_writer("/proc", st.st_dev, (uint64_t)st.st_ino)) != 0) {
		fprintf(stderr, PROG ": %s: process %ld maps the pack shared and writable, and "
			"without a read lease its stores would go unseen; not mounted\n", shown,
			(long)pid);
		return EXIT_IO;
	}
	if (!d->opt.nolease)
		fprintf(stderr, PROG ": warning: %s: %s; a change is found by checking its "
			"size and times instead (see moepackfs(1))\n", shown, d->fs.lease_reason);
	return 0;
}

/*
 * Just before mounting: a writer that came while the pack was validated
 * waits for the lease; the mount is refused, and the lease given back.
 */
int daemon_lease_still_held(struct daemon *d)
{
	char shown[1024];

	if (mp_fs_lease_intact(&d->fs, d->pack->file.fd))
		return 0;
	mp_fs_lease_release(&d->fs, d->pack->file.fd);
	mp_text_escape(shown, sizeof shown, d->opt.pack, strlen(d->opt.pack), 0);
	fprintf(stderr, PROG ": %s: the pack was opened for writing while it was being "
		"validated; not mounted\n", shown);
	return EXIT_IO;
}

static int open_seal(struct daemon *d);
static int open_entries(struct daemon *d);
static enum mp_err start_check(struct daemon *d, struct mp_error *err);

/*
 * Nothing asked for: verify=seal when PACK.seal is beside the pack, else
 * verify=entries when the pack's index records each role's SHA-256, else
 * verify=index; d->verify_note says which and why, for the one line
 * printed once mounted (a refusal stays one line).  Nonzero: a seal
 * option given for a mount that will check nothing.
 */
static int choose_verify(struct daemon *d)
{
	char *path = daemon_seal_path_of(d), shown[1024];
	struct stat st;

	d->opt.seal = path && stat(path, &st) == 0 && S_ISREG(st.st_mode);
	struct mp_error err = {0};
	bool too_large = !d->opt.seal && mp_entry_seal_possible(d->pack) &&
			 mp_entry_seal_mountable(d->pack, &err) != MP_OK;

	d->opt.entries = !d->opt.seal && !too_large && mp_entry_seal_possible(d->pack);
	d->seal_by_default = d->opt.seal;
	mp_text_escape(shown, sizeof shown, path ? path : "", path ? strlen(path) : 0, 0);
	if (d->opt.seal)
		snprintf(d->verify_note, sizeof d->verify_note, "%s found: mounted with -o "
			 "verify=seal, every read from storage checked against it (-o "
			 "verify=index mounts without it)", shown);
	else if (d->opt.entries)
		snprintf(d->verify_note, sizeof d->verify_note, "mounted with -o "
			 "verify=entries: every read from storage checked against the "
			 "SHA-256 the index records for its role (-o verify=index mounts "
			 "without)");
	else if (too_large)
		snprintf(d->verify_note, sizeof d->verify_note, "no seal, and -o verify=entries "
			 "refuses this pack (%s): mounted with -o verify=index, payload "
			 "bytes served unchecked",
			 strncmp(err.msg, "invalid usage: ", 15) == 0 ? err.msg + 15 : err.msg);
	else
		snprintf(d->verify_note, sizeof d->verify_note, "no seal (%s): mounted with "
			 "-o verify=index, payload bytes served unchecked ('moepack seal' "
			 "makes one, and then every read is checked)", shown);
	free(path);
	if (!d->opt.seal && !d->opt.entries &&
	    (d->opt.seal_ahead_given || d->opt.seal_cache_given)) {
		fprintf(stderr, PROG ": -o %s needs -o verify=seal, and there is no seal\n",
			d->opt.seal_ahead_given ? "seal_ahead" : "seal_cache_mb");
		return EXIT_USAGE;
	}
	return 0;
}

/* What the storage could not do, once on stderr and in status.json. */
static void report_storage(struct daemon *d)
{
	const struct mp_storage *st = &d->storage;

	if (st->direct_fd < 0) {
		fprintf(stderr, PROG ": warning: O_DIRECT reads through the mount are served "
			"buffered: %s\n", st->direct_why);
		mp_fs_warn(&d->fs, "O_DIRECT reads through the mount are served buffered: %s",
			   st->direct_why);
	}
	if (!st->uncached) {
		fprintf(stderr, PROG ": warning: %s\n", st->uncached_why);
		mp_fs_warn(&d->fs, "%s", st->uncached_why);
	}
}

/*
 * A pack from mirrors: its manifest is the trusted one fetched (remote.h),
 * with the pack's path the partial's, not a file; it is named by the path
 * its sidecar will have.
 */
static enum mp_err remote_manifest(struct daemon *d, struct mp_open_opts *oo, char **text,
				   struct mp_error *err)
{
	char *real;
	size_t len = 0;
	enum mp_err rc;

	if (!d->remote)
		return MP_OK;
	if (!(real = realpath(d->opt.pack, NULL)))
		return mp_fail(err, MP_E_PACK_IO, "cannot resolve %s", d->opt.pack);
	rc = mp_remote_manifest(d->remote, real, text, &len, err);
	free(real);
	oo->manifest_path = mp_remote_manifest_path(d->remote);
	oo->manifest_text = *text;
	oo->manifest_text_len = len;
	return rc;
}

/* Validate exactly as `moepack verify` does and report the same way. */
int daemon_open_pack(struct daemon *d)
{
	struct mp_open_opts oo = {
		.manifest_path = d->opt.manifest,
		.expect_layers = d->opt.expect_layers,
		.expect_experts = d->opt.expect_experts,
		.expect_top_k = d->opt.expect_top_k,
		.expect_source_sha256 = d->opt.expect_source,
		.expect_model_identity_sha256 = d->opt.expect_identity,
		.expect_config_sha256 = d->opt.expect_config,
		.source_path = d->opt.source,
		.config_path = d->opt.config,
		/* with the payload scan, the digest rides on its read */
		.full = d->opt.full && !d->opt.payload,
		.opened = lease_on_open,
		.opened_arg = d,
	};
	struct progress_bar bar;
	struct mp_error err = {0};
	char *text = NULL;
	enum mp_err rc = remote_manifest(d, &oo, &text, &err);

	progress_bar_init(&bar, stderr, "sha256", true);
	oo.progress = progress_bar_update;
	oo.progress_arg = &bar;
	if (rc == MP_OK)
		rc = mp_pack_open(&d->pack, d->opt.pack, &oo, &err);
	progress_bar_finish(&bar);
	free(text);
	if (rc != MP_OK) {
		return daemon_pack_failure(d, rc, &err);
	}
	print_pack_warnings(stderr, PROG, d->pack);
	if (check_without_lease(d) != 0)
		return EXIT_IO;
	if (d->opt.payload) {
		int status = scan_payload(d);

		if (status != 0)
			return status;
	}
	if (!d->opt.verify_given && choose_verify(d) != 0)
		return EXIT_USAGE;
	if (mp_storage_open(&d->storage, d->pack->file.fd, d->pack->file.size,
			    d->pack->m.alignment, &err) != MP_OK) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		return EXIT_IO;
	}
	d->storage_ok = true;
	report_storage(d);
	return d->opt.seal ? open_seal(d) : d->opt.entries ? open_entries(d) : 0;
}

/*
 * -o verify=seal: read the seal, bind it to the validated pack and its
 * chunk layout, check the signature under -o trust=, and set up the chunk
 * states.  Nothing is hashed here: mounting costs verify=index plus
 * reading the seal.  Any refusal is one line and the seal's exit status.
 */
static int open_seal(struct daemon *d)
{
	struct mp_error err = {0};
	char *own = daemon_seal_path_of(d);
	const char *path = own;
	enum mp_err rc;

	if (!own) {
		fprintf(stderr, PROG ": out of memory\n");
		return EXIT_IO;
	}
	/* from mirrors: the seal fetch trusted (its signature or digest checked) */
	rc = d->remote ? daemon_remote_seal(d, &err) : mp_seal_read(&d->seal, path, &err);
	if (rc == MP_OK) {
		rc = mp_seal_layout_of_pack(&d->layout, d->pack, d->seal->chunk_size, &err);
		d->layout_ok = rc == MP_OK;
	}
	if (rc == MP_OK)
		rc = mp_seal_bind(d->seal, d->pack, &d->layout, &err);
	/* the samples would read chunks not fetched yet; every read is checked */
	if (rc == MP_OK && !d->remote)
		rc = mp_seal_sample(d->seal, &d->layout, d->pack, d->pack->file.fd, &err);
	if (rc == MP_OK && d->opt.trust && !d->remote)
		rc = mp_trust_check(d->pack, d->seal, d->trust_keys, (size_t)d->ntrust, &err);
	/* a pack filled from mirrors, mounted again: the root of trust it was
	 * fetched under (remotepack.c) */
	if (rc == MP_OK && d->opt.expect_seal && !d->remote)
		rc = mp_fetch_trust_seal_digest(d->seal, d->opt.expect_seal, path, &err);
	if (rc == MP_OK)
		rc = start_check(d, &err);
	if (rc == MP_OK && d->remote)
		daemon_remote_hook(d);
	if (rc != MP_OK) {
		char shown[1024], pack[1024], hint[2200] = "";
		struct stat st;

		mp_text_escape(shown, sizeof shown, path, strlen(path), 0);
		mp_text_escape(pack, sizeof pack, d->opt.pack, strlen(d->opt.pack), 0);
		if (d->seal_by_default)
			snprintf(hint, sizeof hint, " (the seal beside the pack is used unless "
				 "-o verify=index is given)");
		else if (!d->seal && stat(path, &st) != 0 && errno == ENOENT)
			snprintf(hint, sizeof hint, " (`moepack seal %s` makes %s)", pack,
				 d->opt.seal_path ? "PACK.seal" : "it");
		fprintf(stderr, PROG ": %s: %s; not mounted%s\n", shown, err.msg, hint);
		free(own);
		return mp_err_exit_status(rc);
	}
	free(own);
	if (mp_seal_unanchored(d->seal))
		fprintf(stderr, PROG ": warning: the seal is unanchored: it proves the "
			"pack's bytes unchanged since sealing, not where they came from\n");
	return 0;
}

/* The chunk states of every fill's check, with the seal d->seal holds. */
static enum mp_err start_check(struct daemon *d, struct mp_error *err)
{
	enum mp_err rc = mp_sealcheck_init(&d->check, d->seal, &d->layout, &d->storage,
					   (size_t)(d->opt.seal_cache_given ? d->opt.seal_cache_mb
						   : MP_SEALCHECK_CACHE_DEFAULT >> 20) << 20, err);

	d->check_ok = rc == MP_OK;
	return rc;
}

/*
 * -o verify=entries: the seal the index already is (entryseal.h): hashing
 * only the head and any padding between objects, then the same check of
 * every fill as verify=seal.
 */
static int open_entries(struct daemon *d)
{
	struct mp_error err = {0};
	enum mp_err rc = mp_entry_seal_mountable(d->pack, &err);

	if (rc == MP_OK)
		rc = mp_entry_seal_make(&d->seal, &d->layout, d->pack, &err);
	d->layout_ok = rc == MP_OK;
	if (rc == MP_OK)
		rc = start_check(d, &err);
	if (rc != MP_OK)
		return daemon_pack_failure(d, rc, &err);
	return 0;
}
