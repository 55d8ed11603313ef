/* top_sample.c - one look at a moepackfs mount (top_sample.h). */
#include "config.h"

#include "cli/top_sample.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/limits.h> /* XATTR_SIZE_MAX */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "base/file.h"
#include "base/text.h"
#include "namespace/metrics.h"
#include "namespace/stats.h"

#define PATH_ROOM 4200

/* ---- files -------------------------------------------------------------------------- */

/* fd's bytes from its start into *buf (malloc'd with a byte to spare for a
 * NUL), *n of them: MP_READ_EOF at its end, 0 when it holds more than
 * max, or an errno.  The buffer starts at the size fstat() gave and grows
 * while the file goes on (a report may be replaced by a longer one
 * between the two), so max bounds the buffer and is never allocated
 * up front. */
static int read_growing(int fd, off_t size, size_t max, char **buf, size_t *n)
{
	size_t room = size > 4096 ? (size_t)size : 4096;
	int rc = 0;

	*buf = NULL;
	*n = 0;
	for (;;) {
		size_t got = 0;
		char *more;

		if (room > max)
			room = max;
		if (!(more = realloc(*buf, room + 1)))
			return ENOMEM;
		*buf = more;
		rc = mp_pread_all(fd, *buf + *n, room + 1 - *n, *n, &got);
		*n += got;
		if (rc != 0 || room == max)
			return rc;
		room += room / 2;
	}
}

/* A whole file of at most max bytes, NUL-terminated, or NULL with errno
 * set (EFBIG: larger, which the daemon never writes). */
static char *read_small(const char *path, size_t max, size_t *len, struct stat *st)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY), rc;
	char *buf = NULL;
	size_t n = 0;

	if (fd < 0)
		return NULL;
	if (fstat(fd, st) != 0)
		rc = errno;
	else if (!S_ISREG(st->st_mode))
		rc = S_ISDIR(st->st_mode) ? EISDIR : EINVAL;
	else
		rc = read_growing(fd, st->st_size, max, &buf, &n);
	close(fd);
	if (rc == MP_READ_EOF) {
		buf[n] = '\0';
		*len = n;
		return buf;
	}
	free(buf);
	errno = rc == 0 ? EFBIG : rc;
	return NULL;
}

/* ---- status.json ------------------------------------------------------------------- */

/* s cut to fit cap bytes (NUL included) at a character boundary, "..."
 * marking the cut; s is valid UTF-8 (jansson checked it). */
static void keep_text(char *dst, size_t cap, const char *s)
{
	size_t n = strlen(s), keep = 0;

	if (n < cap) {
		memcpy(dst, s, n + 1);
		return;
	}
	while (keep < n) {
		size_t k = mp_utf8_seq_len((const unsigned char *)s + keep, n - keep);

		if (keep + (k ? k : 1) > cap - 4)
			break;
		keep += k ? k : 1;
	}
	memcpy(dst, s, keep);
	memcpy(dst + keep, "...", 4);
}

static bool get_text(char *dst, json_t *root, const char *key, char *why, size_t why_len)
{
	json_t *v = json_object_get(root, key);

	if (!v) {
		snprintf(dst, TOP_FIELD_MAX, "?");
		return true;
	}
	if (!json_is_string(v)) {
		snprintf(why, why_len, "status.json: %s: not a string", key);
		return false;
	}
	keep_text(dst, TOP_FIELD_MAX, json_string_value(v));
	return true;
}

/* obj[key] as a count into *out (0 when missing); where names obj. */
static bool get_count(json_t *obj, const char *where, const char *key, uint64_t *out, char *why,
		      size_t why_len)
{
	json_t *v = json_object_get(obj, key);

	*out = 0;
	if (!v)
		return true;
	if (json_is_integer(v) && json_integer_value(v) >= 0) {
		*out = (uint64_t)json_integer_value(v);
		return true;
	}
	snprintf(why, why_len, "status.json: %s%s: not a count", where, key);
	return false;
}

static bool read_counters(json_t *root, struct top_sample *s, char *why, size_t why_len)
{
	json_t *c = json_object_get(root, "counters");

	if (c && !json_is_object(c)) {
		snprintf(why, why_len, "status.json: counters: not an object");
		return false;
	}
	return get_count(c, "counters.", "reads", &s->reads, why, why_len) &&
	       get_count(c, "counters.", "bytes", &s->bytes, why, why_len) &&
	       get_count(c, "counters.", "read_errors", &s->errors, why, why_len);
}

/* layers[i] into the sample, kept sorted by id: the heat map's rows and
 * their labels follow the ids. */
static bool add_layer(json_t *row, size_t i, struct top_sample *s, char *why, size_t why_len)
{
	char where[48];
	uint64_t id, reads, bytes;
	unsigned at = s->nlayers;

	snprintf(where, sizeof where, "layers[%zu].", i);
	if (!json_is_object(row) || !json_is_integer(json_object_get(row, "layer")) ||
	    json_integer_value(json_object_get(row, "layer")) < 0 ||
	    json_integer_value(json_object_get(row, "layer")) > UINT32_MAX) {
		snprintf(why, why_len, "status.json: %slayer: not a layer id", where);
		return false;
	}
	id = (uint64_t)json_integer_value(json_object_get(row, "layer"));
	if (!get_count(row, where, "reads", &reads, why, why_len) ||
	    !get_count(row, where, "bytes", &bytes, why, why_len))
		return false;
	for (; at > 0 && s->layer_id[at - 1] >= id; at--) {
		if (s->layer_id[at - 1] == id) {
			snprintf(why, why_len, "status.json: %slayer: layer %" PRIu64
				 " is listed twice", where, id);
			return false;
		}
	}
	memmove(s->layer_id + at + 1, s->layer_id + at, (s->nlayers - at) * sizeof *s->layer_id);
	memmove(s->layer_reads + at + 1, s->layer_reads + at,
		(s->nlayers - at) * sizeof *s->layer_reads);
	memmove(s->layer_bytes + at + 1, s->layer_bytes + at,
		(s->nlayers - at) * sizeof *s->layer_bytes);
	s->layer_id[at] = (uint32_t)id;
	s->layer_reads[at] = reads;
	s->layer_bytes[at] = bytes;
	s->nlayers++;
	return true;
}

static bool read_layers(json_t *root, struct top_sample *s, char *why, size_t why_len)
{
	json_t *layers = json_object_get(root, "layers");
	size_t n;

	/* none in a report cut to fit ("truncated") */
	if (!layers)
		return true;
	if (!json_is_array(layers)) {
		snprintf(why, why_len, "status.json: layers: not an array");
		return false;
	}
	n = json_array_size(layers);
	if (n > TOP_MAX_LAYERS) {
		snprintf(why, why_len, "status.json: layers: %zu layers, more than a pack "
			 "holds (%u)", n, TOP_MAX_LAYERS);
		return false;
	}
	s->layer_id = malloc((n ? n : 1) * sizeof *s->layer_id);
	s->layer_reads = malloc((n ? n : 1) * sizeof *s->layer_reads);
	s->layer_bytes = malloc((n ? n : 1) * sizeof *s->layer_bytes);
	if (!s->layer_id || !s->layer_reads || !s->layer_bytes) {
		snprintf(why, why_len, "status.json: layers: out of memory");
		return false;
	}
	for (size_t i = 0; i < json_array_size(layers); i++)
		if (!add_layer(json_array_get(layers, i), i, s, why, why_len))
			return false;
	return true;
}

/* status.json's "remote" (null or missing for a local pack): the fill. */
static bool read_remote(json_t *root, struct top_sample *s, char *why, size_t why_len)
{
	json_t *r = json_object_get(root, "remote");

	s->remote = r && !json_is_null(r);
	if (!s->remote)
		return true;
	if (!json_is_object(r)) {
		snprintf(why, why_len, "status.json: remote: not an object");
		return false;
	}
	s->fill_complete = json_is_true(json_object_get(r, "complete"));
	return get_count(r, "remote.", "chunks", &s->fill_chunks, why, why_len) &&
	       get_count(r, "remote.", "chunks_local", &s->fill_local, why, why_len) &&
	       get_count(r, "remote.", "bytes_local", &s->fill_bytes_local, why, why_len) &&
	       get_count(r, "remote.", "pack_size", &s->fill_size, why, why_len) &&
	       get_count(r, "remote.", "chunks_refetched", &s->fill_refetched, why, why_len) &&
	       get_count(r, "remote.", "demand_waits", &s->fill_waits, why, why_len) &&
	       get_count(r, "remote.", "demand_failed", &s->fill_failed, why, why_len);
}

static bool parse_status(json_t *root, struct top_sample *s, char *why, size_t why_len)
{
	if (!json_is_object(root)) {
		snprintf(why, why_len, "status.json: not a JSON object");
		return false;
	}
	return get_text(s->validation, root, "validation", why, why_len) &&
	       get_text(s->pack_state, root, "pack_state", why, why_len) &&
	       get_text(s->verify, root, "verify", why, why_len) &&
	       get_text(s->mounted_at, root, "mounted_at", why, why_len) &&
	       read_counters(root, s, why, why_len) && read_remote(root, s, why, why_len) &&
	       read_layers(root, s, why, why_len);
}

static enum top_state read_status(const char *mount, struct top_sample *s, char *why,
				  size_t why_len)
{
	char path[PATH_ROOM];
	json_error_t jerr;
	struct stat st;
	json_t *root;
	size_t len;
	char *text;
	bool ok;

	snprintf(path, sizeof path, "%s/status.json", mount);
	text = read_small(path, mp_stats_max_len(TOP_MAX_LAYERS), &len, &st);
	if (!text && (errno == EFBIG || errno == EINVAL)) {
		snprintf(why, why_len, "status.json: %s", errno == EFBIG
			 ? "longer than moepackfs ever writes" : "not a regular file");
		return TOP_INVALID;
	}
	if (!text && (errno == EACCES || errno == EPERM)) {
		snprintf(why, why_len, "status.json: %s (it is the mount owner's and group's "
			 "only: mount with -o status_mode=0444, or join its group)",
			 strerror(errno));
		return TOP_DENIED;
	}
	if (!text) {
		snprintf(why, why_len, "status.json: %s%s", strerror(errno),
			 errno == ENOENT ? " (not a moepackfs mount?)"
			 : errno == ENOTCONN ? " (its moepackfs died: fusermount3 -u, then mount again)"
			 : "");
		return TOP_GONE;
	}
	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	free(text);
	if (!root) {
		char shown[4 * sizeof jerr.text + 16];

		mp_text_escape(shown, sizeof shown, jerr.text, strlen(jerr.text), 0);
		snprintf(why, why_len, "status.json: not valid JSON: line %d column %d: %s",
			 jerr.line, jerr.column, shown);
		return TOP_INVALID;
	}
	s->at = (double)st.st_ctim.tv_sec + (double)st.st_ctim.tv_nsec / 1e9;
	ok = parse_status(root, s, why, why_len);
	json_decref(root);
	if (!ok)
		top_sample_free(s);
	return ok ? TOP_OK : TOP_INVALID;
}

/* ---- metrics ----------------------------------------------------------------------- */

/* The count that ends a metrics line ("... 123"), or false: a gauge's
 * fraction, a sign or junk is not one. */
static bool line_count(const char *p, uint64_t *v)
{
	bool overflow;
	const char *end = mp_scan_u64(p, 10, v, &overflow);

	return end != p && !overflow && (*end == '\0' || *end == ' ');
}

/* An errno's count, once: a name the file repeats keeps its first. */
static void add_errno(struct top_sample *s, const char *name, uint64_t v)
{
	for (unsigned i = 0; i < s->nerrnos; i++)
		if (strcmp(s->errnos[i].name, name) == 0)
			return;
	if (s->nerrnos == TOP_MAX_ERRNOS)
		return;
	snprintf(s->errnos[s->nerrnos].name, sizeof s->errnos[0].name, "%s", name);
	s->errnos[s->nerrnos++].count = v;
}

/* One line of the metrics: name{labels} value.  Series top does not show,
 * and lines it cannot read, are left alone: the file has many. */
/*
 * The value of label NAME in a sample's labels (the text from its '{' to
 * its '}') into out.  Every sample of a mount begins with mountpoint="..."
 * and pack="..." (paths), so a label counts only right after '{' or ','
 * and with its quote unescaped, which the escaped text of a path cannot
 * imitate.
 */
static bool label_of(const char *labels, size_t len, const char *name, char *out,
		     size_t cap)
{
	size_t klen = strlen(name), n;
	const char *end = labels + len;

	for (const char *p = labels; p + klen + 2 < end; p++) {
		if ((*p != '{' && *p != ',') || strncmp(p + 1, name, klen) != 0 ||
		    p[klen + 1] != '=' || p[klen + 2] != '"')
			continue;
		p += klen + 3;
		n = strcspn(p, "\"");
		if (p + n >= end || n >= cap)
			return false;
		memcpy(out, p, n);
		out[n] = '\0';
		return true;
	}
	return false;
}

/* One line of the metrics: name{labels} value. */
static void metrics_line(struct top_sample *s, const char *line)
{
	char name[96], mode[16], errno_name[24];
	const char *sp = strrchr(line, ' '), *open = strchr(line, '{'), *close;
	size_t nlen = strspn(line, "abcdefghijklmnopqrstuvwxyz_");
	size_t llen = 0;
	uint64_t v;

	if (!sp || nlen == 0 || nlen >= sizeof name)
		return;
	memcpy(name, line, nlen);
	name[nlen] = '\0';
	close = open ? strrchr(line, '}') : NULL;
	if (open == line + nlen && close && close < sp)
		llen = (size_t)(close - open);
	else if (line[nlen] != ' ')
		return;
	if (strcmp(name, "moepackfs_uptime_seconds") == 0) {
		s->uptime = strtod(sp + 1, NULL);
		if (!(s->uptime >= 0 && s->uptime < 1e12))
			s->uptime = 0;
		return;
	}
	if (!line_count(sp + 1, &v))
		return;
	if (strcmp(name, "moepackfs_read_bytes_total") == 0) {
		uint64_t *sum = llen && label_of(open, llen, "mode", mode, sizeof mode) &&
					strcmp(mode, "direct") == 0
				? &s->direct_bytes : &s->buffered_bytes;

		*sum = *sum > UINT64_MAX - v ? UINT64_MAX : *sum + v;
	} else if (strcmp(name, "moepackfs_read_errors_total") == 0 && llen &&
		   label_of(open, llen, "errno", errno_name, sizeof errno_name) &&
		   strspn(errno_name, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_abcdefghijklmnopqrstuvwxyz") ==
			   strlen(errno_name)) {
		add_errno(s, errno_name, v);
	}
}

static void read_metrics(const char *mount, struct top_sample *s)
{
	char path[PATH_ROOM], *text, *save = NULL;
	struct stat st;
	size_t len;

	snprintf(path, sizeof path, "%s/metrics", mount);
	/* as long as the layers of the status.json read make it at most */
	text = read_small(path, mp_metrics_max_len(s->nlayers), &len, &st);
	if (!text)
		return; /* an older mount: no errno breakdown */
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		if (line[0] == 'm')
			metrics_line(s, line);
	free(text);
}

/* ---- per-expert counts --------------------------------------------------------------- */

/* The counts of one attribute value ("0 12 3"), at most cap of them, into
 * out; how many in *n.  False when a count is not one (a sign, junk, two
 * spaces, more than 2^64-1), with *n its index. */
static bool parse_counts(const char *p, uint64_t *out, unsigned cap, unsigned *n)
{
	for (*n = 0; *p; (*n)++) {
		bool overflow;
		uint64_t v;
		const char *end = mp_scan_u64(p, 10, &v, &overflow);

		if (end == p || overflow || (*end != ' ' && *end != '\0') ||
		    (*end == ' ' && end[1] == '\0'))
			return false;
		if (*n < cap)
			out[*n] = v;
		p = *end ? end + 1 : end;
	}
	return true;
}

/* The number of counts the first layer's value holds: each layer must
 * hold as many. */
static unsigned count_items(const char *p)
{
	unsigned n = *p != '\0';

	for (; *p; p++)
		n += *p == ' ';
	return n;
}

/* Layer l's attribute into its row; false with the note set. */
static bool layer_experts(const char *mount, struct top_sample *s, unsigned l, char *buf)
{
	char path[PATH_ROOM], *note = s->experts_note, name[16];
	size_t cap = sizeof s->experts_note;
	ssize_t len;
	unsigned n;

	snprintf(name, sizeof name, "%03" PRIu32, s->layer_id[l]);
	snprintf(path, sizeof path, "%s/layers/%s", mount, name);
	len = getxattr(path, "user.moepack.expert_reads", buf, XATTR_SIZE_MAX);
	if (len < 0 || len >= XATTR_SIZE_MAX) {
		if (l > 0 || (errno != ENODATA && errno != ENOTSUP))
			snprintf(note, cap, "layers/%s: user.moepack.expert_reads: %s", name,
				 len < 0 ? strerror(errno) : "too long");
		return false;
	}
	buf[len] = '\0';
	if (!s->expert_reads) {
		s->nexperts = count_items(buf);
		if (s->nexperts == 0 || s->nexperts > TOP_MAX_EXPERTS) {
			snprintf(note, cap, "layers/%s: user.moepack.expert_reads: %u counts, "
				 "not 1 to %u", name, s->nexperts, TOP_MAX_EXPERTS);
			return false;
		}
		s->expert_reads = calloc((size_t)s->nlayers * s->nexperts, sizeof *s->expert_reads);
		if (!s->expert_reads) {
			snprintf(note, cap, "out of memory");
			return false;
		}
	}
	if (!parse_counts(buf, s->expert_reads + (size_t)l * s->nexperts, s->nexperts, &n)) {
		snprintf(note, cap, "layers/%s: user.moepack.expert_reads: expert %u: not a count",
			 name, n);
		return false;
	}
	if (n != s->nexperts) {
		snprintf(note, cap, "layers/%s: user.moepack.expert_reads: %u counts, layer %03"
			 PRIu32 " has %u", name, n, s->layer_id[0], s->nexperts);
		return false;
	}
	return true;
}

/* Per-expert counts of every layer, or none (and why, in the note). */
static void read_experts(const char *mount, struct top_sample *s)
{
	char *buf = malloc(XATTR_SIZE_MAX + 1);
	bool ok = buf != NULL;

	for (unsigned l = 0; ok && l < s->nlayers; l++)
		ok = layer_experts(mount, s, l, buf);
	if (!buf)
		snprintf(s->experts_note, sizeof s->experts_note, "out of memory");
	if (!ok) {
		free(s->expert_reads);
		s->expert_reads = NULL;
		s->nexperts = 0;
	}
	free(buf);
}

/* ---- all of it ------------------------------------------------------------------------- */

enum top_state top_sample_read(const char *mount, struct top_sample *s, char *why,
			       size_t why_len)
{
	enum top_state state;

	memset(s, 0, sizeof *s);
	state = read_status(mount, s, why, why_len);
	if (state != TOP_OK)
		return state;
	read_metrics(mount, s);
	read_experts(mount, s);
	return TOP_OK;
}

void top_sample_free(struct top_sample *s)
{
	free(s->expert_reads);
	free(s->layer_id);
	free(s->layer_reads);
	free(s->layer_bytes);
	s->expert_reads = NULL;
	s->layer_id = NULL;
	s->layer_reads = s->layer_bytes = NULL;
	s->nexperts = 0;
	s->nlayers = 0;
}
