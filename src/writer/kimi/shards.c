/*
 * shards.c - discover, read and check a GGUF shard set (shards.h).
 *
 * Discovery follows the reference builder: every *.gguf file (not hidden)
 * in the directory of the shard given must be NAME-NNNNN-of-MMMMM.gguf with
 * the same MMMMM, and the numbers must be exactly 1..MMMMM.  What it then
 * reads of each shard (split.no, split.count, split.tensors.count and
 * general.architecture) is checked the same way, with one difference:
 * general.* keys may be missing from all but the first shard, because
 * llama.cpp's gguf-split writes them only there and the reference would
 * refuse every stock split checkpoint.
 */
#include "config.h"

#include "writer/kimi/shards.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pack/digest.h"
#include "base/file.h"
#include "writer/kimi/layout.h"
#include "pack/kimi/manifest.h"
#include "base/outfile.h"
#include "base/quant.h"
#include "base/text.h"
#include "writer/kimi/k3names.h"

#define KIMI_ARCH "kimi-k3"
#define CONFIG_MAX (16u << 20)
#define SUFFIX_LEN 21 /* "-NNNNN-of-MMMMM.gguf" is 20, plus the NUL */

enum mp_err mp_shards_problem(struct mp_shard_set *set, enum mp_err code, const char *fmt,
			      ...)
{
	char msg[MP_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (set->nproblems < MP_SHARDS_MAX_PROBLEMS)
		mp_fail(&set->problems[set->nproblems], code, "%s", msg);
	set->nproblems++;
	return code;
}

/* Record err (its message escaped already), after "path: " if path is
 * not "". */
static void problem_escaped(struct mp_shard_set *set, const struct mp_error *err,
			    const char *path)
{
	char shown[MP_MSG_MAX];

	mp_text_escape(shown, sizeof shown, path, strlen(path), 0);
	if (set->nproblems < MP_SHARDS_MAX_PROBLEMS)
		mp_fail_escaped(&set->problems[set->nproblems], err->code, "%s%s%s", shown,
				*path ? ": " : "", err->msg);
	set->nproblems++;
}

void mp_shards_close(struct mp_shard_set *set)
{
	if (!set)
		return;
	for (size_t i = 0; i < set->count; i++) {
		if (set->shards[i].fd >= 0)
			close(set->shards[i].fd);
		free(set->shards[i].path);
		free(set->shards[i].real_path);
	}
	free(set->shards);
	free(set->tensors);
	free(set->dir);
	free(set->prefix);
	free(set);
}

static int all_digits(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return 1;
}

/* NAME-NNNNN-of-MMMMM.gguf: the prefix length and both numbers, or -1. */
static long split_name(const char *name, unsigned *no, unsigned *of)
{
	size_t n = strlen(name);
	const char *s;

	if (n < SUFFIX_LEN - 1)
		return -1;
	s = name + n - (SUFFIX_LEN - 1);
	if (s[0] != '-' || !all_digits(s + 1, 5) || strncmp(s + 6, "-of-", 4) != 0 ||
	    !all_digits(s + 10, 5) || strcmp(s + 15, ".gguf") != 0)
		return -1;
	*no = (unsigned)strtoul(s + 1, NULL, 10);
	*of = (unsigned)strtoul(s + 10, NULL, 10);
	return (long)(s - name);
}

static int ends_with_gguf(const char *name)
{
	size_t n = strlen(name);

	return n >= 5 && strcmp(name + n - 5, ".gguf") == 0;
}

/* A file given that is not NAME-NNNNN-of-MMMMM.gguf: the set is that file
 * alone. */
static enum mp_err discover_single(struct mp_shard_set *set, const char *given_base,
				   struct mp_error *err)
{
	size_t n = strlen(given_base);

	set->split = false;
	set->prefix = strndup(given_base, ends_with_gguf(given_base) ? n - 5 : n);
	set->shards = calloc(1, sizeof *set->shards);
	if (!set->prefix || !set->shards)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	set->count = 1;
	set->shards[0].fd = -1;
	set->shards[0].path = mp_path_join(set->dir, given_base);
	return set->shards[0].path ? MP_OK : mp_fail(err, MP_E_NOMEM, "out of memory");
}

/*
 * The shard number of a *.gguf file of the directory when it belongs to
 * the set given_base (prefix plen bytes long, `of` shards) is shard of;
 * 0 after recording why it does not.
 */
static unsigned shard_number(struct mp_shard_set *set, const char *name, long plen,
			     unsigned of, const char *given_base)
{
	unsigned no, n_of;
	long n_plen = split_name(name, &no, &n_of);

	if (n_plen < 0) {
		mp_shards_problem(set, MP_E_SHARD_NAMES,
				  "%s: %s/%s is not NAME-NNNNN-of-MMMMM.gguf (only the "
				  "shards of one checkpoint may be in the directory)",
				  mp_err_summary(MP_E_SHARD_NAMES), set->dir, name);
		return 0;
	}
	if ((size_t)n_plen != (size_t)plen || strncmp(name, set->prefix, (size_t)plen) != 0) {
		mp_shards_problem(set, MP_E_SHARD_NAMES,
				  "%s: %s/%s belongs to another checkpoint than %s",
				  mp_err_summary(MP_E_SHARD_NAMES), set->dir, name, given_base);
		return 0;
	}
	if (n_of != of) {
		mp_shards_problem(set, MP_E_SHARD_NAMES, "%s: %s/%s says %u shards, %s says %u",
				  mp_err_summary(MP_E_SHARD_NAMES), set->dir, name, n_of,
				  given_base, of);
		return 0;
	}
	if (no == 0 || no > of) {
		mp_shards_problem(set, MP_E_SHARD_NAMES, "%s: %s/%s is shard %u of %u",
				  mp_err_summary(MP_E_SHARD_NAMES), set->dir, name, no, of);
		return 0;
	}
	return no;
}

/* Every shard of the directory into set->shards[].path, seen[] marking
 * the numbers found. */
static enum mp_err scan_shards(struct mp_shard_set *set, long plen, const char *given_base,
			       unsigned char *seen, struct mp_error *err)
{
	DIR *d = opendir(set->dir);
	struct dirent *de;

	if (!d)
		return mp_fail(err, MP_E_GGUF_IO, "cannot read GGUF file directory %s: %s",
			       set->dir, strerror(errno));
	while ((de = readdir(d)) != NULL) {
		unsigned no;

		if (de->d_name[0] == '.' || !ends_with_gguf(de->d_name))
			continue;
		no = shard_number(set, de->d_name, plen, (unsigned)set->count, given_base);
		if (!no)
			continue;
		seen[no - 1] = 1;
		set->shards[no - 1].path = mp_path_join(set->dir, de->d_name);
		if (!set->shards[no - 1].path) {
			closedir(d);
			return mp_fail(err, MP_E_NOMEM, "out of memory");
		}
	}
	closedir(d);
	return MP_OK;
}

/* The shard names, in order, into set->shards[].path. */
static enum mp_err discover(struct mp_shard_set *set, const char *given_base,
			    struct mp_error *err)
{
	unsigned no, of;
	long plen = split_name(given_base, &no, &of);
	unsigned char *seen;
	enum mp_err rc;

	if (plen < 0)
		return discover_single(set, given_base, err);
	set->split = true;
	if (of == 0 || no == 0 || no > of) {
		mp_shards_problem(set, MP_E_SHARD_NAMES,
				  "%s: %s is shard %u of %u, numbers run from 1 to the count",
				  mp_err_summary(MP_E_SHARD_NAMES), given_base, no, of);
		return MP_OK;
	}
	set->prefix = strndup(given_base, (size_t)plen);
	set->shards = calloc(of, sizeof *set->shards);
	seen = calloc(of, 1);
	if (!set->prefix || !set->shards || !seen) {
		free(seen);
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	}
	set->count = of;
	for (size_t i = 0; i < of; i++)
		set->shards[i].fd = -1;
	rc = scan_shards(set, plen, given_base, seen, err);
	for (unsigned i = 0; !rc && i < of; i++)
		if (!seen[i])
			mp_shards_problem(set, MP_E_SHARD_MISSING,
					  "%s: %s/%s-%05u-of-%05u.gguf does not exist",
					  mp_err_summary(MP_E_SHARD_MISSING), set->dir, set->prefix,
					  i + 1, of);
	free(seen);
	return rc;
}

struct collect {
	struct mp_shard_set *set;
	uint32_t shard;
	size_t cap;
	enum mp_err rc;
};

static enum mp_err collect_tensor(const struct mp_gguf_tensor *t, void *ctx,
				  struct mp_error *err)
{
	struct collect *c = ctx;
	struct mp_shard_set *set = c->set;
	struct mp_shard_tensor *x;

	if (set->ntensors == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 256;
		struct mp_shard_tensor *grown = realloc(set->tensors, cap * sizeof *grown);

		if (!grown)
			return mp_fail(err, MP_E_NOMEM, "out of memory");
		set->tensors = grown;
		c->cap = cap;
	}
	x = &set->tensors[set->ntensors++];
	memset(x, 0, sizeof *x);
	memcpy(x->name, t->name, t->name_len + 1);
	x->type = t->type;
	x->n_dims = t->n_dims;
	memcpy(x->dims, t->dims, sizeof x->dims);
	x->shard = c->shard;
	x->data_offset = t->offset; /* relative until the data start is known */
	x->nbytes = t->nbytes;
	return MP_OK;
}

/*
 * The inventory's bounds, from the header alone, before a tensor info is
 * read: a shard that claims a million tensors costs a few bytes.
 */
static enum mp_err check_tensor_count(struct mp_shard_set *set, const struct mp_shard *s)
{
	unsigned char h[24];
	uint64_t count = 0;

	/* anything but a v2/v3 header is mp_gguf_read()'s to judge */
	if (mp_pread_all(s->fd, h, sizeof h, 0, NULL) || memcmp(h, "GGUF", 4) != 0 ||
	    (h[4] != 2 && h[4] != 3) || h[5] || h[6] || h[7])
		return MP_OK;
	for (int k = 7; k >= 0; k--)
		count = count << 8 | h[8 + k];
	if (count > MP_SHARD_MAX_TENSORS)
		return mp_shards_problem(set, MP_E_GGUF_FORMAT,
					 "%s: %s: %" PRIu64 " tensors, more than the %u one "
					 "shard may hold", mp_err_summary(MP_E_GGUF_FORMAT),
					 s->path, count, MP_SHARD_MAX_TENSORS);
	if (count > MP_SHARDS_MAX_TENSORS - set->ntensors)
		return mp_shards_problem(set, MP_E_GGUF_FORMAT,
					 "%s: %s: %" PRIu64 " tensors, with the %zu of the "
					 "shards before it more than the %u a checkpoint may hold",
					 mp_err_summary(MP_E_GGUF_FORMAT), s->path, count,
					 set->ntensors, MP_SHARDS_MAX_TENSORS);
	return MP_OK;
}

static enum mp_err read_shard(struct mp_shard_set *set, uint32_t i, size_t *cap,
			      struct mp_error *fatal)
{
	struct mp_shard *s = &set->shards[i];
	struct collect c = {.set = set, .shard = i, .cap = *cap};
	struct mp_error err = {0};
	size_t first = set->ntensors;
	struct stat st;
	enum mp_err rc;

	rc = mp_open_regular(s->path, "GGUF file", MP_E_GGUF_IO, &s->fd, &st, &err);
	if (rc) {
		problem_escaped(set, &err, "");
		return MP_OK;
	}
	s->size = (uint64_t)st.st_size;
	set->total_bytes += s->size;
	s->real_path = realpath(s->path, NULL);
	if (!s->real_path)
		return mp_fail(fatal, MP_E_NOMEM, "cannot resolve %s: %s", s->path,
			       strerror(errno));
	if (check_tensor_count(set, s))
		return MP_OK; /* recorded; its tensors are not read */
	rc = mp_gguf_read(s->fd, s->path, &s->hdr, collect_tensor, &c, &err);
	*cap = c.cap;
	if (rc == MP_E_NOMEM)
		return mp_fail_escaped(fatal, rc, "%s", err.msg);
	if (rc) {
		/* a shard ggml would refuse contributes no tensors */
		set->ntensors = first;
		problem_escaped(set, &err, s->path);
		return MP_OK;
	}
	s->readable = true;
	s->tensor_count = set->ntensors - first;
	for (size_t t = first; t < set->ntensors; t++)
		set->tensors[t].data_offset += s->hdr.data_start;
	return MP_OK;
}

static const char *int_text(char *buf, size_t len, const struct mp_gguf_int *v)
{
	if (!v->present)
		snprintf(buf, len, "missing");
	else if (!v->is_integer)
		snprintf(buf, len, "not an integer");
	else
		snprintf(buf, len, "%" PRId64, v->value);
	return buf;
}

/* Shard i's split.* keys and general.architecture on their own. */
static void check_shard_keys(struct mp_shard_set *set, size_t i)
{
	const struct mp_shard *s = &set->shards[i];
	const struct mp_gguf_header *h = &s->hdr;
	char a[32];

	if ((set->split || h->split_no.present) &&
	    (!h->split_no.present || !h->split_no.is_integer || h->split_no.value != (int64_t)i))
		mp_shards_problem(set, MP_E_SHARD_SPLIT, "%s: %s has split.no %s, must be %zu",
				  mp_err_summary(MP_E_SHARD_SPLIT), s->path,
				  int_text(a, sizeof a, &h->split_no), i);
	if (set->split && (!h->split_count.present || !h->split_count.is_integer))
		mp_shards_problem(set, MP_E_SHARD_SPLIT, "%s: %s has split.count %s",
				  mp_err_summary(MP_E_SHARD_SPLIT), s->path,
				  int_text(a, sizeof a, &h->split_count));
	if (set->split && (!h->split_tensors_count.present ||
			   !h->split_tensors_count.is_integer))
		mp_shards_problem(set, MP_E_SHARD_SPLIT, "%s: %s has split.tensors.count %s",
				  mp_err_summary(MP_E_SHARD_SPLIT), s->path,
				  int_text(a, sizeof a, &h->split_tensors_count));
	if (i == 0 && !h->has_architecture)
		mp_shards_problem(set, MP_E_GGUF_ARCH, "%s: %s has no general.architecture string",
				  mp_err_summary(MP_E_GGUF_ARCH), s->path);
	else if (h->has_architecture &&
		 (h->architecture_cut || strcmp(h->architecture, KIMI_ARCH) != 0))
		mp_shards_problem(set, MP_E_GGUF_ARCH, "%s: %s says \"%s%s\"",
				  mp_err_summary(MP_E_GGUF_ARCH), s->path, h->architecture,
				  h->architecture_cut ? "..." : "");
}

/* A later shard's split.count and split.tensors.count against the first's. */
static void check_against_first(struct mp_shard_set *set, const struct mp_shard *s,
				const struct mp_shard *first)
{
	const struct mp_gguf_header *h = &s->hdr, *f = &first->hdr;
	char a[32], b[32];

	if (h->split_count.present && f->split_count.present &&
	    h->split_count.value != f->split_count.value)
		mp_shards_problem(set, MP_E_SHARD_SPLIT, "%s: %s has split.count %s, %s has %s",
				  mp_err_summary(MP_E_SHARD_SPLIT), s->path,
				  int_text(a, sizeof a, &h->split_count), first->path,
				  int_text(b, sizeof b, &f->split_count));
	if (h->split_tensors_count.present && f->split_tensors_count.present &&
	    h->split_tensors_count.value != f->split_tensors_count.value)
		mp_shards_problem(set, MP_E_SHARD_SPLIT,
				  "%s: %s has split.tensors.count %s, %s has %s",
				  mp_err_summary(MP_E_SHARD_SPLIT), s->path,
				  int_text(a, sizeof a, &h->split_tensors_count), first->path,
				  int_text(b, sizeof b, &f->split_tensors_count));
}

/* The set as a whole, judged by the first shard's values. */
static void check_set_totals(struct mp_shard_set *set, const struct mp_shard *first,
			     uint64_t tensors)
{
	const struct mp_gguf_header *f = &first->hdr;

	if (f->split_count.present && f->split_count.is_integer &&
	    f->split_count.value != (int64_t)set->count)
		mp_shards_problem(set, MP_E_SHARD_SPLIT,
				  "%s: split.count is %" PRId64 ", the set has %zu shard%s",
				  mp_err_summary(MP_E_SHARD_SPLIT), f->split_count.value,
				  set->count, set->count == 1 ? "" : "s");
	for (size_t i = 0; i < set->count; i++)
		if (!set->shards[i].readable)
			return; /* the tensor total is unknown */
	if (f->split_tensors_count.present && f->split_tensors_count.is_integer &&
	    f->split_tensors_count.value != (int64_t)tensors)
		mp_shards_problem(set, MP_E_SHARD_SPLIT,
				  "%s: split.tensors.count is %" PRId64
				  ", the shards hold %" PRIu64 " tensors",
				  mp_err_summary(MP_E_SHARD_SPLIT), f->split_tensors_count.value,
				  tensors);
}

/* The split.* and general.architecture checks, shard by shard, then of
 * the set as a whole. */
static void check_split_keys(struct mp_shard_set *set)
{
	const struct mp_shard *first = NULL;
	uint64_t tensors = 0;

	for (size_t i = 0; i < set->count; i++) {
		const struct mp_shard *s = &set->shards[i];

		if (!s->readable)
			continue;
		tensors += s->tensor_count;
		check_shard_keys(set, i);
		if (i == 0) {
			snprintf(set->architecture, sizeof set->architecture, "%s",
				 s->hdr.architecture);
			first = s;
		} else if (first) {
			check_against_first(set, s, first);
		}
	}
	if (first)
		check_set_totals(set, first, tensors);
}

/* Pointers into one array: equal names keep their file order. */
static int tensor_ptr_cmp(const void *a, const void *b)
{
	const struct mp_shard_tensor *x = *(const struct mp_shard_tensor *const *)a;
	const struct mp_shard_tensor *y = *(const struct mp_shard_tensor *const *)b;
	int c = strcmp(x->name, y->name);

	if (c)
		return c;
	return x < y ? -1 : x > y;
}

static enum mp_err check_duplicates(struct mp_shard_set *set, struct mp_error *err)
{
	const struct mp_shard_tensor **order;

	if (set->ntensors < 2)
		return MP_OK;
	order = malloc(set->ntensors * sizeof *order);
	if (!order)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	for (size_t i = 0; i < set->ntensors; i++)
		order[i] = &set->tensors[i];
	qsort(order, set->ntensors, sizeof *order, tensor_ptr_cmp);
	for (size_t i = 1; i < set->ntensors; i++) {
		const struct mp_shard_tensor *a = order[i - 1], *b = order[i];

		/* within one shard mp_gguf_read() already refused it */
		if (strcmp(a->name, b->name) == 0)
			mp_shards_problem(set, MP_E_GGUF_DUPLICATE, "%s: %s is in %s and %s",
					  mp_err_summary(MP_E_GGUF_DUPLICATE), b->name,
					  set->shards[a->shard].path, set->shards[b->shard].path);
	}
	free(order);
	return MP_OK;
}

enum mp_err mp_shards_open(const char *shard, struct mp_shard_set **out,
			   struct mp_error *err)
{
	struct mp_shard_set *set = calloc(1, sizeof *set);
	const char *slash = strrchr(shard, '/');
	const char *base = slash ? slash + 1 : shard;
	size_t cap = 0;
	enum mp_err rc;

	*out = NULL;
	if (!set)
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	set->dir = slash ? (slash == shard ? strdup("/") : strndup(shard, (size_t)(slash - shard)))
			 : strdup(".");
	if (!set->dir) {
		mp_shards_close(set);
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	}
	rc = discover(set, base, err);
	if (rc) {
		mp_shards_close(set);
		return rc;
	}
	for (uint32_t i = 0; i < set->count; i++) {
		if (!set->shards[i].path)
			continue; /* missing, already reported */
		rc = read_shard(set, i, &cap, err);
		if (rc) {
			mp_shards_close(set);
			return rc;
		}
	}
	check_split_keys(set);
	rc = check_duplicates(set, err);
	if (rc) {
		mp_shards_close(set);
		return rc;
	}
	*out = set;
	return set->nproblems ? set->problems[0].code : MP_OK;
}

void mp_shards_name(const struct mp_shard_set *set, const char *given, char *buf,
		    size_t len)
{
	if (set->split && set->prefix)
		snprintf(buf, len, "%s/%s-NNNNN-of-%05zu.gguf", set->dir, set->prefix,
			 set->count);
	else
		snprintf(buf, len, "%s", given);
}

/* ---- experts --------------------------------------------------------------- */

static enum mp_err check_mla(struct mp_shard_set *set)
{
	enum mp_err first = MP_OK;
	char have[32];

	for (size_t i = 0; i < set->ntensors; i++) {
		const struct mp_shard_tensor *t = &set->tensors[i];
		const struct mp_k3_rule *rule = mp_k3_rule_for(t->name, NULL);

		if (!rule || rule->expert_role >= 0 || t->type == (uint32_t)rule->type)
			continue;
		mp_shards_problem(set, rule->code, "%s: %s is %s", mp_err_summary(rule->code),
				  t->name, mp_gguf_type_text(have, sizeof have, t->type));
		if (!first)
			first = rule->code;
	}
	return first;
}

/*
 * [row, rows, experts]; ggml drops trailing dimensions of 1 when it writes
 * a tensor, so a single expert's is [row, rows] (dims[2] reads as 1).
 */
static bool expert_dims(const struct mp_shard_tensor *t)
{
	return t->n_dims == 3 || t->n_dims == 2;
}

/* ex->tensor[][] from the names; an expert tensor outside the MoE layers
 * is a problem. */
static void find_experts(struct mp_shard_set *set, struct mp_experts *ex)
{
	for (size_t i = 0; i < set->ntensors; i++) {
		const struct mp_shard_tensor *t = &set->tensors[i];
		long layer;
		const struct mp_k3_rule *rule = mp_k3_rule_for(t->name, &layer);

		if (!rule || rule->expert_role < 0)
			continue;
		if (layer < MP_ACTIVE_FIRST || layer > MP_ACTIVE_LAST) {
			mp_shards_problem(set, MP_E_GGUF_EXPERTS,
					  "%s: %s is outside the MoE layers %d..%d",
					  mp_err_summary(MP_E_GGUF_EXPERTS), t->name,
					  MP_ACTIVE_FIRST, MP_ACTIVE_LAST);
			continue;
		}
		/* duplicates were refused with the set; keep the first */
		if (!ex->tensor[layer][rule->expert_role])
			ex->tensor[layer][rule->expert_role] = t;
	}
}

static void report_missing_experts(struct mp_shard_set *set, const struct mp_experts *ex)
{
	char name[MP_ENTRY_NAME_LEN];

	for (int layer = MP_ACTIVE_FIRST; layer <= MP_ACTIVE_LAST; layer++)
		for (int r = 0; r < MP_ROLE_COUNT; r++)
			if (!ex->tensor[layer][r]) {
				mp_tensor_name(name, sizeof name, (uint64_t)layer, (enum mp_role)r);
				mp_shards_problem(set, MP_E_GGUF_EXPERTS, "%s: %s is missing",
						  mp_err_summary(MP_E_GGUF_EXPERTS), name);
			}
}

static void check_expert_types(struct mp_shard_set *set, const struct mp_experts *ex)
{
	char have[32], want[32];

	for (int layer = MP_ACTIVE_FIRST; layer <= MP_ACTIVE_LAST; layer++)
		for (int r = 0; r < MP_ROLE_COUNT; r++) {
			const struct mp_shard_tensor *t = ex->tensor[layer][r];

			if (!t || t->type == (uint32_t)mp_role_dtype[r])
				continue;
			mp_shards_problem(set, MP_E_GGUF_EXPERT_TYPE,
					  "%s: %s is %s, must be %s (moepack copies expert "
					  "data as it is and never re-quantizes)",
					  mp_err_summary(MP_E_GGUF_EXPERT_TYPE), t->name,
					  mp_gguf_type_text(have, sizeof have, t->type),
					  mp_gguf_type_text(want, sizeof want,
							    (uint32_t)mp_role_dtype[r]));
		}
}

/*
 * Shapes: up [hidden, inter, experts], gate the same, down [inter, hidden,
 * experts], in every layer as in blk.1's up, which sets ex's geometry.
 */
static void check_expert_shapes(struct mp_shard_set *set, struct mp_experts *ex)
{
	const struct mp_shard_tensor *ref = ex->tensor[MP_ACTIVE_FIRST][MP_ROLE_UP];

	if (!expert_dims(ref)) {
		mp_shards_problem(set, MP_E_GGUF_EXPERTS, "%s: %s has %u dimensions, must be 3 "
				  "(row, rows, experts), or 2 for one expert",
				  mp_err_summary(MP_E_GGUF_EXPERTS), ref->name, ref->n_dims);
		return;
	}
	ex->hidden = ref->dims[0];
	ex->inter = ref->dims[1];
	ex->experts = ref->dims[2];
	for (int layer = MP_ACTIVE_FIRST; layer <= MP_ACTIVE_LAST; layer++)
		for (int r = 0; r < MP_ROLE_COUNT; r++) {
			const struct mp_shard_tensor *t = ex->tensor[layer][r];
			uint64_t w0 = r == MP_ROLE_DOWN ? ex->inter : ex->hidden;
			uint64_t w1 = r == MP_ROLE_DOWN ? ex->hidden : ex->inter;

			if (expert_dims(t) && t->dims[0] == w0 && t->dims[1] == w1 &&
			    t->dims[2] == ex->experts)
				continue;
			mp_shards_problem(set, MP_E_GGUF_EXPERTS,
					  "%s: %s has shape [%" PRIu64 ", %" PRIu64 ", %" PRIu64
					  "]%s, must be [%" PRIu64 ", %" PRIu64 ", %" PRIu64
					  "] like %s", mp_err_summary(MP_E_GGUF_EXPERTS), t->name,
					  t->dims[0], t->dims[1], t->dims[2],
					  expert_dims(t) ? "" : " (not 3 dimensions)", w0, w1,
					  ex->experts, ref->name);
		}
}

/* The geometry against Kimi-K3's (with kimi) and what a pack can hold. */
static void check_geometry(struct mp_shard_set *set, bool kimi, const struct mp_experts *ex)
{
	const char *ref = ex->tensor[MP_ACTIVE_FIRST][MP_ROLE_UP]->name;

	if (kimi && (ex->experts != MP_K3_EXPERTS || ex->hidden != MP_K3_HIDDEN ||
		     ex->inter != MP_K3_INTER))
		mp_shards_problem(set, MP_E_GGUF_GEOMETRY,
				  "%s: %s is [%" PRIu64 ", %" PRIu64 ", %" PRIu64 "], must be "
				  "[%d, %d, %d] (--any-geometry accepts other sizes)",
				  mp_err_summary(MP_E_GGUF_GEOMETRY), ref, ex->hidden,
				  ex->inter, ex->experts, MP_K3_HIDDEN, MP_K3_INTER,
				  MP_K3_EXPERTS);
	if (ex->experts == 0 || ex->experts > MP_MAX_EXPERTS)
		mp_shards_problem(set, MP_E_GGUF_GEOMETRY,
				  "%s: %s holds %" PRIu64 " experts, a pack holds 1 to %u",
				  mp_err_summary(MP_E_GGUF_GEOMETRY), ref, ex->experts,
				  MP_MAX_EXPERTS);
}

/* One expert's bytes of each role: whole pages, or the objects of the
 * pack could not be read with direct I/O back to back. */
static void split_roles(struct mp_shard_set *set, struct mp_experts *ex)
{
	for (int r = 0; r < MP_ROLE_COUNT; r++) {
		const struct mp_shard_tensor *t = ex->tensor[MP_ACTIVE_FIRST][r];

		ex->role_bytes[r] = t->nbytes / ex->experts;
		if (t->nbytes % ex->experts || ex->role_bytes[r] % MP_PAGE)
			mp_shards_problem(set, MP_E_GGUF_GEOMETRY,
					  "%s: one expert of %s is %" PRIu64 " bytes, not a "
					  "multiple of %d", mp_err_summary(MP_E_GGUF_GEOMETRY),
					  t->name, t->nbytes / ex->experts, MP_PAGE);
	}
}

enum mp_err mp_shards_experts(struct mp_shard_set *set, bool kimi, struct mp_experts *ex)
{
	size_t before = set->nproblems;
	enum mp_err first;

	memset(ex, 0, sizeof *ex);
	first = check_mla(set);
	find_experts(set, ex);
	report_missing_experts(set, ex);
	/* types first: a re-quantized tensor is named as such, not as a
	 * size mismatch */
	check_expert_types(set, ex);
	if (set->nproblems > before)
		return first ? first : set->problems[before < MP_SHARDS_MAX_PROBLEMS ? before : 0].code;
	check_expert_shapes(set, ex);
	if (set->nproblems > before)
		return first ? first : MP_E_GGUF_EXPERTS;
	check_geometry(set, kimi, ex);
	if (set->nproblems > before)
		return first ? first : MP_E_GGUF_GEOMETRY;
	split_roles(set, ex);
	if (set->nproblems > before)
		return first ? first : MP_E_GGUF_GEOMETRY;
	return first;
}

/* ---- the model config ------------------------------------------------------ */

/* A real config.json has a few hundred values, nested 3 deep. */
static const struct mp_json_limits config_limits = {
	MP_E_CONFIG_LIMIT, MP_CONFIG_MAX_VALUES, MP_CONFIG_MAX_DEPTH, MP_CONFIG_MAX_TREE,
};

static int config_uint(struct mp_shard_set *set, json_t *cfg, const char *key,
		       uint64_t *out)
{
	json_t *v = json_object_get(cfg, key);

	if (!json_is_integer(v) || json_integer_value(v) < 0) {
		mp_shards_problem(set, MP_E_CONFIG_MISMATCH, "%s: %s is %s, must be a "
				  "non-negative integer", mp_err_summary(MP_E_CONFIG_MISMATCH),
				  key, v ? "not an integer" : "missing");
		*out = 0;
		return -1;
	}
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

static void config_expect(struct mp_shard_set *set, const char *key, uint64_t have,
			  uint64_t want, const char *why)
{
	if (have != want)
		mp_shards_problem(set, MP_E_CONFIG_MISMATCH, "%s: %s is %" PRIu64 ", %s %" PRIu64,
				  mp_err_summary(MP_E_CONFIG_MISMATCH), key, have, why, want);
}

/* The config file's bytes, at most CONFIG_MAX, malloc'd into *out. */
static enum mp_err read_config_text(const char *path, char **out, size_t *out_len,
				    struct mp_error *err)
{
	struct stat st;
	size_t len = 0;
	enum mp_err rc;
	char *buf;
	int fd, e;

	if ((rc = mp_open_regular(path, "config file", MP_E_CONFIG_IO, &fd, &st, err)))
		return rc;
	buf = malloc(CONFIG_MAX + 1);
	if (!buf) {
		close(fd);
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	}
	e = mp_pread_all(fd, buf, CONFIG_MAX + 1, 0, &len);
	if (e > 0)
		rc = mp_fail(err, MP_E_CONFIG_IO, "cannot read config file %s: %s", path,
			     strerror(e));
	else if (len > CONFIG_MAX)
		rc = mp_fail(err, MP_E_CONFIG_IO, "cannot read config file %s: larger "
			     "than %u bytes", path, CONFIG_MAX);
	close(fd);
	if (rc) {
		free(buf);
		return rc;
	}
	*out = buf;
	*out_len = len;
	return MP_OK;
}

/* The config as a JSON object into *root, its digest into cfg->sha256. */
static enum mp_err load_config(const char *path, struct mp_model_config *cfg, json_t **root,
			       struct mp_error *err)
{
	unsigned char digest[MP_SHA256_LEN];
	json_error_t jerr;
	char *buf = NULL;
	size_t len = 0;
	enum mp_err rc = read_config_text(path, &buf, &len, err);

	if (rc)
		return rc;
	mp_sha256_buf(buf, len, digest);
	mp_sha256_hex(digest, cfg->sha256);
	/* bounded like a manifest: jansson would take ~100 times the text */
	rc = mp_json_check_limits(buf, len, path, &config_limits, err);
	if (rc) {
		free(buf);
		return rc;
	}
	*root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	free(buf);
	if (!json_is_object(*root)) {
		rc = mp_fail(err, MP_E_CONFIG_MISMATCH, "%s: %s is not a JSON object%s%s",
			     mp_err_summary(MP_E_CONFIG_MISMATCH), path, *root ? "" : ": ",
			     *root ? "" : jerr.text);
		json_decref(*root);
		*root = NULL;
	}
	return rc;
}

/* The values moepack reads, from text_config when there is one. */
static void config_values(struct mp_shard_set *set, json_t *root, struct mp_model_config *cfg)
{
	json_t *text_cfg = json_object_get(root, "text_config");
	json_t *c = json_is_object(text_cfg) ? text_cfg : root;
	json_t *act;

	config_uint(set, c, "num_hidden_layers", &cfg->num_hidden_layers);
	config_uint(set, c, "first_k_dense_replace", &cfg->first_k_dense_replace);
	config_uint(set, c, "num_experts", &cfg->num_experts);
	config_uint(set, c, "num_experts_per_token", &cfg->top_k);
	config_uint(set, c, "num_shared_experts", &cfg->num_shared_experts);
	config_uint(set, c, "hidden_size", &cfg->hidden_size);
	config_uint(set, c, "routed_expert_hidden_size", &cfg->routed_expert_hidden_size);
	config_uint(set, c, "moe_intermediate_size", &cfg->moe_intermediate_size);
	act = json_object_get(c, "hidden_act");
	if (!json_is_string(act) || strcmp(json_string_value(act), "situ") != 0)
		mp_shards_problem(set, MP_E_CONFIG_MISMATCH, "%s: hidden_act is %s%s%s, must be "
				  "\"situ\"", mp_err_summary(MP_E_CONFIG_MISMATCH),
				  json_is_string(act) ? "\"" : "",
				  json_is_string(act) ? json_string_value(act)
						      : (act ? "not a string" : "missing"),
				  json_is_string(act) ? "\"" : "");
	else
		snprintf(cfg->hidden_act, sizeof cfg->hidden_act, "situ");
}

/* The values against the pack's layout and the expert tensors. */
static void config_expectations(struct mp_shard_set *set, bool kimi,
				const struct mp_experts *ex, const struct mp_model_config *cfg)
{
	/* the MoE layers are first_k_dense_replace .. num_hidden_layers - 1 */
	config_expect(set, "num_hidden_layers", cfg->num_hidden_layers, MP_K3_HIDDEN_LAYERS,
		      "the MoE layers 1..92 need");
	config_expect(set, "first_k_dense_replace", cfg->first_k_dense_replace,
		      MP_ACTIVE_FIRST, "the MoE layers 1..92 need");
	config_expect(set, "num_experts_per_token", cfg->top_k, MP_TOP_K, "the pack's top-k is");
	config_expect(set, "num_shared_experts", cfg->num_shared_experts, 2, "Kimi-K3 has");
	if (kimi)
		config_expect(set, "hidden_size", cfg->hidden_size, 7168, "Kimi-K3 has");
	config_expect(set, "num_experts", cfg->num_experts, ex->experts,
		      "the expert tensors hold");
	config_expect(set, "routed_expert_hidden_size", cfg->routed_expert_hidden_size,
		      ex->hidden, "the expert tensors (up ne[0]) say");
	config_expect(set, "moe_intermediate_size", cfg->moe_intermediate_size, ex->inter,
		      "the expert tensors (up ne[1]) say");
}

enum mp_err mp_model_config_check(const char *path, struct mp_shard_set *set, bool kimi,
				  const struct mp_experts *ex, struct mp_model_config *cfg,
				  struct mp_error *err)
{
	size_t before = set->nproblems;
	json_t *root = NULL;
	enum mp_err rc;

	memset(cfg, 0, sizeof *cfg);
	rc = load_config(path, cfg, &root, err);
	if (rc)
		return rc;
	config_values(set, root, cfg);
	json_decref(root);
	if (set->nproblems > before)
		return set->problems[before < MP_SHARDS_MAX_PROBLEMS ? before : 0].code;
	config_expectations(set, kimi, ex, cfg);
	return set->nproblems > before ? MP_E_CONFIG_MISMATCH : MP_OK;
}
