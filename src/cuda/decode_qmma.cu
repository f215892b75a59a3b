/*
 * cuda-quant's int8 tensor-core kernels for groups of tokens (the "i8"
 * kernels: Q8_0, Q4_0, Q4_K, Q5_K, Q6_K, MXFP4 rows), launched by src/cuda/decode.cu between
 * the streaming kernels (few pairs an expert) and the dequantising prefill
 * path. One forward of Tc tokens:
 *   route      k_route (decode.cu): active experts, pairs sorted by expert
 *   quantise   x [Tc, D] -> int8 blocks of 32 (ggml's Q8_1 rounding,
 *              moe_qx_quantize32): q [Tc, D], d and d * sum(q) per block
 *   phase 1    grid (I row tiles of 32 or 64, active experts): h [TK, I] f32 =
 *              act(gate x + bg, up x + bu)
 *   quantise   h [TK, I] -> int8 blocks as x
 *   phase 2    grid (D row tiles of 64 or 128, active experts): y [TK, D] f32 =
 *              w * (down h + bd); the last block of each row tile sums the
 *              K slots of every token in slot order into out (no float atomics)
 *
 * A block is 4 warps. Its 64 (Q8_0) or 128 weight rows (phase 1: half of
 * gate and the same rows of up) stream through a ring of cp.async stages, each
 * 8 blocks of 32 of every row (Q4_K, Q5_K, Q6_K: one super-block) plus the
 * tokens' activation blocks of the same columns; every thread copies, every
 * warp computes (no producer warp). Stages of a multiple of 16 bytes on
 * aligned rows (Q4_K, Q5_K; Q8_0 and Q4_0 where aligned) copy as a linear run
 * of 16-byte chunks over the threads, the others row by row. Warp w owns one (Q8_0) or two 16-row
 * tiles (qg_fmt's TPW): mma.m16n8k32
 * s8 with the weights as A (int8 codes as GGUF stores them: Q8_0's bytes,
 * Q4_K's nibbles (u8, an odd block's left in the high nibble), MXFP4's doubled
 * e2m1 magnitudes in nibble order, its positive and negative codes on two
 * mma; Q6_K's 6-bit codes minus 32 on two m16n8k16,
 * one a 16-element scale) and 8 tokens as B, one block of 32 a k step; the
 * int32 result (read as a float: the accumulator starts at 1.5 * 2^23) times
 * the row's and the token's scales into f32. The K-quants' scales are made
 * once a super-block, a quarter a quad lane, and shuffled; Q4_K/Q5_K's mins
 * times the tokens' block sums are one split-tf32 mma a super-block
 * (session 18).
 * A pass takes up to 8 NT pairs of one expert; an expert with more takes
 * several passes over its rows. Each kernel has instances for two and (but
 * Q5_K, Q6_K) three blocks an SM (BPS: rings of 2-4 stages, qg_ns; up to 255 or
 * 168 registers).
 */
#include "decode_kernels.h"
#include "qdot.cuh"

#define QG_THREADS 128
/* Per format: TPW 16-row tiles a warp (a block's rows: 64 TPW), KU blocks of
 * 32 a stage, SBB bytes a stage of a row, BPU bytes a block of 32 where a
 * stage may end early (the 32-element formats; a K-quant stage is one whole
 * super-block), MIN: element = sc q - mn, NIB: MXFP4's
 * nibble order; CH 16-byte copies a row a stage at most (the stage's bytes at
 * any 16-byte offset) and PITCH bytes between staged rows (= 16 mod 32:
 * fragment loads without bank conflicts). Q8_0 takes 64 rows of 272 bytes a
 * stage: 128 rows of 136 (session 16) held a cp.async ring to 81% of a plain
 * read, 64 of 272 to 93% (bench/decode/lab/probe_runs.cu); Q8_0's kernels take
 * 0.79-0.91x the time on them (session 17, run 9; mixtral T = 64, 32 tokens a
 * pass, 1.05x). The others keep 128 rows: they are bound by instructions, and
 * one tile a warp loads each activation fragment for half the rows (mixtral
 * Q4_K / MXFP4 / Q6_K 1.02-1.18x the time, run 2). Q6_K: its 16-element scales
 * on m16n8k16. */
template <int F> struct qg_fmt;
template <> struct qg_fmt<MOE_DF_Q8_0> { enum { TPW = 1, KU = 8, BPU = 34, SBB = 272, MIN = 0, NIB = 0, CH = 18, PITCH = 304 }; };
template <> struct qg_fmt<MOE_DF_Q4_K> { enum { TPW = 2, KU = 8, BPU = 0, SBB = 144, MIN = 1, NIB = 0, CH = 10, PITCH = 176 }; };
template <> struct qg_fmt<MOE_DF_MXFP4> { enum { TPW = 2, KU = 8, BPU = 17, SBB = 136, MIN = 0, NIB = 1, CH = 10, PITCH = 176 }; };
template <> struct qg_fmt<MOE_DF_Q6_K> { enum { TPW = 2, KU = 8, BPU = 0, SBB = 210, MIN = 0, NIB = 0, CH = 15, PITCH = 240 }; };
template <> struct qg_fmt<MOE_DF_Q4_0> { enum { TPW = 2, KU = 8, BPU = 18, SBB = 144, MIN = 0, NIB = 0, CH = 10, PITCH = 176 }; };
template <> struct qg_fmt<MOE_DF_Q5_K> { enum { TPW = 2, KU = 8, BPU = 0, SBB = 176, MIN = 1, NIB = 0, CH = 12, PITCH = 208 }; };

/* bytes of one stage: weight rows, their offsets, the tokens' codes (pitch
 * 32 KU + 16: = 16 mod 32), scales and sums ([KU][8 NT] floats each) */
static __host__ __device__ constexpr int qg_xpitch(int KU) { return 32 * KU + 16; }
template <int F> static __host__ __device__ constexpr int qg_rows(void) { return 64 * qg_fmt<F>::TPW; }
template <int F> static __host__ __device__ constexpr int qg_sb(int nt) {
    return (qg_rows<F>() * (qg_fmt<F>::PITCH + 1) + 8 * nt * qg_xpitch(qg_fmt<F>::KU) +
            4 * qg_fmt<F>::KU * 8 * nt * (1 + qg_fmt<F>::MIN) + 127) & ~127;
}
/* The ring depth of an instance for BPS blocks an SM. Two tiles a warp: 4
 * stages up to 16 tokens at two blocks an SM, else 3; Q5_K and Q6_K (two
 * blocks an SM only) 3, or 2 for 32 tokens. One tile a warp: as many stages
 * (2 to 4) as fit in the shared memory of one of BPS blocks (228 KB an SM, 1
 * KB a block reserved, static shared memory and slack). */
template <int F> static __host__ __device__ constexpr int qg_ns(int nt, int bps) {
    if (qg_fmt<F>::TPW == 2) return F == MOE_DF_Q6_K || F == MOE_DF_Q5_K ? (nt > 2 ? 2 : 3) : bps >= 3 || nt > 2 ? 3 : 4;
    const int fit = (bps >= 3 ? 74 * 1024 : 112 * 1024) / qg_sb<F>(nt);
    return fit > 4 ? 4 : fit < 2 ? 2 : fit;
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define QG_ON 1
#endif

/* A block of 32 activations quantised (moe_qx_quantize32; nib: MXFP4's
 * nibble order) into the int8 kernels' B layout: its 32 codes at q, its scale
 * at *d and d * sum(q) at *s. k_qg_quant and k_qg's gate/up epilogue. */
static __device__ __forceinline__ void qg_put_q32(const float f[32], int nib, int8_t *q, float *d, float *s) {
    int32_t qq[8];
    float dd;
    int s16[2];
    moe_qx_quantize32(f, qq, &dd, s16);
    if (nib) moe_qx_nib_order(qq);
    uint4 *dst = (uint4 *)q;
    dst[0] = make_uint4((uint32_t)qq[0], (uint32_t)qq[1], (uint32_t)qq[2], (uint32_t)qq[3]);
    dst[1] = make_uint4((uint32_t)qq[4], (uint32_t)qq[5], (uint32_t)qq[6], (uint32_t)qq[7]);
    *d = dd;
    *s = dd * (float)(s16[0] + s16[1]);
}

#ifdef QG_ON
static __device__ __forceinline__ uint32_t qg_smem(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }
/* 16 bytes (n of them read, the rest zero-filled) and 4 bytes (0 or 4) */
static __device__ __forceinline__ void qg_cp16(uint32_t dst, const void *src, int n) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(n) : "memory");
}
static __device__ __forceinline__ void qg_cp4(uint32_t dst, const void *src, int n) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(n) : "memory");
}
static __device__ __forceinline__ void qg_commit(void) { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> static __device__ __forceinline__ void qg_wait(void) {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
/* the word holding bytes p .. p + 3 of shared memory, p at any alignment */
/* The aligned word at or below p, by pointer arithmetic: a pointer through an
 * integer cast loses its address space, and the loads became generic LD
 * instead of LDS (session 18). */
static __device__ __forceinline__ const uint32_t *qg_al4(const uint8_t *p) {
    return (const uint32_t *)(p - ((uintptr_t)p & 3));
}
static __device__ __forceinline__ uint32_t qg_ldu(const uint8_t *p) {
    const uint32_t *w = qg_al4(p);
    return __funnelshift_r(w[0], w[1], 8 * (unsigned)((uintptr_t)p & 3));
}

/* The int8 mma with its accumulator preset to 1.5 * 2^23: an int32 result c
 * (|c| < 2^22: 32 products of 8-bit codes, at most ~2^20) reads back as the
 * float 12582912 + c, so qg_cf makes the float with one FADD (no I2F, no
 * integer add: session 18). The preset takes 4 registers for the whole loop:
 * the kernels of 4 token tiles (NT) at 3 blocks an SM (168 registers) keep
 * the zero accumulator (MAG false) and dq_i2f, as they spilled with it. U8: A
 * unsigned (the K-quants' codes). */
#define QG_MAGIC 0x4B400000
template <bool MAG> static __device__ __forceinline__ float qg_cf(int c) {
    return MAG ? __int_as_float(c) - 12582912.0f : dq_i2f(c);
}
/* c - cn as a float, for two results of the same accumulator preset */
template <bool MAG> static __device__ __forceinline__ float qg_cf2(int c, int cn) {
    return MAG ? __int_as_float(c) - __int_as_float(cn) : dq_i2f(c - cn);
}
template <bool U8, bool MAG>
static __device__ __forceinline__ void qg_mma(int c[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                              uint32_t b0, uint32_t b1) {
    const uint32_t z = MAG ? QG_MAGIC : 0u;
    if (U8)
        asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                     "{%10, %10, %10, %10};\n"
                     : "=r"(c[0]), "=r"(c[1]), "=r"(c[2]), "=r"(c[3])
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "r"(z));
    else
        asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                     "{%10, %10, %10, %10};\n"
                     : "=r"(c[0]), "=r"(c[1]), "=r"(c[2]), "=r"(c[3])
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "r"(z));
}
template <bool MAG> static __device__ __forceinline__ void qg_mma_k16(int c[4], uint32_t a0, uint32_t a1, uint32_t b0) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5}, {%6}, "
                 "{%7, %7, %7, %7};\n"
                 : "=r"(c[0]), "=r"(c[1]), "=r"(c[2]), "=r"(c[3])
                 : "r"(a0), "r"(a1), "r"(b0), "r"(MAG ? QG_MAGIC : 0u));
}
/* f32 as tf32, rounded to nearest (the mma itself would truncate) */
static __device__ __forceinline__ uint32_t qg_tf32(float x) {
    uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
    return r;
}
/* d += A B on m16n8k8 tf32: A rows g / g + 8, k t / t + 4 (a0 (g, t), a1 (g + 8, t),
 * a2 (g, t + 4), a3 (g + 8, t + 4)), B k t / t + 4 of column g, d as the int8 mma's */
static __device__ __forceinline__ void qg_mma_tf32(float d[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                                   uint32_t b0, uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

/* The A fragment words of lane quad t for block of 32 u of a staged row
 * (row: its first byte in the stage): lo = k positions 4t..4t+3, hi =
 * 16+4t..19+4t (MXFP4: the positions of qdot.cuh's nibble order,
 * which the activations share), and the block's scale. Q4_K: sc and mn come
 * from the super-block header (qg_q4k_hdr). */
template <int F> struct qg_row;
template <> struct qg_row<MOE_DF_Q8_0> {
    /* block u's codes for lane t start at p = row + 2 + 4t + 34u; 34u = 2u mod 4,
     * so the aligned words and the funnel shift depend on u's parity only:
     * words from b0 + 68 (u / 2) (even u) or b1 + 32 + 68 (u / 2) (odd), shift s0 or s1 */
    const uint8_t *R, *b0, *b1;
    uint32_t s0, s1;
    float d;
    __device__ __forceinline__ void prep(const uint8_t *row, int t) {
        R = row;
        const uint8_t *p0 = row + 2 + 4 * t, *p1 = p0 + 2;
        b0 = (const uint8_t *)qg_al4(p0);
        b1 = (const uint8_t *)qg_al4(p1);
        s0 = 8 * (uint32_t)((uintptr_t)p0 & 3);
        s1 = 8 * (uint32_t)((uintptr_t)p1 & 3);
    }
    __device__ __forceinline__ void frag(int u, uint32_t &lo, uint32_t &hi) {
        d = __half2float(*(const __half *)(R + 34 * u));
        const bool odd = u & 1;
        const uint32_t *w = (const uint32_t *)((odd ? b1 + 32 : b0) + 68 * (u >> 1));
        const uint32_t s = odd ? s1 : s0;
        lo = __funnelshift_r(w[0], w[1], s);
        hi = __funnelshift_r(w[4], w[5], s);
    }
};
template <> struct qg_row<MOE_DF_Q4_0> {
    /* block u (18 bytes: d, qs[16]): element j < 16 the low nibble of qs[j] - 8,
     * 16 + j the high one, so one word of qs gives lane t both halves */
    const uint8_t *R, *A;
    float d;
    __device__ __forceinline__ void prep(const uint8_t *row, int t) {
        R = row;
        A = row + 2 + 4 * t;
    }
    __device__ __forceinline__ void frag(int u, uint32_t &lo, uint32_t &hi) {
        d = __half2float(*(const __half *)(R + 18 * u));
        const uint32_t v = qg_ldu(A + 18 * u);
        lo = moe__qsub8x4(v & 0x0F0F0F0Fu);
        hi = moe__qsub8x4((v >> 4) & 0x0F0F0F0Fu);
    }
};
/* MXFP4 (session 19): the positive and the negative codes of a word on two mma
 * (A = their magnitudes, the result = pos - neg), so each group of 4 codes is
 * one PRMT on a table word instead of three (two lookups and a select), and
 * the table's one register word (tab.k0) is the only constant the decode
 * needs. Block u's code word for lane t is at row + 1 + 4t + 17u: 17u = u (mod
 * 4), so its aligned words and its funnel shift depend on u mod 4 only (w[],
 * sh[]: the unrolled unit loop addresses with immediates). The scales are
 * made a quad lane's two blocks a stage (qg_mx_sc) and shuffled. */
template <> struct qg_row<MOE_DF_MXFP4> {
    const uint32_t *w[4];
    uint32_t sh[4];
    __device__ __forceinline__ void prep(const uint8_t *row, int t) {
#pragma unroll
        for (int r = 0; r < 4; r++) {
            const uint8_t *p = row + 1 + 4 * t + 17 * r;
            w[r] = qg_al4(p);
            sh[r] = 8 * (uint32_t)((uintptr_t)p & 3);
        }
    }
    /* u a constant (the unrolled loops only) */
    __device__ __forceinline__ void frag_pn(int u, uint32_t &plo, uint32_t &phi, uint32_t &nlo, uint32_t &nhi,
                                            const moe__mxfp4_tab &tab) const {
        const uint32_t *q = w[u & 3] + 17 * (u >> 2);
        const uint32_t c = __funnelshift_r(q[0], q[1], sh[u & 3]), cx = c ^ 0x88888888u;
        plo = moe__qprmt(tab.k0, MOE__MXFP4_K1, c);
        nlo = moe__qprmt(tab.k0, MOE__MXFP4_K1, cx);
        phi = moe__qprmt(tab.k0, MOE__MXFP4_K1, c >> 16);
        nhi = moe__qprmt(tab.k0, MOE__MXFP4_K1, cx >> 16);
    }
};
/* sc[j] = 2^(e - 128) of block t + 4j of a staged MXFP4 row (the doubled
 * values' scale, moe__e8m0_half_bits); blocks past a short stage read
 * bytes of the row's pitch that are never used */
static __device__ __forceinline__ void qg_mx_sc(const uint8_t *row, int t, float sc[2]) {
    sc[0] = __uint_as_float(moe__e8m0_half_bits(row[17 * t]));
    sc[1] = __uint_as_float(moe__e8m0_half_bits(row[17 * t + 68]));
}
/* Q4_K / Q5_K: the codes of block u (A unsigned, qg_mma<true>); the scales of a
 * super-block come from qg_k45_sc / qg_k45_mn once a stage, not from every block. */
template <> struct qg_row<MOE_DF_Q4_K> {
    const uint8_t *Q; /* lane t's first code word: row + 16 + 4t (Q4_K rows are 16-byte aligned, moe__dec_align) */
    uint32_t h[4];    /* d | dmin << 16, scales[12] */
    __device__ __forceinline__ void prep(const uint8_t *row, int t) {
        const uint32_t *w = (const uint32_t *)row;
        h[0] = w[0]; h[1] = w[1]; h[2] = w[2]; h[3] = w[3];
        Q = row + 16 + 4 * t;
    }
    /* an odd block's codes stay in the high nibble (16 q: one AND, no shift);
     * qg_k45_sc divides its scale by 16 to match (exact) */
    __device__ __forceinline__ void codes(int u, uint32_t &lo, uint32_t &hi) const {
        const uint32_t *q = (const uint32_t *)(Q + 32 * (u >> 1));
        const uint32_t m = (u & 1) ? 0xF0F0F0F0u : 0x0F0F0F0Fu;
        lo = q[0] & m;
        hi = q[4] & m;
    }
};

template <> struct qg_row<MOE_DF_Q5_K> {
    /* Q4_K with a fifth bit: d, dmin, scales[12], qh[32], qs[128] (176 bytes,
     * 16-byte aligned rows); element l of sub-block j: nibble j % 2 of
     * qs[32 (j / 2) + l] | bit j of qh[l] << 4 (moe_qunit_q5_k_bk) */
    const uint8_t *Q, *H;
    uint32_t h[4];
    __device__ __forceinline__ void prep(const uint8_t *row, int t) {
        const uint32_t *w = (const uint32_t *)row;
        h[0] = w[0]; h[1] = w[1]; h[2] = w[2]; h[3] = w[3];
        H = row + 16 + 4 * t;
        Q = row + 48 + 4 * t;
    }
    __device__ __forceinline__ void codes(int u, uint32_t &lo, uint32_t &hi) const {
        const uint32_t *q = (const uint32_t *)(Q + 32 * (u >> 1)), *qh = (const uint32_t *)H;
        const int s = 4 * (u & 1);
        lo = ((q[0] >> s) & 0x0F0F0F0Fu) | (moe__qrotr(qh[0], u - 4) & 0x10101010u);
        hi = ((q[4] >> s) & 0x0F0F0F0Fu) | (moe__qrotr(qh[4], u - 4) & 0x10101010u);
    }
};

/* Q4_K / Q5_K super-block scales for lane t of a quad: blocks t and t + 4 of
 * the row with header h (moe__q4k_unit_scales' unpacking, the block number a
 * register). The quad's four lanes hold the eight blocks between them: the
 * kernel shuffles each block's scale to the lanes that need it, and the mins
 * enter through one tf32 mma a super-block (A (row, block) = the 6-bit min, B
 * (block, token) = the token's d sum(q), times dmin after). Before, every lane
 * decoded every block's scale and min for every row (~40% of Q4_K's
 * instructions, session 17's ncu). qg_k45_sc: sc[j] = d sc of block t + 4j
 * (Q4_K's odd blocks, t odd, / 16: their codes stay in the high nibble). */
template <int F> static __device__ __forceinline__ void qg_k45_sc(const uint32_t h[4], int t, float sc[2]) {
    const int sh = 8 * t;
    const uint32_t s0 = h[1] >> sh, s2 = h[3] >> sh;
    const uint32_t c0 = s0 & 63, c1 = (s2 & 0xF) | ((s0 >> 2) & 0x30);
    const float d = __half2float(__ushort_as_half((unsigned short)(h[0] & 0xffffu))) *
                    (F == MOE_DF_Q4_K && (t & 1) ? 0.0625f : 1.f);
    sc[0] = d * (float)c0;
    sc[1] = d * (float)c1;
}
/* mn[j]: block t + 4j's min as a float (below 64: exact in tf32); dmin. Made
 * after the blocks (the header re-read from the stage), so that these do not
 * hold registers through them (the 3-blocks-an-SM kernels spilled). */
static __device__ __forceinline__ void qg_k45_mn(const uint32_t h[4], int t, uint32_t mn[2], float &dmin) {
    const int sh = 8 * t;
    const uint32_t s1 = h[2] >> sh, s2 = h[3] >> sh;
    const uint32_t m0 = s1 & 63, m1 = ((s2 >> 4) & 0xF) | ((s1 >> 2) & 0x30);
    dmin = __half2float(__ushort_as_half((unsigned short)(h[0] >> 16)));
    mn[0] = __float_as_uint((float)m0);
    mn[1] = __float_as_uint((float)m1);
}

template <> struct qg_row<MOE_DF_Q6_K> {
    /* the super-block (ql[128], qh[64], scales[16], d) starts 2-aligned: its
     * words from the aligned base b through a funnel shift sh, lane t's at + 4t */
    const uint32_t *w;
    uint32_t sh, scw; /* scw: scales 4t..4t + 3 (lane t's share, qg_q6_sc) */
    float d;
    __device__ __forceinline__ uint32_t wd(int off) const { return __funnelshift_r(w[off >> 2], w[(off >> 2) + 1], sh); }
    __device__ __forceinline__ void prep(const uint8_t *row, int t) {
        w = qg_al4(row);
        sh = 8 * (uint32_t)((uintptr_t)row & 3);
        d = __half2float(*(const __half *)(row + 208));
        scw = wd(192 + 4 * t);
        w += t; /* lane t's codes */
    }
    /* block of 32 u = sub-blocks 2u (lo) and 2u + 1 (hi) of 16: lane t's 4
     * codes (k 4t..4t+3 of each) as int8 (q - 32); their scales d sc are held
     * by quad lane u / 2 (qg_q6_sc) */
    __device__ __forceinline__ void frag(int u, uint32_t &lo, uint32_t &hi) const {
        const int n = u >> 2, f = u & 3; /* half of 128, field: ql low/high nibbles of bytes 0-31 / 32-63 */
        const int ql = 64 * n + 32 * (f & 1), qh = 128 + 32 * n, nsh = 4 * (f >> 1), hsh = 2 * f;
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const uint32_t v = ((wd(ql + 16 * h) >> nsh) & 0x0F0F0F0Fu) | (((wd(qh + 16 * h) >> hsh) & 0x03030303u) << 4);
            if (h == 0) lo = moe__qsub32x4(v);
            else hi = moe__qsub32x4(v);
        }
    }
};
/* Q6_K: d sc of sub-blocks 4t..4t + 3 (blocks of 32 2t and 2t + 1), lane t's
 * quarter of the super-block's 16 scales, made once a stage and shuffled to
 * the quad's lanes block by block (as qg_k45_sc; before, every lane made both
 * scales of every block for every row: a byte extract, an I2F and an FMUL
 * each) */
static __device__ __forceinline__ void qg_q6_sc(const qg_row<MOE_DF_Q6_K> &W, float ds[4]) {
#pragma unroll
    for (int k = 0; k < 4; k++) ds[k] = W.d * (float)(int8_t)(W.scw >> (8 * k));
}

/*
 * grid (row tiles, active expert slots), 128 threads, dynamic shared memory
 * NS stages of qg_sb. PH: MOE_DEC_GATE_UP, MOE_DEC_UP, MOE_DEC_DOWN.
 * a.xb: the int8 codes of the B rows ([rows, C]); xd / xs: their scales and
 * d * sums ([rows, ldx] floats); a.h: phase 1's f32 output.
 * A block's 64 TPW rows form tiles ti of 16 stage rows 16 ti .. 16 ti + 15;
 * warp w computes tiles w + 4 j (j < TPW) over the whole stage. Tile ti holds
 * weight rows rb + 16 ti + q; gated, one tile a warp: gate rows rb + 8 ti + q
 * in tile rows q < 8 and the same up rows in q >= 8; two: gate rows rb + 16 w
 * + q in tile w, the same up rows in tile w + 4. Either way a lane holds gate
 * and up of the rows it writes.
 */
template <int F, int PH, int NT, int BPS>
__global__ void __launch_bounds__(QG_THREADS, BPS) k_qg(const moe_dec_args a, const float *xd_g, const float *xs_g,
                                                      int ldx) {
    typedef qg_fmt<F> FM;
    constexpr int KU = FM::KU, BPU = FM::BPU, SBB = FM::SBB, MIN = FM::MIN, NS = qg_ns<F>(NT, BPS),
                  TOK = 8 * NT, TPW = FM::TPW, ROWS = qg_rows<F>();
    constexpr int QG_PITCH = FM::PITCH, QG_CHUNKS = FM::CH;
    constexpr bool GATED = PH == MOE_DEC_GATE_UP, MAG = NT < 4 || BPS < 3;
    constexpr int XP = qg_xpitch(KU), SB = qg_sb<F>(NT);
    extern __shared__ __align__(128) uint8_t sm[];
    __shared__ int s_xr[TOK];
    __shared__ int s_last;
    __shared__ uint32_t s_tab;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;

    dk_grid_wait();
    /* the launch after may start now (its blocks wait for this grid's end where they need its output), but
     * not the down launch after a gate/up launch that quantises h itself: its blocks would hold SMs through
     * this launch's later waves (mixtral MXFP4 T = 16, 448 row tiles an expert: 377 -> 425 us, s30 run 11);
     * the launch that quantised h before (k_qg_quant) let it start only at this grid's end */
    if (PH == MOE_DEC_DOWN || !a.hq) dk_grid_launch_dependents();
    const int n_active = *a.n_active;
    const int j = blockIdx.y;
    if (j >= n_active) return;
    const int e = a.act_e[j], p0 = a.act_off[j], p1 = a.act_off[j + 1];
    const int rows_blk = GATED ? ROWS / 2 : ROWS;
    const int row_base = blockIdx.x * rows_blk;
    const int U = a.C / 32, nst = (U + KU - 1) / KU;

    /* The copies of this thread, eight rows a stage:
     *   one tile a warp: 16 lanes a row (chunks lane % 16 and 16 + lane % 16),
     *     stage rows 16 w + 2 k + lane / 16 (its own tile);
     *   two: 8 lanes a row (chunks lane % 8 and 8 + lane % 8), stage rows 16 k +
     *     4 w + lane / 8 (session 16's mapping).
     * LPR lanes read 16 LPR contiguous bytes of a row an instruction (lane pairs
     * on 16 rows, one sector a request, left the L2 at 88% of its request rate:
     * session 16). Row k is weight row rb + r0 + ST kk of tensor k / KH (gated:
     * gate, then up; kk = k % KH). This form of the loop (session 16's and
     * session 17's first) is the one measured fastest: other forms of the same
     * copies (row offsets from the row index, chunk loops) ran 2-11% slower
     * (session 17 runs 5-8). Session 19 made the rows' sources before their
     * copies (offsets made once a block: ~60 instructions a stage instead of
     * ~350): MXFP4 0.94-0.97x, but mixtral MXFP4 T = 32 1.15x and qwen3 Q6_K
     * T = 32-64 1.05-1.10x on an H200, in every burst size tried (1, 4 and 8
     * rows), so not kept (bench/decode/s19 runs 8 and 11). */
    constexpr int LPR = TPW == 1 ? 16 : 8, ST = TPW == 1 ? 2 : 16, KH = GATED ? 4 : 8;
    const int cj = lane % LPR;
    const int r0 = TPW == 1 ? (GATED ? 8 : 16) * warp + lane / 16 : 4 * warp + lane / 8;
    const int rw0 = row_base + r0;
    const uint8_t *src0 = a.w0 + (int64_t)e * a.w0_se + (int64_t)rw0 * a.w0_sn;
    const uint8_t *src1 = GATED ? a.w1 + (int64_t)e * a.w1_se + (int64_t)rw0 * a.w1_sn : src0;
    const int64_t step0 = ST * a.w0_sn, step1 = GATED ? ST * a.w1_sn : step0;
    static_assert(QG_CHUNKS <= 2 * LPR, "two chunks a lane cover a stage row");
    /* LIN: the stage's ROWS x NCH 16-byte chunks in order over the threads
     * (consecutive lanes on consecutive chunks of a row), up to CPT a thread,
     * each a word made once a block: bits 0-19 the source offset / 16 from its
     * tensor's row rb (below 2^20: the layer takes these kernels only for row
     * strides below 128 KB, moe__qg_row_stride_ok), 20-30 the destination / 16,
     * 31 up (gated: the up half of the tiles); ~0: none. A row past N copies
     * row rb (its fragments are never stored). On 16-byte aligned rows: always
     * for Q4_K and Q5_K (weight_ok), where the data and strides allow for the
     * others (a.qg_lin; else, and for a last short stage, the loop below). Per
     * stage ~6 instructions a chunk instead of ~25 a row: ncu's stall samples
     * put half of a Q4_K block's warp time in the eight-row loop, its address
     * registers waiting on the copies issued before them (session 18).
     * Stages of b = SBB mod 16 bytes past whole chunks (MXFP4's 136: b = 8;
     * Q6_K's 210: b = 2; session 35): stage s's span starts b s (mod 16)
     * bytes into the chunk at or below it, so NCH = SBB / 16 + 1 chunks from
     * there hold it (the row staged at that offset, as the row loop stages it).
     * On rows of a multiple of 16 bytes the last stage's span ends on a chunk's
     * end (NCH 16 = SBB + 16 - b), so no byte past a row is read; that needs 16
     * to be a multiple of b, else some stage would take NCH + 1 chunks.
     * The host says where (a.qg_lin, moe__qg_linear). */
    constexpr int SBR = SBB % 16;
    constexpr bool LINF = SBR == 0 || 16 % (SBR ? SBR : 1) == 0;
    constexpr int NCH = (SBB + 15) / 16, CPT = LINF ? (ROWS * NCH + QG_THREADS - 1) / QG_THREADS : 1;
    static_assert(!LINF || ROWS * QG_PITCH / 16 < 2048, "destination in 11 bits");
    static_assert(!LINF || 16 * NCH <= QG_PITCH, "a stage row's chunks within its pitch");
    const bool lin_ok = LINF && a.qg_lin; /* moe__qg_linear */
    uint32_t lin[CPT];
    const uint8_t *lb0 = a.w0 + (int64_t)e * a.w0_se + (int64_t)row_base * a.w0_sn;
    const uint8_t *lb1 = GATED ? a.w1 + (int64_t)e * a.w1_se + (int64_t)row_base * a.w1_sn : lb0;
    if (lin_ok) {
#pragma unroll
        for (int k = 0; k < CPT; k++) {
            const int idx = tid + QG_THREADS * k, r = idx / NCH, c = idx % NCH;
            /* stage row r: tile r / 16; gated, one tile a warp: its rows q < 8 gate, the rest up */
            const bool up = GATED && (TPW == 1 ? (r & 15) >= 8 : r >= ROWS / 2);
            int rr = !GATED ? r : TPW == 1 ? 8 * (r >> 4) + (r & 7) : up ? r - ROWS / 2 : r;
            if (row_base + rr >= a.N) rr = 0;
            const int64_t so = (int64_t)rr * (up ? a.w1_sn : a.w0_sn) / 16 + c;
            lin[k] = ROWS * NCH % QG_THREADS && idx >= ROWS * NCH
                         ? ~0u
                         : (uint32_t)so | (uint32_t)((r * QG_PITCH + 16 * c) / 16) << 20 | (uint32_t)up << 31;
        }
    }
    /* MXFP4's table word from shared memory: a value ptxas can neither fold into
     * an immediate nor keep in a uniform register (from moe__mxfp4_tab_make's
     * shuffle it did, and moved it into a register before every PRMT: 4
     * instructions a fragment, session 19) */
    moe__mxfp4_tab tab = {0u, 0u, 0u};
    if constexpr (F == MOE_DF_MXFP4) {
        if (tid == 0) s_tab = MOE__MXFP4_K0;
        __syncthreads();
        tab.k0 = *(volatile uint32_t *)&s_tab;
    }

    for (int pp = p0; pp < p1; pp += TOK) {
        const int m = min(TOK, p1 - pp);
        if (tid < TOK) {
            int r = -1;
            if (tid < m) {
                const int pair = a.sorted[pp + tid];
                r = PH == MOE_DEC_DOWN ? pair : pair / a.K;
            }
            s_xr[tid] = r;
        }
        __syncthreads();

        constexpr int NKC = (TOK * 2 * KU + QG_THREADS - 1) / QG_THREADS,
                      NKS = (TOK * KU * (1 + MIN) + QG_THREADS - 1) / QG_THREADS;
        /* HX: held in registers, but by the 3-blocks-an-SM kernels of 4 token tiles
         * (168 registers: they spilled in the stage loop) */
        constexpr bool HX = !(BPS >= 3 && NT >= 4);
        int xrc[HX ? NKC : 1], xrs[HX ? NKS : 1];
        if constexpr (HX) {
#pragma unroll
            for (int k = 0; k < NKC; k++) xrc[k] = s_xr[((tid + QG_THREADS * k) / (2 * KU)) % TOK];
#pragma unroll
            for (int k = 0; k < NKS; k++) xrs[k] = s_xr[(tid + QG_THREADS * k) % TOK];
        }
        auto load_stage = [&](int s, int slot) {
            uint8_t *st = sm + slot * SB;
            const uint32_t st_s = qg_smem(st);
            const int u0 = s * KU, nu = min(KU, U - u0), bytes = nu == KU ? SBB : nu * BPU;
            if (lin_ok && (MIN || nu == KU)) {
                const int64_t sb = (int64_t)s * SBB;
                const uint8_t *b0s = lb0 + (sb & ~(int64_t)15), *b1s = lb1 + (sb & ~(int64_t)15);
#pragma unroll
                for (int k = 0; k < CPT; k++) {
                    const uint32_t v = lin[k];
                    if (ROWS * NCH % QG_THREADS && v == ~0u) break;
                    qg_cp16(st_s + 16 * ((v >> 20) & 0x7FFu), ((v >> 31) ? b1s : b0s) + 16 * (v & 0xFFFFFu), 16);
                }
                if (tid < ROWS) st[ROWS * QG_PITCH + tid] = (uint8_t)(SBR ? sb & 15 : 0); /* the offsets */
            } else
#pragma unroll
            for (int k = 0; k < (MIN ? 0 : 8); k++) {
                const int r = TPW == 1 ? 16 * warp + 2 * k + lane / 16 : 16 * k + r0;
                if (rw0 + ST * (k % KH) >= a.N) { /* a row past N: its (unused) fragments read at offset 0, aligned */
                    if (cj == 0) st[ROWS * QG_PITCH + r] = 0;
                    continue;
                }
                const uint8_t *p = (k < KH ? src0 + (k % KH) * step0 : src1 + (k % KH) * step1) + (int64_t)s * SBB;
                const int off = (int)((uintptr_t)p & 15), n16 = off + bytes; /* copy while 16 c < n16 */
                const uint8_t *pa = p - off + 16 * cj;
                const uint32_t d = st_s + r * QG_PITCH + 16 * cj;
                if (cj == 0) st[ROWS * QG_PITCH + r] = (uint8_t)off;
                if (16 * cj < n16) qg_cp16(d, pa, 16);
                if (cj + LPR < QG_CHUNKS && 16 * (cj + LPR) < n16) qg_cp16(d + 16 * LPR, pa + 16 * LPR, 16);
            }
            /* the tokens' codes (2 KU chunks a token) and scales / sums (TOK and KU powers of two) */
            const uint32_t sx = st_s + ROWS * QG_PITCH + ROWS;
            const int8_t *xq = (const int8_t *)a.xb;
            /* loops of a fixed trip count (a start at tid left a loop and its remainder),
             * the tokens' rows read from s_xr once a pass (xrc, xrs). An empty token
             * slot copies nothing: its column of every mma and of the epilogue is
             * never stored (the mma's columns are independent), and the zero-filling
             * copies it made before still sent a request each for x's first line to
             * the L2 (session 18: with half the slots empty at mixtral T = 16, ~15%
             * of the L2 reads) */
#pragma unroll
            for (int k = 0; k < NKC; k++) {
                const int idx = tid + QG_THREADS * k;
                if (TOK * 2 * KU % QG_THREADS && idx >= TOK * 2 * KU) break;
                const int n = idx / (2 * KU), c = idx % (2 * KU), xr = HX ? xrc[HX ? k : 0] : s_xr[n];
                const bool ok = xr >= 0 && c < 2 * nu;
                if (ok) qg_cp16(sx + n * XP + 16 * c, xq + (int64_t)xr * a.C + 32 * u0 + 16 * c, 16);
            }
#pragma unroll
            for (int k = 0; k < NKS; k++) {
                const int idx = tid + QG_THREADS * k;
                if (TOK * KU * (1 + MIN) % QG_THREADS && idx >= TOK * KU * (1 + MIN)) break;
                const int which = idx / (TOK * KU), u = (idx / TOK) % KU, xr = HX ? xrs[HX ? k : 0] : s_xr[idx % TOK];
                const bool ok = xr >= 0 && u < nu;
                const float *src = which ? xs_g : xd_g;
                if (ok) qg_cp4(sx + TOK * XP + 4 * idx, src + (int64_t)xr * ldx + u0 + u, 4);
            }
        };

        float acc[NT][TPW][4];
#pragma unroll
        for (int nt = 0; nt < NT; nt++)
#pragma unroll
            for (int i = 0; i < TPW; i++)
#pragma unroll
                for (int q = 0; q < 4; q++) acc[nt][i][q] = 0.f;

#pragma unroll 1
        for (int s = 0; s < NS - 1; s++) {
            if (s < nst) load_stage(s, s);
            qg_commit();
        }
        for (int s = 0; s < nst; s++) {
            qg_wait<NS - 2>();
            __syncthreads();
            if (s + NS - 1 < nst) load_stage(s + NS - 1, (s + NS - 1) % NS);
            qg_commit();

            const uint8_t *st = sm + (s % NS) * SB;
            const uint8_t *offs = st + ROWS * QG_PITCH;
            const uint8_t *sx = offs + ROWS;
            const float *sd = (const float *)(sx + TOK * XP);
            const int nu = min(KU, U - s * KU);
            const uint8_t *rw[2 * TPW];
#pragma unroll
            for (int q = 0; q < 2 * TPW; q++) {
                const int rr = 16 * (warp + 4 * (q >> 1)) + g + 8 * (q & 1);
                rw[q] = st + rr * QG_PITCH + offs[rr];
            }
            qg_row<F> W[2 * TPW];
#pragma unroll
            for (int q = 0; q < 2 * TPW; q++) W[q].prep(rw[q], t);
            /* Q4_K / Q5_K: the scales of blocks t and t + 4 of each row's super-block */
            float ksc[MIN ? 2 * TPW : 1][2], q6s[F == MOE_DF_Q6_K ? 2 * TPW : 1][4];
            if constexpr (MIN) {
#pragma unroll
                for (int q = 0; q < 2 * TPW; q++) qg_k45_sc<F>(W[q].h, t, ksc[q]);
            }
            if constexpr (F == MOE_DF_Q6_K) {
#pragma unroll
                for (int q = 0; q < 2 * TPW; q++) qg_q6_sc(W[q], q6s[q]);
            }
            float msc[F == MOE_DF_MXFP4 ? 2 * TPW : 1][2];
            if constexpr (F == MOE_DF_MXFP4) {
#pragma unroll
                for (int q = 0; q < 2 * TPW; q++) qg_mx_sc(rw[q], t, msc[q]);
            }
            auto unit = [&](int u) {
                uint32_t b0[NT], b1[NT];
                float2 xd[NT];
#pragma unroll
                for (int nt = 0; nt < NT; nt++) {
                    const uint8_t *xp = sx + (nt * 8 + g) * XP + 32 * u;
                    if (FM::NIB) { /* positions 8t..8t+7 of the nibble order (qg_row<MXFP4>) */
                        const uint2 v = *(const uint2 *)(xp + 8 * t);
                        b0[nt] = v.x;
                        b1[nt] = v.y;
                    } else {
                        b0[nt] = *(const uint32_t *)(xp + 4 * t);
                        b1[nt] = *(const uint32_t *)(xp + 16 + 4 * t);
                    }
                    xd[nt] = *(const float2 *)(sd + u * TOK + nt * 8 + 2 * t);
                }
#pragma unroll
                for (int i = 0; i < TPW; i++) {
                    uint32_t A[4];
                    float da, db;
                    if constexpr (F == MOE_DF_Q8_0 || F == MOE_DF_Q4_0) {
                        W[2 * i].frag(u, A[0], A[2]);
                        W[2 * i + 1].frag(u, A[1], A[3]);
                        da = W[2 * i].d;
                        db = W[2 * i + 1].d;
                    } else if constexpr (F == MOE_DF_MXFP4) {
                        /* positive codes on A, negative ones on N: the dot = A B - N B */
                        uint32_t N[4];
                        W[2 * i].frag_pn(u, A[0], A[2], N[0], N[2], tab);
                        W[2 * i + 1].frag_pn(u, A[1], A[3], N[1], N[3], tab);
                        da = __shfl_sync(0xffffffffu, msc[2 * i][u >> 2], u & 3, 4);
                        db = __shfl_sync(0xffffffffu, msc[2 * i + 1][u >> 2], u & 3, 4);
#pragma unroll
                        for (int nt = 0; nt < NT; nt++) {
                            int c[4], cn[4];
                            qg_mma<true, MAG>(c, A[0], A[1], A[2], A[3], b0[nt], b1[nt]);
                            qg_mma<true, MAG>(cn, N[0], N[1], N[2], N[3], b0[nt], b1[nt]);
                            acc[nt][i][0] += qg_cf2<MAG>(c[0], cn[0]) * (da * xd[nt].x);
                            acc[nt][i][1] += qg_cf2<MAG>(c[1], cn[1]) * (da * xd[nt].y);
                            acc[nt][i][2] += qg_cf2<MAG>(c[2], cn[2]) * (db * xd[nt].x);
                            acc[nt][i][3] += qg_cf2<MAG>(c[3], cn[3]) * (db * xd[nt].y);
                        }
                    } else if constexpr (F == MOE_DF_Q6_K) {
                        /* two m16n8k16 a block of 32: sub-block 2u on b0, 2u + 1 on b1 */
                        W[2 * i].frag(u, A[0], A[2]);
                        W[2 * i + 1].frag(u, A[1], A[3]);
                        const int ks = 2 * (u & 1);
                        da = __shfl_sync(0xffffffffu, q6s[2 * i][ks], u >> 1, 4);
                        const float sa1 = __shfl_sync(0xffffffffu, q6s[2 * i][ks + 1], u >> 1, 4);
                        db = __shfl_sync(0xffffffffu, q6s[2 * i + 1][ks], u >> 1, 4);
                        const float sb1 = __shfl_sync(0xffffffffu, q6s[2 * i + 1][ks + 1], u >> 1, 4);
#pragma unroll
                        for (int nt = 0; nt < NT; nt++) {
                            int c[4], c1[4];
                            qg_mma_k16<MAG>(c, A[0], A[1], b0[nt]);
                            qg_mma_k16<MAG>(c1, A[2], A[3], b1[nt]);
                            acc[nt][i][0] += (qg_cf<MAG>(c[0]) * da + qg_cf<MAG>(c1[0]) * sa1) * xd[nt].x;
                            acc[nt][i][1] += (qg_cf<MAG>(c[1]) * da + qg_cf<MAG>(c1[1]) * sa1) * xd[nt].y;
                            acc[nt][i][2] += (qg_cf<MAG>(c[2]) * db + qg_cf<MAG>(c1[2]) * sb1) * xd[nt].x;
                            acc[nt][i][3] += (qg_cf<MAG>(c[3]) * db + qg_cf<MAG>(c1[3]) * sb1) * xd[nt].y;
                        }
                    } else {
                        /* block u's scale of rows g and g + 8 from quad lane u % 4 */
                        W[2 * i].codes(u, A[0], A[2]);
                        W[2 * i + 1].codes(u, A[1], A[3]);
                        da = __shfl_sync(0xffffffffu, ksc[2 * i][u >> 2], u & 3, 4);
                        db = __shfl_sync(0xffffffffu, ksc[2 * i + 1][u >> 2], u & 3, 4);
                    }
#pragma unroll
                    for (int nt = 0; nt < (F == MOE_DF_Q6_K || F == MOE_DF_MXFP4 ? 0 : NT); nt++) {
                        int c[4];
                        qg_mma<MIN != 0, MAG>(c, A[0], A[1], A[2], A[3], b0[nt], b1[nt]);
                        acc[nt][i][0] += qg_cf<MAG>(c[0]) * (da * xd[nt].x);
                        acc[nt][i][1] += qg_cf<MAG>(c[1]) * (da * xd[nt].y);
                        acc[nt][i][2] += qg_cf<MAG>(c[2]) * (db * xd[nt].x);
                        acc[nt][i][3] += qg_cf<MAG>(c[3]) * (db * xd[nt].y);
                    }
                }
            };
            if (F == MOE_DF_Q4_K || F == MOE_DF_Q5_K || F == MOE_DF_Q6_K || nu == KU) {
                /* every stage but maybe the last of a 32-element format (the K-quants'
                 * rows are whole super-blocks): the blocks' offsets are constants */
#pragma unroll
                for (int u = 0; u < KU; u++) unit(u);
            } else if constexpr (F == MOE_DF_MXFP4) {
                /* the short last stage unrolled too: frag_pn takes constant blocks */
#pragma unroll
                for (int u = 0; u < KU; u++)
                    if (u < nu) unit(u);
            } else {
                for (int u = 0; u < nu; u++) unit(u);
            }
            if constexpr (MIN != 0) {
                /* the super-block's mins: acc -= dmin (mn x the tokens' d sum(q)) over its 8
                 * blocks, one tf32 mma on the rounded sums and one on their remainders
                 * (together ~2^-22 of each sum, as the f32 products they replace) */
                float kdm[2 * TPW];
                uint32_t kmn[2 * TPW][2];
#pragma unroll
                for (int q = 0; q < 2 * TPW; q++) qg_k45_mn((const uint32_t *)rw[q], t, kmn[q], kdm[q]);
#pragma unroll
                for (int nt = 0; nt < NT; nt++) {
                    const float x0 = sd[TOK * KU + t * TOK + nt * 8 + g], x1 = sd[TOK * KU + (t + 4) * TOK + nt * 8 + g];
                    const uint32_t h0 = qg_tf32(x0), h1 = qg_tf32(x1);
                    const uint32_t l0 = qg_tf32(x0 - __uint_as_float(h0)), l1 = qg_tf32(x1 - __uint_as_float(h1));
#pragma unroll
                    for (int i = 0; i < TPW; i++) {
                        float mm[4] = {0.f, 0.f, 0.f, 0.f};
                        qg_mma_tf32(mm, kmn[2 * i][0], kmn[2 * i + 1][0], kmn[2 * i][1], kmn[2 * i + 1][1], h0, h1);
                        qg_mma_tf32(mm, kmn[2 * i][0], kmn[2 * i + 1][0], kmn[2 * i][1], kmn[2 * i + 1][1], l0, l1);
                        acc[nt][i][0] -= kdm[2 * i] * mm[0];
                        acc[nt][i][1] -= kdm[2 * i] * mm[1];
                        acc[nt][i][2] -= kdm[2 * i + 1] * mm[2];
                        acc[nt][i][3] -= kdm[2 * i + 1] * mm[3];
                    }
                }
            }
        }
        qg_wait<0>();
        /* phase 1 with a.hq: h goes through shared memory (the ring, done with once every warp is here),
         * [token][row of the block], and is quantised below, the block holding whole blocks of 32 rows */
        constexpr int HROWS = GATED ? ROWS / 2 : ROWS;
        static_assert(PH == MOE_DEC_DOWN || NS * SB >= TOK * HROWS * 4, "h of a pass fits in the ring");
        float *hs = (float *)sm;
        const bool hq = PH != MOE_DEC_DOWN && a.hq;
        if (hq) __syncthreads();

        /* epilogue: lane holds rows g and g + 8 of tiles w + 4 i, tokens nt * 8 + 2t, + 1 */
#pragma unroll
        for (int nt = 0; nt < NT; nt++)
#pragma unroll
            for (int q = 0; q < 4; q++) {
                const int ci = nt * 8 + 2 * t + (q & 1);
                if (ci >= m) continue;
                const int pair = a.sorted[pp + ci];
#pragma unroll
                for (int i = 0; i < TPW; i++) {
                    const int ti = warp + 4 * i;
                    if (GATED) {
                        /* one tile a warp: tile rows g (gate) and g + 8 (up) are weight row
                         * rb + 8 w + g; two: tile w holds gate rows rb + 16 w + q, tile w + 4
                         * the same up rows */
                        if (TPW == 1 ? q >= 2 : i > 0) continue;
                        const int row = TPW == 1 ? row_base + 8 * warp + g : row_base + 16 * warp + g + (q >> 1) * 8;
                        if (row >= a.N) continue;
                        float gv = acc[nt][0][q], uv = TPW == 1 ? acc[nt][0][q + 2] : acc[nt][TPW - 1][q];
                        if (a.b0) gv += dk_bias(a.b0, a.b0_type, (int64_t)e * a.b0_se + (int64_t)row * a.b0_sn);
                        if (a.b1) uv += dk_bias(a.b1, a.b1_type, (int64_t)e * a.b1_se + (int64_t)row * a.b1_sn);
                        const float hv = dk_act(a.act, gv, uv, a.alpha, a.limit);
                        if (hq) hs[ci * HROWS + row - row_base] = hv;
                        else ((float *)a.h)[(int64_t)pair * a.N + row] = hv;
                    } else {
                        const int row = row_base + 16 * ti + g + (q >> 1) * 8;
                        if (row >= a.N) continue;
                        float v = acc[nt][i][q];
                        if (a.b0) v += dk_bias(a.b0, a.b0_type, (int64_t)e * a.b0_se + (int64_t)row * a.b0_sn);
                        if (PH == MOE_DEC_DOWN) a.y[(int64_t)pair * a.N + row] = a.w[pair] * v;
                        else if (hq) hs[ci * HROWS + row - row_base] = dk_act(a.act, 0.f, v, a.alpha, a.limit);
                        else ((float *)a.h)[(int64_t)pair * a.N + row] = dk_act(a.act, 0.f, v, a.alpha, a.limit);
                    }
                }
            }
        if (hq) { /* a thread a (token, block of 32 rows): as k_qg_quant, bit for bit */
            __syncthreads();
            constexpr int NB = HROWS / 32;
            for (int it = tid; it < m * NB; it += QG_THREADS) {
                const int ci = it / NB, b = it - ci * NB, row = row_base + 32 * b;
                if (row >= a.N) continue;
                const int64_t pair = a.sorted[pp + ci];
                float f[32];
#pragma unroll
                for (int k = 0; k < 32; k++) f[k] = hs[ci * HROWS + 32 * b + k];
                qg_put_q32(f, a.hq_nib, a.hq + pair * a.N + row, a.hqd + pair * a.hq_ldx + row / 32,
                           a.hqs + pair * a.hq_ldx + row / 32);
            }
        }
        __syncthreads(); /* the next pass refills the ring and s_xr */
    }

    if (PH == MOE_DEC_DOWN) {
        /* the last expert block of this row tile sums the slots of every token */
        __syncthreads();
        if (tid == 0) {
            __threadfence();
            const unsigned prev = atomicAdd(a.counters + blockIdx.x, 1u);
            s_last = prev == (unsigned)(n_active - 1);
        }
        __syncthreads();
        if (s_last) {
            __threadfence();
            for (int idx = tid; idx < a.T * ROWS; idx += QG_THREADS) {
                const int tt = idx / ROWS, n = row_base + (idx - tt * ROWS);
                if (n >= a.N) continue;
                float s = 0.f;
                for (int k = 0; k < a.K; k++) {
                    const int id = a.ids[(int64_t)tt * a.K + k];
                    if ((unsigned)id >= (unsigned)a.E) continue;
                    s += __ldcg(a.y + ((int64_t)tt * a.K + k) * a.N + n);
                }
                dk_store_out(a.out, a.out_type, (int64_t)tt * a.N + n, s);
            }
            if (tid == 0) a.counters[blockIdx.x] = 0;
        }
    }
}
#else
template <int F, int PH, int NT, int BPS>
__global__ void k_qg(const moe_dec_args, const float *, const float *, int) {}
#endif

/* rows [R, C] of type `type` (MOE_TYPE_*) -> int8 blocks of 32: q [R, C],
 * d [R, ldx], d * sum(q) [R, ldx] (moe_qx_quantize32); nib: q in MXFP4's
 * nibble order (moe_qx_nib_order). One thread a block of 32. */
static __global__ void __launch_bounds__(256) k_qg_quant(const void *src, int type, int R, int C, int8_t *q,
                                                         float *d, float *s, int ldx, int nib, int pdl) {
    if (pdl) {
        dk_grid_wait();
        dk_grid_launch_dependents();
    }
    const int U = C / 32;
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (int64_t)R * U) return;
    const int64_t r = i / U, u = i - r * U;
    float f[32];
    const int64_t base = r * C + 32 * u;
    if (type == MOE_TYPE_F32) {
        const float4 *p = (const float4 *)((const float *)src + base);
#pragma unroll
        for (int k = 0; k < 8; k++) {
            const float4 v = p[k];
            f[4 * k] = v.x; f[4 * k + 1] = v.y; f[4 * k + 2] = v.z; f[4 * k + 3] = v.w;
        }
    } else {
        const uint4 *p = (const uint4 *)((const uint16_t *)src + base);
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const uint4 v = p[k];
            const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
            for (int h = 0; h < 4; h++) {
                const unsigned short lo = (unsigned short)(w[h] & 0xffffu), hi = (unsigned short)(w[h] >> 16);
                if (type == MOE_TYPE_BF16) {
                    f[8 * k + 2 * h] = __bfloat162float(__ushort_as_bfloat16(lo));
                    f[8 * k + 2 * h + 1] = __bfloat162float(__ushort_as_bfloat16(hi));
                } else {
                    f[8 * k + 2 * h] = __half2float(__ushort_as_half(lo));
                    f[8 * k + 2 * h + 1] = __half2float(__ushort_as_half(hi));
                }
            }
        }
    }
    qg_put_q32(f, nib, q + base, d + r * ldx + u, s + r * ldx + u);
}

int moe__qg_fmt_ok(int fmt) {
    return fmt == MOE_DF_Q8_0 || fmt == MOE_DF_Q4_0 || fmt == MOE_DF_Q4_K || fmt == MOE_DF_Q5_K ||
           fmt == MOE_DF_Q6_K || fmt == MOE_DF_MXFP4;
}

template <int F> static size_t qg_smem_f(int nt, int bps) {
    return (size_t)(nt <= 1 ? qg_ns<F>(1, bps) * qg_sb<F>(1)
                    : nt == 2 ? qg_ns<F>(2, bps) * qg_sb<F>(2) : qg_ns<F>(4, bps) * qg_sb<F>(4));
}

int moe__qg_rows(int fmt) {
    switch (fmt) {
    case MOE_DF_Q8_0: return qg_rows<MOE_DF_Q8_0>();
    case MOE_DF_Q4_K: return qg_rows<MOE_DF_Q4_K>();
    case MOE_DF_MXFP4: return qg_rows<MOE_DF_MXFP4>();
    case MOE_DF_Q6_K: return qg_rows<MOE_DF_Q6_K>();
    case MOE_DF_Q4_0: return qg_rows<MOE_DF_Q4_0>();
    case MOE_DF_Q5_K: return qg_rows<MOE_DF_Q5_K>();
    }
    return 0;
}

size_t moe__qg_smem(int fmt, int nt, int bps) {
    switch (fmt) {
    case MOE_DF_Q8_0: return qg_smem_f<MOE_DF_Q8_0>(nt, bps);
    case MOE_DF_Q4_K: return qg_smem_f<MOE_DF_Q4_K>(nt, bps);
    case MOE_DF_MXFP4: return qg_smem_f<MOE_DF_MXFP4>(nt, bps);
    case MOE_DF_Q6_K: return qg_smem_f<MOE_DF_Q6_K>(nt, bps);
    case MOE_DF_Q4_0: return qg_smem_f<MOE_DF_Q4_0>(nt, bps);
    case MOE_DF_Q5_K: return qg_smem_f<MOE_DF_Q5_K>(nt, bps);
    }
    return 0;
}

cudaError_t moe__qg_quant(const void *src, int type, int R, int C, int8_t *q, float *d, float *s, int ldx, int fmt,
                          int pdl, cudaStream_t st) {
    const int64_t n = (int64_t)R * (C / 32);
    if (n == 0) return cudaSuccess;
    cudaLaunchConfig_t cfg;
    cudaLaunchAttribute at;
    dk_launch_config(&cfg, &at, dim3((unsigned)((n + 255) / 256)), 256, 0, st, pdl);
    return cudaLaunchKernelEx(&cfg, k_qg_quant, src, type, R, C, q, d, s, ldx, (int)(fmt == MOE_DF_MXFP4), pdl);
}

template <int F, int PH, int NT, int BPS>
static cudaError_t qg_launch_one(const moe_dec_args *a, const float *xd, const float *xs, int ldx, dim3 grid,
                                 cudaStream_t s) {
    cudaLaunchConfig_t cfg;
    cudaLaunchAttribute at;
    dk_launch_config(&cfg, &at, grid, QG_THREADS, moe__qg_smem(F, NT, BPS), s, a->pdl);
    return cudaLaunchKernelEx(&cfg, k_qg<F, PH, NT, BPS>, *a, xd, xs, ldx);
}

/* the dynamic shared memory of every instance of format F on the current device */
template <int F, int BPS> static cudaError_t qg_prep_fmt(int optin) {
    void *fns[] = {(void *)k_qg<F, MOE_DEC_GATE_UP, 1, BPS>, (void *)k_qg<F, MOE_DEC_GATE_UP, 2, BPS>,
                   (void *)k_qg<F, MOE_DEC_GATE_UP, 4, BPS>, (void *)k_qg<F, MOE_DEC_UP, 1, BPS>,
                   (void *)k_qg<F, MOE_DEC_UP, 2, BPS>,      (void *)k_qg<F, MOE_DEC_UP, 4, BPS>,
                   (void *)k_qg<F, MOE_DEC_DOWN, 1, BPS>,    (void *)k_qg<F, MOE_DEC_DOWN, 2, BPS>,
                   (void *)k_qg<F, MOE_DEC_DOWN, 4, BPS>};
    const int nts[] = {1, 2, 4, 1, 2, 4, 1, 2, 4};
    cudaError_t e = cudaSuccess;
    for (int i = 0; i < 9 && e == cudaSuccess; i++) {
        const int need = (int)moe__qg_smem(F, nts[i], BPS);
        cudaFuncAttributes fa;
        e = cudaFuncGetAttributes(&fa, fns[i]);
        if (e != cudaSuccess) break;
        if (need + (int)fa.sharedSizeBytes > optin) return cudaErrorInvalidConfiguration;
        e = cudaFuncSetAttribute(fns[i], cudaFuncAttributeMaxDynamicSharedMemorySize, need);
    }
    return e;
}

cudaError_t moe__qg_prepare(int fmt) {
    int dev = 0, optin = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
    if (e != cudaSuccess) return e;
    switch (fmt) {
    case MOE_DF_Q8_0:
        e = qg_prep_fmt<MOE_DF_Q8_0, 2>(optin);
        return e == cudaSuccess ? qg_prep_fmt<MOE_DF_Q8_0, 3>(optin) : e;
    case MOE_DF_Q4_K:
        e = qg_prep_fmt<MOE_DF_Q4_K, 2>(optin);
        return e == cudaSuccess ? qg_prep_fmt<MOE_DF_Q4_K, 3>(optin) : e;
    case MOE_DF_MXFP4:
        e = qg_prep_fmt<MOE_DF_MXFP4, 2>(optin);
        return e == cudaSuccess ? qg_prep_fmt<MOE_DF_MXFP4, 3>(optin) : e;
    case MOE_DF_Q6_K: return qg_prep_fmt<MOE_DF_Q6_K, 2>(optin);
    case MOE_DF_Q4_0:
        e = qg_prep_fmt<MOE_DF_Q4_0, 2>(optin);
        return e == cudaSuccess ? qg_prep_fmt<MOE_DF_Q4_0, 3>(optin) : e;
    case MOE_DF_Q5_K: return qg_prep_fmt<MOE_DF_Q5_K, 2>(optin);
    }
    return cudaErrorInvalidValue;
}

template <int F, int NT, int BPS>
static cudaError_t qg_launch_ph(int ph, const moe_dec_args *a, const float *xd, const float *xs, int ldx, dim3 grid,
                                cudaStream_t s) {
    if (ph == MOE_DEC_GATE_UP) return qg_launch_one<F, MOE_DEC_GATE_UP, NT, BPS>(a, xd, xs, ldx, grid, s);
    if (ph == MOE_DEC_UP) return qg_launch_one<F, MOE_DEC_UP, NT, BPS>(a, xd, xs, ldx, grid, s);
    return qg_launch_one<F, MOE_DEC_DOWN, NT, BPS>(a, xd, xs, ldx, grid, s);
}

template <int F, int BPS>
static cudaError_t qg_launch_nt(int ph, int nt, const moe_dec_args *a, const float *xd, const float *xs, int ldx,
                                dim3 grid, cudaStream_t s) {
    if (nt <= 1) return qg_launch_ph<F, 1, BPS>(ph, a, xd, xs, ldx, grid, s);
    if (nt == 2) return qg_launch_ph<F, 2, BPS>(ph, a, xd, xs, ldx, grid, s);
    return qg_launch_ph<F, 4, BPS>(ph, a, xd, xs, ldx, grid, s);
}

template <int F>
static cudaError_t qg_launch_fmt(int ph, int nt, int bps, const moe_dec_args *a, const float *xd, const float *xs,
                                 int ldx, dim3 grid, cudaStream_t s) {
    if constexpr (F == MOE_DF_Q6_K || F == MOE_DF_Q5_K) /* two only (rows 208-240 bytes apart): moe__qg_bps */
        return qg_launch_nt<F, 2>(ph, nt, a, xd, xs, ldx, grid, s);
    else
        return bps >= 3 ? qg_launch_nt<F, 3>(ph, nt, a, xd, xs, ldx, grid, s)
                        : qg_launch_nt<F, 2>(ph, nt, a, xd, xs, ldx, grid, s);
}

/* k_qg's linear stage copies (LIN) for format F's weights w0 (and w1 where gated): Q4_K and Q5_K always
 * (their rows are whole 144- and 176-byte super-blocks, 16-byte aligned: weight_ok); the others where the
 * data and the strides are 16-byte aligned, MXFP4 and Q6_K (stages 8 and 2 bytes past whole chunks) only
 * with knob set (MOE_QG_LIN, default 1) */
template <int F> static int qg_linear_fmt(int knob, const moe_dec_args *a, int gated) {
    if (qg_fmt<F>::MIN) return 1;
    if (qg_fmt<F>::SBB % 16 && !knob) return 0;
    uintptr_t al = (uintptr_t)a->w0 | (uintptr_t)a->w0_se | (uintptr_t)a->w0_sn;
    if (gated) al |= (uintptr_t)a->w1 | (uintptr_t)a->w1_se | (uintptr_t)a->w1_sn;
    return !(al & 15);
}
int moe__qg_linear(int fmt, int knob, const moe_dec_args *a, int gated) {
    switch (fmt) {
    case MOE_DF_Q8_0: return qg_linear_fmt<MOE_DF_Q8_0>(knob, a, gated);
    case MOE_DF_Q4_0: return qg_linear_fmt<MOE_DF_Q4_0>(knob, a, gated);
    case MOE_DF_Q4_K: return qg_linear_fmt<MOE_DF_Q4_K>(knob, a, gated);
    case MOE_DF_Q5_K: return qg_linear_fmt<MOE_DF_Q5_K>(knob, a, gated);
    case MOE_DF_Q6_K: return qg_linear_fmt<MOE_DF_Q6_K>(knob, a, gated);
    case MOE_DF_MXFP4: return qg_linear_fmt<MOE_DF_MXFP4>(knob, a, gated);
    default: return 0;
    }
}

cudaError_t moe__qg_launch(int fmt, int ph, int nt, int bps, const moe_dec_args *a, const float *xd, const float *xs,
                           int ldx, dim3 grid, cudaStream_t s) {
    switch (fmt) {
    case MOE_DF_Q8_0: return qg_launch_fmt<MOE_DF_Q8_0>(ph, nt, bps, a, xd, xs, ldx, grid, s);
    case MOE_DF_Q4_K: return qg_launch_fmt<MOE_DF_Q4_K>(ph, nt, bps, a, xd, xs, ldx, grid, s);
    case MOE_DF_MXFP4: return qg_launch_fmt<MOE_DF_MXFP4>(ph, nt, bps, a, xd, xs, ldx, grid, s);
    case MOE_DF_Q6_K: return qg_launch_fmt<MOE_DF_Q6_K>(ph, nt, bps, a, xd, xs, ldx, grid, s);
    case MOE_DF_Q4_0: return qg_launch_fmt<MOE_DF_Q4_0>(ph, nt, bps, a, xd, xs, ldx, grid, s);
    case MOE_DF_Q5_K: return qg_launch_fmt<MOE_DF_Q5_K>(ph, nt, bps, a, xd, xs, ldx, grid, s);
    }
    return cudaErrorInvalidValue;
}
