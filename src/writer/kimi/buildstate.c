/*
 * buildstate.c - PACK.partial.state, the record that lets --resume trust
 * what an interrupted build copied (build_internal.h's
 * mp_build_save_state() and mp_build_load_state()): written atomically at
 * each checkpoint, read back with every line checked against this build's
 * layout, files and shards, so that a state from other inputs is never
 * trusted.
 */
#include "config.h"

#include "writer/kimi/build.h"
#include "writer/kimi/build_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/file.h"
#include "base/outfile.h"
#include "base/text.h"

#define STATE_MAGIC "moepack build state 2"

/*
 * PACK.partial.state: what a resumed build must find unchanged before it
 * trusts a byte of PACK.partial.  The layout (size, inventory digest, seal
 * chunk size), PACK.partial and its chunk digests by identity (device,
 * inode: the files this build created), every shard by identity (device,
 * inode, size, mtime, ctime: a shard downloaded again or changed in place
 * differs), and the objects done.  Text, rewritten atomically at each
 * checkpoint after the pack and digests it vouches for are durable.
 */
#define STATE_LINE 160 /* bytes a shard line takes at most */

enum mp_err mp_build_save_state(struct build *b, uint64_t objects, struct mp_error *err)
{
	size_t cap = 512 + b->set->count * STATE_LINE, len;
	char *text = malloc(cap);
	enum mp_err rc;

	if (!text)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	len = (size_t)snprintf(text, cap, "%s\nsize %" PRIu64 "\ninventory %s\nchunk_size %" PRIu64
			       "\npartial %llu %llu\ndigests %llu %llu\nshards %zu\n", STATE_MAGIC,
			       b->l.size, b->res->inventory_sha256, b->seal.l.chunk_size,
			       (unsigned long long)b->partial_st.st_dev,
			       (unsigned long long)b->partial_st.st_ino,
			       (unsigned long long)b->digests_st.st_dev,
			       (unsigned long long)b->digests_st.st_ino, b->set->count);
	for (size_t i = 0; i < b->set->count; i++) {
		struct stat st;

		if (fstat(b->set->shards[i].fd, &st) != 0) {
			free(text);
			return mp_fail(err, MP_E_GGUF_IO, "%s %s: %s", mp_err_summary(MP_E_GGUF_IO),
				       b->set->shards[i].path, strerror(errno));
		}
		len += (size_t)snprintf(text + len, cap - len, "shard %zu %llu %llu %lld %lld.%09ld "
					"%lld.%09ld\n", i, (unsigned long long)st.st_dev,
					(unsigned long long)st.st_ino, (long long)st.st_size,
					(long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
					(long long)st.st_ctim.tv_sec, st.st_ctim.tv_nsec);
	}
	len += (size_t)snprintf(text + len, cap - len, "objects %" PRIu64 "\n", objects);
	rc = mp_output_write_atomic(b->state, MP_TMP_SIBLING, MP_E_PACK_IO, text, len, err);
	free(text);
	return rc;
}


/* One line of the state, or NULL at its end. */
static char *state_line(char **cursor)
{
	char *line = *cursor, *nl;

	if (!line || !*line)
		return NULL;
	nl = strchr(line, '\n');
	if (nl) {
		*nl = '\0';
		*cursor = nl + 1;
	} else {
		*cursor = NULL;
	}
	return line;
}

/* Why a state cannot be trusted, into why: false, for the caller to return. */
static bool state_bad(char *why, size_t why_len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static bool state_bad(char *why, size_t why_len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, why_len, fmt, ap);
	va_end(ap);
	return false;
}

/*
 * The text of PACK.partial.state into *text (malloc'd), NULL when there is
 * none or it is no build state (`why` says which).  Never through a link,
 * never waiting on a FIFO, and never more than a state of this set takes.
 */
static enum mp_err read_state(const struct build *b, char **text, char *why, size_t why_len,
			      struct mp_error *err)
{
	size_t cap = 512 + b->set->count * STATE_LINE, n = 0;
	struct stat st;
	int fd = open(b->state, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);

	*text = NULL;
	if (fd < 0) {
		if (errno != ENOENT)
			snprintf(why, why_len, "%s cannot be read (%s)", b->state, strerror(errno));
		return MP_OK;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size >= cap) {
		close(fd);
		snprintf(why, why_len, "%s is not a build state", b->state);
		return MP_OK;
	}
	*text = malloc(cap);
	if (!*text) {
		close(fd);
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	}
	mp_pread_all(fd, *text, cap - 1, 0, &n);
	close(fd);
	(*text)[n] = '\0';
	return MP_OK;
}

/* The state's lines before the shards: this build's layout, and the files
 * the interrupted build wrote into rp. */
static bool state_head(const struct build *b, char **cursor, struct resume_point *rp,
		       char *why, size_t why_len)
{
	unsigned long long size, chunk, pdev, pino, ddev, dino;
	char inv[MP_SHA256_HEX], *line = state_line(cursor);
	size_t nshards;

	if (!line || strcmp(line, STATE_MAGIC) != 0)
		return state_bad(why, why_len, "%s is from another version of moepack", b->state);
	if (!(line = state_line(cursor)) || sscanf(line, "size %llu", &size) != 1 ||
	    !(line = state_line(cursor)) || sscanf(line, "inventory %64s", inv) != 1 ||
	    !(line = state_line(cursor)) || sscanf(line, "chunk_size %llu", &chunk) != 1 ||
	    !(line = state_line(cursor)) || sscanf(line, "partial %llu %llu", &pdev, &pino) != 2 ||
	    !(line = state_line(cursor)) || sscanf(line, "digests %llu %llu", &ddev, &dino) != 2 ||
	    !(line = state_line(cursor)) || sscanf(line, "shards %zu", &nshards) != 1)
		return state_bad(why, why_len, "%s is damaged", b->state);
	if (size != b->l.size || strcmp(inv, b->res->inventory_sha256) != 0 ||
	    chunk != b->seal.l.chunk_size || nshards != b->set->count)
		return state_bad(why, why_len,
				 "the interrupted build was of another checkpoint or layout");
	rp->partial.st_dev = (dev_t)pdev;
	rp->partial.st_ino = (ino_t)pino;
	rp->digests.st_dev = (dev_t)ddev;
	rp->digests.st_ino = (ino_t)dino;
	return true;
}

/* Shard i as the state's line names it, against the file read now. */
static bool state_shard(const struct build *b, size_t i, const char *line, char *why,
			size_t why_len)
{
	const struct mp_shard *s = &b->set->shards[i];
	unsigned long long dev, ino;
	long long ssize, ms, cs;
	long mns, cns;
	struct stat st;
	size_t k;

	if (!line || sscanf(line, "shard %zu %llu %llu %lld %lld.%ld %lld.%ld", &k, &dev, &ino,
			    &ssize, &ms, &mns, &cs, &cns) != 8 || k != i)
		return state_bad(why, why_len, "%s is damaged", b->state);
	if (fstat(s->fd, &st) != 0)
		return state_bad(why, why_len, "%s cannot be read (%s)", s->path, strerror(errno));
	if ((unsigned long long)st.st_dev != dev || (unsigned long long)st.st_ino != ino)
		return state_bad(why, why_len, "shard %s is another file than the one the "
				 "interrupted build read", s->path);
	if (st.st_size != ssize)
		return state_bad(why, why_len, "shard %s changed size since the interrupted "
				 "build", s->path);
	if (st.st_mtim.tv_sec != ms || st.st_mtim.tv_nsec != mns ||
	    st.st_ctim.tv_sec != cs || st.st_ctim.tv_nsec != cns)
		return state_bad(why, why_len, "shard %s was modified since the interrupted "
				 "build (mtime or ctime)", s->path);
	return true;
}

/* The shards' lines and the objects done, into rp->objects. */
static bool state_tail(const struct build *b, char **cursor, struct resume_point *rp,
		       char *why, size_t why_len)
{
	unsigned long long objects;
	char *line;

	for (size_t i = 0; i < b->set->count; i++)
		if (!state_shard(b, i, state_line(cursor), why, why_len))
			return false;
	if (!(line = state_line(cursor)) || sscanf(line, "objects %llu", &objects) != 1 ||
	    objects > b->l.objects)
		return state_bad(why, why_len, "%s is damaged", b->state);
	rp->objects = objects;
	return true;
}

/*
 * What PACK.partial.state vouches for.  0 objects when there is no state;
 * 0 with `why` filled when there is one that cannot be trusted any more.
 */
enum mp_err mp_build_load_state(const struct build *b, struct resume_point *rp, char *why,
				size_t why_len, struct mp_error *err)
{
	char *text, *cursor;
	enum mp_err rc;

	memset(rp, 0, sizeof *rp);
	why[0] = '\0';
	rc = read_state(b, &text, why, why_len, err);
	if (rc || !text)
		return rc;
	cursor = text;
	if (!state_head(b, &cursor, rp, why, why_len) ||
	    !state_tail(b, &cursor, rp, why, why_len))
		memset(rp, 0, sizeof *rp);
	free(text);
	return MP_OK;
}
