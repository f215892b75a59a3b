/*
 * The Hopper grouped GEMM on GGUF-quantised weights: the GEMMs of cuda-quant's
 * prefill path (decode.cu) for every GGUF type of the library (Q4_0, Q8_0,
 * Q2_K..Q6_K, MXFP4), without dequantising the experts into the workspace
 * first. Two kernels (layer.cu moe__cuda_sm90_bm picks one by pairs an expert;
 * MOE_SM90_QS forces it; all but Q8_0 and Q4_K, and rows in TMA groups, below,
 * run the second only):
 *
 * gemm_sm90_q (BM 128, for 64-127 pairs an expert): gemm_sm90.cuh's kernel with
 * quantised B. Per k-block TMA brings the B tile's raw bytes, 256 rows of GGUF
 * blocks, into a small ring; the producer warpgroup decodes them into the
 * stage's B tile, 128B-swizzled as TMA would have written it, and the consumer
 * warpgroups run unchanged.
 *
 * gemm_sm90_qs (gemm_sm90_qs.cuh, shared with bf16/f16 weights in
 * gemm_sm90_qd.cu; its GGUF instances here: 256 tokens a tile from 128 pairs
 * an expert, 64 below 64): the weights as wgmma's A operand, decoded by the
 * consumer threads straight into registers (Sm90Quant<QF>::frag below), the
 * tokens as B from shared memory.
 *
 * Both use the decode kernels' scale handling (decode_kernels.h) and one FFMA
 * a weight (mag_q8, mag_q4 below): a Q8_0 weight is the very bf16/f16 value
 * the dequantising path writes; a Q4_K weight carries one more f32 rounding
 * (at most 2^-17 of a quantisation step), so about 0.8% of them differ from
 * it by one bf16 unit (bench/decode/s21/check_decode_math.c). The quantised bytes are read once
 * per m-tile (from L2 after the first), the dequantised copy never exists.
 *
 * Raw boxes (3-D maps over [E, N, row bytes], moe__cuda_quant_tmap; 128-row
 * boxes for gemm_sm90_q, 64-row for gemm_sm90_qs):
 *   Q8_0: one box of 80 bytes a row from the 16-byte boundary at or below byte
 *     68 kb (TMA boxes start on 16-byte boundaries): blocks 2 kb and 2 kb + 1
 *     (34 bytes each: f16 scale, 32 int8), 4 (kb % 4) bytes into the box;
 *   Q4_K: three boxes of 16 bytes a row: the super-block's header (d, dmin,
 *     12 bytes of 6-bit scales and mins) at 144 (kb / 4), and the 32 code bytes
 *     of sub-blocks 2 (kb % 4) and 2 (kb % 4) + 1 at 144 (kb / 4) + 16 + 32 (kb % 4).
 * TMA needs 16-byte aligned data and byte strides that are multiples of 16:
 * always so for Q4_K, for Q8_0 when D and I are multiples of 256. Other Q8_0
 * rows with an even number of blocks (D, I multiples of 64: gpt-oss's 2880
 * makes 3060-byte rows, interleaved gate/up 6120-byte strides and up 3060
 * bytes past an aligned start) go through a map from the 16-byte boundary
 * below the data over groups of 4 or 2 rows, one box a row of the group
 * (Sm90Quant<Q8_0>::load_g), for gemm_sm90_qs only; moe__cuda_sm90_quant
 * (layer.cu) checks the rows and makes the maps. The other formats: at their
 * Sm90Quant below.
 * Measurements: bench/decode/README.md and src/cuda/NOTES_decode.md, session 20.
 */
#include "common.cuh"
#include "cuda_backends.h"
#include "decode_kernels.h"
#include "gemm_sm90.cuh"
#include "gemm_sm90_qs.cuh"

#include <stdio.h>
#include <string.h>

static_assert(SM90_QF_Q8_0 == MOE_DF_Q8_0 && SM90_QF_Q4_K == MOE_DF_Q4_K && SM90_QF_MXFP4 == MOE_DF_MXFP4 &&
                  SM90_QF_Q5_K == MOE_DF_Q5_K && SM90_QF_Q6_K == MOE_DF_Q6_K && SM90_QF_Q4_0 == MOE_DF_Q4_0 &&
                  SM90_QF_Q2_K == MOE_DF_Q2_K && SM90_QF_Q3_K == MOE_DF_Q3_K,
              "gemm_sm90.cuh's format numbers");

#ifdef MOE_SM90A
/* Integer codes as floats by a byte permute against a float's exponent bits
 * (no I2F), so that one FFMA makes the weight:
 * Q8_0: a code byte xor 0x80 (u = q + 128) placed in bits 8-15 under 0x47 is
 *   the float 2^15 + u, and fma(f, d, -32896 d) = q d exactly: 32896 d has 20
 *   significant bits (32896 = 2^7 257, d an f16), q d at most 19. So the weight
 *   is d * q as the format decoders make it (decode_kernels.h FmtQ8_0::dq).
 * Q4_K: a nibble (a byte 0..15) in bits 16-23 under 0x43 is the float 128 + q,
 *   and fma(f, dl, -(128 dl + ml)) = dl q - ml with one more rounding (of
 *   128 dl + ml, at most 2^-17 dl: 1/131072 of a quantisation step) than
 *   FmtQ4_K::dq, far below the bf16 rounding that follows. */
static __device__ __forceinline__ float mag_q8(uint32_t u, int j) {
    return __int_as_float(__byte_perm(u, 0x47000000u, 0x7404 | (j << 4)));
}
static __device__ __forceinline__ float mag_q4(uint32_t n, int j) {
    return __int_as_float(__byte_perm(n, 0x43000000u, 0x7044 | (j << 8)));
}
template <typename T>
static __device__ __forceinline__ void sts_piece(uint32_t dst, int s, int r, const float f[8]) {
    sts128(dst + ((s ^ (r & 7)) << 4),
           make_uint4(dk_pack<T>(f[0], f[1]), dk_pack<T>(f[2], f[3]), dk_pack<T>(f[4], f[5]), dk_pack<T>(f[6], f[7])));
}

/* gemm_sm90_qs's raw boxes of 64 rows in TMA row groups (Sm90Quant load_g,
 * rk; moe_cuda_gemm qlg, qmq, qsn, qa0): boxes of RB bytes, units of U bytes
 * (16 / U in 16 bytes), k-blocks of KB bytes (KB / U = 1 mod 16 / U, so a
 * k-block moves a row's place in its box by one unit). Box j of a group
 * (rows r = j mod 2^lg, 64 / 2^lg of them) starts at the 16-byte boundary at
 * or below byte U a0 + j sn + KB kb of the group; row r's blocks then sit
 * U ((a0 + mq r + S kb) mod 16 / U) bytes into its box (S = KB / U mod 16 / U:
 * one unit on, or one back for Q3_K). rk: the row's box offset in the box set
 * (a multiple of 16) plus (a0 + mq r) mod 16 / U. The K-quants' super-blocks
 * (Q2_K, Q3_K) take this per super-block: kb is then the super-block. */
template <int RB, int U, int KB> struct QsGroups {
    static constexpr int S = (KB / U) % (16 / U);
    static_assert(RB % 16 == 0 && (S == 1 || S == 16 / U - 1), "boxes of whole 16 bytes, blocks one unit on or back");
    static __device__ __forceinline__ void load(uint32_t dst, const CUtensorMap *tm, int kb, int row, int e,
                                                uint32_t bar, int lg, int mq, int a0, int sn) {
        for (int j = 0; j < (1 << lg); j++)
            tma_3d(dst + j * (RB << (6 - lg)), tm,
                   U * a0 + j * sn + KB * kb - U * ((a0 + mq * j + S * kb) & (16 / U - 1)), row >> lg, e, bar);
    }
    /* the byte of the row's blocks of step kb in its box set (rw = rk(r)) */
    static __device__ __forceinline__ uint32_t at(uint32_t raw, uint32_t rw, int kb) {
        return raw + (rw & ~(uint32_t)(16 / U - 1)) + U * ((rw + S * kb) & (16 / U - 1));
    }
    static __device__ __forceinline__ uint32_t rk(int r, int lg, int mq, int a0) {
        return (uint32_t)((((r & ((1 << lg) - 1)) << (6 - lg)) + (r >> lg)) * RB) | ((a0 + mq * r) & (16 / U - 1));
    }
};

/* gemm_sm90_qs's loads of a format whose rows go through QsGroups, one box a
 * row: steps of a k-block (SB = 1) or of a super-block of four (SB = 4) */
template <int RB_, int U, int KB, int SB> struct QsRows {
    static constexpr int RB = RB_;
    using G = QsGroups<RB_, U, KB>;
    static __device__ __forceinline__ void load_g(uint32_t dst, const CUtensorMap *tm, const CUtensorMap *, int kb,
                                                  int row, int e, uint32_t bar, int lg, int mq, int a0, int sn) {
        G::load(dst, tm, kb / SB, row, e, bar, lg, mq, a0, sn);
    }
    static __device__ __forceinline__ uint32_t rk(int r, int lg, int mq, int a0) { return G::rk(r, lg, mq, a0); }
};

/* Q8_0: a k-block's two blocks are the 68 bytes at 68 kb of the row. TMA boxes
 * start at multiples of 16 bytes, so the box of 80 bytes starts at
 * 68 kb - 4 (kb % 4) (68 = 4 mod 16) and the blocks sit (kb % 4) words in. */
template <> struct Sm90Quant<SM90_QF_Q8_0> : QsRows<80, 4, 68, 1> {
    static __device__ __forceinline__ int x0(int kb) { return 68 * kb - 4 * (kb & 3); }
    template <int ROWS = 128>
    static __device__ __forceinline__ void load(uint32_t dst, const CUtensorMap *tm, int kb, int row, int e,
                                                uint32_t bar) {
        tma_3d(dst, tm, x0(kb), row, e, bar);
    }
    /* gemm_sm90_qs's 64 rows from row `row` (a multiple of 64), in general
     * (moe_cuda_gemm qlg, qmq, qsn, qa0): rows sn bytes apart, sn = 4 mq (mod
     * 16), whose first starts a0 words past a 16-byte boundary, through a map
     * from that boundary over groups of 2^lg rows (2^lg sn a multiple of 16:
     * lg = 2 for mq odd, 1 for mq = 2, else 0; moe__cuda_quant_tmap), one box
     * a row j of the group (j = r mod 2^lg, boxes of 64 / 2^lg groups) from the
     * 16-byte boundary at or below byte 4 a0 + j sn + 68 kb. Row r's blocks then
     * sit 4 ((a0 + mq r + kb) % 4) bytes into its 80, its box a multiple of 16
     * bytes into the box set: one word for both (rk: the box's offset plus
     * (a0 + mq r) % 4): QsRows' load_g and rk (RB = 80). */
    /* gemm_sm90_qs: row r's 16 weights of wgmma A fragments, as bf16/f16 pairs:
     * p[2 kk + h] = columns 16 kk + 8 h + 2 q, + 1 (q = lane % 4); rw = rk(r) */
    template <typename T>
    static __device__ __forceinline__ void frag(uint32_t raw, uint32_t rw, int kb, int q, uint32_t p[8]) {
        const uint32_t base = G::at(raw, rw, kb);
        const float d[2] = {dq_h2f(lds16(base)), dq_h2f(lds16(base + 34))};
        const float c[2] = {-32896.0f * d[0], -32896.0f * d[1]};
#pragma unroll
        for (int kk = 0; kk < 4; kk++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int b = kk >> 1;
                const uint32_t x = lds16(base + 2 + 34 * b + 16 * (kk & 1) + 8 * h + 2 * q) ^ 0x8080u;
                p[2 * kk + h] = dk_pack<T>(fmaf(mag_q8(x, 0), d[b], c[b]), fmaf(mag_q8(x, 1), d[b], c[b]));
            }
    }
    /* the 20 words of row r's box, the blocks from word Q: block 0's f16 scale
     * at byte 0 and codes at 2 (realigned), block 1's at 34 and 36. Codes
     * biased by 128 (xor), 2^15 + 128 + q made by the permute. */
    template <int Q, typename T> static __device__ __forceinline__ void row_q(const uint32_t *v, int r, uint32_t dst) {
        const uint32_t *w = v + Q;
        const float d[2] = {dq_h2f(w[0] & 0xffffu), dq_h2f(w[8] >> 16)};
        const float c[2] = {-32896.0f * d[0], -32896.0f * d[1]};
#pragma unroll
        for (int s = 0; s < 8; s++) {
            const int bb = s >> 2, i = 2 * (s & 3);
            uint32_t q[2];
#pragma unroll
            for (int h = 0; h < 2; h++)
                q[h] = (bb ? w[9 + i + h] : __byte_perm(w[i + h], w[i + h + 1], 0x5432)) ^ 0x80808080u;
            float f[8];
#pragma unroll
            for (int j = 0; j < 8; j++) f[j] = fmaf(mag_q8(q[j >> 2], j & 3), d[bb], c[bb]);
            sts_piece<T>(dst, s, r, f);
        }
    }
    template <typename T> static __device__ __forceinline__ void row(uint32_t raw, int r, int kb, uint32_t dst) {
        uint32_t v[20];
        const uint32_t a = raw + r * 80;
#pragma unroll
        for (int i = 0; i < 5; i++) {
            const uint4 q = lds128(a + 16 * i);
            v[4 * i] = q.x;
            v[4 * i + 1] = q.y;
            v[4 * i + 2] = q.z;
            v[4 * i + 3] = q.w;
        }
        switch (kb & 3) { /* uniform over the warpgroup: one path a k-block */
        case 0: row_q<0, T>(v, r, dst); break;
        case 1: row_q<1, T>(v, r, dst); break;
        case 2: row_q<2, T>(v, r, dst); break;
        default: row_q<3, T>(v, r, dst); break;
        }
    }
};

/* Q4_0 (gemm_sm90_qs only): blocks of 18 bytes, the f16 scale d and 16 code
 * bytes, element j < 16 the low nibble of byte j, j >= 16 the high nibble of
 * byte j - 16; the value is (q - 8) d. A k-block's two blocks are the 36
 * bytes at 36 kb of the row (36 = 4 mod 16): rows through load_g as Q8_0's,
 * in 4-byte units (a row of an even number of blocks is a whole number of
 * them), a 48-byte box a row from the 16-byte boundary at or below byte
 * 4 a0 + j sn + 36 kb, the blocks 4 ((a0 + mq r + kb) % 4) bytes in (at most
 * 12 + 36 = 48); groups of 4 or 2 rows as mq is odd or 2. */
template <> struct Sm90Quant<SM90_QF_Q4_0> : QsRows<48, 4, 36, 1> {
    /* as Q8_0's frag; rw = rk(r). Code bytes 8h + 2q, + 1 of block b give
     * columns 32 b + 8 h + 2 q, + 1 (low nibbles, kk = 2b) and 16 more (high,
     * kk = 2b + 1). A weight is fma(128 + q, d, -136 d) = (q - 8) d exactly
     * (d an f16: 136 d and the result need at most 19 bits), the dequantising
     * path's value. Block 0 starts on a word, block 1 two bytes past one: the
     * scales and code pairs are 2-byte loads. */
    template <typename T>
    static __device__ __forceinline__ void frag(uint32_t raw, uint32_t rw, int kb, int q, uint32_t p[8]) {
        const uint32_t base = G::at(raw, rw, kb);
#pragma unroll
        for (int b = 0; b < 2; b++) {
            const uint32_t blk = base + 18 * b;
            const float d = dq_h2f(lds16(blk)), c = -136.0f * d;
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const uint32_t x = lds16(blk + 2 + 8 * h + 2 * q), lo = x & 0x0F0Fu, hi = (x >> 4) & 0x0F0Fu;
                p[4 * b + h] = dk_pack<T>(fmaf(mag_q4(lo, 0), d, c), fmaf(mag_q4(lo, 1), d, c));
                p[4 * b + 2 + h] = dk_pack<T>(fmaf(mag_q4(hi, 0), d, c), fmaf(mag_q4(hi, 1), d, c));
            }
        }
    }
};

template <> struct Sm90Quant<SM90_QF_Q4_K> {
    static constexpr int RB = 16;
    /* dl and ml of sub-blocks 2t and 2t + 1 (t = kb % 4), the values of
     * FmtQ4_K::prep (d * sc, dmin * m in f32, exact) without its per-byte
     * selects: the eight 6-bit scales and mins as the bytes of four words at
     * once (get_scale_min_k4's layout: j < 4 in the low 6 bits of bytes j and
     * j + 4, j >= 4 split between the nibbles of byte j + 4 and the top bits
     * of bytes j - 4 and j), the two wanted put under 2^23 by a permute, and
     * fma(d, 2^23 + sc, -2^23 d) = d sc. ~22 instructions a row instead of ~75. */
    static __device__ __forceinline__ void prep(const uint4 &hdr, int t, FmtQ4_K::Dec &dc) {
        const float d = dq_h2f(hdr.x & 0xffffu), dmin = dq_h2f(hdr.x >> 16);
        const uint32_t sc = t < 2 ? hdr.y & 0x3F3F3F3Fu : (hdr.w & 0x0F0F0F0Fu) | ((hdr.y >> 2) & 0x30303030u);
        const uint32_t mn = t < 2 ? hdr.z & 0x3F3F3F3Fu : ((hdr.w >> 4) & 0x0F0F0F0Fu) | ((hdr.z >> 2) & 0x30303030u);
        const uint32_t b = 2 * (t & 1); /* byte of sub-block 2t in the words */
#pragma unroll
        for (int k = 0; k < 2; k++) {
            dc.dl[k] = fmaf(d, __int_as_float(__byte_perm(sc, 0x4B000000u, 0x7440u | (b + k))), -8388608.0f * d);
            dc.ml[k] = fmaf(dmin, __int_as_float(__byte_perm(mn, 0x4B000000u, 0x7440u | (b + k))), -8388608.0f * dmin);
        }
    }
    /* three boxes of ROWS rows: the header, code bytes 0-15, 16-31 */
    template <int ROWS = 128>
    static __device__ __forceinline__ void load(uint32_t dst, const CUtensorMap *tm, int kb, int row, int e,
                                                uint32_t bar) {
        const int sb = 144 * (kb >> 2), q = sb + 16 + 32 * (kb & 3);
        tma_3d(dst, tm, sb, row, e, bar);
        tma_3d(dst + 16 * ROWS, tm, q, row, e, bar);
        tma_3d(dst + 32 * ROWS, tm, q + 16, row, e, bar);
    }
    /* rows of 144 bytes a super-block: TMA addresses each (lg = 0) */
    static __device__ __forceinline__ void load_g(uint32_t dst, const CUtensorMap *tm, const CUtensorMap *, int kb,
                                                  int row, int e, uint32_t bar, int, int, int, int) {
        load<64>(dst, tm, kb, row, e, bar);
    }
    static __device__ __forceinline__ uint32_t rk(int r, int, int, int) { return (uint32_t)(16 * r); }
    /* as Q8_0's; boxes of 64 rows. Columns k < 32: low nibbles of code bytes k
     * (sub-block 2t), k >= 32: high nibbles of bytes k - 32 (sub-block 2t + 1) */
    template <typename T>
    static __device__ __forceinline__ void frag(uint32_t raw, uint32_t ro, int kb, int q, uint32_t p[8]) {
        FmtQ4_K::Raw R;
        R.hdr = lds128(raw + ro);
        FmtQ4_K::Dec dc;
        prep(R.hdr, kb & 3, dc);
        uint32_t x[2][2];
#pragma unroll
        for (int b = 0; b < 2; b++)
#pragma unroll
            for (int h = 0; h < 2; h++) x[b][h] = lds16(raw + 1024 * (1 + b) + ro + 8 * h + 2 * q);
#if QS_Q4K_H2
        /* Lab variant (-DQS_Q4K_H2=1, not measured yet): a pair of weights in
         * three instructions of the 16-bit pair type: the two nibbles under
         * T's exponent of 128 (bf16 0x43xx) or 1024 (f16 0x64xx) by one permute,
         * minus that (exact), times dl plus -ml (one rounding, dl and ml rounded
         * to T first): no F2FP, a 64-token Q4_K k-block 174 instructions instead
         * of 187; on bf16 the weights' rms error about 3 times the exact
         * decoder's (bench/decode/s21/check_q4k_h2.c) */
        constexpr bool BF = QsIsBf16<T>::value;
        const uint32_t mag = BF ? 0x4343u : 0x6464u, neg = BF ? 0xC300C300u : 0xE400E400u;
        const uint32_t d2[2] = {dk_pack<T>(dc.dl[0], dc.dl[0]), dk_pack<T>(dc.dl[1], dc.dl[1])};
        const uint32_t m2[2] = {dk_pack<T>(-dc.ml[0], -dc.ml[0]), dk_pack<T>(-dc.ml[1], -dc.ml[1])};
        auto pair = [&](uint32_t n, int k) -> uint32_t {
            return qs_h2_fma<T>(qs_h2_add<T>(__byte_perm(n, mag, 0x4140), neg), d2[k], m2[k]);
        };
#else
        const float c[2] = {-fmaf(128.0f, dc.dl[0], dc.ml[0]), -fmaf(128.0f, dc.dl[1], dc.ml[1])};
        auto pair = [&](uint32_t n, int k) -> uint32_t {
            return dk_pack<T>(fmaf(mag_q4(n, 0), dc.dl[k], c[k]), fmaf(mag_q4(n, 1), dc.dl[k], c[k]));
        };
#endif
#pragma unroll
        for (int kk = 0; kk < 4; kk++)
#pragma unroll
            for (int h = 0; h < 2; h++) p[2 * kk + h] = pair((x[kk & 1][h] >> (4 * (kk >> 1))) & 0x0F0Fu, kk >> 1);
    }
    /* sub-blocks 2t (low nibbles of the 32 code bytes) and 2t + 1 (high), t = kb % 4 */
    template <typename T> static __device__ __forceinline__ void row(uint32_t raw, int r, int kb, uint32_t dst) {
        FmtQ4_K::Raw R;
        R.hdr = lds128(raw + 16 * r);
        R.q[0] = lds128(raw + 2048 + 16 * r);
        R.q[1] = lds128(raw + 4096 + 16 * r);
        FmtQ4_K::Dec dc;
        prep(R.hdr, kb & 3, dc);
        const float c[2] = {-fmaf(128.0f, dc.dl[0], dc.ml[0]), -fmaf(128.0f, dc.dl[1], dc.ml[1])};
        const uint32_t w[8] = {R.q[0].x, R.q[0].y, R.q[0].z, R.q[0].w, R.q[1].x, R.q[1].y, R.q[1].z, R.q[1].w};
#pragma unroll
        for (int s = 0; s < 8; s++) {
            const int k = s >> 2, w0 = 2 * (s & 3);
            float f[8];
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const uint32_t n = (w[w0 + h] >> (4 * k)) & 0x0F0F0F0Fu;
#pragma unroll
                for (int j = 0; j < 4; j++) f[4 * h + j] = fmaf(mag_q4(n, j), dc.dl[k], c[k]);
            }
            sts_piece<T>(dst, s, r, f);
        }
    }
};

/* MXFP4 (gemm_sm90_qs only): blocks of 17 bytes, the scale byte e (the f32
 * 2^(e-128), moe__e8m0_half_bits) and 16 code bytes, element j < 16 the low
 * nibble of byte j, j >= 16 the high nibble of byte j - 16; the value is
 * kvalue(code) 2^(e-128). A k-block's two blocks are 34 bytes at 34 kb: rows
 * through load_g as Q8_0's, in 2-byte units (8 a 16-byte boundary; 34 kb =
 * 2 kb mod 16): a 48-byte box a row from the 16-byte boundary at or below
 * byte 2 a0 + j sn + 34 kb, the blocks 2 ((a0 + mq r + kb) % 8) bytes in
 * (at most 14 + 34 = 48); groups of 8, 4 or 2 rows (lg 3, 2, 1) as mq is
 * odd, 2 mod 4 or 4 (moe__cuda_sm90_quant). */
template <> struct Sm90Quant<SM90_QF_MXFP4> : QsRows<48, 2, 34, 1> {
    /* Four codes (the low and high nibbles of code bytes x & 0xff and x >> 8:
     * the nibbles as prmt's four selectors) to bytes 12 + kvalue: positive
     * codes (selector bit 3 clear) from the table {12 .. 24} on the low 3
     * bits, negative ones 24 minus that (no byte borrows: all are <= 24); a
     * prmt of 0x80 bytes gives 0xff where the bit is set (its sign mode),
     * 0x80 where not, and both values are below 0x80, so one LOP3 selects.
     * Bytes 0..3: low nibble of byte 0, high of 0, low of 1, high of 1. */
    static __device__ __forceinline__ uint32_t codes(uint32_t x) {
        const uint32_t up = prmt(0x0F0E0D0Cu, 0x18141210u, x & 0x7777u), un = 0x18181818u - up;
        const uint32_t m = prmt(0x80808080u, 0x80808080u, x);
        return (up & ~m) | (un & m);
    }
    /* as Q8_0's frag; rw = rk(r). A weight is fma(2^15 + u, d, -32780 d) =
     * (u - 12) d = kvalue d exactly, the dequantising path's value (for scales
     * under 2^113: 32780 d must not overflow; real weights are far below) */
    template <typename T>
    static __device__ __forceinline__ void frag(uint32_t raw, uint32_t rw, int kb, int q, uint32_t p[8]) {
        const uint32_t base = G::at(raw, rw, kb);
#pragma unroll
        for (int b = 0; b < 2; b++) {
            const uint32_t blk = base + 17 * b;
            const float d = __uint_as_float(moe__e8m0_half_bits((uint8_t)lds8(blk))), c = -32780.0f * d;
#pragma unroll
            for (int h = 0; h < 2; h++) {
                /* the code bytes 8h + 2q, + 1: at an even address in block 1
                 * (base is), odd in block 0 (bytes 1, 2 of two aligned pairs) */
                const uint32_t a = blk + 1 + 8 * h + 2 * q;
                const uint32_t u = codes(b ? lds16(a) : prmt(lds16(a - 1), lds16(a + 1), 0x41u));
                /* kk = 2b: elements 8h + 2q, + 1 (low nibbles, bytes 0, 2);
                 * kk = 2b + 1: 16 more (high nibbles, bytes 1, 3) */
                p[4 * b + h] = dk_pack<T>(fmaf(mag_q8(u, 0), d, c), fmaf(mag_q8(u, 2), d, c));
                p[4 * b + 2 + h] = dk_pack<T>(fmaf(mag_q8(u, 1), d, c), fmaf(mag_q8(u, 3), d, c));
            }
        }
    }
};

/* Q5_K (gemm_sm90_qs only): super-blocks of 176 bytes (a multiple of 16: TMA
 * addresses every row), Q4_K's 16-byte header (d, dmin, the 6-bit scales and
 * mins), qh[32] (bit j of byte l: the fifth bit of element l of sub-block j),
 * then 128 code bytes (sub-blocks 2t and 2t + 1 in the low and high nibbles of
 * bytes 32t..32t + 31). Five boxes of 16 bytes a row: the header, qh, and the
 * k-block's 32 code bytes. */
template <> struct Sm90Quant<SM90_QF_Q5_K> {
    static constexpr int RB = 16;
    static __device__ __forceinline__ void load_g(uint32_t dst, const CUtensorMap *tm, const CUtensorMap *, int kb,
                                                  int row, int e, uint32_t bar, int, int, int, int) {
        const int sb = 176 * (kb >> 2), q = sb + 48 + 32 * (kb & 3);
        tma_3d(dst, tm, sb, row, e, bar);
        tma_3d(dst + 1024, tm, sb + 16, row, e, bar);
        tma_3d(dst + 2048, tm, sb + 32, row, e, bar);
        tma_3d(dst + 3072, tm, q, row, e, bar);
        tma_3d(dst + 4096, tm, q + 16, row, e, bar);
    }
    static __device__ __forceinline__ uint32_t rk(int r, int, int, int) { return (uint32_t)(16 * r); }
    /* as Q4_K's, the fifth bit from qh: columns k < 32 sub-block 2t (bit 2t),
     * k >= 32 sub-block 2t + 1 (bit 2t + 1); q < 32 under 0x43 as Q4_K's */
    template <typename T>
    static __device__ __forceinline__ void frag(uint32_t raw, uint32_t ro, int kb, int q, uint32_t p[8]) {
        const int t = kb & 3;
        FmtQ4_K::Dec dc;
        Sm90Quant<SM90_QF_Q4_K>::prep(lds128(raw + ro), t, dc);
        uint32_t x[2][2], hb[2][2];
#pragma unroll
        for (int b = 0; b < 2; b++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                x[b][h] = lds16(raw + 1024 * (3 + b) + ro + 8 * h + 2 * q);
                hb[b][h] = lds16(raw + 1024 * (1 + b) + ro + 8 * h + 2 * q) >> (2 * t);
            }
        const float c[2] = {-fmaf(128.0f, dc.dl[0], dc.ml[0]), -fmaf(128.0f, dc.dl[1], dc.ml[1])};
#pragma unroll
        for (int kk = 0; kk < 4; kk++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int k = kk >> 1;
                const uint32_t n = ((x[kk & 1][h] >> (4 * k)) & 0x0F0Fu) | (((hb[kk & 1][h] >> k) & 0x0101u) << 4);
                p[2 * kk + h] = dk_pack<T>(fmaf(mag_q4(n, 0), dc.dl[k], c[k]), fmaf(mag_q4(n, 1), dc.dl[k], c[k]));
            }
    }
};

/* Q6_K (gemm_sm90_qs only): super-blocks of 210 bytes, ql[128] (the low 4
 * bits), qh[64] (the top 2), 16 int8 scales (one a 16 elements), the f16 d.
 * K-block t of a super-block (its elements 64t..64t + 63, in half n = t / 2):
 * element 32 g + l (g = 0, 1) is nibble t % 2 (low, high) of ql[64n + 32g +
 * l] with bits 4 (t % 2) + 2g of qh[32n + l] on top, scale sc[4t + 2g + l /
 * 16] (dequantize_row_q6_K's order). 210 = 2 mod 16: a super-block sits 2
 * ((a0 + mq r + sb) % 8) bytes past a 16-byte boundary, the rows in groups as
 * MXFP4's (2-byte units, the shift moving a unit a super-block instead of a
 * k-block), and the pieces' offsets in it are multiples of 16. Two boxes a
 * row: 80 bytes from the boundary at or below ql[64n] (the k-block's 64 code
 * bytes), and 96 from that below qh[32n] (its 32 bytes of top bits, and up to
 * 210 - 128 - 32n + 14 <= 96 bytes: the scales and d), through two maps of
 * the same rows (B's, and moe_cuda_gemm qx0 / qx1). A box set: the 64 rows'
 * 80-byte boxes, then their 96-byte ones. */
template <> struct Sm90Quant<SM90_QF_Q6_K> {
    static __device__ __forceinline__ void load_g(uint32_t dst, const CUtensorMap *tm, const CUtensorMap *tmh, int kb,
                                                  int row, int e, uint32_t bar, int lg, int mq, int a0, int sn) {
        const int sb = kb >> 2, n = (kb >> 1) & 1;
        for (int j = 0; j < (1 << lg); j++) {
            const int x = 2 * a0 + j * sn + 210 * sb - 2 * ((a0 + mq * j + sb) & 7);
            tma_3d(dst + j * (80 << (6 - lg)), tm, x + 64 * n, row >> lg, e, bar);
            tma_3d(dst + 64 * 80 + j * (96 << (6 - lg)), tmh, x + 128 + 32 * n, row >> lg, e, bar);
        }
    }
    /* the row's place in its box set (16 rho) and (a0 + mq r) % 8 */
    static __device__ __forceinline__ uint32_t rk(int r, int lg, int mq, int a0) {
        return (uint32_t)((((r & ((1 << lg) - 1)) << (6 - lg)) + (r >> lg)) << 4) | ((a0 + mq * r) & 7);
    }
    /* as Q8_0's frag. A weight is fma(128 + q, dl, -160 dl) = (q - 32) dl
     * exactly (dl = d sc: 18 significant bits, 160 dl 21, the result 24):
     * the dequantising path's value */
    template <typename T>
    static __device__ __forceinline__ void frag(uint32_t raw, uint32_t rw, int kb, int q, uint32_t p[8]) {
        const int t = kb & 3, n = t >> 1, hi = t & 1;
        const uint32_t s2 = 2 * (((kb >> 2) + rw) & 7), rho = rw & ~15u;
        const uint32_t ql = raw + 5 * rho + s2, hs = raw + 64 * 80 + 6 * rho + s2;
        const float d = dq_h2f(lds16(hs + 80 - 32 * n));
        const uint32_t sa = hs + 64 - 32 * n + 4 * t;
        const uint32_t scw = prmt(lds16(sa), lds16(sa + 2), 0x5410u);
        uint32_t hx[2][2];
#pragma unroll
        for (int b = 0; b < 2; b++)
#pragma unroll
            for (int h = 0; h < 2; h++) hx[b][h] = lds16(hs + 16 * b + 8 * h + 2 * q);
#pragma unroll
        for (int kk = 0; kk < 4; kk++) {
            /* columns 16 kk..: g = kk / 2, l / 16 = kk % 2, so scale 4t + kk
             * (d sc exact in f32, FmtQ6_K::prep's value); the top bits 4 hi +
             * 2g of the qh byte moved to bits 4-5 by one shift (kb's parity,
             * hence hi, is known where the k-loop calls this) */
            const float dl = d * (float)(int8_t)(scw >> (8 * kk)), c = -160.0f * dl;
            const int sh = 4 - 4 * hi - 2 * (kk >> 1);
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const uint32_t x = lds16(ql + 16 * kk + 8 * h + 2 * q), y = hx[kk & 1][h];
                const uint32_t nq = ((x >> (4 * hi)) & 0x0F0Fu) | ((sh >= 0 ? y << sh : y >> -sh) & 0x3030u);
                p[2 * kk + h] = dk_pack<T>(fmaf(mag_q4(nq, 0), dl, c), fmaf(mag_q4(nq, 1), dl, c));
            }
        }
    }
};

/* Q2_K (gemm_sm90_qs only): super-blocks of 84 bytes, scales[16] (a 4-bit
 * scale and, above it, a 4-bit min for each 16 elements), qs[64] (2-bit codes),
 * the f16 d and dmin. K-block t of a super-block (its elements 64t..64t + 63,
 * in half n = t / 2): element 32 g + l (g = 0, 1) is bits 2 (2 (t % 2) + g)
 * of qs[32n + l], scale byte 8n + 4 (t % 2) + 2g + l / 16 (dequantize_row_q2_K's
 * order). 84 = 4 mod 16: a super-block sits 4 ((a0 + mq r + sb) % 4) bytes past
 * a 16-byte boundary, rows in groups as Q8_0's (4-byte units, the shift moving
 * a unit a super-block): one box of 96 bytes a row and k-block, the whole
 * super-block. */
template <> struct Sm90Quant<SM90_QF_Q2_K> : QsRows<96, 4, 84, 4> {
    /* as Q8_0's frag. A weight is fma(128 + q, dl, -(128 dl + ml)) = dl q - ml
     * with one more rounding than FmtQ2_K::dq (of 128 dl + ml), as Q4_K's */
    template <typename T>
    static __device__ __forceinline__ void frag(uint32_t raw, uint32_t rw, int kb, int q, uint32_t p[8]) {
        const int t = kb & 3, n = t >> 1, sh = 4 * (t & 1);
        const uint32_t base = G::at(raw, rw, kb >> 2);
        const uint32_t dd = prmt(lds16(base + 80), lds16(base + 82), 0x5410u);
        const uint32_t sc = prmt(lds16(base + 8 * n + 4 * (t & 1)), lds16(base + 8 * n + 4 * (t & 1) + 2), 0x5410u);
        const float d = dq_h2f(dd & 0xffffu), dmin = dq_h2f(dd >> 16);
        const uint32_t scl = sc & 0x0F0F0F0Fu, mnl = (sc >> 4) & 0x0F0F0F0Fu;
        uint32_t x[2][2];
#pragma unroll
        for (int b = 0; b < 2; b++)
#pragma unroll
            for (int h = 0; h < 2; h++) x[b][h] = lds16(base + 16 + 32 * n + 16 * b + 8 * h + 2 * q) >> sh;
#pragma unroll
        for (int kk = 0; kk < 4; kk++) {
            /* d sc and dmin m exactly (FmtQ2_K::prep's values), as Q4_K's prep */
            const float dl = fmaf(d, __int_as_float(__byte_perm(scl, 0x4B000000u, 0x7440u | kk)), -8388608.0f * d);
            const float ml = fmaf(dmin, __int_as_float(__byte_perm(mnl, 0x4B000000u, 0x7440u | kk)), -8388608.0f * dmin);
            const float c = -fmaf(128.0f, dl, ml);
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const uint32_t nq = (x[kk & 1][h] >> (2 * (kk >> 1))) & 0x0303u;
                p[2 * kk + h] = dk_pack<T>(fmaf(mag_q4(nq, 0), dl, c), fmaf(mag_q4(nq, 1), dl, c));
            }
        }
    }
};

/* Q3_K (gemm_sm90_qs only): super-blocks of 110 bytes, hmask[32] (bit 4n + j
 * of byte l: the third bit of element 32 j + l of half n), qs[64] (the low 2
 * bits, Q2_K's order), 12 bytes of 6-bit scales (minus 32), the f16 d. K-block
 * t (half n = t / 2): element 32 g + l has j = 2 (t % 2) + g, code (qs[32n + l]
 * >> 2j) & 3 plus 4 where hmask bit 4n + j is set, minus 4; scale 8n + 4 (t % 2)
 * + 2g + l / 16 (FmtQ3_K). 110 = 14 mod 16: a super-block sits 2 ((a0 + mq r -
 * sb) % 8) bytes past a 16-byte boundary (2-byte units, the shift moving a
 * unit back a super-block), rows in groups as MXFP4's: one box of 128 bytes a
 * row and k-block, the whole super-block. */
template <> struct Sm90Quant<SM90_QF_Q3_K> : QsRows<128, 2, 110, 4> {
    /* as Q8_0's frag. The four scales of the k-block (bytes 4 (t % 2)..+3
     * of the low nibbles or, in half 1, the high ones, with 2 bits each of
     * bytes 8-11 at 2t on top) as signed bytes s - 32; a weight is fma(128 + u,
     * dl, -132 dl) = (u - 4) dl exactly (u = code + 4 hbit; dl = d (s - 32) has
     * 17 significant bits, 132 dl 23): the dequantising path's value. */
    template <typename T>
    static __device__ __forceinline__ void frag(uint32_t raw, uint32_t rw, int kb, int q, uint32_t p[8]) {
        const int t = kb & 3, n = t >> 1, tt = t & 1;
        const uint32_t base = G::at(raw, rw, kb >> 2);
        const float d = dq_h2f(lds16(base + 108));
        const uint32_t w0 = prmt(lds16(base + 96 + 4 * tt), lds16(base + 98 + 4 * tt), 0x5410u);
        const uint32_t w2 = prmt(lds16(base + 104), lds16(base + 106), 0x5410u);
        /* 6-bit scales s, then s - 32 as signed bytes: s ^ 32 is it in 6 bits,
         * its sign (bit 5) copied to bits 6-7 by a multiply (0x20 * 6 = 0xC0) */
        const uint32_t s6 = ((w0 >> (4 * n)) & 0x0F0F0F0Fu) | (((w2 >> (2 * t)) & 0x03030303u) << 4);
        const uint32_t sx = s6 ^ 0x20202020u, sg = sx | ((sx & 0x20202020u) * 6u);
        uint32_t x[2][2], hm[2][2];
#pragma unroll
        for (int b = 0; b < 2; b++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                x[b][h] = lds16(base + 32 + 32 * n + 16 * b + 8 * h + 2 * q) >> (4 * tt);
                hm[b][h] = (lds16(base + 16 * b + 8 * h + 2 * q) << 2) >> (4 * n + 2 * tt);
            }
#pragma unroll
        for (int kk = 0; kk < 4; kk++) {
            const float dl = d * (float)(int8_t)(sg >> (8 * kk)), c = -132.0f * dl;
            const int g = kk >> 1;
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const uint32_t nq = ((x[kk & 1][h] >> (2 * g)) & 0x0303u) | ((hm[kk & 1][h] >> g) & 0x0404u);
                p[2 * kk + h] = dk_pack<T>(fmaf(mag_q4(nq, 0), dl, c), fmaf(mag_q4(nq, 1), dl, c));
            }
        }
    }
};

/* ---- gemm_sm90_qs: the weights as wgmma's A operand, decoded into registers ----
 * The tile is 128 weight rows (two consumer warpgroups of 64: m64) by NT = 256
 * or 64 rows of the permuted x or h (the m-tile: wgmma's N, K-major in shared
 * memory as TMA writes it; 64 for experts with few rows; with 256, an expert's
 * last 128 or fewer rows run a tile of 128 or 64 tokens, so that its wgmmas
 * do not multiply the rows past the expert's). The producer (one thread)
 * brings, per k-block, the token box, and two helper warps the raw bytes of
 * the 128 weight rows (two box sets of 64 rows, one each: gemm_sm90_qs_body,
 * session 39); each consumer thread decodes the 16 weights of its
 * two A-fragment rows straight into registers (frag: no bf16 tile in shared
 * memory, and the decoding spread over the 256 consumer threads, which have
 * the issue slots that wgmma leaves), two register sets in turn so that a
 * k-block's decoding overlaps the previous k-block's wgmmas. Gate/up: a
 * warpgroup's 64 rows are 32 gate rows and the same 32 up rows, 8 and 8 a
 * 16-row slab, so a thread holds gate and up of one output (rows g and g + 8);
 * down and up-only: 64 consecutive rows. The accumulators hold out^T: each
 * warp writes its rows token-major into its own staging (stmatrix .trans) and
 * copies them out with 16-byte stores (qs_tile). */

#endif /* MOE_SM90A */

template <int ACT, typename T, int QF>
static __global__ void __launch_bounds__(NTHREADS, 1)
    gemm_sm90_q(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB0,
                const __grid_constant__ CUtensorMap tmB1, const __grid_constant__ CUtensorMap tmO, const moe_cuda_gemm g) {
    gemm_sm90_body<ACT, T, 1, 1, 128, 256, QF>(tmA, tmB0, tmB1, tmO, g);
}

extern "C" int moe__cuda_quant_box(int fmt) {
    return fmt == MOE_DF_Q8_0 || fmt == MOE_DF_Q6_K ? 80
           : fmt == MOE_DF_Q4_K || fmt == MOE_DF_Q5_K ? 16
           : fmt == MOE_DF_MXFP4 || fmt == MOE_DF_Q4_0 ? 48
           : fmt == MOE_DF_Q2_K                        ? 96
           : fmt == MOE_DF_Q3_K                        ? 128
                                                       : 0;
}
extern "C" int moe__cuda_quant_box2(int fmt) { return fmt == MOE_DF_Q6_K ? 96 : 0; }

/* persistent: one CTA an SM (its shared memory) or two for 64 tokens a tile,
 * no more than there are units (qs_launch; clusters of 2 where g->qmc); m-tiles
 * of 256 or 64 tokens run the register-A kernel, of 128 the B-decoding one */
template <int ACT, typename T, int QF>
static cudaError_t launch(const moe_cuda_gemm *g, const CUtensorMap *tm, const CUtensorMap *b0, const CUtensorMap *b1,
                          int sm_count, cudaStream_t s) {
    QsX xm;
    memset(&xm, 0, sizeof xm);
    if (g->qx0) xm.b0 = *g->qx0;
    if (g->qx1) xm.b1 = *g->qx1;
    const int nout = g->mode == 1 && g->gated ? 64 : 128; /* the register-A kernel's output tiles */
    if (g->bm == 64)
        return qs_launch<ACT, T, QF, 64>(g, nout, sm_count * QS_CTAS(64), tm[0], *b0, *b1, tm[0], tm[0], tm[0], xm, s);
    if (g->bm == 256 && g->qfold)
        return qs_launch<ACT, T, QF, QS_NTF>(g, nout, sm_count, tm[0], *b0, *b1, tm[2], tm[3], tm[4], xm, s);
    if (g->bm == 256) return qs_launch<ACT, T, QF, 256>(g, nout, sm_count, tm[0], *b0, *b1, tm[2], tm[3], tm[4], xm, s);
    if constexpr (QS_HAS_BDEC(QF)) {
        const int bn = g->mode == 1 && g->gated ? 128 : 256; /* outputs a tile */
        const int64_t most = (int64_t)g->max_mtiles * ((g->N + bn - 1) / bn);
        const unsigned grid = (unsigned)(most < sm_count ? (most < 1 ? 1 : most) : sm_count);
        gemm_sm90_q<ACT, T, QF><<<grid, NTHREADS, SM90_SMEM_BYTES_Q(QF), s>>>(tm[0], *b0, *b1, tm[1], *g);
    }
    return cudaGetLastError();
}

template <typename T, int QF>
static cudaError_t dispatch(const moe_cuda_gemm *g, const CUtensorMap *tm, const CUtensorMap *b0,
                            const CUtensorMap *b1, int sm_count, cudaStream_t s) {
#define MOE_ACT_CASE_(a) \
    case a: return launch<a, T, QF>(g, tm, b0, b1, sm_count, s);
    MOE_CUDA_ACT_DISPATCH(g, MOE_ACT_CASE_);
#undef MOE_ACT_CASE_
}

/* the activation dtype's instance */
template <int QF>
static cudaError_t dispatch_f(const moe_cuda_gemm *g, const CUtensorMap *tm, const CUtensorMap *b0,
                              const CUtensorMap *b1, int sm_count, cudaStream_t s) {
    return g->dtype == MOE_TYPE_F16 ? dispatch<__half, QF>(g, tm, b0, b1, sm_count, s)
                                    : dispatch<__nv_bfloat16, QF>(g, tm, b0, b1, sm_count, s);
}

extern "C" cudaError_t moe__cuda_gemm_sm90_q(const moe_cuda_gemm *g, const CUtensorMap *tmB0, const CUtensorMap *tmB1,
                                             int sm_count, cudaStream_t s, char *why, size_t n) {
    /* rows in groups (g->qlg) have maps of 64-row boxes for the register-A kernel only */
    const bool bdec = g->bm == 128 && g->bn == 256 && !g->qlg && !g->qa0 && QS_HAS_BDEC(g->qfmt);
    const bool fmt_ok = g->qfmt == MOE_DF_Q8_0 || g->qfmt == MOE_DF_Q4_K || g->qfmt == MOE_DF_MXFP4 ||
                        g->qfmt == MOE_DF_Q5_K || g->qfmt == MOE_DF_Q4_0 || g->qfmt == MOE_DF_Q2_K ||
                        g->qfmt == MOE_DF_Q3_K ||
                        (g->qfmt == MOE_DF_Q6_K && g->qx0 && g->qx1);
    if (!(g->bm == 256 || g->bm == 64 || bdec) || g->cm != 1 || g->cn != 1 || g->gather || !fmt_ok ||
        (g->qmc && g->bm != 256)) {
        snprintf(why, n,
                 "GGUF weights (format %d%s) run m-tiles of 64 or 256, or 128 with BN 256 (Q8_0, Q4_K rows TMA "
                 "addresses one by one), 1 x 1, A through TMA, clusters of 2 (qmc) on m-tiles of 256 only; got BM %d BN "
                 "%d %dx%d%s%s%s",
                 g->qfmt, g->qfmt == MOE_DF_Q6_K && !(g->qx0 && g->qx1) ? ", without its second maps" : "", g->bm,
                 g->bn, g->cm, g->cn, g->gather ? ", gather" : "", g->qlg || g->qa0 ? ", rows in groups" : "",
                 g->qmc ? ", qmc" : "");
        return cudaErrorInvalidValue;
    }
    /* tm: A (boxes of bm rows), out (BM 128), and for bm 256 the tail tiles'
     * and folded rows' maps (qs_token_maps) */
    CUtensorMap tm[5];
    if (moe__cuda_sm90_tmap_a_out(g, tm, why, n)) return cudaErrorInvalidValue;
    if (g->bm == 256 && qs_token_maps(g, tm, why, n)) return cudaErrorInvalidValue;
    switch (g->qfmt) {
    case MOE_DF_Q8_0: return dispatch_f<SM90_QF_Q8_0>(g, tm, tmB0, tmB1, sm_count, s);
    case MOE_DF_MXFP4: return dispatch_f<SM90_QF_MXFP4>(g, tm, tmB0, tmB1, sm_count, s);
    case MOE_DF_Q5_K: return dispatch_f<SM90_QF_Q5_K>(g, tm, tmB0, tmB1, sm_count, s);
    case MOE_DF_Q6_K: return dispatch_f<SM90_QF_Q6_K>(g, tm, tmB0, tmB1, sm_count, s);
    case MOE_DF_Q4_0: return dispatch_f<SM90_QF_Q4_0>(g, tm, tmB0, tmB1, sm_count, s);
    case MOE_DF_Q2_K: return dispatch_f<SM90_QF_Q2_K>(g, tm, tmB0, tmB1, sm_count, s);
    case MOE_DF_Q3_K: return dispatch_f<SM90_QF_Q3_K>(g, tm, tmB0, tmB1, sm_count, s);
    default: return dispatch_f<SM90_QF_Q4_K>(g, tm, tmB0, tmB1, sm_count, s);
    }
}

template <typename T, int QF> static cudaError_t prepare_q(void) {
    cudaError_t e = cudaSuccess;
#define MOE_ACT_PREP_(a)                                                                                               \
    if constexpr (QS_HAS_BDEC(QF))                                                                                     \
        if (!e)                                                                                                        \
            e = cudaFuncSetAttribute(gemm_sm90_q<a, T, QF>, cudaFuncAttributeMaxDynamicSharedMemorySize,              \
                                     SM90_SMEM_BYTES_Q(QF));                                                           \
    if (!e) e = cudaFuncSetAttribute(gemm_sm90_qs<a, T, QF, 256>, cudaFuncAttributeMaxDynamicSharedMemorySize,       \
                                     QS_SMEM(QF, 256));                                                                \
    if (!e) e = cudaFuncSetAttribute(gemm_sm90_qs<a, T, QF, QS_NTF>, cudaFuncAttributeMaxDynamicSharedMemorySize,    \
                                     QS_SMEM(QF, QS_NTF));                                                             \
    if (!e) e = cudaFuncSetAttribute(gemm_sm90_qs<a, T, QF, 64>, cudaFuncAttributeMaxDynamicSharedMemorySize,        \
                                     QS_SMEM(QF, 64));
    MOE_CUDA_FOR_ACTS(MOE_ACT_PREP_)
#undef MOE_ACT_PREP_
    return e;
}

extern "C" cudaError_t moe__cuda_gemm_sm90_q_prepare(void) {
    static cudaError_t (*const prep[])(void) = {
        prepare_q<__nv_bfloat16, SM90_QF_Q8_0>,  prepare_q<__half, SM90_QF_Q8_0>,
        prepare_q<__nv_bfloat16, SM90_QF_Q4_K>,  prepare_q<__half, SM90_QF_Q4_K>,
        prepare_q<__nv_bfloat16, SM90_QF_MXFP4>, prepare_q<__half, SM90_QF_MXFP4>,
        prepare_q<__nv_bfloat16, SM90_QF_Q5_K>,  prepare_q<__half, SM90_QF_Q5_K>,
        prepare_q<__nv_bfloat16, SM90_QF_Q6_K>,  prepare_q<__half, SM90_QF_Q6_K>,
        prepare_q<__nv_bfloat16, SM90_QF_Q4_0>,  prepare_q<__half, SM90_QF_Q4_0>,
        prepare_q<__nv_bfloat16, SM90_QF_Q2_K>,  prepare_q<__half, SM90_QF_Q2_K>,
        prepare_q<__nv_bfloat16, SM90_QF_Q3_K>,  prepare_q<__half, SM90_QF_Q3_K>,
    };
    cudaError_t e = cudaSuccess;
    for (size_t i = 0; i < sizeof prep / sizeof prep[0] && e == cudaSuccess; i++) e = prep[i]();
    return e;
}
