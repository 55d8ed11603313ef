/*
 * cmd_top.c - `moepack top MOUNT`: a live view of what loaders read from a
 * mount.
 *
 * The view (top_view.h) is looked at once a second and drawn by curses
 * (top_text.h), or looked at twice, a snapshot apart, and printed once
 * (--once) or as JSON (--json, top_json.h).  A mount that goes away is no
 * reason to stop: the live view says since when it is gone and why, and
 * picks it up again when it is back; --once and --json print what they
 * found and exit 3.
 */
#include "config.h"

#include <curses.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/text.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/top_json.h"
#include "cli/top_text.h"
#include "cli/top_view.h"

struct top_args {
	bool once, json;
};

const struct cli_option cli_top_options[] = {
	CLI_OPT_TRUE("once", '1', "print one plain-text frame and exit", struct top_args, once),
	CLI_OPT_JSON("print the same data as one JSON object and exit", struct top_args, json),
	{NULL},
};

#define CMD "top"

/* ---- the live view ------------------------------------------------------------------ */

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void draw(const struct top_view *v, struct top_frame *f)
{
	f->width = (unsigned)(COLS < 0 ? 0 : COLS > TOP_WIDTH_MAX ? TOP_WIDTH_MAX : COLS);
	f->height = (unsigned)(LINES < 0 ? 0 : LINES > TOP_LINES_MAX ? TOP_LINES_MAX : LINES);
	f->keys = true;
	top_render(v, f);
	erase();
	for (unsigned i = 0; i < f->n; i++)
		mvaddnstr((int)i, 0, f->line[i], (int)f->width);
	refresh();
}

/* `l`: a layer id typed on the last line, or nothing for all. */
static void choose_layer(struct top_view *v)
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
	v->layer = buf[0] && *end == '\0' && id >= 0 && (unsigned long)id <= UINT32_MAX ? id : -1;
}

/* One key: false for q. */
static bool on_key(struct top_view *v, struct top_frame *f, int key)
{
	if (key == 'q' || key == 'Q')
		return false;
	if (key == 's') {
		v->sort = (v->sort + 1) % TOP_SORT_COUNT;
		draw(v, f);
	} else if (key == 'l' && v->state == TOP_OK) {
		choose_layer(v);
		draw(v, f);
	} else if (key == KEY_RESIZE) {
		draw(v, f);
	}
	return true;
}

static bool due(const struct timespec *next)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec > next->tv_sec ||
	       (now.tv_sec == next->tv_sec && now.tv_nsec >= next->tv_nsec);
}

static int live(struct top_view *v, struct top_frame *f)
{
	struct timespec next = {0};

	cli_catch_signals(on_signal);
	initscr();
	cbreak();
	noecho();
	keypad(stdscr, TRUE);
	curs_set(0);
	timeout(100);
	while (!stop_requested) {
		if (due(&next)) {
			top_view_look(v);
			clock_gettime(CLOCK_MONOTONIC, &next);
			next.tv_sec += 1;
			draw(v, f);
		}
		if (!on_key(v, f, getch()))
			break;
	}
	endwin();
	return CLI_EXIT_OK;
}

/* ---- --once and --json --------------------------------------------------------------- */

static bool snapshot_time(const char *mount, double *at)
{
	char path[4200];
	struct stat st;

	snprintf(path, sizeof path, "%s/status.json", mount);
	if (stat(path, &st) != 0)
		return false;
	*at = (double)st.st_ctim.tv_sec + (double)st.st_ctim.tv_nsec / 1e9;
	return true;
}

/* Two looks, one snapshot apart when the mount makes a new one in time
 * (2.5 s), so that the rates are known. */
static void two_looks(struct top_view *v)
{
	double at;

	top_view_look(v);
	if (v->state != TOP_OK)
		return;
	for (int i = 0; i < 25; i++) {
		struct timespec pause = {0, 100000000L};

		nanosleep(&pause, NULL);
		if (!snapshot_time(v->mount, &at) || at != v->cur.at)
			break;
	}
	top_view_look(v);
}

/* The width of a --once frame: the terminal's, or COLUMNS, or 100. */
static unsigned once_width(void)
{
	struct winsize ws;
	const char *cols = getenv("COLUMNS");
	long w = 100;

	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		w = ws.ws_col;
	else if (cols && atol(cols) > 0)
		w = atol(cols);
	return w < TOP_MIN_COLS ? TOP_MIN_COLS : w > TOP_WIDTH_MAX ? TOP_WIDTH_MAX : (unsigned)w;
}

static int print_once(struct top_view *v, bool json, struct top_frame *f)
{
	int rc, status = v->state == TOP_OK ? CLI_EXIT_OK : CLI_EXIT_IO;

	if (json) {
		rc = top_print_json(v);
	} else {
		f->width = once_width();
		f->height = 44;
		f->keys = false;
		top_render(v, f);
		for (unsigned i = 0; i < f->n; i++)
			puts(f->line[i]);
		rc = 0;
	}
	if (v->state != TOP_OK) {
		char shown[CLI_TEXT_MAX], why[TOP_WHY_MAX];

		/* the reason holds escaped text (JSON errors) already */
		mp_text_escape(why, sizeof why, v->why, strlen(v->why), MP_TEXT_ESCAPED);
		fprintf(stderr, "moepack: %s: %s\n", cli_text(shown, v->mount), why);
	}
	if (rc == -1) {
		fprintf(stderr, "moepack %s: out of memory\n", CMD);
		return CLI_EXIT_IO;
	}
	rc = rc ? cli_finish_stdout_errno(CMD, rc) : cli_finish_stdout(CMD);
	return rc ? rc : status;
}

/* ---- the command ------------------------------------------------------------------------ */

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

int cli_top_run(int argc, char **argv)
{
	struct top_args a = {0};
	struct top_view v;
	enum cli_parse p = parse_args(argc, argv, &a);
	struct top_frame *f;
	int status;

	if (p != CLI_RUN)
		return cli_parse_status(p, CMD);
	/* a frame is large (lines of the widest terminal): not on the stack */
	if (!(f = calloc(1, sizeof *f))) {
		fprintf(stderr, "moepack %s: out of memory\n", CMD);
		return CLI_EXIT_IO;
	}
	setlocale(LC_ALL, "");
	top_view_init(&v, argv[optind]);
	if (a.once || a.json) {
		two_looks(&v);
		status = print_once(&v, a.json, f);
	} else {
		status = live(&v, f);
	}
	top_view_free(&v);
	free(f);
	return status;
}
