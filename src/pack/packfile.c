/* packfile.c - open and close what every pack format opens (packfile.h). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/file.h"
#include "pack/packfile.h"

void mp_pack_file_init(struct mp_pack_file *f)
{
	memset(f, 0, sizeof *f);
	f->fd = -1;
}

enum mp_err mp_pack_file_open(struct mp_pack_file *f, const char *pack_path,
			      mp_opened_fn opened, void *opened_arg, struct mp_error *err)
{
	struct stat st;
	enum mp_err rc;

	if (!(f->path = strdup(pack_path)))
		return mp_fail(err, MP_E_NOMEM, "out of memory");
	if ((rc = mp_open_regular(pack_path, "pack", MP_E_PACK_IO, &f->fd, &st, err)))
		return rc;
	if (opened && (rc = mp_open_hook_run(f->fd, opened, opened_arg, pack_path, &st, err)))
		return rc;
	f->size = (uint64_t)st.st_size;
	f->mtime = st.st_mtim;
	f->ctime = st.st_ctim;
	f->nlink = (uint64_t)st.st_nlink;
	if (!(f->real_path = realpath(pack_path, NULL)))
		return mp_fail(err, MP_E_PACK_IO, "cannot resolve pack path %s: %s", pack_path,
			       strerror(errno));
	return MP_OK;
}

void mp_pack_file_close(struct mp_pack_file *f)
{
	char *owned[] = {f->manifest_raw, f->manifest_path, f->real_path, f->path};

	if (f->fd >= 0)
		close(f->fd);
	for (size_t i = 0; i < sizeof owned / sizeof owned[0]; i++)
		free(owned[i]);
	mp_pack_file_init(f);
}
