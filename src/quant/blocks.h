/*
 * GGUF (ggml) block layouts, byte for byte, shared by C and CUDA code.
 *
 * Every weight block stores its fp16 scales as raw uint16_t bits (IEEE
 * binary16, little-endian as in the file); nothing here needs cuda_fp16.h.
 * The layouts and the value each block stands for are those of ggml's
 * ggml-common.h and gguf-py's gguf/quants.py; moe_type_block_size and
 * moe_type_block_bytes (src/core/types.c) give the same numbers, and the
 * asserts at the bottom tie the two together.
 *
 * Dequantisation, written the way gguf-py evaluates it (f32, no fused
 * multiply-add: code that must match it bit for bit, e.g. CUDA kernels built
 * with --fmad=true, has to use __fmul_rn / __fsub_rn):
 *   Q4_0   y = d * (q - 8)                      q 4-bit, d fp16
 *   Q8_0   y = d * q                            q int8
 *   Q2_K   y = (d * sc) * q - (dmin * m)        16 sub-blocks of 16; sc, m 4-bit
 *   Q3_K   y = (d * (s - 32)) * q               16 of 16; s 6-bit; q in [-4, 3]
 *   Q4_K   y = (d * sc) * q - (dmin * m)        8 of 32; sc, m 6-bit; q 4-bit
 *   Q5_K   same as Q4_K with q 5-bit
 *   Q6_K   y = (d * s) * (q - 32)               16 of 16; s int8; q 6-bit
 *   MXFP4  y = 2^(e-128) * k[q]                 k = e2m1 values doubled (below)
 *
 * The activation blocks moe_block_q8_k and moe_block_q8_32 are not GGUF
 * types: they are what the CPU backend quantises activations into to take
 * integer dot products against the weight blocks (src/quant/quant.h).
 */
#ifndef MOE_QUANT_BLOCKS_H
#define MOE_QUANT_BLOCKS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MOE_QK32 32       /* elements per block of Q4_0, Q8_0, MXFP4, Q8_32 */
#define MOE_QK_K 256      /* elements per super-block of the K-quants and Q8_K */
#define MOE_K_SCALE_SIZE 12 /* bytes of packed 6-bit scales in Q3_K, Q4_K, Q5_K */

/* Q4_0: 18 bytes. Element j < 16 is the low nibble of qs[j], element j + 16
 * the high nibble. */
typedef struct moe_block_q4_0 {
    uint16_t d;        /* fp16 */
    uint8_t qs[16];
} moe_block_q4_0;

/* Q8_0: 34 bytes. */
typedef struct moe_block_q8_0 {
    uint16_t d;        /* fp16 */
    int8_t qs[32];
} moe_block_q8_0;

/* MXFP4 (OCP microscaling, as ggml stores it): 17 bytes. e is an E8M0
 * exponent; element j < 16 is the low nibble of qs[j], j + 16 the high one;
 * a nibble indexes MOE_MXFP4_KVALUES, the e2m1 values times two, so the
 * scale applied to them is half of 2^(e-127), i.e. 2^(e-128). ggml reads
 * e = 255 as 2^127 (not NaN), and so does this library. */
typedef struct moe_block_mxfp4 {
    uint8_t e;
    uint8_t qs[16];
} moe_block_mxfp4;

#define MOE_MXFP4_KVALUES {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12}

/* Q2_K: 84 bytes. scales[j] = sc | m << 4 for sub-block j (16 elements).
 * Element 128*h + 32*s + l (h < 2, s < 4, l < 32) is bits 2s..2s+1 of
 * qs[32*h + l]. */
typedef struct moe_block_q2_k {
    uint8_t scales[16];
    uint8_t qs[64];
    uint16_t d;        /* fp16, multiplies the 4-bit scales */
    uint16_t dmin;     /* fp16, multiplies the 4-bit mins */
} moe_block_q2_k;

/* Q3_K: 110 bytes. The low two bits of element 128*h + 32*s + l are packed
 * as in Q2_K; its third bit is bit (4h + s) of hmask[l], and it stands for
 * q = low - 4 when that bit is CLEAR (q = low when set). Sub-block j's 6-bit
 * scale: low nibble from scales[j % 8] (>> 4 for j >= 8), high two bits from
 * scales[8 + j % 4] >> 2*(j / 4); see moe__q3k_scale. */
typedef struct moe_block_q3_k {
    uint8_t hmask[32];
    uint8_t qs[64];
    uint8_t scales[MOE_K_SCALE_SIZE];
    uint16_t d;        /* fp16 */
} moe_block_q3_k;

/* Q4_K: 144 bytes. Eight sub-blocks of 32 with a 6-bit scale and a 6-bit
 * min each (moe__q4k_scale_min). Element 64*c + l (l < 32) is the low nibble
 * of qs[32*c + l] (sub-block 2c), element 64*c + 32 + l its high nibble
 * (sub-block 2c + 1). */
typedef struct moe_block_q4_k {
    uint16_t d;        /* fp16 */
    uint16_t dmin;     /* fp16 */
    uint8_t scales[MOE_K_SCALE_SIZE];
    uint8_t qs[128];
} moe_block_q4_k;

/* Q5_K: 176 bytes. As Q4_K, plus a fifth bit: element 32*s + l has it in
 * bit s of qh[l]. */
typedef struct moe_block_q5_k {
    uint16_t d;        /* fp16 */
    uint16_t dmin;     /* fp16 */
    uint8_t scales[MOE_K_SCALE_SIZE];
    uint8_t qh[32];
    uint8_t qs[128];
} moe_block_q5_k;

/* Q6_K: 210 bytes. Sixteen sub-blocks of 16 with an int8 scale each. For
 * element 128*h + 32*s + l: the low four bits are the low nibble of
 * ql[64*h + 32*(s & 1) + l] for s < 2, the high nibble of the same byte for
 * s >= 2; the top two bits are bits 2s..2s+1 of qh[32*h + l]; q - 32 is the
 * signed value. */
typedef struct moe_block_q6_k {
    uint8_t ql[128];
    uint8_t qh[64];
    int8_t scales[16];
    uint16_t d;        /* fp16 */
} moe_block_q6_k;

/* Activations quantised for the K-quant dot products (292 bytes): value
 * x[j] ~= d * qs[j]; bsums[i] = sum of qs[16*i .. 16*i + 15], which the
 * dot products with a min (Q2_K, Q4_K, Q5_K) and with an offset (Q3_K, Q6_K)
 * use instead of re-adding the quants. Same layout as ggml's block_q8_K. */
typedef struct moe_block_q8_k {
    float d;
    int8_t qs[MOE_QK_K];
    int16_t bsums[MOE_QK_K / 16];
} moe_block_q8_k;

/* Activations quantised for the 32-wide formats (Q4_0, Q8_0, MXFP4): 36
 * bytes, x[j] ~= d * qs[j]. The f32 scale (not fp16) keeps a full 24-bit
 * mantissa for the activation side. */
typedef struct moe_block_q8_32 {
    float d;
    int8_t qs[MOE_QK32];
} moe_block_q8_32;

/* ---- small unpacking helpers, callable from host and device code ---- */

#if defined(__CUDACC__)
#define MOE__BLOCK_FN static __host__ __device__ __forceinline__
#else
#define MOE__BLOCK_FN static inline
#endif

/* Q4_K / Q5_K: the 6-bit scale and min of sub-block j (0..7) from the 12
 * packed bytes: j < 4 in the low six bits of s[j] and s[j + 4]; j >= 4 with
 * the low four bits in s[j + 4] and the top two in the spare bits of
 * s[j - 4] (scale) and s[j] (min). */
MOE__BLOCK_FN void moe__q4k_scale_min(int j, const uint8_t *s, int *sc, int *m) {
    if (j < 4) {
        *sc = s[j] & 63;
        *m = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
        *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

/* Q3_K: the signed scale (-32..31) of sub-block j (0..15). */
MOE__BLOCK_FN int moe__q3k_scale(int j, const uint8_t *s) {
    int lo = j < 8 ? (s[j] & 0xF) : (s[j - 8] >> 4);
    int hi = (s[8 + (j & 3)] >> (2 * (j >> 2))) & 3;
    return (lo | (hi << 4)) - 32;
}

/* MXFP4: the doubled e2m1 value of a 4-bit code, MOE_MXFP4_KVALUES[code]. */
MOE__BLOCK_FN int moe__mxfp4_kvalue(int code) {
    int m = code & 7;
    int v = m < 4 ? m : (2 + (m & 1)) << ((m >> 1) - 1);
    return (code & 8) ? -v : v;
}

/* MXFP4: the bits of the f32 2^(e-128) (the scale applied to the doubled
 * values), subnormal for e < 2, as ggml_e8m0_to_fp32_half computes it. */
MOE__BLOCK_FN uint32_t moe__e8m0_half_bits(uint8_t e) {
    return e < 2 ? (uint32_t)0x00200000u << e : (uint32_t)(e - 1) << 23;
}

/* ---- sizes, checked against GGUF's ---- */

#ifdef __cplusplus
#define MOE__BLOCK_ASSERT(c, m) static_assert(c, m)
#else
#define MOE__BLOCK_ASSERT(c, m) _Static_assert(c, m)
#endif

MOE__BLOCK_ASSERT(sizeof(moe_block_q4_0) == 18, "q4_0 block is 18 bytes");
MOE__BLOCK_ASSERT(sizeof(moe_block_q8_0) == 34, "q8_0 block is 34 bytes");
MOE__BLOCK_ASSERT(sizeof(moe_block_mxfp4) == 17, "mxfp4 block is 17 bytes");
MOE__BLOCK_ASSERT(sizeof(moe_block_q2_k) == 84, "q2_K block is 84 bytes");
MOE__BLOCK_ASSERT(sizeof(moe_block_q3_k) == 110, "q3_K block is 110 bytes");
MOE__BLOCK_ASSERT(sizeof(moe_block_q4_k) == 144, "q4_K block is 144 bytes");
MOE__BLOCK_ASSERT(sizeof(moe_block_q5_k) == 176, "q5_K block is 176 bytes");
MOE__BLOCK_ASSERT(sizeof(moe_block_q6_k) == 210, "q6_K block is 210 bytes");
MOE__BLOCK_ASSERT(sizeof(moe_block_q8_k) == 292, "q8_K block is 292 bytes");
MOE__BLOCK_ASSERT(sizeof(moe_block_q8_32) == 36, "q8_32 block is 36 bytes");

#undef MOE__BLOCK_ASSERT

#ifdef __cplusplus
}
#endif

#endif
