/*
 * daemon.c - what every step of moepackfs's start-up shares: the end of
 * struct daemon, and the two ways a step fails in one line.
 *
 * main() (moepackfs.c) frees the struct whatever happened; the steps
 * (options, the pack, the mount point, the metrics file) report a usage
 * error or a failure of the pack through these, so that every message
 * has one form.
 */
#include "config.h"

#include "daemon/daemon.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/text.h"

int daemon_usage_failure(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, PROG ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '" PROG " --help' for more information.\n");
	return EXIT_USAGE;
}

void daemon_free(struct daemon *d)
{
	/* first: its thread reads the seal the check holds */
	mp_remote_close(d->remote);
	if (d->curl_ok)
		mp_fetch_global_cleanup();
	free(d->source_url);
	free(d->remote_name);
	free(d->opt.cache);
	free(d->opt.expect_seal);
	free(d->opt.s3_endpoint);
	for (unsigned i = 0; i < d->opt.nmirrors; i++)
		free(d->opt.mirrors[i]);
	if (d->stats_ok)
		mp_stats_free(&d->fs.stats);
	free(d->client_manifest);
	free(d->client_path);
	free(d->manifest_real);
	free(d->pack_real);
	free(d->trust_split);
	free(d->opt.pack);
	free(d->opt.manifest);
	free(d->opt.config);
	free(d->opt.source);
	free(d->opt.expect_source);
	free(d->opt.expect_identity);
	free(d->opt.expect_config);
	free(d->opt.client_root);
	free(d->opt.metrics_file);
	free(d->opt.mountpoint);
	for (unsigned i = 0; i < d->opt.nunkeyed; i++)
		free(d->opt.unkeyed[i]);
	if (d->fs_ok)
		mp_fs_cleanup(&d->fs);
	if (d->check_ok)
		mp_sealcheck_free(&d->check);
	if (d->layout_ok)
		mp_seal_layout_free(&d->layout);
	mp_seal_free(d->seal);
	free(d->opt.seal_path);
	free(d->opt.trust);
	if (d->reqbufs_ok)
		mp_bufpool_destroy(&d->reqbufs);
	if (d->storage_ok)
		mp_storage_close(&d->storage);
	mp_pack_close(d->pack);
	free(d->cmd.mountpoint);
}

/* One line for a failure of the pack: "moepackfs: PACK: message", escaped. */
int daemon_pack_failure(const struct daemon *d, enum mp_err rc, const struct mp_error *err)
{
	char shown[1024];

	mp_text_escape(shown, sizeof shown, d->opt.pack, strlen(d->opt.pack), 0);
	fprintf(stderr, PROG ": %s: %s\n", shown, err->msg);
	return mp_err_exit_status(rc);
}

/* PACK.seal (or -o seal=): a malloc'd path, NULL when out of memory. */
char *daemon_seal_path_of(const struct daemon *d)
{
	char *path;

	if (d->opt.seal_path)
		return strdup(d->opt.seal_path);
	path = malloc(strlen(d->opt.pack) + sizeof MP_SEAL_SUFFIX);
	if (path)
		sprintf(path, "%s%s", d->opt.pack, MP_SEAL_SUFFIX);
	return path;
}
