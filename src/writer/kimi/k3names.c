/*
 * k3names.c - Kimi-K3 tensor names and their quant type rules (k3names.h).
 */
#include "config.h"

#include "writer/kimi/k3names.h"

#include <limits.h>
#include <stddef.h>
#include <string.h>

#include "base/quant.h"
#include "pack/pack.h"

const struct mp_k3_rule mp_k3_rules[] = {
	{"attn_k_b.weight", MP_GGML_Q4_0, -1, MP_E_GGUF_MLA_K, 0},
	{"attn_v_b.weight", MP_GGML_Q2_K, -1, MP_E_GGUF_MLA_V, 0},
	{"ffn_up_exps.weight", MP_GGML_Q2_K, MP_ROLE_UP, MP_E_GGUF_EXPERT_TYPE, 1},
	{"ffn_gate_exps.weight", MP_GGML_Q2_K, MP_ROLE_GATE, MP_E_GGUF_EXPERT_TYPE, 1},
	{"ffn_down_exps.weight", MP_GGML_Q3_K, MP_ROLE_DOWN, MP_E_GGUF_EXPERT_TYPE, 1},
};

const unsigned mp_k3_rule_count = sizeof mp_k3_rules / sizeof mp_k3_rules[0];

long mp_k3_layer(const char *name, const char **rest)
{
	const char *p = name + 4;
	long n = 0;

	if (strncmp(name, "blk.", 4) != 0 || *p < '0' || *p > '9')
		return -1;
	/* "%d" never writes "017": the loader would never ask for it */
	if (p[0] == '0' && p[1] != '.')
		return -1;
	while (*p >= '0' && *p <= '9') {
		int digit = *p++ - '0';

		if (n > (INT_MAX - digit) / 10)
			return -1; /* no int layer prints as this */
		n = n * 10 + digit;
	}
	if (*p++ != '.')
		return -1;
	*rest = p;
	return n;
}

const struct mp_k3_rule *mp_k3_rule_for(const char *name, long *layer)
{
	const char *rest;
	long n = mp_k3_layer(name, &rest);

	if (n < 0)
		return NULL;
	for (unsigned i = 0; i < mp_k3_rule_count; i++)
		if (strcmp(rest, mp_k3_rules[i].rest) == 0) {
			if (layer)
				*layer = n;
			return &mp_k3_rules[i];
		}
	return NULL;
}
