/* cmd_cat.c - `moepack cat`: one role payload (or a whole object) to stdout. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <unistd.h>

#include "base/file.h"
#include "cli/cli.h"
#include "cli/commands.h"

struct cat_args {
	struct mp_open_opts open;
	const char *pack_path, *layer, *expert;
	bool force, whole_object;
	enum mp_role role;
};

const struct cli_option cli_cat_options[] = {
	CLI_OPT_TRUE("force", 'f', "write even when standard output is a terminal",
		     struct cat_args, force),
	CLI_OPT_MANIFEST(struct cat_args, open.manifest_path),
	{NULL},
};

#define COPY_CHUNK (4u << 20)
#define SENDFILE_MAX (1u << 30)

/* Where a copy failed: reading the pack or writing stdout. */
enum copy_failure { COPY_OK, COPY_READ, COPY_WRITE, COPY_SHORT };

static enum copy_failure copy_with_buffer(int fd, uint64_t *offset, uint64_t end,
					  int *error)
{
	unsigned char *buf = malloc(COPY_CHUNK);
	enum copy_failure rc = COPY_OK;

	if (!buf) {
		*error = ENOMEM;
		return COPY_READ;
	}
	while (rc == COPY_OK && *offset < end) {
		uint64_t left = end - *offset;
		size_t want = left < COPY_CHUNK ? (size_t)left : COPY_CHUNK;
		size_t got;
		int e = mp_pread_all(fd, buf, want, *offset, &got);

		*error = cli_write_stdout(buf, got);
		rc = *error ? COPY_WRITE : COPY_OK;
		*offset += (uint64_t)got;
		if (rc == COPY_OK && e) {
			if (e > 0)
				*error = e;
			rc = e > 0 ? COPY_READ : COPY_SHORT;
		}
	}
	free(buf);
	return rc;
}

/*
 * sendfile() moves the bytes without a trip through user space, to a pipe
 * or a file alike; where it refuses (stdout opened for append, odd file
 * systems) the plain pread/write loop takes over from where it stopped.
 */
static enum copy_failure copy_range(int fd, uint64_t offset, uint64_t nbytes,
				    uint64_t *stopped_at, int *error)
{
	uint64_t end = offset + nbytes;
	enum copy_failure rc = COPY_OK;

	while (offset < end) {
		uint64_t left = end - offset;
		size_t want = left < SENDFILE_MAX ? (size_t)left : SENDFILE_MAX;
		off_t pos = (off_t)offset;
		ssize_t n = sendfile(STDOUT_FILENO, fd, &pos, want);

		if (n < 0 && errno == EAGAIN)
			cli_wait_stdout_writable();
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0 && (errno == EINVAL || errno == ENOSYS)) {
			rc = copy_with_buffer(fd, &offset, end, error);
			break;
		}
		if (n < 0) {
			/* sendfile does not say which side failed. */
			*error = errno;
			rc = errno == EPIPE || errno == ENOSPC || errno == EDQUOT ||
			     errno == EFBIG || errno == EBADF ? COPY_WRITE : COPY_READ;
			break;
		}
		if (n == 0) {
			rc = COPY_SHORT;
			break;
		}
		offset += (uint64_t)n;
	}
	*stopped_at = offset;
	return rc;
}

/* Options and operands. */
static enum cli_parse parse_args(int argc, char **argv, struct cat_args *a)
{
	const char *cmd = argv[0], *role_name;
	struct cli_operands ops;
	struct mp_error err = {0};
	uint64_t number;
	enum cli_parse p = cli_parse(&cli_cat_command, argc, argv, a, &ops);

	if (p != CLI_RUN)
		return p;
	if (cli_role_order(cmd, ops.v, true) >= 0)
		return CLI_USAGE_ERROR;
	a->pack_path = ops.v[0];
	a->layer = ops.v[1];
	a->expert = ops.v[2];
	role_name = ops.v[3];
	a->whole_object = strcmp(role_name, "object") == 0;
	a->role = a->whole_object ? MP_ROLE_UP : mp_role_from_name(role_name);
	if (a->role == MP_ROLE_COUNT) {
		cli_usage_error(cmd, "ROLE: '%s' is not up, gate, down or object", role_name);
		return CLI_USAGE_ERROR;
	}
	if (cli_parse_u64(a->layer, "LAYER", 0, 0, UINT64_MAX, &number, &err) ||
	    cli_parse_u64(a->expert, "EXPERT", 0, 0, UINT64_MAX, &number, &err)) {
		cli_usage_error(cmd, "%s", err.msg);
		return CLI_USAGE_ERROR;
	}
	return CLI_RUN;
}

/* stdout must take binary data: writable, and no terminal unless forced;
 * -1 when it does, else the exit status. */
static int check_stdout(const char *cmd, bool force)
{
	/* A closed or read-only stdout would otherwise look like a read error
	 * of the pack, since sendfile() says EBADF for either side. */
	int flags = fcntl(STDOUT_FILENO, F_GETFL);

	if (flags < 0 || (flags & O_ACCMODE) == O_RDONLY) {
		fprintf(stderr, "moepack %s: cannot write to stdout: %s\n", cmd,
			strerror(flags < 0 ? errno : EBADF));
		return CLI_EXIT_IO;
	}
	return cli_refuse_terminal(cmd, force) == CLI_RUN ? -1 : CLI_EXIT_USAGE;
}

static int report_copy(const char *cmd, const char *pack_path, enum copy_failure failure,
		       uint64_t stopped, int error)
{
	char shown[CLI_TEXT_MAX];

	switch (failure) {
	case COPY_OK:
		return CLI_EXIT_OK;
	case COPY_WRITE:
		/* The reader went away: nothing worth saying, as for cat(1)
		 * killed by SIGPIPE. */
		if (error != EPIPE)
			fprintf(stderr, "moepack %s: cannot write to stdout: %s\n", cmd,
				strerror(error));
		return CLI_EXIT_IO;
	case COPY_SHORT:
		fprintf(stderr, "moepack: %s: cannot read pack: unexpected end of file at "
			"offset %" PRIu64 " (the pack changed after validation?)\n",
			cli_text(shown, pack_path), stopped);
		return CLI_EXIT_IO;
	case COPY_READ:
		break;
	}
	fprintf(stderr, "moepack: %s: cannot read pack at offset %" PRIu64 ": %s\n",
		cli_text(shown, pack_path), stopped, strerror(error));
	return CLI_EXIT_IO;
}

int cli_cat_run(int argc, char **argv)
{
	const char *cmd = argv[0];
	struct cat_args a = {0};
	struct mp_pack *pack = NULL;
	struct mp_error err = {0};
	uint64_t layer_id, expert, object, offset, nbytes, stopped;
	enum copy_failure failure;
	enum cli_parse p = parse_args(argc, argv, &a);
	int rc, error = 0;

	if (p != CLI_RUN)
		return cli_parse_status(p, cmd);
	if ((rc = check_stdout(cmd, a.force)) >= 0)
		return rc;
	rc = cli_open_pack(a.pack_path, &a.open, true, &pack);
	if (rc)
		return rc;
	if (cli_entry_args(pack, a.layer, a.expert, &layer_id, &expert, &err)) {
		mp_pack_close(pack);
		return cli_report(a.pack_path, &err);
	}
	object = mp_pack_object(pack, (uint64_t)mp_pack_layer_index(pack, layer_id), expert);
	if (a.whole_object)
		mp_pack_object_range(pack, object, &offset, &nbytes);
	else
		mp_pack_role_range(pack, object, a.role, &offset, &nbytes);
	failure = copy_range(pack->file.fd, offset, nbytes, &stopped, &error);
	mp_pack_close(pack);
	return report_copy(cmd, a.pack_path, failure, stopped, error);
}
