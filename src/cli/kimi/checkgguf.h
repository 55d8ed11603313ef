/* checkgguf.h - `moepack check-gguf` of Kimi-K3 GGUF files
 * (writer/kimi/ggufcheck.h, writer/kimi/shards.h). */
#ifndef MOEPACK_CLI_KIMI_CHECKGGUF_H
#define MOEPACK_CLI_KIMI_CHECKGGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/*
 * Which split set a shard operand names: its directory (by device and
 * inode, so "d/x" and "./d/x" agree) and the file name with the shard
 * number blanked.  A glob hands over every shard of a set; the set is
 * checked once, for the first of them.
 */
struct cli_gguf_set_key {
	dev_t dev;
	ino_t ino;
	char *dir_text; /* when the directory cannot be stat()ed */
	char *name;     /* NAME-?????-of-MMMMM.gguf */
};

/* The split sets met so far among the operands: each is checked once.
 * keys has room for one per operand; free each with
 * cli_gguf_set_key_free(). */
struct cli_gguf_sets {
	struct cli_gguf_set_key *keys;
	size_t n;
};

void cli_gguf_set_key_free(struct cli_gguf_set_key *k);

/*
 * One operand: a file of a split set (by its name) checked as its whole
 * set once, else one file (or with set, a set of one); kimi holds the
 * tensors to Kimi-K3's geometry.  Reported on stdout (json: one object a
 * line) or stderr; the exit status, or -1 when out of memory.
 */
int cli_check_gguf_kimi(struct cli_gguf_sets *s, const char *path, bool set, bool kimi,
			bool json);

#endif
