/*
 * k3names.h - Kimi-K3 tensor names as ggml reads them, and the quant types
 * the Kimi-K3 rules require of the ones moepack judges.
 *
 * llama.cpp formats a layer's tensor names with "blk.%d." and looks every
 * tensor up by that exact formatted name, so "blk.17.ffn_up_exps.weight"
 * is layer 17's and "blk.017.ffn_up_exps.weight" is no layer's: the loader
 * never asks for it.  `moepack check-gguf` (gguf.c) and `moepack build`
 * (shards.c) both read names through this module, so that they judge the
 * same tensors.
 */
#ifndef MOEPACK_K3NAMES_H
#define MOEPACK_K3NAMES_H

#include "base/errors.h"

/*
 * The layer of a tensor named "blk.<N>.<rest>", with N as "%d" prints an
 * int that is not negative: decimal digits, no sign, no leading zero but
 * in "0" itself, at most INT_MAX.  *rest is set to what follows the dot
 * after N.  Returns -1, leaving *rest alone, for any other name.
 */
long mp_k3_layer(const char *name, const char **rest);

/* What one Kimi-K3 rule requires of the tensor "blk.N.<rest>" of any N. */
struct mp_k3_rule {
	const char *rest;    /* the name after "blk.N." */
	int type;            /* the GGML type it must have */
	int expert_role;     /* its enum mp_role when a routed expert, else -1 */
	enum mp_err code;    /* the error of another type */
	int say_required;    /* the error's summary does not name the type */
};

/* The rules, in a fixed order: K projection, V projection, experts. */
extern const struct mp_k3_rule mp_k3_rules[];
extern const unsigned mp_k3_rule_count;

/* The rule a tensor of this name is judged by, or NULL; *layer (may be
 * NULL) is set to its layer when there is one. */
const struct mp_k3_rule *mp_k3_rule_for(const char *name, long *layer);

#endif
