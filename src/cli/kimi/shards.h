/* shards.h - a GGUF shard set's problems as the CLI reports them
 * (`check-gguf` and `build`; writer/kimi/shards.h finds them). */
#ifndef MOEPACK_CLI_KIMI_SHARDS_H
#define MOEPACK_CLI_KIMI_SHARDS_H

#include <stdbool.h>
#include <stddef.h>

#include "writer/kimi/shards.h"

/* A shard set's problems that were kept (the rest are only counted). */
size_t cli_problems_kept(const struct mp_shard_set *set);

/* Each kept problem of a shard set as "moepack: NAME: ...", then how many
 * more there were, on stderr when print; returns the status of the worst.
 * name is shown as it is (escaped by the caller). */
int cli_shard_problems(const struct mp_shard_set *set, const char *name, bool print);

#endif
