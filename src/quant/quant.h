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

/*
 * One function per GGUF block format (src/quant/q_legacy.c, src/quant/q_k.c).
 * n must be a multiple of the block size (32 or 256: the caller checks);
 * src / dst hold n / block_size blocks of src/quant/blocks.h. None allocates,
 * prints or fails. Dequantisation equals gguf-py's bit for bit.
 *
 * Quantisation: Q4_0, Q8_0 and MXFP4 make the bytes gguf-py's quantize makes
 * (for finite input whose block maximum is at least 2^-125); the K-quants
 * make the blocks ggml's reference quantizers (quantize_row_qN_K_ref) make,
 * the iterative scale and min search included.
 *
 * Non-finite input: a Q4_0/Q8_0/K-quant block holding a NaN or an Inf is
 * written with every fp16 scale NaN (and zero quants), so it dequantises to
 * NaN throughout. MXFP4 has no NaN: its scale comes from the block's finite
 * values, +-Inf become +-6 * scale (the largest code) and NaN becomes 0.
 * Finite values too large for a scale's fp16 range (about 65504 times the
 * format's largest quant) give Inf (or, for the K-quants' least-squares
 * fits, possibly NaN) scales, as in GGUF; nothing crashes.
 */
void moe__dequantize_row_q4_0(const void *src, float *dst, int64_t n);
void moe__dequantize_row_q8_0(const void *src, float *dst, int64_t n);
void moe__dequantize_row_mxfp4(const void *src, float *dst, int64_t n);
void moe__dequantize_row_q2_k(const void *src, float *dst, int64_t n);
void moe__dequantize_row_q3_k(const void *src, float *dst, int64_t n);
void moe__dequantize_row_q4_k(const void *src, float *dst, int64_t n);
void moe__dequantize_row_q5_k(const void *src, float *dst, int64_t n);
void moe__dequantize_row_q6_k(const void *src, float *dst, int64_t n);

void moe__quantize_row_q4_0(const float *src, void *dst, int64_t n);
void moe__quantize_row_q8_0(const float *src, void *dst, int64_t n);
void moe__quantize_row_mxfp4(const float *src, void *dst, int64_t n);
void moe__quantize_row_q2_k(const float *src, void *dst, int64_t n);
void moe__quantize_row_q3_k(const float *src, void *dst, int64_t n);
void moe__quantize_row_q4_k(const float *src, void *dst, int64_t n);
void moe__quantize_row_q5_k(const float *src, void *dst, int64_t n);
void moe__quantize_row_q6_k(const float *src, void *dst, int64_t n);

/*
 * Activation quantisers for the CPU dot products (hot path: no allocation).
 *
 * moe__quantize_row_q8_k: n (multiple of 256) f32 -> n / 256 moe_block_q8_k,
 * as ggml's quantize_row_q8_K_ref: d = -max / 127 where max is the value of
 * largest magnitude, qs = round-half-even(x / d) (so that value maps to
 * exactly -127), bsums filled. An all-zero block has d = 0.
 *
 * moe__quantize_row_q8_32: n (multiple of 32) f32 -> n / 32 moe_block_q8_32:
 * d = amax / 127 (f32, not rounded to fp16), qs = round-half-away(x / d), as
 * ggml's Q8_0/Q8_1 activation quantizers.
 *
 * A block of either holding a NaN or an Inf gets d = NaN and qs = 0, so every
 * dot product it enters is NaN.
 */
void moe__quantize_row_q8_k(const float *src, void *dst, int64_t n);
void moe__quantize_row_q8_32(const float *src, void *dst, int64_t n);
/* The inverse of the two above: x[j] = d * qs[j]. */
void moe__dequantize_row_q8_k(const void *src, float *dst, int64_t n);
void moe__dequantize_row_q8_32(const void *src, float *dst, int64_t n);

#ifdef __cplusplus
}
#endif

#endif
