/* progress.c - the terminal progress bar of progress.h. */
#include "config.h"

#include "pack/progress.h"

#include "pack/pack.h"
#include "base/text.h"

#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define REDRAW_NS 100000000LL /* 10 redraws a second are plenty */
#define DEFAULT_COLUMNS 80

static long long elapsed_ns(const struct timespec *from, const struct timespec *to)
{
	return (long long)(to->tv_sec - from->tv_sec) * 1000000000LL +
	       (to->tv_nsec - from->tv_nsec);
}

static int terminal_columns(FILE *out)
{
	struct winsize ws;

	if (ioctl(fileno(out), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	return DEFAULT_COLUMNS;
}

char *format_bytes(char *buf, size_t len, uint64_t bytes)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
	double v = (double)bytes;
	unsigned u = 0;

	while (v >= 1024 && u + 1 < sizeof units / sizeof units[0]) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%llu B", (unsigned long long)bytes);
	else if (v < 9.995)
		snprintf(buf, len, "%.2f %s", v, units[u]);
	else if (v < 99.95)
		snprintf(buf, len, "%.1f %s", v, units[u]);
	else
		snprintf(buf, len, "%.0f %s", v, units[u]);
	return buf;
}

char *format_duration(char *buf, size_t len, double seconds)
{
	unsigned long long s;

	if (!(seconds >= 0) || seconds > 359999999.0) { /* NaN, negative, absurd */
		snprintf(buf, len, "--:--");
		return buf;
	}
	s = (unsigned long long)(seconds + 0.5);
	if (s >= 3600)
		snprintf(buf, len, "%llu:%02llu:%02llu", s / 3600, s / 60 % 60, s % 60);
	else
		snprintf(buf, len, "%llu:%02llu", s / 60, s % 60);
	return buf;
}

void progress_bar_init(struct progress_bar *bar, FILE *out, const char *label, bool allow)
{
	memset(bar, 0, sizeof *bar);
	bar->out = out;
	bar->label = label ? label : "";
	bar->enabled = allow && out && isatty(fileno(out));
	clock_gettime(CLOCK_MONOTONIC, &bar->start);
}

static void draw(struct progress_bar *bar, uint64_t done, uint64_t total,
		 const struct timespec *now)
{
	char line[512], done_s[32], total_s[32], rate_s[32], eta_s[32];
	double secs = (double)elapsed_ns(&bar->start, now) / 1e9;
	double rate = secs > 0 ? (double)done / secs : 0;
	double fraction = total ? (double)done / (double)total : 1.0;
	int columns = terminal_columns(bar->out);
	int n, width;

	if (fraction > 1.0)
		fraction = 1.0;
	format_bytes(done_s, sizeof done_s, done);
	format_bytes(total_s, sizeof total_s, total);
	format_bytes(rate_s, sizeof rate_s, (uint64_t)rate);
	format_duration(eta_s, sizeof eta_s,
			rate > 0 ? (double)(total - (done < total ? done : total)) / rate : -1);
	n = snprintf(line, sizeof line, "%s%s%3d%% %9s / %-9s %9s/s  ETA %s", bar->label,
		     *bar->label ? " " : "", (int)(fraction * 100), done_s, total_s, rate_s,
		     eta_s);
	if (n < 0)
		return;
	if (n >= (int)sizeof line)
		n = (int)sizeof line - 1;
	/* Spend what is left of the line, if enough, on a bar; never wrap:
	 * a wrapped line cannot be erased with a carriage return. */
	width = columns - 1 - n - 3;
	if (width >= 10) {
		int filled = (int)(fraction * width);

		fprintf(bar->out, "\r%s [", line);
		for (int i = 0; i < width; i++)
			fputc(i < filled ? '#' : '.', bar->out);
		fputs("]\033[K", bar->out);
	} else {
		if (n > columns - 1)
			n = columns - 1 > 0 ? columns - 1 : 0;
		fprintf(bar->out, "\r%.*s\033[K", n, line);
	}
	fflush(bar->out);
	bar->drawn = true;
}

void progress_bar_update(uint64_t done, uint64_t total, void *arg)
{
	struct progress_bar *bar = arg;
	struct timespec now;

	if (!bar || !bar->enabled)
		return;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (bar->drawn && done < total && elapsed_ns(&bar->last_draw, &now) < REDRAW_NS)
		return;
	/* Work that finishes within the first redraw interval never shows. */
	if (!bar->drawn && elapsed_ns(&bar->start, &now) < REDRAW_NS)
		return;
	bar->last_draw = now;
	draw(bar, done, total, &now);
}

void progress_bar_finish(struct progress_bar *bar)
{
	if (!bar || !bar->enabled || !bar->drawn)
		return;
	fputs("\r\033[K", bar->out);
	fflush(bar->out);
	bar->drawn = false;
}

void print_pack_warnings(FILE *out, const char *prog, const struct mp_pack *pack)
{
	/* room for every byte of a warning escaped as \xNN */
	char shown[4 * MP_MSG_MAX + 16];

	for (unsigned i = 0; i < pack->file.nwarnings && i < MP_MAX_WARNINGS; i++) {
		mp_text_escape(shown, sizeof shown, pack->file.warnings[i],
			       strlen(pack->file.warnings[i]), 0);
		fprintf(out, "%s: warning: %s\n", prog, shown);
	}
}
