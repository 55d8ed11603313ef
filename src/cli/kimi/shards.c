/* shards.c - a shard set's problems on stderr, and how many were kept. */
#include "config.h"

#include "cli/kimi/shards.h"

#include <stdio.h>

#include "cli/cli.h"

size_t cli_problems_kept(const struct mp_shard_set *set)
{
	return set->nproblems < MP_SHARDS_MAX_PROBLEMS ? set->nproblems : MP_SHARDS_MAX_PROBLEMS;
}

int cli_shard_problems(const struct mp_shard_set *set, const char *name, bool print)
{
	size_t kept = cli_problems_kept(set);
	int status = CLI_EXIT_OK;

	for (size_t i = 0; i < kept; i++) {
		status = cli_worst(status, cli_exit_status(set->problems[i].code));
		if (print)
			fprintf(stderr, "moepack: %s: %s\n", name, set->problems[i].msg);
	}
	if (print && set->nproblems > kept)
		fprintf(stderr, "moepack: %s: ... and %zu more problems\n", name,
			set->nproblems - kept);
	return status;
}
