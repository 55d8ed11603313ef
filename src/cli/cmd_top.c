/*
 * cmd_top.c - `moepack top MOUNT`: a live view of what loaders read from a
 * mount.
 *
 * Everything comes from what the mount exposes: status.json (state,
 * validation, totals, per-layer counts; its ctime is when the snapshot was
 * made, which times the rates), metrics (errors by errno, direct and
 * buffered bytes) and the user.moepack.expert_reads attribute of each layer
 * directory (per-expert read requests, for the hottest experts and the heat
 * map).  One frame is a grid of text lines, drawn by curses, or printed
 * once (--once); --json prints the same data.  What the mount says is
 * untrusted: bounded reads, bounded tables, and text through cli_text().
 */
#include "config.h"

#include <curses.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/limits.h> /* XATTR_SIZE_MAX */
#include <locale.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "base/file.h"
#include "cli/cli.h"
#include "cli/commands.h"

struct top_args {
	bool once, json;
};

const struct cli_option cli_top_options[] = {
	CLI_OPT_TRUE("once", '1', "print one plain-text frame and exit", struct top_args, once),
	CLI_OPT_JSON("print the same data as one JSON object and exit", struct top_args, json),
	{NULL},
};

#define CMD "top"
#define FILE_MAX (1u << 20)    /* status.json and metrics are 64 KiB */
#define MAX_LAYERS 256
#define MAX_EXPERTS 4096
#define MAX_ERRNOS 16
#define HOT_ROWS 10
#define WIDTH_MAX 512
#define LINES_MAX 200

enum sort { SORT_READS, SORT_NOW, SORT_ID, SORT_COUNT };
static const char *const sort_names[SORT_COUNT] = {"reads", "now", "id"};

struct errno_count {
	char name[24];
	uint64_t count;
};

/* One look at the mount. */
struct sample {
	char validation[32], pack_state[32], verify[32], mounted_at[40];
	double at;                  /* status.json's ctime: the snapshot's time */
	double uptime;
	uint64_t reads, bytes, errors, direct_bytes, buffered_bytes;
	unsigned nlayers;
	uint32_t layer_id[MAX_LAYERS];
	uint64_t layer_reads[MAX_LAYERS], layer_bytes[MAX_LAYERS];
	unsigned nexperts;          /* per layer; 0 when the attributes are missing */
	uint64_t *expert_reads;     /* nlayers * nexperts */
	unsigned nerrnos;
	struct errno_count errnos[MAX_ERRNOS];
};

struct view {
	const char *mount;
	char shown[256];            /* the mount as it may be shown, cut */
	struct sample cur, prev;
	bool have_prev;
	enum sort sort;
	long layer;                 /* the chosen layer id, -1: all */
};

/* ---- reading the mount -------------------------------------------------------- */

/* A whole small file, NUL-terminated; NULL with errno set. */
static char *read_small(const char *path, size_t *len, struct stat *st)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	char *buf;
	size_t n = 0;

	if (fd < 0)
		return NULL;
	if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
		close(fd);
		errno = EINVAL;
		return NULL;
	}
	buf = malloc(FILE_MAX + 1);
	if (buf)
		mp_pread_all(fd, buf, FILE_MAX, 0, &n);
	close(fd);
	if (buf) {
		buf[n] = '\0';
		*len = n;
	}
	return buf;
}

static uint64_t jnum(json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);

	return json_is_integer(v) && json_integer_value(v) > 0
		       ? (uint64_t)json_integer_value(v) : 0;
}

static void jtext(char *dst, size_t cap, json_t *obj, const char *key)
{
	const char *s = json_string_value(json_object_get(obj, key));
	char shown[CLI_TEXT_MAX];

	snprintf(dst, cap, "%s", s ? cli_text(shown, s) : "?");
}

static bool read_status(const char *mount, struct sample *s, char *why, size_t why_len)
{
	char path[4200];
	struct json_error_t jerr;
	struct stat st;
	json_t *root, *counters, *layers;
	size_t len;
	char *text;

	snprintf(path, sizeof path, "%s/status.json", mount);
	text = read_small(path, &len, &st);
	if (!text) {
		snprintf(why, why_len, "status.json: %s (not a moepackfs mount?)",
			 strerror(errno));
		return false;
	}
	root = json_loadb(text, len, 0, &jerr);
	free(text);
	if (!json_is_object(root)) {
		json_decref(root);
		snprintf(why, why_len, "status.json is not a JSON object");
		return false;
	}
	s->at = (double)st.st_ctim.tv_sec + (double)st.st_ctim.tv_nsec / 1e9;
	jtext(s->validation, sizeof s->validation, root, "validation");
	jtext(s->pack_state, sizeof s->pack_state, root, "pack_state");
	jtext(s->verify, sizeof s->verify, root, "verify");
	jtext(s->mounted_at, sizeof s->mounted_at, root, "mounted_at");
	counters = json_object_get(root, "counters");
	s->reads = jnum(counters, "reads");
	s->bytes = jnum(counters, "bytes");
	s->errors = jnum(counters, "read_errors");
	layers = json_object_get(root, "layers");
	s->nlayers = 0;
	for (size_t i = 0; i < json_array_size(layers) && s->nlayers < MAX_LAYERS; i++) {
		json_t *row = json_array_get(layers, i);
		uint64_t id = jnum(row, "layer");

		if (id > UINT32_MAX)
			continue;
		s->layer_id[s->nlayers] = (uint32_t)id;
		s->layer_reads[s->nlayers] = jnum(row, "reads");
		s->layer_bytes[s->nlayers] = jnum(row, "bytes");
		s->nlayers++;
	}
	json_decref(root);
	return true;
}

/* One line of the metrics: name{labels} value. */
static void metrics_line(struct sample *s, const char *line)
{
	char name[96], labels[160] = "", errno_name[24];
	unsigned long long v;

	if (sscanf(line, "%95[a-z_]{%159[^}]} %llu", name, labels, &v) != 3 &&
	    sscanf(line, "%95[a-z_] %llu", name, &v) != 2)
		return;
	if (strcmp(name, "moepackfs_uptime_seconds") == 0) {
		s->uptime = strtod(strchr(line, ' ') + 1, NULL);
	} else if (strcmp(name, "moepackfs_read_bytes_total") == 0) {
		if (strstr(labels, "mode=\"direct\""))
			s->direct_bytes += v;
		else
			s->buffered_bytes += v;
	} else if (strcmp(name, "moepackfs_read_errors_total") == 0 &&
		   sscanf(labels, "errno=\"%23[A-Za-z0-9_]\"", errno_name) == 1 &&
		   s->nerrnos < MAX_ERRNOS) {
		snprintf(s->errnos[s->nerrnos].name, sizeof s->errnos[0].name, "%s",
			 errno_name);
		s->errnos[s->nerrnos++].count = v;
	}
}

static void read_metrics(const char *mount, struct sample *s)
{
	char path[4200], *text, *save = NULL;
	struct stat st;
	size_t len;

	snprintf(path, sizeof path, "%s/metrics", mount);
	text = read_small(path, &len, &st);
	if (!text)
		return; /* an older mount: no errno breakdown */
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		if (line[0] == 'm')
			metrics_line(s, line);
	free(text);
}

/* Per-expert counts of every layer, from the layer directories' attributes. */
static void read_experts(const char *mount, struct sample *s)
{
	char path[4200], *buf = malloc(XATTR_SIZE_MAX);

	free(s->expert_reads);
	s->expert_reads = NULL;
	s->nexperts = 0;
	for (unsigned l = 0; buf && l < s->nlayers; l++) {
		ssize_t n;
		unsigned e = 0;
		char *p;

		snprintf(path, sizeof path, "%s/layers/%03" PRIu32, mount, s->layer_id[l]);
		n = getxattr(path, "user.moepack.expert_reads", buf, XATTR_SIZE_MAX - 1);
		if (n < 0)
			break;
		buf[n] = '\0';
		if (!s->expert_reads) {
			/* the first layer says how many experts there are */
			for (p = buf; *p; p++)
				e += *p == ' ';
			s->nexperts = e + 1 < MAX_EXPERTS ? e + 1 : MAX_EXPERTS;
			s->expert_reads = calloc((size_t)s->nlayers * s->nexperts,
						 sizeof *s->expert_reads);
			if (!s->expert_reads)
				break;
		}
		p = buf;
		for (e = 0; e < s->nexperts && *p; e++) {
			char *end;

			s->expert_reads[(size_t)l * s->nexperts + e] = strtoull(p, &end, 10);
			p = *end == ' ' ? end + 1 : end;
		}
	}
	free(buf);
}

static bool take_sample(struct view *v, char *why, size_t why_len)
{
	free(v->prev.expert_reads);
	v->prev = v->cur;
	v->have_prev = v->cur.at > 0;
	memset(&v->cur, 0, sizeof v->cur);
	if (!read_status(v->mount, &v->cur, why, why_len))
		return false;
	read_metrics(v->mount, &v->cur);
	read_experts(v->mount, &v->cur);
	return true;
}

/* ---- what a frame shows ---------------------------------------------------------- */

struct hot {
	unsigned layer;   /* index */
	unsigned expert;
	uint64_t reads;
	double now;       /* reads per second */
};

/* Seconds between the two snapshots, 0 when there is no earlier one. */
static double span(const struct view *v)
{
	double dt = v->have_prev ? v->cur.at - v->prev.at : 0;

	return dt > 0 ? dt : 0;
}

static double rate(const struct view *v, uint64_t now, uint64_t before)
{
	double dt = span(v);

	return dt > 0 && now >= before ? (double)(now - before) / dt : 0;
}

/* The orders of the experts, one comparison each: "id" by layer and
 * expert, "reads" by reads and then id, "now" by this second's reads and
 * then as "reads". */
static int cmp_hot_id(const void *pa, const void *pb)
{
	const struct hot *a = pa, *b = pb;

	if (a->layer != b->layer)
		return a->layer < b->layer ? -1 : 1;
	return a->expert < b->expert ? -1 : a->expert > b->expert;
}

static int cmp_hot_reads(const void *pa, const void *pb)
{
	const struct hot *a = pa, *b = pb;

	if (a->reads != b->reads)
		return a->reads < b->reads ? 1 : -1;
	return cmp_hot_id(pa, pb);
}

static int cmp_hot_now(const void *pa, const void *pb)
{
	const struct hot *a = pa, *b = pb;

	if (a->now != b->now)
		return a->now < b->now ? 1 : -1;
	return cmp_hot_reads(pa, pb);
}

static int (*const cmp_hot[SORT_COUNT])(const void *, const void *) = {
	[SORT_READS] = cmp_hot_reads, [SORT_NOW] = cmp_hot_now, [SORT_ID] = cmp_hot_id,
};

/* The experts read since mounting (of the chosen layer), sorted; *n of them. */
static struct hot *hottest(const struct view *v, size_t *n)
{
	const struct sample *s = &v->cur;
	bool prev_ok = v->have_prev && v->prev.expert_reads &&
		       v->prev.nlayers == s->nlayers && v->prev.nexperts == s->nexperts;
	struct hot *h = malloc(((size_t)s->nlayers * s->nexperts + 1) * sizeof *h);

	*n = 0;
	if (!h || !s->expert_reads)
		return h;
	for (unsigned l = 0; l < s->nlayers; l++) {
		if (v->layer >= 0 && s->layer_id[l] != (uint32_t)v->layer)
			continue;
		for (unsigned e = 0; e < s->nexperts; e++) {
			size_t i = (size_t)l * s->nexperts + e;

			if (!s->expert_reads[i])
				continue;
			h[*n] = (struct hot){.layer = l, .expert = e,
					     .reads = s->expert_reads[i]};
			if (prev_ok)
				h[*n].now = rate(v, s->expert_reads[i], v->prev.expert_reads[i]);
			(*n)++;
		}
	}
	qsort(h, *n, sizeof *h, cmp_hot[v->sort]);
	return h;
}

/* Layers by bytes read since mounting, most first; indexes into the sample. */
static unsigned hot_layers(const struct sample *s, unsigned *idx, unsigned cap)
{
	unsigned n = 0;

	for (unsigned l = 0; l < s->nlayers; l++) {
		unsigned i;

		if (!s->layer_bytes[l])
			continue;
		i = n < cap ? n++ : cap - 1;
		if (i == cap - 1 && n == cap && s->layer_bytes[idx[i]] >= s->layer_bytes[l])
			continue;
		while (i > 0 && s->layer_bytes[idx[i - 1]] < s->layer_bytes[l]) {
			idx[i] = idx[i - 1];
			i--;
		}
		idx[i] = l;
	}
	return n;
}

/* The heat map: rows x cols cells, each the reads of its block of layers x experts. */
static void heat(const struct sample *s, unsigned rows, unsigned cols, uint64_t *cells)
{
	memset(cells, 0, (size_t)rows * cols * sizeof *cells);
	for (unsigned l = 0; l < s->nlayers && s->expert_reads; l++)
		for (unsigned e = 0; e < s->nexperts; e++)
			cells[(size_t)(l * rows / s->nlayers) * cols + e * cols / s->nexperts] +=
				s->expert_reads[(size_t)l * s->nexperts + e];
}

static char shade(uint64_t v, uint64_t max)
{
	static const char ramp[] = " .:-=+*#%@";

	if (!v || !max)
		return ' ';
	return ramp[1 + (int)(sqrt((double)v / (double)max) * 8.0 + 0.5)];
}

static void human(char *buf, size_t len, double bytes)
{
	static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
	unsigned u = 0;

	while (bytes >= 1024 && u < 5) {
		bytes /= 1024;
		u++;
	}
	snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", bytes, unit[u]);
}

/* ---- a frame as lines of text ----------------------------------------------------- */

struct frame {
	unsigned width, height, n;
	char line[LINES_MAX][WIDTH_MAX + 1];
};

static void put(struct frame *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct frame *f, const char *fmt, ...)
{
	va_list ap;

	if (f->n >= f->height || f->n >= LINES_MAX)
		return;
	va_start(ap, fmt);
	vsnprintf(f->line[f->n], f->width + 1, fmt, ap);
	va_end(ap);
	/* no trailing blanks (--once output) */
	for (size_t n = strlen(f->line[f->n]); n > 0 && f->line[f->n][n - 1] == ' '; n--)
		f->line[f->n][n - 1] = '\0';
	f->n++;
}

/* The first lines: state, throughput, errors. */
static void render_header(const struct view *v, struct frame *f)
{
	const struct sample *s = &v->cur;
	char a[32], b[32], c[32], errs[256] = "";
	size_t el = 0;

	put(f, "moepack top  %s   pack %s   validation %s (verify=%s)   up %.0f s",
	    v->shown, s->pack_state, s->validation, s->verify, s->uptime);
	human(a, sizeof a, (double)s->bytes);
	human(b, sizeof b, s->uptime > 0 ? (double)s->bytes / s->uptime : 0);
	if (span(v) > 0)
		human(c, sizeof c, rate(v, s->bytes, v->prev.bytes));
	else
		snprintf(c, sizeof c, "-");
	put(f, "reads %" PRIu64 " (%s) since mount, %s/s average, now %s/s", s->reads, a, b,
	    span(v) > 0 ? c : "-");
	human(a, sizeof a, (double)s->direct_bytes);
	human(b, sizeof b, (double)s->buffered_bytes);
	for (unsigned i = 0; i < s->nerrnos && el < sizeof errs; i++)
		el += (size_t)snprintf(errs + el, sizeof errs - el, " %s %" PRIu64,
				       s->errnos[i].name, s->errnos[i].count);
	put(f, "direct %s  buffered %s   errors %" PRIu64 " (%s )", a, b, s->errors,
	    errs[0] ? errs + 1 : "none");
	put(f, "%s", "");
}

/* One row of the hot tables: layer l's bytes and rate. */
static void hot_layer_cell(const struct view *v, unsigned l, char *out, size_t len)
{
	const struct sample *s = &v->cur;
	bool ok = v->have_prev && v->prev.nlayers == s->nlayers;
	char a[32], b[32];

	human(a, sizeof a, (double)s->layer_bytes[l]);
	human(b, sizeof b, ok ? rate(v, s->layer_bytes[l], v->prev.layer_bytes[l]) : 0);
	snprintf(out, len, "%5" PRIu32 " %10s %9s", s->layer_id[l], a, b);
}

/* The hottest layers beside the hottest experts. */
static void render_hot(const struct view *v, struct frame *f)
{
	const struct sample *s = &v->cur;
	unsigned idx[HOT_ROWS], nl = hot_layers(s, idx, HOT_ROWS), used = f->n, hot_rows;
	size_t nh;
	struct hot *h = hottest(v, &nh);
	char d[32];

	hot_rows = f->height > used + 14 ? HOT_ROWS : (f->height > used + 8 ? 4 : 2);
	if (v->layer >= 0)
		snprintf(d, sizeof d, "layer %ld", v->layer);
	else
		snprintf(d, sizeof d, "all layers");
	put(f, "HOT EXPERTS (%s, sort: %s)          HOT LAYERS (bytes)", d,
	    sort_names[v->sort]);
	put(f, "layer expert      reads   now/s       layer      bytes     now/s");
	for (unsigned i = 0; i < hot_rows; i++) {
		char left[64] = "", right[96] = "";

		if (i < nh)
			snprintf(left, sizeof left, "%5" PRIu32 " %6u %10" PRIu64 " %7.1f",
				 s->layer_id[h[i].layer], h[i].expert, h[i].reads, h[i].now);
		if (i < nl)
			hot_layer_cell(v, idx[i], right, sizeof right);
		put(f, "%-36s    %s", left, right);
	}
	put(f, "%s", "");
	free(h);
}

/* The heat map, folded to the room left. */
static void render_heat(const struct sample *s, struct frame *f)
{
	unsigned rows = f->height > f->n + 3 ? f->height - f->n - 3 : 1;
	unsigned cols = f->width > 8 ? f->width - 8 : 1;
	uint64_t *cells, max = 0;

	if (rows > s->nlayers)
		rows = s->nlayers ? s->nlayers : 1;
	if (cols > s->nexperts)
		cols = s->nexperts ? s->nexperts : 1;
	put(f, "HEAT: reads over %u layers (rows of %u) x %u experts (columns of %u)",
	    s->nlayers, s->nlayers ? (s->nlayers + rows - 1) / rows : 0, s->nexperts,
	    s->nexperts ? (s->nexperts + cols - 1) / cols : 0);
	cells = calloc((size_t)rows * cols, sizeof *cells);
	if (!cells || !s->expert_reads) {
		put(f, "  (no per-expert counts: the mount has no expert_reads attributes)");
		free(cells);
		return;
	}
	heat(s, rows, cols, cells);
	for (size_t i = 0; i < (size_t)rows * cols; i++)
		max = cells[i] > max ? cells[i] : max;
	for (unsigned r = 0; r < rows; r++) {
		char row[WIDTH_MAX + 1];
		unsigned first = r * s->nlayers / rows;

		for (unsigned c = 0; c < cols && c < WIDTH_MAX; c++)
			row[c] = shade(cells[(size_t)r * cols + c], max);
		row[cols < WIDTH_MAX ? cols : WIDTH_MAX] = '\0';
		put(f, "%5" PRIu32 " |%s|", s->layer_id[first], row);
	}
	free(cells);
}

static void render(const struct view *v, struct frame *f)
{
	f->n = 0;
	render_header(v, f);
	render_hot(v, f);
	render_heat(&v->cur, f);
	put(f, "q quit   l choose a layer   s sort (%s)", sort_names[v->sort]);
}

/* ---- --json ------------------------------------------------------------------------ */

static json_t *jint(uint64_t v)
{
	return json_integer(v > INT64_MAX ? INT64_MAX : (json_int_t)v);
}

static void hot_json(const struct view *v, json_t *o)
{
	const struct sample *s = &v->cur;
	json_t *hl = json_array(), *he = json_array();
	unsigned idx[HOT_ROWS], nl = hot_layers(s, idx, HOT_ROWS);
	size_t nh;
	struct hot *h = hottest(v, &nh);

	for (unsigned i = 0; i < nl; i++)
		json_array_append_new(hl, json_pack("{s:I, s:I, s:I}", "layer",
						    (json_int_t)s->layer_id[idx[i]], "reads",
						    (json_int_t)s->layer_reads[idx[i]], "bytes",
						    (json_int_t)s->layer_bytes[idx[i]]));
	json_object_set_new(o, "hottest_layers", hl);
	for (size_t i = 0; h && i < nh && i < HOT_ROWS; i++)
		json_array_append_new(he, json_pack("{s:I, s:I, s:I, s:f}", "layer",
						    (json_int_t)s->layer_id[h[i].layer], "expert",
						    (json_int_t)h[i].expert, "reads",
						    (json_int_t)h[i].reads, "reads_per_second",
						    h[i].now));
	json_object_set_new(o, "hottest_experts", he);
	free(h);
}

/* The heat map at 16 x 64 cells. */
static json_t *heat_json(const struct sample *s)
{
	unsigned rows = s->nlayers < 16 ? (s->nlayers ? s->nlayers : 1) : 16;
	unsigned cols = s->nexperts < 64 ? (s->nexperts ? s->nexperts : 1) : 64;
	uint64_t *cells = calloc((size_t)rows * cols, sizeof *cells);
	json_t *hm = json_object(), *grid = json_array();

	if (cells && s->expert_reads)
		heat(s, rows, cols, cells);
	for (unsigned r = 0; cells && s->expert_reads && r < rows; r++) {
		json_t *row = json_array();

		for (unsigned c = 0; c < cols; c++)
			json_array_append_new(row, jint(cells[(size_t)r * cols + c]));
		json_array_append_new(grid, row);
	}
	free(cells);
	json_object_set_new(hm, "layers", json_integer(s->nlayers));
	json_object_set_new(hm, "experts", json_integer(s->nexperts));
	json_object_set_new(hm, "rows", json_integer(rows));
	json_object_set_new(hm, "columns", json_integer(cols));
	json_object_set_new(hm, "cells", grid);
	return hm;
}

static int print_json(const struct view *v)
{
	const struct sample *s = &v->cur;
	json_t *o = json_object(), *errs = json_object();

	json_object_set_new(o, "mount", cli_json_text(v->mount));
	json_object_set_new(o, "pack_state", json_string(s->pack_state));
	json_object_set_new(o, "validation", json_string(s->validation));
	json_object_set_new(o, "verify", json_string(s->verify));
	json_object_set_new(o, "mounted_at", json_string(s->mounted_at));
	json_object_set_new(o, "uptime_seconds", json_real(s->uptime));
	json_object_set_new(o, "reads", jint(s->reads));
	json_object_set_new(o, "bytes", jint(s->bytes));
	json_object_set_new(o, "bytes_per_second_since_mount",
			    json_real(s->uptime > 0 ? (double)s->bytes / s->uptime : 0));
	json_object_set_new(o, "bytes_per_second_now", span(v) > 0
			    ? json_real(rate(v, s->bytes, v->prev.bytes)) : json_null());
	json_object_set_new(o, "direct_bytes", jint(s->direct_bytes));
	json_object_set_new(o, "buffered_bytes", jint(s->buffered_bytes));
	json_object_set_new(o, "read_errors", jint(s->errors));
	for (unsigned i = 0; i < s->nerrnos; i++)
		json_object_set_new(errs, s->errnos[i].name, jint(s->errnos[i].count));
	json_object_set_new(o, "read_errors_by_errno", errs);
	json_object_set_new(o, "sort", json_string(sort_names[v->sort]));
	hot_json(v, o);
	json_object_set_new(o, "heat_map", heat_json(s));
	return cli_print_json(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER) ? CLI_EXIT_IO
								   : cli_finish_stdout(CMD);
}

/* ---- the live view ------------------------------------------------------------------ */

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void draw(const struct view *v, struct frame *f)
{
	f->width = (unsigned)(COLS > WIDTH_MAX ? WIDTH_MAX : COLS);
	f->height = (unsigned)(LINES > LINES_MAX ? LINES_MAX : LINES);
	render(v, f);
	erase();
	for (unsigned i = 0; i < f->n; i++)
		mvaddnstr((int)i, 0, f->line[i], (int)f->width);
	refresh();
}

/* `l`: a layer id typed on the last line, or nothing for all. */
static void choose_layer(struct view *v)
{
	char buf[16] = "";
	char *end;
	long id;

	mvprintw(LINES - 1, 0, "layer (empty: all): ");
	clrtoeol();
	echo();
	timeout(-1);
	getnstr(buf, sizeof buf - 1);
	noecho();
	timeout(100);
	id = strtol(buf, &end, 10);
	v->layer = buf[0] && *end == '\0' && id >= 0 ? id : -1;
}

static int live(struct view *v, struct frame *f)
{
	char why[512];
	struct timespec last = {0}, now;

	cli_catch_signals(on_signal);
	initscr();
	cbreak();
	noecho();
	keypad(stdscr, TRUE);
	curs_set(0);
	timeout(100);
	while (!stop_requested) {
		int key;

		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > last.tv_sec ||
		    (now.tv_sec == last.tv_sec && now.tv_nsec >= last.tv_nsec)) {
			if (!take_sample(v, why, sizeof why)) {
				endwin();
				fprintf(stderr, "moepack " CMD ": %s\n", why);
				return CLI_EXIT_IO;
			}
			last = now;
			last.tv_sec += 1;
			draw(v, f);
		}
		key = getch();
		if (key == 'q' || key == 'Q')
			break;
		if (key == 's') {
			v->sort = (v->sort + 1) % SORT_COUNT;
			draw(v, f);
		} else if (key == 'l') {
			choose_layer(v);
			draw(v, f);
		} else if (key == KEY_RESIZE) {
			draw(v, f);
		}
	}
	endwin();
	return CLI_EXIT_OK;
}

/* Two samples, one snapshot apart when the mount makes a new one in time. */
static bool two_samples(struct view *v, char *why, size_t why_len)
{
	double first;

	if (!take_sample(v, why, why_len))
		return false;
	first = v->cur.at;
	for (int i = 0; i < 25; i++) {
		struct timespec pause = {0, 100000000L};
		char path[4200];
		struct stat st;

		nanosleep(&pause, NULL);
		snprintf(path, sizeof path, "%s/status.json", v->mount);
		if (stat(path, &st) == 0 &&
		    (double)st.st_ctim.tv_sec + (double)st.st_ctim.tv_nsec / 1e9 != first)
			break;
	}
	return take_sample(v, why, why_len);
}

static unsigned terminal_width(void)
{
	struct winsize ws;
	const char *cols = getenv("COLUMNS");

	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40)
		return ws.ws_col < WIDTH_MAX ? ws.ws_col : WIDTH_MAX;
	if (cols && atoi(cols) >= 40)
		return atoi(cols) < WIDTH_MAX ? (unsigned)atoi(cols) : WIDTH_MAX;
	return 100;
}

static enum cli_parse parse_args(int argc, char **argv, struct top_args *a)
{
	enum cli_parse p = cli_parse_options(&cli_top_command, argc, argv, a);

	if (p != CLI_RUN)
		return p;
	if (optind + 1 != argc)
		cli_usage_error(CMD, optind == argc ? "missing MOUNT" : "too many arguments");
	else if (a->once && a->json)
		cli_usage_error(CMD, "--once and --json exclude each other");
	else if (!a->once && !a->json && (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)))
		cli_usage_error(CMD, "not a terminal: use --once or --json");
	else
		return CLI_RUN;
	return CLI_USAGE_ERROR;
}

/* --once and --json: one look, printed. */
static int print_once(struct view *v, bool json, struct frame *f)
{
	if (json)
		return print_json(v);
	f->width = terminal_width();
	f->height = 44;
	render(v, f);
	for (unsigned i = 0; i < f->n - 1; i++)
		puts(f->line[i]);
	return cli_finish_stdout(CMD);
}

int cli_top_run(int argc, char **argv)
{
	struct top_args a = {0};
	struct view v = {.layer = -1};
	char why[512], shown[CLI_TEXT_MAX];
	enum cli_parse p = parse_args(argc, argv, &a);
	struct frame *f;
	bool sampled;
	int status;

	if (p != CLI_RUN)
		return cli_parse_status(p, CMD);
	/* a frame is large (lines of the widest terminal): not on the stack */
	if (!(f = calloc(1, sizeof *f))) {
		fprintf(stderr, "moepack %s: out of memory\n", CMD);
		return CLI_EXIT_IO;
	}
	v.mount = argv[optind];
	snprintf(v.shown, sizeof v.shown, "%s", cli_text(shown, v.mount));
	setlocale(LC_ALL, "");
	if (a.once || a.json)
		sampled = two_samples(&v, why, sizeof why);
	else
		sampled = take_sample(&v, why, sizeof why);
	if (!sampled) {
		fprintf(stderr, "moepack: %s: %s\n", cli_text(shown, v.mount), why);
		status = CLI_EXIT_IO;
	} else {
		status = a.once || a.json ? print_once(&v, a.json, f) : live(&v, f);
	}
	free(f);
	free(v.cur.expert_reads);
	free(v.prev.expert_reads);
	return status;
}
