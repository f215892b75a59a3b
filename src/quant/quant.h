/*
 * Row conversion between f32 and every moe_type: dense types here, GGUF block
 * types in the per-format files of src/quant. Used by the reference (to
 * dequantise weights), the CPU backend (to quantise activations and repack)
 * and the tests.
 */
#ifndef MOE_QUANT_H
#define MOE_QUANT_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* n elements of type t at src -> f32. 0 on success, -1 if t is unknown or n
 * not a multiple of its block size. */
int moe__dequantize_row(moe_type t, const void *src, float *dst, int64_t n);
/* n f32 -> n elements of type t at dst. Same return convention. */
int moe__quantize_row(moe_type t, const float *src, void *dst, int64_t n);

#ifdef __cplusplus
}
#endif

#endif
