/*
 * epwrite.h - `moepack build` and `mkdemo` for SGLang's expert pack
 * (SGLANG-EXPERTPACK-v1): the pack and manifest SGLang's reference builder
 * (build.py, driven by prepare_deepseek_pack.py) makes of a DeepSeek-V4-Flash
 * GGUF, byte for byte.
 *
 * The pack is header, zeros up to data_start, objects (l*E + e) of gate,
 * up, down, each its expert's contiguous slice of the routed tensor copied
 * unchanged, zeros to the stride, and the index (written last) at 176.
 * The manifest is json.dumps(indent=2, sort_keys=True, ensure_ascii=False)
 * text with every key the reference writes; where a value describes the
 * reference tool (created_at, builder.*, transform.tool_sha256) it
 * describes moepack instead.
 *
 * Safety, as the Kimi build: outputs are checked against the inputs and
 * each other (outputs.h), opened without following links; the pack is
 * written as PACK.partial, kept for --resume only when a signal stopped the
 * copy, and renamed over PACK only after mp_ep_open() has passed it with
 * every check: the whole-file digest, every entry's checksum, every slice
 * compared with the GGUF and the GGUF's own digests.  The manifest follows
 * through a temporary and a rename.
 */
#ifndef MOEPACK_EPWRITE_H
#define MOEPACK_EPWRITE_H

#include <stdbool.h>
#include <stdint.h>

#include "base/errors.h"
#include "writer/expertpack/opts.h"
#include "writer/expertpack/plan.h"

/*
 * Build the pack and manifest of a checked plan.  MP_OK: both exist under
 * their names and passed the checks above.  MP_E_USAGE for outputs that
 * alias inputs, exist (without force) or are links; MP_E_INTERRUPTED when
 * a stop was asked through opts->cancel before the rename: during the hash,
 * the copy (at an object boundary) or the final check (PACK.partial kept,
 * synced); MP_E_NO_SPACE, MP_E_PACK_IO, MP_E_GGUF_IO, or the code of the
 * check the written pack failed (a resumed PACK.partial is kept whatever
 * failed).  res freed with mp_epw_result_free().
 */
enum mp_err mp_epw_build(struct mp_epw_plan *plan, const struct mp_epw_opts *opts,
			 struct mp_epw_result *res, struct mp_error *err);
void mp_epw_result_free(struct mp_epw_result *res);

#endif
