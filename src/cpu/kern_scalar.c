/*
 * The portable scalar path of the CPU backend (MOE_CPU_ISA=scalar, or a CPU
 * without AVX2), and the q8 activation quantizer every path shares.
 * Same formats and sums as kernels.inc, written as plain loops: integer sums
 * per 32-block, then one float multiply-add per block.
 */
#include "cpu.h"

#include "blocks.h"
#include "half.h"

#include <math.h>
#include <string.h>

/* Quantizes x[0, n) into positions [c0, c0 + n) of a q8 row of C elements
 * (c0, n multiples of 32); the writer of the last segment zeroes the tail up
 * to the padded length. A block with a NaN or an Inf gets dx = NaN. */
void moe__cpu_quant_q8_scalar(const float *x, int64_t c0, int64_t n, int64_t C, int offset, int layout,
                              void *row) {
    int64_t cp = moe__cpu_pad64(C);
    char *p = (char *)row;
    int8_t *q = (int8_t *)p;
    int32_t *corr = (int32_t *)(p + cp);
    float *xs = (float *)(p + 2 * cp), *dx = (float *)(p + 3 * cp), *dxs = (float *)(p + 3 * cp + cp / 8);
    float *dxs16 = (float *)(p + 3 * cp + cp / 4);
    float amax = 0.0f;
    int finite = 1;
    for (int64_t b = 0; b < n; b += 32) {
        const float *v = x + b;
        int64_t c = moe__cpu_q8_pos(c0 + b, layout), cn = c0 + b; /* stored at c, natural index cn */
        /* SCALE256: the amax of the whole 256-block (the segment holds it), found at its first 32 */
        if (!(layout & MOE__Q8_SCALE256) || (b & 255) == 0) {
            const float *va = layout & MOE__Q8_SCALE256 ? x + b : v;
            int na = layout & MOE__Q8_SCALE256 ? 256 : 32;
            amax = 0.0f;
            finite = 1;
            for (int i = 0; i < na; i++) {
                float a = fabsf(va[i]);
                if (!(a <= 3.4028235e38f)) finite = 0;
                else if (a > amax) amax = a;
            }
        }
        float d = finite ? amax / 127.0f : NAN;
        float id = finite && amax > 0 ? 127.0f / amax : 0.0f;
        int sum = 0, sum16 = 0;
        for (int l = 0; l < 8; l++) {
            int s4 = 0;
            for (int i = 0; i < 4; i++) {
                int qi = finite ? (int)lrintf(v[4 * l + i] * id) : 0;
                qi = qi > 127 ? 127 : qi < -127 ? -127 : qi;
                q[c + 4 * l + i] = (int8_t)qi;
                s4 += qi;
            }
            corr[c / 4 + l] = -offset * s4;
            xs[c / 4 + l] = d;
            sum += s4;
            if (l == 3) sum16 = sum;
        }
        dx[cn / 32] = d;
        dxs[cn / 32] = d * (float)sum;
        dxs16[cn / 16] = d * (float)sum16;
        dxs16[cn / 16 + 1] = d * (float)(sum - sum16);
    }
    if (c0 + n == C && C < cp) {
        memset(q + C, 0, (size_t)(cp - C));
        memset(corr + C / 4, 0, (size_t)(cp - C));
        memset(xs + C / 4, 0, (size_t)(cp - C));
        memset(dx + C / 32, 0, (size_t)(cp - C) / 8);
        memset(dxs + C / 32, 0, (size_t)(cp - C) / 8);
        memset(dxs16 + C / 16, 0, (size_t)(cp - C) / 4);
    }
}

/* The fixed order of every scalar dot: 4 interleaved partial sums. */
#define SUM4(n, expr)                                                                                          \
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0;                                                                      \
    for (int64_t c = 0; c < (n); c += 4) {                                                                     \
        { int64_t i = c + 0; s0 += (expr); }                                                                   \
        { int64_t i = c + 1; s1 += (expr); }                                                                   \
        { int64_t i = c + 2; s2 += (expr); }                                                                   \
        { int64_t i = c + 3; s3 += (expr); }                                                                   \
    }                                                                                                          \
    float s = (s0 + s1) + (s2 + s3);

static void f32_kern(int R, int N, const void *w, int64_t ws, const void *const *x, int64_t C, float *out,
                     int64_t ldo) {
    for (int r = 0; r < R; r++) {
        const float *wr = (const float *)((const char *)w + r * ws);
        for (int n = 0; n < N; n++) {
            const float *xn = (const float *)x[n];
            SUM4(C, wr[i] * xn[i]);
            out[n * ldo + r] = s;
        }
    }
}

static void f16_kern(int R, int N, const void *w, int64_t ws, const void *const *x, int64_t C, float *out,
                     int64_t ldo) {
    float tmp[256];
    for (int r = 0; r < R; r++) {
        const uint16_t *wr = (const uint16_t *)((const char *)w + r * ws);
        for (int n = 0; n < N; n++) {
            const float *xn = (const float *)x[n];
            float tot = 0;
            for (int64_t c0 = 0; c0 < C; c0 += 256) {
                int64_t m = C - c0 < 256 ? C - c0 : 256;
                for (int64_t i = 0; i < m; i++) tmp[i] = moe__f16_to_f32(wr[c0 + i]);
                const float *xx = xn + c0;
                SUM4(m, tmp[i] * xx[i]);
                tot += s;
            }
            out[n * ldo + r] = tot;
        }
    }
}

static void bf16_kern(int R, int N, const void *w, int64_t ws, const void *const *x, int64_t C, float *out,
                      int64_t ldo) {
    for (int r = 0; r < R; r++) {
        const uint16_t *wr = (const uint16_t *)((const char *)w + r * ws);
        for (int n = 0; n < N; n++) {
            const uint16_t *xn = (const uint16_t *)x[n];
            SUM4(C, moe__bf16_to_f32(wr[i]) * moe__bf16_to_f32(xn[i]));
            out[n * ldo + r] = s;
        }
    }
}

static void q8_0_kern(int R, int N, const void *w, int64_t ws, const void *const *x, int64_t C, float *out,
                      int64_t ldo) {
    for (int r = 0; r < R; r++) {
        const moe_block_q8_0 *b = (const moe_block_q8_0 *)((const char *)w + r * ws);
        for (int n = 0; n < N; n++) {
            moe__cpu_q8 xv = moe__cpu_q8_view(x[n], C);
            float s = 0;
            for (int64_t k = 0; k < C / 32; k++) {
                int is = 0;
                for (int i = 0; i < 32; i++) is += b[k].qs[i] * xv.q[32 * k + i];
                s += moe__f16_to_f32(b[k].d) * xv.dx[k] * (float)is;
            }
            out[n * ldo + r] = s;
        }
    }
}

static void q4_0_kern(int R, int N, const void *w, int64_t ws, const void *const *x, int64_t C, float *out,
                      int64_t ldo) {
    for (int r = 0; r < R; r++) {
        const moe_block_q4_0 *b = (const moe_block_q4_0 *)((const char *)w + r * ws);
        for (int n = 0; n < N; n++) {
            moe__cpu_q8 xv = moe__cpu_q8_view(x[n], C);
            float s = 0;
            for (int64_t k = 0; k < C / 32; k++) {
                int is = 0;
                for (int i = 0; i < 16; i++)
                    is += ((b[k].qs[i] & 15) - 8) * xv.q[32 * k + i] + ((b[k].qs[i] >> 4) - 8) * xv.q[32 * k + 16 + i];
                s += moe__f16_to_f32(b[k].d) * xv.dx[k] * (float)is;
            }
            out[n * ldo + r] = s;
        }
    }
}

static void mxfp4_kern(int R, int N, const void *w, int64_t ws, const void *const *x, int64_t C, float *out,
                       int64_t ldo) {
    for (int r = 0; r < R; r++) {
        const moe_block_mxfp4 *b = (const moe_block_mxfp4 *)((const char *)w + r * ws);
        for (int n = 0; n < N; n++) {
            moe__cpu_q8 xv = moe__cpu_q8_view(x[n], C);
            float s = 0;
            for (int64_t k = 0; k < C / 32; k++) {
                int is = 0;
                for (int i = 0; i < 16; i++)
                    is += moe__mxfp4_kvalue(b[k].qs[i] & 15) * xv.q[32 * k + i] +
                          moe__mxfp4_kvalue(b[k].qs[i] >> 4) * xv.q[32 * k + 16 + i];
                s += moe__u32_as_f32(moe__e8m0_half_bits(b[k].e)) * xv.dx[k] * (float)is;
            }
            out[n * ldo + r] = s;
        }
    }
}

static void q4_k_kern(int R, int N, const void *w, int64_t ws, const void *const *x, int64_t C, float *out,
                      int64_t ldo) {
    for (int r = 0; r < R; r++) {
        const moe_block_q4_k *b = (const moe_block_q4_k *)((const char *)w + r * ws);
        for (int n = 0; n < N; n++) {
            moe__cpu_q8 xv = moe__cpu_q8_view(x[n], C);
            float s = 0, sm = 0;
            for (int64_t k = 0; k < C / 256; k++) {
                float d = moe__f16_to_f32(b[k].d), dmin = moe__f16_to_f32(b[k].dmin);
                for (int j = 0; j < 8; j++) {
                    int sc, m;
                    moe__q4k_scale_min(j, b[k].scales, &sc, &m);
                    const uint8_t *qs = b[k].qs + 32 * (j / 2);
                    const int8_t *xq = xv.q + 256 * k + 32 * j;
                    int is = 0;
                    for (int i = 0; i < 32; i++) is += ((j & 1) ? qs[i] >> 4 : qs[i] & 15) * xq[i];
                    s += d * (float)sc * xv.dx[8 * k + j] * (float)is;
                    sm += dmin * (float)m * xv.dxs[8 * k + j];
                }
            }
            out[n * ldo + r] = s - sm;
        }
    }
}

/* The K-quants with 16-element sub-blocks: per sub-block an integer sum of
 * (unsigned code) * q, then one float term; the codes' offset or min enters
 * as -(offset or min) * dx * (sum of the 16 q) = dxs16. */
static void kq16_scalar(int R, int N, const void *w, int64_t ws, const void *const *x, int64_t C, float *out,
                        int64_t ldo, int type) {
    uint8_t u[256];
    int sc[16];
    float dsc[16], dm[16];
    for (int r = 0; r < R; r++) {
        const char *wr = (const char *)w + r * ws;
        float s[4] = {0, 0, 0, 0}, sm[4] = {0, 0, 0, 0}; /* N <= nmax = 4 */
        for (int64_t k = 0; k < C / 256; k++) {
            if (type == 2) {
                const moe_block_q2_k *b = (const moe_block_q2_k *)wr + k;
                float d = moe__f16_to_f32(b->d), dmin = moe__f16_to_f32(b->dmin);
                for (int i = 0; i < 256; i++) u[i] = (b->qs[32 * (i >> 7) + (i & 31)] >> (2 * ((i >> 5) & 3))) & 3;
                for (int j = 0; j < 16; j++) {
                    sc[j] = b->scales[j] & 15;
                    dsc[j] = d;
                    dm[j] = dmin * (float)(b->scales[j] >> 4);
                }
            } else if (type == 3) {
                const moe_block_q3_k *b = (const moe_block_q3_k *)wr + k;
                float d = moe__f16_to_f32(b->d);
                for (int i = 0; i < 256; i++) {
                    int h = i >> 7, sh = (i >> 5) & 3, l = i & 31;
                    u[i] = (uint8_t)(((b->qs[32 * h + l] >> (2 * sh)) & 3) | (((b->hmask[l] >> (4 * h + sh)) & 1) << 2));
                }
                for (int j = 0; j < 16; j++) {
                    sc[j] = moe__q3k_scale(j, b->scales);
                    dsc[j] = d;
                    dm[j] = 4.0f * d * (float)sc[j];
                }
            } else {
                const moe_block_q6_k *b = (const moe_block_q6_k *)wr + k;
                float d = moe__f16_to_f32(b->d);
                for (int i = 0; i < 256; i++) {
                    int h = i >> 7, sh = (i >> 5) & 3, l = i & 31;
                    int lo = b->ql[64 * h + 32 * (sh & 1) + l];
                    lo = sh >= 2 ? lo >> 4 : lo & 15;
                    u[i] = (uint8_t)(lo | (((b->qh[32 * h + l] >> (2 * sh)) & 3) << 4));
                }
                for (int j = 0; j < 16; j++) {
                    sc[j] = b->scales[j];
                    dsc[j] = d;
                    dm[j] = 32.0f * d * (float)sc[j];
                }
            }
            for (int n = 0; n < N; n++) {
                moe__cpu_q8 xv = moe__cpu_q8_view(x[n], C);
                for (int j = 0; j < 16; j++) {
                    const int8_t *xq = xv.q + 256 * k + 16 * j;
                    int is = 0;
                    for (int i = 0; i < 16; i++) is += u[16 * j + i] * xq[i];
                    s[n] += dsc[j] * (float)sc[j] * xv.dx[8 * k + j / 2] * (float)is;
                    sm[n] += dm[j] * xv.dxs16[16 * k + j];
                }
            }
        }
        for (int n = 0; n < N; n++) out[n * ldo + r] = s[n] - sm[n];
    }
}

static void q2_k_kern(int R, int N, const void *w, int64_t ws, const void *const *x, int64_t C, float *out,
                      int64_t ldo) {
    kq16_scalar(R, N, w, ws, x, C, out, ldo, 2);
}
static void q3_k_kern(int R, int N, const void *w, int64_t ws, const void *const *x, int64_t C, float *out,
                      int64_t ldo) {
    kq16_scalar(R, N, w, ws, x, C, out, ldo, 3);
}
static void q6_k_kern(int R, int N, const void *w, int64_t ws, const void *const *x, int64_t C, float *out,
                      int64_t ldo) {
    kq16_scalar(R, N, w, ws, x, C, out, ldo, 6);
}

static void q5_k_kern(int R, int N, const void *w, int64_t ws, const void *const *x, int64_t C, float *out,
                      int64_t ldo) {
    for (int r = 0; r < R; r++) {
        const moe_block_q5_k *b = (const moe_block_q5_k *)((const char *)w + r * ws);
        for (int n = 0; n < N; n++) {
            moe__cpu_q8 xv = moe__cpu_q8_view(x[n], C);
            float s = 0, sm = 0;
            for (int64_t k = 0; k < C / 256; k++) {
                float d = moe__f16_to_f32(b[k].d), dmin = moe__f16_to_f32(b[k].dmin);
                for (int j = 0; j < 8; j++) {
                    int sc, m;
                    moe__q4k_scale_min(j, b[k].scales, &sc, &m);
                    const uint8_t *qs = b[k].qs + 32 * (j / 2);
                    const int8_t *xq = xv.q + 256 * k + 32 * j;
                    int is = 0;
                    for (int i = 0; i < 32; i++)
                        is += (((j & 1) ? qs[i] >> 4 : qs[i] & 15) | (((b[k].qh[i] >> j) & 1) << 4)) * xq[i];
                    s += d * (float)sc * xv.dx[8 * k + j] * (float)is;
                    sm += dmin * (float)m * xv.dxs[8 * k + j];
                }
            }
            out[n * ldo + r] = s - sm;
        }
    }
}

const moe__cpu_isa moe__cpu_isa_scalar = {
    .name = "scalar",
    .rmax = 4,
    .nmax = 4,
    .kern = {
        [MOE__KK_F32] = f32_kern,
        [MOE__KK_F16] = f16_kern,
        [MOE__KK_BF16] = bf16_kern,
        [MOE__KK_Q8_0] = q8_0_kern,
        [MOE__KK_Q4_0] = q4_0_kern,
        [MOE__KK_Q4_K] = q4_k_kern,
        [MOE__KK_MXFP4] = mxfp4_kern,
        [MOE__KK_Q2_K] = q2_k_kern,
        [MOE__KK_Q3_K] = q3_k_kern,
        [MOE__KK_Q5_K] = q5_k_kern,
        [MOE__KK_Q6_K] = q6_k_kern,
    },
    .quant_q8 = moe__cpu_quant_q8_scalar,
    .q8_layout = {0}, /* natural, scale per 32 */
};
