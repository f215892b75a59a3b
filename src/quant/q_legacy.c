/*
 * The 32-wide GGUF formats Q4_0, Q8_0 and MXFP4, and the 32-wide activation
 * block Q8_32 of the CPU backend.
 *
 * Reference: gguf-py's gguf/quants.py (quantize_blocks / dequantize_blocks),
 * which for these types quantises exactly as ggml's quantize_row_*_ref.
 * tests/python/test_quant.py checks both directions byte for byte. The
 * arithmetic is f32 in gguf-py's order; keep it free of fused multiply-adds.
 */
#include "quant.h"

#include "blocks.h"
#include "half.h"

#include <math.h>
#include <string.h>

/* Bit-exact decoding needs every product rounded before the subtraction:
 * no contraction into fused multiply-adds, whatever -march the build uses. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#define F16_NAN 0x7e00u

static inline int is_finite(float f) { return (moe__f32_as_u32(f) & 0x7f800000u) != 0x7f800000u; }

static int block_finite(const float *x, int n) {
    int ok = 1;
    for (int i = 0; i < n; i++) ok &= is_finite(x[i]);
    return ok;
}

/* ---- Q4_0 ---- */

void moe__quantize_row_q4_0(const float *x, void *vy, int64_t n) {
    moe_block_q4_0 *y = (moe_block_q4_0 *)vy;
    for (int64_t b = 0; b < n / MOE_QK32; b++, x += MOE_QK32) {
        if (!block_finite(x, MOE_QK32)) {
            y[b].d = F16_NAN;
            memset(y[b].qs, 0x88, sizeof y[b].qs);
            continue;
        }
        /* The signed value of largest magnitude (the first one on ties) maps
         * to -8, the one end of [-8, 7] that needs no clamp. */
        float amax = fabsf(x[0]), max = x[0]; /* x[0]: keeps gguf-py's sign of d for an all-zero block */
        for (int j = 1; j < MOE_QK32; j++) {
            if (fabsf(x[j]) > amax) { amax = fabsf(x[j]); max = x[j]; }
        }
        const float d = max / -8;
        const float id = d != 0 ? 1.0f / d : 0.0f;
        y[b].d = moe__f32_to_f16(d);
        for (int j = 0; j < MOE_QK32 / 2; j++) {
            /* trunc(v + 8.5) is round-half-up of v + 8; the bounds only
             * matter when 1/d overflowed (a block max below ~2^-125). */
            float v0 = x[j] * id + 8.5f, v1 = x[j + 16] * id + 8.5f;
            int q0 = v0 >= 15.0f ? 15 : v0 > 0.0f ? (int)v0 : 0;
            int q1 = v1 >= 15.0f ? 15 : v1 > 0.0f ? (int)v1 : 0;
            y[b].qs[j] = (uint8_t)(q0 | q1 << 4);
        }
    }
}

void moe__dequantize_row_q4_0(const void *vx, float *y, int64_t n) {
    const moe_block_q4_0 *x = (const moe_block_q4_0 *)vx;
    for (int64_t b = 0; b < n / MOE_QK32; b++, y += MOE_QK32) {
        const float d = moe__f16_to_f32(x[b].d);
        for (int j = 0; j < 16; j++) {
            y[j] = d * (float)((x[b].qs[j] & 0xF) - 8);
            y[j + 16] = d * (float)((x[b].qs[j] >> 4) - 8);
        }
    }
}

/* ---- Q8_0 ---- */

/* Round half away from zero into [-127, 127]: roundf as ggml and gguf-py's
 * np_roundf; the clamp only matters when 1/d overflowed. */
static inline int8_t round_q8(float v) {
    if (!(v > -127.0f)) return -127; /* also NaN, which cannot reach here */
    if (v >= 127.0f) return 127;
    return (int8_t)roundf(v);
}

void moe__quantize_row_q8_0(const float *x, void *vy, int64_t n) {
    moe_block_q8_0 *y = (moe_block_q8_0 *)vy;
    for (int64_t b = 0; b < n / MOE_QK32; b++, x += MOE_QK32) {
        if (!block_finite(x, MOE_QK32)) {
            y[b].d = F16_NAN;
            memset(y[b].qs, 0, sizeof y[b].qs);
            continue;
        }
        float amax = 0;
        for (int j = 0; j < MOE_QK32; j++) amax = fmaxf(amax, fabsf(x[j]));
        const float d = amax / 127;
        const float id = d != 0 ? 1.0f / d : 0.0f;
        y[b].d = moe__f32_to_f16(d);
        for (int j = 0; j < MOE_QK32; j++) y[b].qs[j] = round_q8(x[j] * id);
    }
}

void moe__dequantize_row_q8_0(const void *vx, float *y, int64_t n) {
    const moe_block_q8_0 *x = (const moe_block_q8_0 *)vx;
    for (int64_t b = 0; b < n / MOE_QK32; b++, y += MOE_QK32) {
        const float d = moe__f16_to_f32(x[b].d);
        for (int j = 0; j < MOE_QK32; j++) y[j] = (float)x[b].qs[j] * d;
    }
}

/* ---- Q8_32 (activations) ---- */

void moe__quantize_row_q8_32(const float *x, void *vy, int64_t n) {
    moe_block_q8_32 *y = (moe_block_q8_32 *)vy;
    for (int64_t b = 0; b < n / MOE_QK32; b++, x += MOE_QK32) {
        if (!block_finite(x, MOE_QK32)) {
            y[b].d = NAN;
            memset(y[b].qs, 0, sizeof y[b].qs);
            continue;
        }
        float amax = 0;
        for (int j = 0; j < MOE_QK32; j++) amax = fmaxf(amax, fabsf(x[j]));
        const float d = amax / 127;
        const float id = d != 0 ? 1.0f / d : 0.0f;
        y[b].d = d;
        for (int j = 0; j < MOE_QK32; j++) y[b].qs[j] = round_q8(x[j] * id);
    }
}

void moe__dequantize_row_q8_32(const void *vx, float *y, int64_t n) {
    const moe_block_q8_32 *x = (const moe_block_q8_32 *)vx;
    for (int64_t b = 0; b < n / MOE_QK32; b++, y += MOE_QK32)
        for (int j = 0; j < MOE_QK32; j++) y[j] = (float)x[b].qs[j] * x[b].d;
}

/* ---- MXFP4 ---- */

static const int8_t kvalues_mxfp4[16] = MOE_MXFP4_KVALUES;

void moe__quantize_row_mxfp4(const float *x, void *vy, int64_t n) {
    moe_block_mxfp4 *y = (moe_block_mxfp4 *)vy;
    for (int64_t b = 0; b < n / MOE_QK32; b++, x += MOE_QK32) {
        float amax = 0;
        for (int j = 0; j < MOE_QK32; j++)
            if (is_finite(x[j])) amax = fmaxf(amax, fabsf(x[j]));
        /* The shared exponent puts amax in [4, 8) times the unit, i.e. the
         * top of the e2m1 range (6) or a little past it. gguf-py computes
         * it as floor(log2(amax)) + 125 in f32, and log2f agrees with it at
         * the powers of two. Below 2^-125 the exponent would be negative:
         * gguf-py wraps it around as uint8, here it stays 0. */
        int e = 0;
        if (amax > 0) {
            float fe = floorf(log2f(amax)) - 2 + 127;
            e = fe < 0 ? 0 : fe > 254 ? 254 : (int)fe;
        }
        const float d = moe__u32_as_f32(moe__e8m0_half_bits((uint8_t)e));
        y[b].e = (uint8_t)e;
        uint8_t q[MOE_QK32];
        for (int j = 0; j < MOE_QK32; j++) {
            const float v = x[j];
            if (!is_finite(v)) { /* +-Inf saturate, NaN has nothing better than 0 */
                q[j] = v != v ? 0 : v > 0 ? 7 : 15;
                continue;
            }
            /* Nearest of the 16 codes, the first on ties, computed as gguf-py
             * does: |d*k - v| in f32 (d*k is exact). */
            int best = 0;
            float best_err = fabsf(d * (float)kvalues_mxfp4[0] - v);
            for (int k = 1; k < 16; k++) {
                float err = fabsf(d * (float)kvalues_mxfp4[k] - v);
                if (err < best_err) { best_err = err; best = k; }
            }
            q[j] = (uint8_t)best;
        }
        for (int j = 0; j < 16; j++) y[b].qs[j] = (uint8_t)(q[j] | q[j + 16] << 4);
    }
}

void moe__dequantize_row_mxfp4(const void *vx, float *y, int64_t n) {
    const moe_block_mxfp4 *x = (const moe_block_mxfp4 *)vx;
    for (int64_t b = 0; b < n / MOE_QK32; b++, y += MOE_QK32) {
        const float d = moe__u32_as_f32(moe__e8m0_half_bits(x[b].e));
        for (int j = 0; j < 16; j++) {
            y[j] = d * (float)kvalues_mxfp4[x[b].qs[j] & 0xF];
            y[j + 16] = d * (float)kvalues_mxfp4[x[b].qs[j] >> 4];
        }
    }
}
