/*
 * The AVX-512 path of the CPU backend (F, BW, VL, VNNI, BF16): 512-bit
 * primitives for the shared body kernels.inc. Chosen by src/cpu/cpu.c when
 * cpuid reports avx512f/bw/vl/vnni/bf16.
 */
#include "cpu.h"

#include "blocks.h"

#include <immintrin.h>
#include <math.h>

#define VL 16
#define RMAX 4
#define NMAX 4
#define BF16_NMAX 6 /* bf16 tiles: 4 x 6 (kernels.inc) */
#define ISA_VAR moe__cpu_isa_avx512
#define ISA_NAME "avx512"
typedef __m512 vf;
typedef __m512i vi;

static inline float h2f(uint16_t h) { return _cvtsh_ss(h); }
static inline vf vf_zero(void) { return _mm512_setzero_ps(); }
static inline vf vf_loadu(const float *p) { return _mm512_loadu_ps(p); }
static inline vf vf_fma(vf a, vf b, vf c) { return _mm512_fmadd_ps(a, b, c); }
static inline vf vf_mul(vf a, vf b) { return _mm512_mul_ps(a, b); }
static inline vf vf_cvt(vi a) { return _mm512_cvtepi32_ps(a); }
static inline float vf_hsum(vf a) {
    __m256 s = _mm256_add_ps(_mm512_castps512_ps256(a), _mm512_extractf32x8_ps(a, 1));
    __m128 q = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
    q = _mm_add_ps(q, _mm_movehl_ps(q, q));
    q = _mm_add_ss(q, _mm_movehdup_ps(q));
    return _mm_cvtss_f32(q);
}
static inline vf vf_load_f16(const uint16_t *p) { return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p)); }
/* n a multiple of 8 */
static inline float vf_dot_f32(const float *a, const float *b, int n) {
    vf s = vf_zero();
    int i = 0;
    for (; i + 16 <= n; i += 16) s = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s);
    if (i < n) s = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(0xff, a + i), _mm512_maskz_loadu_ps(0xff, b + i), s);
    return vf_hsum(s);
}
static inline vi vi_zero(void) { return _mm512_setzero_si512(); }
static inline vi vi_loadu(const void *p) { return _mm512_loadu_si512(p); }
static inline vi dot_u8(vi acc, vi u, vi s) { return _mm512_dpbusd_epi32(acc, u, s); }
static inline vi q8w_prep(vi w) { return _mm512_xor_si512(w, _mm512_set1_epi8((char)0x80)); }
static inline vi q8w_dot(const int32_t *corr, vi wp, vi x) { return _mm512_dpbusd_epi32(vi_loadu(corr), wp, x); }

typedef __m512i wbf;
#define BF16_STEP 32
static inline wbf wbf_load(const uint16_t *p) { return _mm512_loadu_si512(p); }
static inline vf bf16_dot(vf acc, wbf w, const uint16_t *x) {
    return _mm512_dpbf16_ps(acc, (__m512bh)w, (__m512bh)_mm512_loadu_si512(x));
}

static inline vi join256(__m256i lo, __m256i hi) { return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1); }
static inline vf scale2(uint16_t h0, uint16_t h1) {
    __m256i h = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_set1_epi16((short)h0)), _mm_set1_epi16((short)h1), 1);
    return _mm512_cvtph_ps(h);
}
static inline vf chunk_scale(const float *s) {
    return _mm512_insertf32x8(_mm512_set1_ps(s[0]), _mm256_set1_ps(s[1]), 1);
}

static inline vi q8_0_chunk(const moe_block_q8_0 *b, int nb) {
    __m256i lo = _mm256_loadu_si256((const __m256i *)b[0].qs);
    __m256i hi = nb > 1 ? _mm256_loadu_si256((const __m256i *)b[1].qs) : _mm256_setzero_si256();
    return join256(lo, hi);
}
static inline vf q8_0_scale(const moe_block_q8_0 *b, int nb) { return scale2(b[0].d, nb > 1 ? b[1].d : 0); }

/* 16 bytes of nibbles -> 32 bytes: low nibbles then high nibbles (not masked) */
static inline __m256i nib32(const uint8_t *qs) {
    __m128i v = _mm_loadu_si128((const __m128i *)qs);
    return _mm256_inserti128_si256(_mm256_castsi128_si256(v), _mm_srli_epi16(v, 4), 1);
}
static inline vi q4_0_chunk(const moe_block_q4_0 *b, int nb) {
    __m256i hi = nb > 1 ? nib32(b[1].qs) : _mm256_setzero_si256();
    return _mm512_and_si512(join256(nib32(b[0].qs), hi), _mm512_set1_epi8(0x0f));
}
static inline vf q4_0_scale(const moe_block_q4_0 *b, int nb) { return scale2(b[0].d, nb > 1 ? b[1].d : 0); }

static inline vi mxfp4_chunk(const moe_block_mxfp4 *b, int nb) {
    __m256i hi = nb > 1 ? nib32(b[1].qs) : _mm256_setzero_si256();
    vi codes = _mm512_and_si512(join256(nib32(b[0].qs), hi), _mm512_set1_epi8(0x0f));
    /* doubled e2m1 value + 12 */
    const vi lut = _mm512_broadcast_i32x4(_mm_setr_epi8(12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0));
    vi u = _mm512_shuffle_epi8(lut, codes);
    if (nb < 2) u = _mm512_maskz_mov_epi8(0xffffffffull, u);
    return u;
}
static inline vf mxfp4_scale(const moe_block_mxfp4 *b, int nb) {
    float s0, s1 = 0.0f;
    uint32_t u0 = moe__e8m0_half_bits(b[0].e);
    __builtin_memcpy(&s0, &u0, 4);
    if (nb > 1) {
        uint32_t u1 = moe__e8m0_half_bits(b[1].e);
        __builtin_memcpy(&s1, &u1, 4);
    }
    return _mm512_insertf32x8(_mm512_set1_ps(s0), _mm256_set1_ps(s1), 1);
}

/* ---- K-quants (KQ_TILE in kernels.inc), chunks of 64 ---- */

typedef __m512i kq_st; /* the 8 or 16 sub-block scales as int16, lanes 0.. */
static inline vi vi_maddubs(vi u, vi s) { return _mm512_maddubs_epi16(u, s); }
static inline vi vi_dpwssd(vi acc, vi a, vi b) { return _mm512_dpwssd_epi32(acc, a, b); }
static inline vf vf_set1(float f) { return _mm512_set1_ps(f); }
/* int16 a in words 0-15, b in 16-31 (shift counts) */
static inline vi w16x2(int a, int b) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set1_epi16((short)a)), _mm256_set1_epi16((short)b), 1);
}
/* bytes 0-31 a, 32-63 b */
static inline vi b8x2(int a, int b) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set1_epi8((char)a)), _mm256_set1_epi8((char)b), 1);
}
static inline vi bcast32(const uint8_t *p) { return _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)p)); }

/* Q4_K, Q5_K: activations in MOE__Q8_PERM128 order, so that 64 bytes of qs
 * give chunk 2g (low nibbles: sub-blocks 4g, 4g + 2) and chunk 2g + 1 (high:
 * 4g + 1, 4g + 3) with no cross-lane shuffle. */
#define KQ_LAYOUT_Q45 (MOE__Q8_PERM128 | MOE__Q8_SCALE256)
/* The 6-bit scales of a Q4_K/Q5_K block as int16 (lanes 0-7), its mins
 * dmin * m as f32 into mf[8], d broadcast into *dv: ggml's 12-byte unpacking
 * in one xmm register (a scalar version through memory stalls on store
 * forwarding). Reads 16 bytes from sc: the 4 after the scales are qs / qh. */
static inline kq_st q45_prep(const uint8_t *sc, uint16_t d, uint16_t dmin, float *mf, vf *dv) {
    __m128i v = _mm_loadu_si128((const __m128i *)sc);
    __m128i a = _mm_shuffle_epi32(v, _MM_SHUFFLE(2, 1, 2, 0));
    __m128i c = _mm_shuffle_epi32(v, _MM_SHUFFLE(1, 1, 0, 0));
    __m128i lo = _mm_and_si128(_mm_srlv_epi32(a, _mm_setr_epi32(0, 0, 0, 4)),
                               _mm_setr_epi32(0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f, 0x0f0f0f0f));
    __m128i hi = _mm_and_si128(_mm_srli_epi32(c, 2), _mm_setr_epi32(0, 0x30303030, 0, 0x30303030));
    __m128i o = _mm_or_si128(lo, hi);
    __m256 mn = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(o, 8)));
    _mm256_storeu_ps(mf, _mm256_mul_ps(mn, _mm256_set1_ps(h2f(dmin))));
    *dv = _mm512_set1_ps(h2f(d));
    return _mm512_castsi128_si512(_mm_cvtepu8_epi16(o));
}
#define q4k_prep(b, mf, dv) q45_prep((b)->scales, (b)->d, (b)->dmin, mf, dv)
#define q5k_prep(b, mf, dv) q45_prep((b)->scales, (b)->d, (b)->dmin, mf, dv)
static inline vi q4k_nib(const uint8_t *qs, int ch) {
    vi v = _mm512_loadu_si512(qs + 64 * (ch >> 1));
    if (ch & 1) v = _mm512_srli_epi16(v, 4);
    return _mm512_and_si512(v, _mm512_set1_epi8(0x0f));
}
static inline vi q4k_chunk(const moe_block_q4_k *b, int ch) { return q4k_nib(b->qs, ch); }
/* the fifth bit of sub-block s is bit s of qh[l] */
static inline vi q5k_chunk(const moe_block_q5_k *b, int ch) {
    int s0 = 4 * (ch >> 1) + (ch & 1);
    vi v = q4k_nib(b->qs, ch);
    __mmask64 k = _mm512_test_epi8_mask(bcast32(b->qh), b8x2(1 << s0, 1 << (s0 + 2)));
    return _mm512_mask_add_epi8(v, k, v, _mm512_set1_epi8(16));
}
/* int16 lanes 0-15: scale of sub-block 4g + h, lanes 16-31: of 4g + 2 + h (ch = 2g + h) */
static inline vi kq8_sc(kq_st s, int ch) {
    int lo = 4 * (ch >> 1) + (ch & 1);
    return _mm512_permutexvar_epi16(w16x2(lo, lo + 2), s);
}

/* Q2_K, Q3_K, Q6_K: natural order; chunk ch is sub-blocks 4ch .. 4ch + 3 of
 * 16, elements 128h + 32s + l with h = ch / 2, s = 2 (ch & 1) + {0, 1}. */
static inline vi kq16_sc(kq_st s, int ch) {
    const vi base = _mm512_set_epi64(0x0003000300030003ll, 0x0003000300030003ll, 0x0002000200020002ll,
                                     0x0002000200020002ll, 0x0001000100010001ll, 0x0001000100010001ll, 0, 0);
    return _mm512_permutexvar_epi16(_mm512_add_epi16(base, _mm512_set1_epi16((short)(4 * ch))), s);
}
static inline kq_st kq16_prep(__m128i s8, float d, float mscale, __m128i m8, float *mf, vf *dv) {
    _mm512_storeu_ps(mf, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(m8)), _mm512_set1_ps(mscale)));
    *dv = _mm512_set1_ps(d);
    return _mm512_castsi256_si512(_mm256_cvtepi8_epi16(s8));
}
/* Q2_K: codes 0..3, scales and mins 4-bit */
static inline kq_st q2k_prep(const moe_block_q2_k *b, float *mf, vf *dv) {
    __m128i v = _mm_loadu_si128((const __m128i *)b->scales);
    __m128i sc = _mm_and_si128(v, _mm_set1_epi8(0x0f)), m = _mm_and_si128(_mm_srli_epi16(v, 4), _mm_set1_epi8(0x0f));
    return kq16_prep(sc, h2f(b->d), h2f(b->dmin), m, mf, dv);
}
static inline vi q2k_chunk(const moe_block_q2_k *b, int ch) {
    int s0 = 2 * (ch & 1);
    vi q = bcast32(b->qs + 32 * (ch >> 1));
    return _mm512_and_si512(_mm512_srlv_epi16(q, w16x2(2 * s0, 2 * s0 + 2)), _mm512_set1_epi8(3));
}
/* Q3_K: the 16 6-bit scales minus 32 as int8 (ggml's unpacking in an xmm
 * register); reads the 16 bytes that end with the scales */
static inline __m128i q3k_scales8(const moe_block_q3_k *b) {
    __m128i v = _mm_srli_si128(_mm_loadu_si128((const __m128i *)(b->scales - 4)), 4); /* a0 a1 a2 0 */
    __m128i a = _mm_shuffle_epi32(v, _MM_SHUFFLE(1, 0, 1, 0));
    __m128i lo = _mm_and_si128(_mm_srlv_epi32(a, _mm_setr_epi32(0, 0, 4, 4)), _mm_set1_epi8(0x0f));
    __m128i c = _mm_shuffle_epi32(v, _MM_SHUFFLE(2, 2, 2, 2));
    __m128i hi = _mm_slli_epi32(_mm_and_si128(_mm_srlv_epi32(c, _mm_setr_epi32(0, 2, 4, 6)), _mm_set1_epi8(3)), 4);
    return _mm_sub_epi8(_mm_or_si128(lo, hi), _mm_set1_epi8(32));
}
/* codes u = low 2 bits + 4 * hmask bit (0..7), value u - 4 */
static inline kq_st q3k_prep(const moe_block_q3_k *b, float *mf, vf *dv) {
    __m128i s8 = q3k_scales8(b);
    float d = h2f(b->d);
    return kq16_prep(s8, d, 4.0f * d, s8, mf, dv);
}
static inline vi q3k_chunk(const moe_block_q3_k *b, int ch) {
    int h = ch >> 1, s0 = 2 * (ch & 1);
    vi q = bcast32(b->qs + 32 * h);
    vi lo = _mm512_and_si512(_mm512_srlv_epi16(q, w16x2(2 * s0, 2 * s0 + 2)), _mm512_set1_epi8(3));
    __mmask64 k = _mm512_test_epi8_mask(bcast32(b->hmask), b8x2(1 << (4 * h + s0), 1 << (4 * h + s0 + 1)));
    return _mm512_mask_add_epi8(lo, k, lo, _mm512_set1_epi8(4));
}
/* Q6_K: codes 0..63 (value - 32 is signed), int8 scales */
static inline kq_st q6k_prep(const moe_block_q6_k *b, float *mf, vf *dv) {
    __m128i s8 = _mm_loadu_si128((const __m128i *)b->scales);
    float d = h2f(b->d);
    return kq16_prep(s8, d, 32.0f * d, s8, mf, dv);
}
static inline vi q6k_chunk(const moe_block_q6_k *b, int ch) {
    int h = ch >> 1;
    vi ql = _mm512_loadu_si512(b->ql + 64 * h);
    vi qh = bcast32(b->qh + 32 * h);
    vi hb;
    if (ch & 1) { /* s = 2, 3: high nibbles, qh bits 4-5 and 6-7 */
        ql = _mm512_srli_epi16(ql, 4);
        hb = _mm512_srlv_epi16(qh, w16x2(0, 2));
    } else { /* s = 0, 1: low nibbles, qh bits 0-1 and 2-3 */
        hb = _mm512_sllv_epi16(qh, w16x2(4, 2));
    }
    hb = _mm512_and_si512(hb, _mm512_set1_epi8(0x30));
    return _mm512_ternarylogic_epi32(ql, hb, _mm512_set1_epi8(0x0f), 0xEC); /* (ql & 0x0f) | hb */
}

/* ---- activations: the q8 quantizer, the activation functions, bf16 ---- */

/* moe__cpu_quant_q8_scalar with 16 lanes: the same bits (amax, d = amax / 127,
 * lrintf's rounding, the same sums), ~10x fewer instructions. */
static void quant_q8_avx512(const float *x, int64_t c0, int64_t n, int64_t C, int offset, int layout, void *row) {
    int64_t cp = moe__cpu_pad64(C);
    char *p = (char *)row;
    int8_t *q = (int8_t *)p;
    int32_t *corr = (int32_t *)(p + cp);
    float *xs = (float *)(p + 2 * cp), *dx = (float *)(p + 3 * cp), *dxs = (float *)(p + 3 * cp + cp / 8);
    float *dxs16 = (float *)(p + 3 * cp + cp / 4);
    const __m512 absm = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff)), fmax = _mm512_set1_ps(3.4028235e38f);
    const __m512i lo = _mm512_set1_epi32(-127), hi = _mm512_set1_epi32(127);
    const __m256i ones = _mm256_set1_epi8(1), negoff = _mm256_set1_epi32(-offset);
    float d = 0.0f, id = 0.0f;
    int finite = 1;
    for (int64_t b = 0; b < n; b += 32) {
        const float *v = x + b;
        int64_t c = moe__cpu_q8_pos(c0 + b, layout), cn = c0 + b;
        if (!(layout & MOE__Q8_SCALE256) || (b & 255) == 0) {
            int na = layout & MOE__Q8_SCALE256 ? 256 : 32;
            __m512 mx = _mm512_setzero_ps();
            __mmask16 bad = 0;
            for (int i = 0; i < na; i += 16) {
                __m512 a = _mm512_and_ps(_mm512_loadu_ps(v + i), absm);
                bad |= _mm512_cmp_ps_mask(a, fmax, _CMP_NLE_UQ);
                mx = _mm512_max_ps(mx, a);
            }
            float amax = _mm512_reduce_max_ps(mx);
            finite = !bad;
            d = finite ? amax / 127.0f : NAN;
            id = finite && amax > 0 ? 127.0f / amax : 0.0f;
        }
        __m512i q0 = _mm512_setzero_si512(), q1 = q0;
        if (finite) {
            __m512 s = _mm512_set1_ps(id);
            q0 = _mm512_min_epi32(_mm512_max_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(v), s)), lo), hi);
            q1 = _mm512_min_epi32(_mm512_max_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(v + 16), s)), lo),
                                  hi);
        }
        __m256i qb = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm512_cvtepi32_epi8(q0)),
                                             _mm512_cvtepi32_epi8(q1), 1);
        _mm256_storeu_si256((__m256i *)(q + c), qb);
        __m256i s4 = _mm256_dpbusd_epi32(_mm256_setzero_si256(), ones, qb); /* sums of 4 q */
        _mm256_storeu_si256((__m256i *)(corr + c / 4), _mm256_mullo_epi32(s4, negoff));
        _mm256_storeu_ps(xs + c / 4, _mm256_set1_ps(d));
        __m128i h = _mm_add_epi32(_mm256_castsi256_si128(s4), _mm256_extracti128_si256(s4, 1));
        __m128i l4 = _mm256_castsi256_si128(s4);
        l4 = _mm_add_epi32(l4, _mm_shuffle_epi32(l4, _MM_SHUFFLE(1, 0, 3, 2)));
        l4 = _mm_add_epi32(l4, _mm_shuffle_epi32(l4, _MM_SHUFFLE(2, 3, 0, 1)));
        h = _mm_add_epi32(h, _mm_shuffle_epi32(h, _MM_SHUFFLE(1, 0, 3, 2)));
        h = _mm_add_epi32(h, _mm_shuffle_epi32(h, _MM_SHUFFLE(2, 3, 0, 1)));
        int sum = _mm_cvtsi128_si32(h), sum16 = _mm_cvtsi128_si32(l4);
        dx[cn / 32] = d;
        dxs[cn / 32] = d * (float)sum;
        dxs16[cn / 16] = d * (float)sum16;
        dxs16[cn / 16 + 1] = d * (float)(sum - sum16);
    }
    if (c0 + n == C && C < cp) {
        __builtin_memset(q + C, 0, (size_t)(cp - C));
        __builtin_memset(corr + C / 4, 0, (size_t)(cp - C));
        __builtin_memset(xs + C / 4, 0, (size_t)(cp - C));
        __builtin_memset(dx + C / 32, 0, (size_t)(cp - C) / 8);
        __builtin_memset(dxs + C / 32, 0, (size_t)(cp - C) / 8);
        __builtin_memset(dxs16 + C / 16, 0, (size_t)(cp - C) / 4);
    }
}
#define quant_q8_impl quant_q8_avx512

/* exp(x): Cody-Waite reduction by ln 2, degree-7 Taylor on |r| <= 0.35
 * (error < 1e-8 relative before rounding), scaled by 2^n with vscalefps.
 * Clamped to [-104, 89] (0 and +inf beyond); NaN stays NaN (the max/min
 * operand order returns x when x is NaN). */
static inline __m512 exp16(__m512 x) {
    x = _mm512_min_ps(_mm512_set1_ps(89.0f), _mm512_max_ps(_mm512_set1_ps(-104.0f), x));
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.0f / 5040);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, n);
}
/* x * sigmoid(a x) = x / (1 + exp(-a x)) */
static inline __m512 silu16(__m512 x, __m512 a) {
    return _mm512_div_ps(x, _mm512_add_ps(_mm512_set1_ps(1.0f), exp16(_mm512_mul_ps(x, _mm512_sub_ps(_mm512_setzero_ps(), a)))));
}
/* 0.5 x (1 + tanh(z)) with z = k (x + 0.044715 x^3) is x sigmoid(2z) = x / (1 + exp(-2z)):
 * no cancellation where tanh is near -1 */
static inline __m512 gelu16(__m512 x) {
    __m512 z = _mm512_mul_ps(_mm512_set1_ps(-2.0f * 0.7978845608f),
                             _mm512_fmadd_ps(_mm512_mul_ps(_mm512_set1_ps(0.044715f), x), _mm512_mul_ps(x, x), x));
    return _mm512_div_ps(x, _mm512_add_ps(_mm512_set1_ps(1.0f), exp16(z)));
}
static int act_avx512(moe_act act, const float *g, const float *u, const float *bg, const float *bu, float *h,
                      int64_t n, float alpha, float limit) {
    if (act == MOE_ACT_GEGLU_ERF) return 0;
    const __m512 one = _mm512_set1_ps(1.0f), lim = _mm512_set1_ps(limit), nlim = _mm512_set1_ps(-limit),
                 al = _mm512_set1_ps(alpha);
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        __m512 uv = _mm512_maskz_loadu_ps(m, u + i), gv = _mm512_setzero_ps(), y;
        if (bu) uv = _mm512_add_ps(uv, _mm512_maskz_loadu_ps(m, bu + i));
        if (g) gv = _mm512_maskz_loadu_ps(m, g + i);
        if (g && bg) gv = _mm512_add_ps(gv, _mm512_maskz_loadu_ps(m, bg + i));
        switch (act) {
        case MOE_ACT_SWIGLU: y = _mm512_mul_ps(silu16(gv, one), uv); break;
        case MOE_ACT_GEGLU_TANH: y = _mm512_mul_ps(gelu16(gv), uv); break;
        case MOE_ACT_SWIGLU_OAI:
            gv = _mm512_min_ps(lim, gv);
            uv = _mm512_max_ps(nlim, _mm512_min_ps(lim, uv));
            y = _mm512_mul_ps(silu16(gv, al), _mm512_add_ps(uv, one));
            break;
        case MOE_ACT_SILU: y = silu16(uv, one); break;
        case MOE_ACT_GELU: y = gelu16(uv); break;
        case MOE_ACT_RELU2:
            y = _mm512_maskz_mul_ps(~_mm512_cmp_ps_mask(uv, _mm512_setzero_ps(), _CMP_LT_OQ), uv, uv);
            break;
        default: return 0;
        }
        _mm512_mask_storeu_ps(h + i, m, y);
    }
    return 1;
}
#define ACT_IMPL act_avx512

/* moe__f32_to_bf16 on 16 lanes */
static void to_bf16_avx512(const float *x, uint16_t *y, int64_t n) {
    const __m512i absm = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000),
                  r = _mm512_set1_epi32(0x7fff), one = _mm512_set1_epi32(1), qn = _mm512_set1_epi32(0x40);
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        __m512i u = _mm512_castps_si512(_mm512_maskz_loadu_ps(m, x + i));
        __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, absm), inf);
        __m512i t = _mm512_add_epi32(u, _mm512_add_epi32(r, _mm512_and_si512(_mm512_srli_epi32(u, 16), one)));
        t = _mm512_mask_or_epi32(_mm512_srli_epi32(t, 16), nan, _mm512_srli_epi32(u, 16), qn);
        _mm256_mask_storeu_epi16(y + i, m, _mm512_cvtepi32_epi16(t));
    }
}
#define TO_BF16_IMPL to_bf16_avx512

#define PF_SPAN_Q8_0 256 /* see kernels.inc */
#include "kernels.inc"
