/*
 * The GGUF K-quants (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K: 256-element super-blocks
 * of 16 or 32-element sub-blocks) and the Q8_K activation block.
 *
 * Dequantisation follows gguf-py's gguf/quants.py operation for operation
 * (f32, no fused multiply-add) and is checked against it bit for bit.
 *
 * Quantisation implements the published algorithms of ggml's reference
 * quantizers (quantize_row_qN_K_ref), which are what GGUF files are made
 * with when no importance matrix is given:
 *   Q2_K, Q4_K, Q5_K  per sub-block an affine fit x ~ scale*q - min found by
 *                     a grid search over the inverse scale with a weighted
 *                     least-squares refit at each step (make_qkx2 below);
 *                     then the sub-block scales and mins are quantised to 4
 *                     or 6 bits against a super-block fp16 scale, and the
 *                     values re-rounded against the scales actually stored.
 *   Q3_K              symmetric fit refined by coordinate descent on the
 *                     x^2-weighted error (make_q3); 6-bit signed scales.
 *   Q6_K              symmetric fit with a small grid search around
 *                     -nmax/max (make_qx); int8 scales.
 * The RMS errors they reach on Gaussian data are in tests/python/test_quant.py.
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
/* Below this group maximum a group is treated as all zero (ggml's value). */
#define GROUP_MAX_EPS 1e-15f

static inline int is_finite(float f) { return (moe__f32_as_u32(f) & 0x7f800000u) != 0x7f800000u; }

static int block_finite(const float *x, int n) {
    int ok = 1;
    for (int i = 0; i < n; i++) ok &= is_finite(x[i]);
    return ok;
}

/* Round half to even, by the 1.5*2^23 trick ggml uses (so ties round as in
 * its reference quantizers). Arguments beyond +-2^22 (and NaN, as 0) are
 * clamped first: they only arise from degenerate scales and must not be UB. */
static inline int nearest_int(float f) {
    if (!(fabsf(f) <= 4194303.f)) return f > 0 ? 4194303 : f < 0 ? -4194303 : 0;
    float v = f + 12582912.f;
    int32_t i;
    memcpy(&i, &v, 4);
    return (i & 0x007fffff) - 0x00400000;
}

static inline int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/*
 * Affine fit of n values: x[i] ~ scale * L[i] - the_min, L in [0, nmax],
 * the_min >= 0 (the offset is never positive, so the stored min is). Starts
 * from the min/max grid, then tries nstep+1 inverse scales
 * (nmax + rmin + rdelta*k) / (max - min); for each rounding it solves the
 * weighted least-squares scale and offset in closed form and keeps the one
 * with the smallest weighted error (|e| if use_mad, else e^2).
 */
static float make_qkx2(int n, int nmax, const float *x, const float *w, uint8_t *L, float *the_min,
                       float rmin, float rdelta, int nstep, int use_mad) {
    uint8_t Laux[32];
    float min = x[0], max = x[0];
    float sum_w = w[0], sum_x = w[0] * x[0];
    for (int i = 1; i < n; i++) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        sum_w += w[i];
        sum_x += w[i] * x[i];
    }
    if (min > 0) min = 0;
    if (max == min) {
        memset(L, 0, (size_t)n);
        *the_min = -min;
        return 0.f;
    }
    float iscale = nmax / (max - min);
    float scale = 1 / iscale;
    float best_error = 0;
    for (int i = 0; i < n; i++) {
        L[i] = (uint8_t)clampi(nearest_int(iscale * (x[i] - min)), 0, nmax);
        float diff = scale * L[i] + min - x[i];
        best_error += w[i] * (use_mad ? fabsf(diff) : diff * diff);
    }
    for (int is = 0; is <= nstep; is++) {
        iscale = (rmin + rdelta * is + nmax) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; i++) {
            int l = clampi(nearest_int(iscale * (x[i] - min)), 0, nmax);
            Laux[i] = (uint8_t)l;
            sum_l += w[i] * l;
            sum_l2 += w[i] * l * l;
            sum_xl += w[i] * l * x[i];
        }
        float D = sum_w * sum_l2 - sum_l * sum_l;
        if (!(D > 0)) continue;
        float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
        float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
        if (this_min > 0) {
            this_min = 0;
            this_scale = sum_xl / sum_l2;
        }
        float cur_error = 0;
        for (int i = 0; i < n; i++) {
            float diff = this_scale * Laux[i] + this_min - x[i];
            cur_error += w[i] * (use_mad ? fabsf(diff) : diff * diff);
        }
        if (cur_error < best_error) {
            memcpy(L, Laux, (size_t)n);
            best_error = cur_error;
            scale = this_scale;
            min = this_min;
        }
    }
    *the_min = -min;
    return scale;
}

/*
 * Symmetric fit for Q3_K: x[i] ~ scale * (L[i] - nmax), L - nmax in
 * [-nmax, nmax-1], the value of largest magnitude first mapped to -nmax.
 * Then up to five sweeps of coordinate descent: each L[i] is moved to the
 * level that is best for the least-squares scale of the others, and kept if
 * the x^2-weighted fit (sumlx^2 / suml2) improves. Returns the scale.
 */
static float make_q3(int n, int nmax, const float *x, int8_t *L) {
    float max = 0, amax = 0;
    for (int i = 0; i < n; i++) {
        float ax = fabsf(x[i]);
        if (ax > amax) { amax = ax; max = x[i]; }
    }
    if (!(amax >= GROUP_MAX_EPS)) {
        memset(L, 0, (size_t)n);
        return 0.f;
    }
    float iscale = -nmax / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; i++) {
        int l = clampi(nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = (int8_t)l;
        float w = x[i] * x[i];
        sumlx += w * x[i] * l;
        suml2 += w * l * l;
    }
    for (int itry = 0; itry < 5; itry++) {
        int changed = 0;
        for (int i = 0; i < n; i++) {
            float w = x[i] * x[i];
            float slx = sumlx - w * x[i] * L[i];
            if (!(slx > 0)) continue;
            float sl2 = suml2 - w * L[i] * L[i];
            int nl = clampi(nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
            if (nl == L[i]) continue;
            slx += w * x[i] * nl;
            sl2 += w * nl * nl;
            if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
                L[i] = (int8_t)nl;
                sumlx = slx;
                suml2 = sl2;
                changed++;
            }
        }
        if (!changed) break;
    }
    for (int i = 0; i < n; i++) L[i] = (int8_t)(L[i] + nmax);
    return suml2 > 0 ? sumlx / suml2 : 0.f;
}

/*
 * Symmetric fit for Q6_K: x[i] ~ scale * (L[i] - nmax), weights x^2. Tries
 * the inverse scales -(nmax + 0.1*k)/max for k in [-9, 9] and keeps the
 * rounding with the best weighted least-squares fit. Returns the scale.
 */
static float make_qx(int n, int nmax, const float *x, int8_t *L) {
    float max = 0, amax = 0;
    for (int i = 0; i < n; i++) {
        float ax = fabsf(x[i]);
        if (ax > amax) { amax = ax; max = x[i]; }
    }
    if (!(amax >= GROUP_MAX_EPS)) {
        memset(L, 0, (size_t)n);
        return 0.f;
    }
    float iscale = -nmax / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; i++) {
        int l = clampi(nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = (int8_t)(l + nmax);
        float w = x[i] * x[i];
        sumlx += w * x[i] * l;
        suml2 += w * l * l;
    }
    float scale = suml2 > 0 ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int is = -9; is <= 9; is++) {
        if (is == 0) continue;
        iscale = -(nmax + 0.1f * is) / max;
        sumlx = suml2 = 0;
        for (int i = 0; i < n; i++) {
            int l = clampi(nearest_int(iscale * x[i]), -nmax, nmax - 1);
            float w = x[i] * x[i];
            sumlx += w * x[i] * l;
            suml2 += w * l * l;
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; i++)
                L[i] = (int8_t)(nmax + clampi(nearest_int(iscale * x[i]), -nmax, nmax - 1));
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

/* Packs 2-bit values: element 128*h + 32*s + l -> bits 2s of q[32*h + l]. */
static void pack_2bit(const uint8_t *L, uint8_t *q) {
    for (int h = 0; h < 2; h++)
        for (int l = 0; l < 32; l++) {
            const uint8_t *p = L + 128 * h + l;
            q[32 * h + l] = (uint8_t)(p[0] | p[32] << 2 | p[64] << 4 | p[96] << 6);
        }
}

/* ---- Q2_K ---- */

void moe__quantize_row_q2_k(const float *x, void *vy, int64_t n) {
    moe_block_q2_k *y = (moe_block_q2_k *)vy;
    const float q4scale = 15.f;
    for (int64_t b = 0; b < n / MOE_QK_K; b++, x += MOE_QK_K) {
        moe_block_q2_k *B = &y[b];
        if (!block_finite(x, MOE_QK_K)) {
            memset(B, 0, sizeof *B);
            B->d = B->dmin = F16_NAN;
            continue;
        }
        uint8_t L[MOE_QK_K];
        float w[16], scales[16], mins[16];
        float max_scale = 0, max_min = 0;
        for (int j = 0; j < 16; j++) {
            for (int l = 0; l < 16; l++) w[l] = fabsf(x[16 * j + l]);
            scales[j] = make_qkx2(16, 3, x + 16 * j, w, L + 16 * j, &mins[j], -0.5f, 0.1f, 15, 1);
            if (scales[j] > max_scale) max_scale = scales[j];
            if (mins[j] > max_min) max_min = mins[j];
        }
        memset(B->scales, 0, sizeof B->scales);
        B->d = B->dmin = 0;
        if (max_scale > 0) {
            float iscale = q4scale / max_scale;
            for (int j = 0; j < 16; j++) B->scales[j] = (uint8_t)clampi(nearest_int(iscale * scales[j]), 0, 15);
            B->d = moe__f32_to_f16(max_scale / q4scale);
        }
        if (max_min > 0) {
            float iscale = q4scale / max_min;
            for (int j = 0; j < 16; j++)
                B->scales[j] |= (uint8_t)(clampi(nearest_int(iscale * mins[j]), 0, 15) << 4);
            B->dmin = moe__f32_to_f16(max_min / q4scale);
        }
        /* Re-round against the scales as stored. */
        const float d = moe__f16_to_f32(B->d), dmin = moe__f16_to_f32(B->dmin);
        for (int j = 0; j < 16; j++) {
            const float dl = d * (B->scales[j] & 0xF);
            if (dl == 0) continue;
            const float ml = dmin * (B->scales[j] >> 4);
            for (int i = 0; i < 16; i++)
                L[16 * j + i] = (uint8_t)clampi(nearest_int((x[16 * j + i] + ml) / dl), 0, 3);
        }
        pack_2bit(L, B->qs);
    }
}

void moe__dequantize_row_q2_k(const void *vx, float *y, int64_t n) {
    const moe_block_q2_k *x = (const moe_block_q2_k *)vx;
    for (int64_t b = 0; b < n / MOE_QK_K; b++, y += MOE_QK_K) {
        const float d = moe__f16_to_f32(x[b].d), dmin = moe__f16_to_f32(x[b].dmin);
        for (int j = 0; j < 16; j++) {
            const float dl = d * (float)(x[b].scales[j] & 0xF);
            const float ml = dmin * (float)(x[b].scales[j] >> 4);
            const int h = j / 8, s = (j / 2) % 4, l0 = 16 * (j % 2);
            for (int i = 0; i < 16; i++) {
                const int q = (x[b].qs[32 * h + l0 + i] >> (2 * s)) & 3;
                y[16 * j + i] = dl * (float)q - ml;
            }
        }
    }
}

/* ---- Q3_K ---- */

void moe__quantize_row_q3_k(const float *x, void *vy, int64_t n) {
    moe_block_q3_k *y = (moe_block_q3_k *)vy;
    for (int64_t b = 0; b < n / MOE_QK_K; b++, x += MOE_QK_K) {
        moe_block_q3_k *B = &y[b];
        memset(B, 0, sizeof *B);
        if (!block_finite(x, MOE_QK_K)) {
            B->d = F16_NAN;
            continue;
        }
        int8_t L[MOE_QK_K];
        float scales[16];
        float max_scale = 0, amax = 0;
        for (int j = 0; j < 16; j++) {
            scales[j] = make_q3(16, 4, x + 16 * j, L + 16 * j);
            if (fabsf(scales[j]) > amax) { amax = fabsf(scales[j]); max_scale = scales[j]; }
        }
        if (max_scale != 0) {
            /* The largest-magnitude scale maps to -32, the end of [-32, 31]. */
            float iscale = -32.f / max_scale;
            for (int j = 0; j < 16; j++) {
                int l = clampi(nearest_int(iscale * scales[j]), -32, 31) + 32;
                if (j < 8) B->scales[j] = (uint8_t)(l & 0xF);
                else B->scales[j - 8] |= (uint8_t)((l & 0xF) << 4);
                B->scales[8 + j % 4] |= (uint8_t)((l >> 4) << (2 * (j / 4)));
            }
            B->d = moe__f32_to_f16(1 / iscale);
        }
        const float d = moe__f16_to_f32(B->d);
        for (int j = 0; j < 16; j++) {
            const float dl = d * moe__q3k_scale(j, B->scales);
            if (dl == 0) continue;
            for (int i = 0; i < 16; i++)
                L[16 * j + i] = (int8_t)(clampi(nearest_int(x[16 * j + i] / dl), -4, 3) + 4);
        }
        /* Bit 2 of the biased value goes to hmask (set = no -4 offset). */
        uint8_t lo[MOE_QK_K];
        for (int j = 0; j < MOE_QK_K; j++) {
            int v = L[j];
            if (v > 3) {
                B->hmask[j % 32] |= (uint8_t)(1u << (j / 32));
                v -= 4;
            }
            lo[j] = (uint8_t)v;
        }
        pack_2bit(lo, B->qs);
    }
}

void moe__dequantize_row_q3_k(const void *vx, float *y, int64_t n) {
    const moe_block_q3_k *x = (const moe_block_q3_k *)vx;
    for (int64_t b = 0; b < n / MOE_QK_K; b++, y += MOE_QK_K) {
        const float d = moe__f16_to_f32(x[b].d);
        for (int j = 0; j < 16; j++) {
            const float dl = d * (float)moe__q3k_scale(j, x[b].scales);
            for (int i = 0; i < 16; i++) {
                const int e = 16 * j + i; /* = 128*h + 32*s + l */
                const int h = e / 128, s = (e / 32) % 4, l = e % 32;
                int q = (x[b].qs[32 * h + l] >> (2 * s)) & 3;
                if (!(x[b].hmask[l] & (1u << (e / 32)))) q -= 4;
                y[e] = dl * (float)q;
            }
        }
    }
}

/* ---- Q4_K and Q5_K ---- */

/* The shared first half of Q4_K and Q5_K: per-sub-block affine fits, the
 * packed 6-bit scales and mins, and L re-rounded against the stored scales. */
static void quantize_k_affine(const float *x, int nmax, float rmin, int nstep, uint16_t *dd, uint16_t *dmin,
                              uint8_t *packed, uint8_t *L) {
    float w[32], scales[8], mins[8];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 8; j++) {
        const float *xs = x + 32 * j;
        float sum_x2 = 0;
        for (int l = 0; l < 32; l++) sum_x2 += xs[l] * xs[l];
        const float av_x = sqrtf(sum_x2 / 32);
        for (int l = 0; l < 32; l++) w[l] = av_x + fabsf(xs[l]);
        scales[j] = make_qkx2(32, nmax, xs, w, L + 32 * j, &mins[j], rmin, 0.1f, nstep, 0);
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }
    const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    memset(packed, 0, MOE_K_SCALE_SIZE);
    for (int j = 0; j < 8; j++) {
        int ls = clampi(nearest_int(inv_scale * scales[j]), 0, 63);
        int lm = clampi(nearest_int(inv_min * mins[j]), 0, 63);
        if (j < 4) {
            packed[j] = (uint8_t)ls;
            packed[j + 4] = (uint8_t)lm;
        } else {
            packed[j + 4] = (uint8_t)((ls & 0xF) | (lm & 0xF) << 4);
            packed[j - 4] |= (uint8_t)((ls >> 4) << 6);
            packed[j] |= (uint8_t)((lm >> 4) << 6);
        }
    }
    *dd = moe__f32_to_f16(max_scale / 63.f);
    *dmin = moe__f32_to_f16(max_min / 63.f);
    const float d = moe__f16_to_f32(*dd), m = moe__f16_to_f32(*dmin);
    for (int j = 0; j < 8; j++) {
        int sc, mn;
        moe__q4k_scale_min(j, packed, &sc, &mn);
        const float dl = d * sc;
        if (dl == 0) continue;
        const float ml = m * mn;
        for (int i = 0; i < 32; i++) L[32 * j + i] = (uint8_t)clampi(nearest_int((x[32 * j + i] + ml) / dl), 0, nmax);
    }
}

void moe__quantize_row_q4_k(const float *x, void *vy, int64_t n) {
    moe_block_q4_k *y = (moe_block_q4_k *)vy;
    for (int64_t b = 0; b < n / MOE_QK_K; b++, x += MOE_QK_K) {
        moe_block_q4_k *B = &y[b];
        if (!block_finite(x, MOE_QK_K)) {
            memset(B, 0, sizeof *B);
            B->d = B->dmin = F16_NAN;
            continue;
        }
        uint8_t L[MOE_QK_K];
        quantize_k_affine(x, 15, -1.f, 20, &B->d, &B->dmin, B->scales, L);
        for (int c = 0; c < 4; c++)
            for (int l = 0; l < 32; l++) B->qs[32 * c + l] = (uint8_t)(L[64 * c + l] | L[64 * c + 32 + l] << 4);
    }
}

void moe__quantize_row_q5_k(const float *x, void *vy, int64_t n) {
    moe_block_q5_k *y = (moe_block_q5_k *)vy;
    for (int64_t b = 0; b < n / MOE_QK_K; b++, x += MOE_QK_K) {
        moe_block_q5_k *B = &y[b];
        memset(B, 0, sizeof *B);
        if (!block_finite(x, MOE_QK_K)) {
            B->d = B->dmin = F16_NAN;
            continue;
        }
        uint8_t L[MOE_QK_K];
        quantize_k_affine(x, 31, -0.5f, 15, &B->d, &B->dmin, B->scales, L);
        for (int e = 0; e < MOE_QK_K; e++)
            if (L[e] > 15) B->qh[e % 32] |= (uint8_t)(1u << (e / 32));
        for (int c = 0; c < 4; c++)
            for (int l = 0; l < 32; l++)
                B->qs[32 * c + l] = (uint8_t)((L[64 * c + l] & 0xF) | (L[64 * c + 32 + l] & 0xF) << 4);
    }
}

void moe__dequantize_row_q4_k(const void *vx, float *y, int64_t n) {
    const moe_block_q4_k *x = (const moe_block_q4_k *)vx;
    for (int64_t b = 0; b < n / MOE_QK_K; b++, y += MOE_QK_K) {
        const float d = moe__f16_to_f32(x[b].d), dmin = moe__f16_to_f32(x[b].dmin);
        for (int j = 0; j < 8; j++) {
            int sc, m;
            moe__q4k_scale_min(j, x[b].scales, &sc, &m);
            const float dl = d * (float)sc, ml = dmin * (float)m;
            const uint8_t *q = x[b].qs + 32 * (j / 2);
            const int shift = 4 * (j % 2);
            for (int l = 0; l < 32; l++) y[32 * j + l] = dl * (float)((q[l] >> shift) & 0xF) - ml;
        }
    }
}

void moe__dequantize_row_q5_k(const void *vx, float *y, int64_t n) {
    const moe_block_q5_k *x = (const moe_block_q5_k *)vx;
    for (int64_t b = 0; b < n / MOE_QK_K; b++, y += MOE_QK_K) {
        const float d = moe__f16_to_f32(x[b].d), dmin = moe__f16_to_f32(x[b].dmin);
        for (int j = 0; j < 8; j++) {
            int sc, m;
            moe__q4k_scale_min(j, x[b].scales, &sc, &m);
            const float dl = d * (float)sc, ml = dmin * (float)m;
            const uint8_t *q = x[b].qs + 32 * (j / 2);
            const int shift = 4 * (j % 2);
            for (int l = 0; l < 32; l++) {
                const int v = ((q[l] >> shift) & 0xF) | ((x[b].qh[l] >> j) & 1) << 4;
                y[32 * j + l] = dl * (float)v - ml;
            }
        }
    }
}

/* ---- Q6_K ---- */

void moe__quantize_row_q6_k(const float *x, void *vy, int64_t n) {
    moe_block_q6_k *y = (moe_block_q6_k *)vy;
    for (int64_t b = 0; b < n / MOE_QK_K; b++, x += MOE_QK_K) {
        moe_block_q6_k *B = &y[b];
        memset(B, 0, sizeof *B);
        if (!block_finite(x, MOE_QK_K)) {
            B->d = F16_NAN;
            continue;
        }
        int8_t L[MOE_QK_K];
        float scales[16];
        float max_scale = 0, max_abs_scale = 0;
        for (int j = 0; j < 16; j++) {
            scales[j] = make_qx(16, 32, x + 16 * j, L + 16 * j);
            if (fabsf(scales[j]) > max_abs_scale) { max_abs_scale = fabsf(scales[j]); max_scale = scales[j]; }
        }
        if (!(max_abs_scale >= GROUP_MAX_EPS)) continue; /* all (near) zero: the zero block */
        /* The largest-magnitude scale maps to -128, the end of int8's range. */
        const float iscale = -128.f / max_scale;
        B->d = moe__f32_to_f16(1 / iscale);
        for (int j = 0; j < 16; j++) B->scales[j] = (int8_t)clampi(nearest_int(iscale * scales[j]), -128, 127);
        const float d = moe__f16_to_f32(B->d);
        for (int j = 0; j < 16; j++) {
            const float dl = d * B->scales[j];
            if (dl == 0) continue;
            for (int i = 0; i < 16; i++)
                L[16 * j + i] = (int8_t)(clampi(nearest_int(x[16 * j + i] / dl), -32, 31) + 32);
        }
        for (int h = 0; h < 2; h++)
            for (int l = 0; l < 32; l++) {
                const int8_t *p = L + 128 * h + l;
                B->ql[64 * h + l] = (uint8_t)((p[0] & 0xF) | (p[64] & 0xF) << 4);
                B->ql[64 * h + 32 + l] = (uint8_t)((p[32] & 0xF) | (p[96] & 0xF) << 4);
                B->qh[32 * h + l] = (uint8_t)((p[0] >> 4) | (p[32] >> 4) << 2 | (p[64] >> 4) << 4 | (p[96] >> 4) << 6);
            }
    }
}

void moe__dequantize_row_q6_k(const void *vx, float *y, int64_t n) {
    const moe_block_q6_k *x = (const moe_block_q6_k *)vx;
    for (int64_t b = 0; b < n / MOE_QK_K; b++, y += MOE_QK_K) {
        const float d = moe__f16_to_f32(x[b].d);
        for (int j = 0; j < 16; j++) {
            const float dl = d * (float)x[b].scales[j];
            for (int i = 0; i < 16; i++) {
                const int e = 16 * j + i; /* = 128*h + 32*s + l */
                const int h = e / 128, s = (e / 32) % 4, l = e % 32;
                const int lo = (x[b].ql[64 * h + 32 * (s & 1) + l] >> (4 * (s >> 1))) & 0xF;
                const int hi = (x[b].qh[32 * h + l] >> (2 * s)) & 3;
                y[e] = dl * (float)((lo | hi << 4) - 32);
            }
        }
    }
}

/* ---- Q8_K (activations) ---- */

void moe__quantize_row_q8_k(const float *x, void *vy, int64_t n) {
    moe_block_q8_k *y = (moe_block_q8_k *)vy;
    for (int64_t b = 0; b < n / MOE_QK_K; b++, x += MOE_QK_K) {
        moe_block_q8_k *B = &y[b];
        if (!block_finite(x, MOE_QK_K)) {
            memset(B, 0, sizeof *B);
            B->d = NAN;
            continue;
        }
        float max = 0, amax = 0;
        for (int j = 0; j < MOE_QK_K; j++) {
            if (fabsf(x[j]) > amax) { amax = fabsf(x[j]); max = x[j]; }
        }
        if (amax == 0) {
            memset(B, 0, sizeof *B);
            continue;
        }
        const float iscale = -127.f / max;
        for (int j = 0; j < MOE_QK_K; j++) B->qs[j] = (int8_t)clampi(nearest_int(iscale * x[j]), -127, 127);
        for (int i = 0; i < 16; i++) {
            int s = 0;
            for (int l = 0; l < 16; l++) s += B->qs[16 * i + l];
            B->bsums[i] = (int16_t)s;
        }
        B->d = 1 / iscale;
    }
}

void moe__dequantize_row_q8_k(const void *vx, float *y, int64_t n) {
    const moe_block_q8_k *x = (const moe_block_q8_k *)vx;
    for (int64_t b = 0; b < n / MOE_QK_K; b++, y += MOE_QK_K)
        for (int j = 0; j < MOE_QK_K; j++) y[j] = x[b].d * (float)x[b].qs[j];
}
