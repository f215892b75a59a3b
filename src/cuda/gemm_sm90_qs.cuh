/*
 * The register-A grouped GEMM of Hopper (gemm_sm90_qs): the weights as wgmma's
 * A operand, made by the consumer threads in registers from the rows a TMA
 * ring brings (Sm90Quant<QF>::frag), the tokens as B from shared memory, 64,
 * 256 or 256 + MOE_CUDA_TILE_FOLD tokens a tile. Its instances live in
 * gemm_sm90_q.cu (GGUF blocks, every GGUF type) and gemm_sm90_qd.cu (bf16 /
 * f16 weights, SM90_QF_DENSE), each beside its formats' Sm90Quant; the design
 * and the measurements are in gemm_sm90_q.cu's comment.
 */
#ifndef MOE_CUDA_GEMM_SM90_QS_CUH
#define MOE_CUDA_GEMM_SM90_QS_CUH

#include "common.cuh"
#include "cuda_backends.h"
#include "decode_kernels.h"
#include "gemm_sm90.cuh"
#include "wgmma_rs_gen.cuh"

/* the K-quants: 256-element super-blocks of four k-blocks */
#define QS_KQUANT(qf)                                                                                                  \
    ((qf) == SM90_QF_Q2_K || (qf) == SM90_QF_Q3_K || (qf) == SM90_QF_Q4_K || (qf) == SM90_QF_Q5_K ||                  \
     (qf) == SM90_QF_Q6_K)
/* formats with the B-decoding kernel (gemm_sm90_q) too; the others run gemm_sm90_qs only */
#define QS_HAS_BDEC(qf) ((qf) == SM90_QF_Q8_0 || (qf) == SM90_QF_Q4_K)

/* gemm_sm90_qs's tile (below) */
/* CTAs an SM: two for 64 tokens a tile (whose decoding, 4 times the 256-token
 * tile's per FLOP, waits on latencies that 8 consumer warps an SM do not hide),
 * each with 4 stages and 96 registers a consumer thread; QS_CTAS64=1 builds
 * the one-CTA kernel of session 20 (8 stages, 232 registers) */
#ifndef QS_CTAS64
#define QS_CTAS64 2
#endif
#define QS_CTAS(nt) ((nt) == 64 ? QS_CTAS64 : 1)
#define QS_CREGS(nt) (QS_CTAS(nt) == 2 ? 96 : 232) /* setmaxnreg of the consumers (the producer: 40) */
/* one box set of 64 rows */
#define QS_RH(qf)                                                                                                      \
    ((qf) == SM90_QF_Q8_0    ? 64 * 80                                                                                 \
     : (qf) == SM90_QF_MXFP4 || (qf) == SM90_QF_Q4_0 ? 64 * 48                                                         \
     : (qf) == SM90_QF_Q5_K  ? 5 * 64 * 16                                                                             \
     : (qf) == SM90_QF_Q6_K  ? 64 * (80 + 96)                                                                          \
     : (qf) == SM90_QF_Q2_K  ? 64 * 96                                                                                 \
     : (qf) == SM90_QF_Q3_K  ? 64 * 128                                                                                \
     : (qf) == SM90_QF_DENSE ? 64 * 128                                                                                \
                             : 3 * 64 * 16)
/* The kernel's token rows a stage (NT): 64, 256, or QS_NTF = 256 and room
 * for an expert's last MOE_CUDA_TILE_FOLD (24) or fewer rows beyond a full
 * tile (the kernel with folded tiles, qs_tile FOLD); bf16/f16 weights also
 * QS_NTF128 = 128 and room for 24 (experts of about 128 rows). QS_FOLDK: a
 * kernel with folded tiles; QS_NM: its full tile's tokens */
#define QS_NTF (256 + MOE_CUDA_TILE_FOLD)
#define QS_NTF128 (128 + MOE_CUDA_TILE_FOLD)
#define QS_FOLDK(nt) ((nt) == QS_NTF || (nt) == QS_NTF128)
#define QS_NM(nt) (QS_FOLDK(nt) ? (nt) - MOE_CUDA_TILE_FOLD : (nt))
#define QS_STAGE(qf, nt) ((nt) * BK * 2 + 2 * QS_RH(qf))
/* a warp's epilogue staging: its 8 or 16 columns of up to 256 or 128 tokens a
 * pass; bf16/f16 weights half of that (passes of 128 or 64 tokens), so that
 * 4 stages of their 64-row boxes (16 KB) and 256 tokens fit */
#define QS_STGW(qf, nt) ((nt) == 64 || (qf) == SM90_QF_DENSE ? 2048 : 4096)
#define QS_WT(nt) (2 * (nt) * 4) /* a warpgroup's routing weights, two tiles in turn */
/* the meta area: a full and an empty barrier and a QsHead a stage, then the
 * clusters' 8 unit slots and their 8 barriers (QS_MC_BYTES) */
#define QS_MC_BYTES (8 * 4 + 8 * 8)
#define QS_SMEM_S(qf, nt, ns)                                                                                          \
    (1024 + (ns) * QS_STAGE(qf, nt) + 8 * QS_STGW(qf, nt) + 2 * QS_WT(nt) + (ns) * (2 * 8 + 32) + QS_MC_BYTES)
/* stages: with 64 tokens 4 (two CTAs an SM; Q6_K's and Q3_K's box sets, 176
 * and 128 bytes a row, leave room for 3) or 8 (one CTA); with 256 or QS_NTF
 * 4 where they fit in the SM's 227 KB, else 3 (Q6_K, Q3_K) */
#define QS_SMEM_MAX 232448
#define QS_STAGES(qf, nt)                                                                                              \
    ((nt) == 64 ? ((qf) == SM90_QF_Q6_K || (qf) == SM90_QF_Q3_K ? 3 : QS_CTAS(nt) == 2 ? 4 : 8)                        \
     : QS_SMEM_S(qf, nt, 4) <= QS_SMEM_MAX ? 4                                                                         \
                                           : 3)
#define QS_SMEM(qf, nt) QS_SMEM_S(qf, nt, QS_STAGES(qf, nt))

/* the kernel's second maps of B0 and B1 (Q6_K; zero for the other formats) */
struct QsX {
    CUtensorMap b0, b1;
};

#ifdef MOE_SM90A
static __device__ __forceinline__ uint4 lds128(uint32_t a) {
    uint4 v;
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(a));
    return v;
}
static __device__ __forceinline__ uint32_t lds8(uint32_t a) {
    unsigned short v;
    asm volatile("ld.shared.u8 %0, [%1];\n" : "=h"(v) : "r"(a));
    return v;
}
static __device__ __forceinline__ uint32_t prmt(uint32_t a, uint32_t b, uint32_t s) {
    uint32_t d;
    asm("prmt.b32 %0, %1, %2, %3;\n" : "=r"(d) : "r"(a), "r"(b), "r"(s));
    return d;
}
static __device__ __forceinline__ uint32_t lds16(uint32_t a) {
    unsigned short v;
    asm volatile("ld.shared.u16 %0, [%1];\n" : "=h"(v) : "r"(a));
    return v;
}
/* A 16-byte global store as written: NVVM split the copy-out's uint4 stores
 * into four 4-byte ones, each chunk's shared load then waiting on the
 * previous chunk's stores (ncu, bench/decode/s22 run 3). Lab: -DQS_STG=0
 * builds the copy-out of session 22 (bench/decode/s23). */
#ifndef QS_STG
#define QS_STG 1
#endif
static __device__ __forceinline__ void stg128(void *p, uint4 v) {
    asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
                 : "memory");
}
static __device__ __forceinline__ void sts128(uint32_t a, uint4 v) {
    asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"r"(a), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
                 : "memory");
}
/* four 8x8 b16 matrices: lanes 8i..8i+7 address matrix i's rows; lane l gets
 * row l / 4, columns 2 (l % 4), + 1 of each */
static __device__ __forceinline__ void ldsm_x4(uint32_t a, uint32_t *r) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a));
}
/* four 8x8 b16 matrices, transposed: lanes 8i..8i+7 address matrix i's rows */
static __device__ __forceinline__ void stsm_x4_trans(uint32_t a, const uint32_t r[4]) {
    asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(a), "r"(r[0]), "r"(r[1]),
                 "r"(r[2]), "r"(r[3])
                 : "memory");
}
#ifndef QS_Q4K_H2
#define QS_Q4K_H2 0
#endif
template <typename T> struct QsIsBf16 { static constexpr bool value = false; };
template <> struct QsIsBf16<__nv_bfloat16> { static constexpr bool value = true; };
/* a + b and a * b + c on pairs of T (bf16x2: add needs sm_90) */
template <typename T> static __device__ __forceinline__ uint32_t qs_h2_add(uint32_t a, uint32_t b) {
    uint32_t d;
    if (QsIsBf16<T>::value) asm("add.rn.bf16x2 %0, %1, %2;\n" : "=r"(d) : "r"(a), "r"(b));
    else asm("add.rn.f16x2 %0, %1, %2;\n" : "=r"(d) : "r"(a), "r"(b));
    return d;
}
template <typename T> static __device__ __forceinline__ uint32_t qs_h2_fma(uint32_t a, uint32_t b, uint32_t c) {
    uint32_t d;
    if (QsIsBf16<T>::value) asm("fma.rn.bf16x2 %0, %1, %2, %3;\n" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    else asm("fma.rn.f16x2 %0, %1, %2, %3;\n" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}
/* A tile's token count: m-tiles of NT tokens, and (NT = 256, impl qs_tail) an
 * expert's last rows in a tile of 128 or 64 when they are that few: the code
 * in bits 28-29 of the tile's start row (gemm_common.cuh MOE_CUDA_TILE_CODE) */
#define QS_TILE_ROW(y) MOE_CUDA_TILE_ROW(y)
#define QS_TILE_CODE(y) MOE_CUDA_TILE_CODE(y)

/* Each tile's first stage carries the tile, as the producer looked it up
 * (shared memory, written before the stage's full barrier is armed): the
 * consumers read it after that barrier instead of a chain of dependent
 * global loads (tiles[mu], then exp_off[e], exp_off[e + 1]) at every tile */
struct QsHead {
    int e, rbase, rows, y; /* y: tiles[mu].y (start row and size code), -1: no m-tile; e -1: no more units */
    int nu;                /* the unit's n-tile */
};

/* the consumer warpgroups' state across tiles; the staging, the routing
 * weights' tables and the barriers at fixed offsets from the ring (QS_OFF_*),
 * so that they take no registers through the k-loops */
struct QsCons {
    uint32_t sbase;
    int stage, parity;
    uint32_t phase;
    int peer; /* clusters of 2 (g.qmc): the other CTA's rank, whose producer multicasts into this CTA's stages; -1 none */
};
#define QS_OFF_STG(qf, nt) (QS_STAGES(qf, nt) * QS_STAGE(qf, nt))
#define QS_OFF_WT(qf, nt) (QS_OFF_STG(qf, nt) + 8 * QS_STGW(qf, nt))
#define QS_OFF_META(qf, nt) (QS_OFF_WT(qf, nt) + 2 * QS_WT(nt))

/* The epilogue of NTE tokens of a tile (rows m0.. of the expert's) for a
 * consumer warpgroup: out^T through shared memory, a warp at a time.
 * The accumulators of 8 tokens x 8 rows are an m8n8 fragment (row gq,
 * tokens 2q, 2q + 1); stmatrix .trans writes it token-major, 16 bytes a
 * token, into the warp's own staging, which the warp copies out with
 * 16-byte stores. Only GEMM 2's routing weights (wrt: the tile's, one a
 * thread for every 128 tokens) need the warpgroup: one barrier an
 * epilogue, the table alternating between two buffers (a warp writes a
 * buffer again after the next epilogue's barrier, which every warp
 * reaches after its reads of this one). */
template <int ACT, typename T, int QF, int NT, int NTE>
static __device__ __forceinline__ void qs_epilogue(QsCons &c, const float *acc, const float *wrt,
                                                   const moe_cuda_gemm &g, int rbase, int rows, int m0, int o0) {
    constexpr int MODE = ACT < 0 ? 2 : 1;
    constexpr bool GATED = ACT >= 0 && ACT <= MOE_ACT_SWIGLU_OAI;
    constexpr int NW = (NTE + 127) / 128;
    uint32_t tid;
    asm volatile("mov.u32 %0, %%tid.x;\n" : "=r"(tid));
    const int N = g.N, cw = (int)(tid >> 7) - 1, t128 = tid & 127, lane = tid & 31, w4 = t128 >> 5, gq = lane >> 2,
              q = lane & 3;
    const uint32_t wtab = c.sbase + QS_OFF_WT(QF, NT) + cw * QS_WT(NT) + c.parity * (NT * 4),
                   stg = c.sbase + QS_OFF_STG(QF, NT) + (4 * cw + w4) * QS_STGW(QF, NT);
    c.parity ^= 1;
    if (MODE == 2) {
#pragma unroll
        for (int j = 0; j < NW; j++)
            if (t128 + 128 * j < NTE)
                asm volatile("st.shared.f32 [%0], %1;\n" ::"r"(wtab + 4 * (t128 + 128 * j)), "f"(wrt[j]) : "memory");
        asm volatile("bar.sync %0, 128;\n" ::"r"(2 + cw) : "memory");
    }
    const int mi = lane >> 3, mr = lane & 7; /* the stmatrix row this lane addresses */
    if (GATED) {
        /* the warp's 8 outputs of every token: one matrix a group of 8
         * tokens, 16 bytes a token, PG tokens a pass (the staging's) */
        constexpr int PG = NTE < QS_STGW(QF, NT) / 16 ? NTE : QS_STGW(QF, NT) / 16, GP = (PG + 7) / 8;
        static_assert(NTE % PG == 0, "whole passes");
        const int col = o0 - gq;
#pragma unroll
        for (int pass = 0; pass < NTE / PG; pass++) {
            __syncwarp();
#pragma unroll
            for (int b = 0; b < GP; b += 4) {
                uint32_t r[4];
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    const int bg = GP * pass + b + i;
                    r[i] = b + i >= GP ? 0u /* PG = 8, 16, 24: rows past it, never stored */
                                       : moe_cuda_pack2<T>(
                                             moe_cuda_act(ACT, acc[4 * bg], acc[4 * bg + 2], g.alpha, g.limit),
                                             moe_cuda_act(ACT, acc[4 * bg + 1], acc[4 * bg + 3], g.alpha, g.limit));
                }
                stsm_x4_trans(stg + 16 * (8 * (b + mi) + mr), r);
            }
            __syncwarp();
            /* every chunk loaded before the first store, so that the loads
             * do not wait on the stores in between */
            constexpr int NJ = (PG + 31) / 32;
#if QS_STG
            uint4 v[NJ];
#pragma unroll
            for (int j = 0; j < NJ; j++) v[j] = lds128(stg + 16 * (lane + 32 * j));
#pragma unroll
            for (int j = 0; j < NJ; j++) {
                const int tk = lane + 32 * j, tok = PG * pass + tk;
                if (tk < PG && m0 + tok < rows && col < N)
                    stg128((T *)g.out + (int64_t)(rbase + m0 + tok) * N + col, v[j]);
            }
#else
#pragma unroll
            for (int j = 0; j < NJ; j++) {
                const int tk = lane + 32 * j, tok = PG * pass + tk;
                if (tk < PG && m0 + tok < rows && col < N)
                    *(uint4 *)((T *)g.out + (int64_t)(rbase + m0 + tok) * N + col) = lds128(stg + 16 * tk);
            }
#endif
        }
    } else {
        /* the warp's 16 outputs (rows gq and gq + 8 of its slab), 128
         * tokens a pass (64 with the smaller staging), 32 bytes a token: the
         * halves of a token's row swapped every 4 tokens so that a matrix's
         * 8 rows hit every bank */
        constexpr int PT = NTE < QS_STGW(QF, NT) / 32 ? NTE : QS_STGW(QF, NT) / 32, GP = PT / 8;
        static_assert(NTE % PT == 0, "whole passes");
#pragma unroll
        for (int pass = 0; pass < NTE / PT; pass++) {
            __syncwarp();
#pragma unroll
            for (int b = 0; b < GP; b += 2) {
                const int bg = GP * pass + b;
                uint32_t r[4];
#pragma unroll
                for (int i = 0; i < 2; i++) {
                    if (b + i >= GP) { /* NTE = 8 or 24: the matrices past it, never stored */
                        r[2 * i] = r[2 * i + 1] = 0u;
                        continue;
                    }
                    const float *a = acc + 4 * (bg + i);
                    float v[4];
                    if (MODE == 2) {
                        float2 wt;
                        asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];\n"
                                     : "=f"(wt.x), "=f"(wt.y)
                                     : "r"(wtab + 4 * (8 * (bg + i) + 2 * q)));
                        v[0] = wt.x * a[0];
                        v[1] = wt.y * a[1];
                        v[2] = wt.x * a[2];
                        v[3] = wt.y * a[3];
                    } else {
#pragma unroll
                        for (int k = 0; k < 4; k++) v[k] = moe_cuda_act(ACT, 0.f, a[k], g.alpha, g.limit);
                    }
                    r[2 * i] = moe_cuda_pack2<T>(v[0], v[1]);
                    r[2 * i + 1] = moe_cuda_pack2<T>(v[2], v[3]);
                }
                const int tok = 8 * (b + (mi >> 1)) + mr;
                stsm_x4_trans(stg + 32 * tok + 16 * ((mi & 1) ^ ((tok >> 2) & 1)), r);
            }
            __syncwarp();
            const int col0 = o0 - gq;
            constexpr int NJ = (PT + 15) / 16; /* 32 chunks of 16 bytes a step, two a token */
#if QS_STG
            uint4 v[NJ];
#pragma unroll
            for (int j = 0; j < NJ; j++) {
                const int ch = lane + 32 * j, tok = ch >> 1, part = ch & 1;
                v[j] = lds128(stg + 32 * tok + 16 * (part ^ ((tok >> 2) & 1)));
            }
#pragma unroll
            for (int j = 0; j < NJ; j++) {
                const int ch = lane + 32 * j, tok = ch >> 1, part = ch & 1;
                const int col = col0 + 8 * part, m = m0 + PT * pass + tok;
                if (tok < PT && m < rows && col < N) stg128((T *)g.out + (int64_t)(rbase + m) * N + col, v[j]);
            }
#else
#pragma unroll
            for (int j = 0; j < NJ; j++) {
                const int ch = lane + 32 * j, tok = ch >> 1, part = ch & 1;
                const int col = col0 + 8 * part, m = m0 + PT * pass + tok;
                if (tok < PT && m < rows && col < N)
                    *(uint4 *)((T *)g.out + (int64_t)(rbase + m) * N + col) =
                        lds128(stg + 32 * tok + 16 * (part ^ ((tok >> 2) & 1)));
            }
#endif
        }
    }
}

/* One tile of NTT tokens (NTT <= NT: the ring's stages are laid out for NT)
 * for a consumer warpgroup: the k-blocks, then the epilogue. FOLD (the
 * kernel with folded tiles, NT = QS_NTF, NTT = 256, or QS_NTF128 and 128):
 * one k-loop for the tile codes 0 (NTT tokens), 1 (128: an expert's last 128
 * or fewer rows) and 3 (folded: NTT and the expert's last MOE_CUDA_TILE_FOLD or fewer rows, which
 * the stages have room for, multiplied by the same decoded fragments into 12
 * more accumulators, acc[NTT / 2..], so that the weights are decoded once for
 * them; their epilogue runs first, while the main accumulators wait). One
 * loop with a branch a k-block, not one loop a code: a fourth loop, even one
 * without the fold's registers, had ptxas serialize the wgmmas (C7512), as
 * did the 12 registers in a loop of their own. The branch costs unfolded
 * tiles 3-4% (ptxas adds a fence and an empty wgmma where the branches meet,
 * C7519), so this kernel runs only where folds are expected (layer.cu
 * moe__cuda_sm90_fold; NOTES_decode.md session 37). */
template <int ACT, typename T, int QF, int NT, int NTT, int FOLD>
static __device__ __forceinline__ void qs_tile(QsCons &c, float *acc, uint32_t (&fa)[16], uint32_t (&fb)[16],
                                               const moe_cuda_gemm &g, int e, int n0, int rbase, int rows, int m0,
                                               int kblocks, int code) {
    constexpr int MODE = ACT < 0 ? 2 : 1;
    constexpr bool GATED = ACT >= 0 && ACT <= MOE_ACT_SWIGLU_OAI;
    constexpr int RH = QS_RH(QF), STB = QS_STAGE(QF, NT), TOKB = NT * BK * 2, STAGES = QS_STAGES(QF, NT);
    constexpr int NF = FOLD ? MOE_CUDA_TILE_FOLD : 0, NG = (NTT + NF) / 8;
    static_assert(!FOLD || (QS_FOLDK(NT) && NTT == QS_NM(NT)), "folded tiles: NTT tokens and MOE_CUDA_TILE_FOLD more");
    /* The thread's indices, read anew each tile (volatile): values made from
     * them are then not hoisted out of the tile loop, where each tile size's
     * invariants stayed live through the others' k-loops and spilled. */
    uint32_t tid;
    asm volatile("mov.u32 %0, %%tid.x;\n" : "=r"(tid));
    const int N = g.N, cw = (int)(tid >> 7) - 1, t128 = tid & 127, lane = tid & 31, w4 = t128 >> 5, gq = lane >> 2,
              q = lane & 3;
    /* the thread's two A rows: (box set, row in it) */
    const int h0 = GATED ? 0 : cw, h1 = GATED ? 1 : cw;
    const int r0 = GATED ? 32 * cw + 8 * w4 + gq : 16 * w4 + gq, r1 = GATED ? r0 : r0 + 8;
    /* their boxes' places in a box set and word shifts (Sm90Quant::rk) */
    const uint32_t rw0 = Sm90Quant<QF>::rk(r0, g.qlg, g.qmq, (g.qa0 >> (3 * h0)) & 7),
                   rw1 = Sm90Quant<QF>::rk(r1, g.qlg, g.qmq, (g.qa0 >> (3 * h1)) & 7);
    auto bar = [&](int i) -> uint32_t { return c.sbase + QS_OFF_META(QF, NT) + 8 * i; };
    /* output index of the thread's rows (GATED: one, i; else two, n) */
    const int o0 = n0 + (GATED ? 32 * cw + 8 * w4 + gq : 64 * cw + 16 * w4 + gq), o1 = GATED ? o0 : o0 + 8;
    /* the biases (or 0) start the accumulators: loaded now, used after the
     * first k-block's decoding, which hides their latency */
    float b0 = 0.f, b1 = 0.f;
    if (o0 < N && g.fb0) b0 = g.fb0[(int64_t)e * N + o0];
    if (GATED) {
        if (o1 < N && g.fb1) b1 = g.fb1[(int64_t)e * N + o1];
    } else if (o1 < N && g.fb0) {
        b1 = g.fb0[(int64_t)e * N + o1];
    }
    /* GEMM 2's routing weights of the tile's rows (0 past the expert's):
     * the pair indices now, the weights once the first k-block's wgmmas are
     * issued, the table in each epilogue, so that no load waits in the open;
     * a folded tile's last MOE_CUDA_TILE_FOLD rows in the last */
    constexpr int NW = (NTT + 127) / 128, NWF = NW + (FOLD ? 1 : 0);
    int pidx[NWF];
    float wrt[NWF];
    if (MODE == 2) {
#pragma unroll
        for (int j = 0; j < NWF; j++) {
            const int tk = t128 + 128 * j, m = m0 + tk;
            const int ntok = !FOLD ? NTT : code == 3 ? NTT + NF : code == 1 ? 128 : NTT;
            pidx[j] = m < rows && tk < ntok ? g.sorted_pair[rbase + m] : -1;
        }
    }
    /* The k-blocks in pairs, A fragments in two register sets: a k-block's
     * fragments are decoded while the other set's wgmmas run, and a set is
     * redefined only after a wait that ptxas can see retires its wgmmas
     * (within the loop body, or the wait for all at its end): across the
     * back edge it could not tell, and serialized every wgmma (C7513). */
    auto wait_full = [&](int *st) -> uint32_t {
        mbar_wait(bar(c.stage), c.phase);
        *st = c.stage;
        const uint32_t sa = c.sbase + c.stage * STB;
        if (++c.stage == STAGES) { c.stage = 0; c.phase ^= 1; }
        return sa;
    };
    /* bf16/f16 weights (SM90_QF_DENSE): the fragments are the box's values
     * as they lie, one ldmatrix x4 a k16 step: lane l addresses row l % 8 of
     * matrix l / 8 (rows r0 or r1 as that is even or odd; columns 0-7 or 8-15
     * of the step as it is below 2 or not) in the 128B-swizzled box (16-byte
     * chunk c of row r at c ^ (r % 8)) */
    uint32_t lrow = 0, lsw = 0;
    if constexpr (QF == SM90_QF_DENSE) {
        const int lm = lane >> 3, lr = GATED ? 32 * cw + 8 * w4 + (lane & 7) : 16 * w4 + 8 * (lm & 1) + (lane & 7);
        lrow = (uint32_t)((GATED ? (lm & 1) : cw) * RH + lr * 128);
        lsw = (uint32_t)((lm >> 1) ^ (lr & 7));
    }
    auto decode = [&](uint32_t (&f)[16], uint32_t sa, int kb) {
        if constexpr (QF == SM90_QF_DENSE) {
#pragma unroll
            for (int kk = 0; kk < 4; kk++) ldsm_x4(sa + TOKB + lrow + (((uint32_t)(2 * kk) ^ lsw) << 4), f + 4 * kk);
        } else {
            uint32_t p0[8], p1[8];
            Sm90Quant<QF>::template frag<T>(sa + TOKB + h0 * RH, rw0, kb, q, p0);
            Sm90Quant<QF>::template frag<T>(sa + TOKB + h1 * RH, rw1, kb, q, p1);
#pragma unroll
            for (int kk = 0; kk < 4; kk++) {
                f[4 * kk] = p0[2 * kk];
                f[4 * kk + 1] = p1[2 * kk];
                f[4 * kk + 2] = p0[2 * kk + 1];
                f[4 * kk + 3] = p1[2 * kk + 1];
            }
        }
    };
    /* sd: the scale of the accumulators' input in the k-block's first wgmma
     * (0: the tile's first k-block where no bias starts them) */
    auto mma = [&](const uint32_t (&f)[16], uint32_t sa, int sd) {
        /* one straight run of wgmmas a tile size, each behind its own fence
         * (one fence before the branch had ptxas inject more, C7519) */
        if (FOLD != 0 && code == 1) {
            asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
            for (int kk = 0; kk < 4; kk++)
                wgmma_rs_m64k16<128, T>(acc, f + 4 * kk, desc_k128(sa + kk * 32), kk ? 1 : sd);
        } else if (FOLD != 0 && code == 3) {
            asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
            for (int kk = 0; kk < 4; kk++) {
                wgmma_rs_m64k16<NTT, T>(acc, f + 4 * kk, desc_k128(sa + kk * 32), kk ? 1 : sd);
                wgmma_rs_m64k16<MOE_CUDA_TILE_FOLD, T>(acc + NTT / 2, f + 4 * kk,
                                                       desc_k128(sa + NTT * BK * 2 + kk * 32), kk ? 1 : sd);
            }
        } else {
            asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
            for (int kk = 0; kk < 4; kk++)
                wgmma_rs_m64k16<NTT, T>(acc, f + 4 * kk, desc_k128(sa + kk * 32), kk ? 1 : sd);
        }
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    };
    /* frees the stage here and, in a cluster, in the peer, whose producer
     * multicasts its half of the token box into this CTA's stage too */
    auto release = [&](int st) {
        if (lane == 0) {
            mbar_arrive(bar(STAGES + st));
            if (c.peer >= 0) mbar_arrive_cluster(bar(STAGES + st), (uint32_t)c.peer);
        }
    };
    int st_a, st_b = 0;
    uint32_t sa_a = wait_full(&st_a);
    decode(fa, sa_a, 0);
    /* Biases start the accumulators; without them the first wgmma ignores
     * theirs (sd 0) instead of NTT / 2 moves a tile (2.9% of qwen3's GEMM 2
     * warp samples, bench/decode/s39 run 1) */
    const int sd0 = g.fb0 || (GATED && g.fb1) ? 1 : 0;
    if (sd0) {
#pragma unroll
        for (int b = 0; b < NG; b++) {
            acc[4 * b] = acc[4 * b + 1] = b0;
            acc[4 * b + 2] = acc[4 * b + 3] = b1;
        }
    }
    /* k-blocks kb (decoded into fa) and kb + 1, then kb + 2 decoded into fa;
     * GEMM 2's routing weights loaded once the first wgmmas are issued (their
     * pair indices' loads, issued at the tile's start, had the warps wait
     * before them: 4% of qwen3's GEMM 2 samples, run 1) */
    auto step = [&](int kb) {
        mma(fa, sa_a, kb ? 1 : sd0);
        if (MODE == 2 && kb == 0) {
#pragma unroll
            for (int j = 0; j < NWF; j++) wrt[j] = pidx[j] >= 0 ? g.w[pidx[j]] : 0.f;
        }
        const bool two = kb + 1 < kblocks;
        if (two) {
            const uint32_t sa_b = wait_full(&st_b);
            decode(fb, sa_b, kb + 1);
            mma(fb, sa_b, 1);
            asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
        } else {
            asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
        }
        release(st_a);
        if (kb + 2 < kblocks) {
            sa_a = wait_full(&st_a);
            decode(fa, sa_a, kb + 2);
        }
        asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
        if (two) release(st_b);
    };
    if constexpr (QS_KQUANT(QF)) {
        /* K-quants: rows of whole 256-element super-blocks, so kblocks is a
         * multiple of 4 and, four k-blocks an iteration, each decode's place
         * in its super-block (kb % 4) is a constant: its scale selects and
         * shifts fold */
        for (int kb = 0; kb < kblocks; kb += 4) {
            step(kb);
            step(kb + 2);
        }
    } else {
        for (int kb = 0; kb < kblocks; kb += 2) step(kb);
    }
#pragma unroll
    for (int i = 0; i < (NTT + NF) / 2; i++) asm volatile("" : "+f"(acc[i])::"memory");

    if (FOLD != 0 && code == 1) {
        qs_epilogue<ACT, T, QF, NT, 128>(c, acc, wrt, g, rbase, rows, m0, o0);
        return;
    }
    if (FOLD != 0 && code == 3)
        qs_epilogue<ACT, T, QF, NT, MOE_CUDA_TILE_FOLD>(c, acc + NTT / 2, wrt + NW, g, rbase, rows, m0 + NTT, o0);
    qs_epilogue<ACT, T, QF, NT, NTT>(c, acc, wrt, g, rbase, rows, m0, o0);
}

template <int ACT, typename T, int QF, int NT>
static __device__ __forceinline__ void gemm_sm90_qs_body(const CUtensorMap &tmA, const CUtensorMap &tmB0,
                                                         const CUtensorMap &tmB1, const CUtensorMap &tmA128,
                                                         const CUtensorMap &tmA64, const CUtensorMap &tmAf,
                                                         const QsX &xm, const moe_cuda_gemm &g) {
    constexpr bool GATED = ACT >= 0 && ACT <= MOE_ACT_SWIGLU_OAI;
    constexpr int RH = QS_RH(QF), STB = QS_STAGE(QF, NT), TOKB = NT * BK * 2, STAGES = QS_STAGES(QF, NT);
    constexpr int NM = QS_NM(NT); /* a full tile's tokens */
    constexpr int NOUT = GATED ? 64 : 128; /* outputs of a tile */
    static_assert(STB % 1024 == 0, "stages keep the token box 1024-byte aligned (128B swizzle)");
    extern __shared__ unsigned char smem_raw[];
    uint32_t sbase = (smem_u32(smem_raw) + 1023) & ~1023u;
    const uint32_t meta = sbase + QS_OFF_META(QF, NT);
    auto bar = [&](int i) -> uint32_t { return meta + 8 * i; }; /* full[s], empty[s] = bar(STAGES + s) */
    const uint32_t head = meta + 16 * STAGES;                  /* QsHead of stage s at head + 32 s */
    const int wg = threadIdx.x / 128;
    /* Helpers (g.qhelp; GGUF blocks, layer.cu sm90_qs_helpers): a TMA box
     * takes about 17 instructions of the producer's one thread, and a k-block
     * of GGUF rows up to 16 boxes (gpt-oss's MXFP4 rows in TMA groups of 8),
     * longer than the consumers' k-block. Warps 1 and 2 of the producer
     * warpgroup then issue the two box sets, one each: the producer thread
     * writes each stage's unit and k-block into its QsHead (e, nu, kb) and
     * arrives on the stage's go barrier (at head + 24, after its expect_tx, so
     * no complete_tx comes before it); a helper waits on it, reads them, issues
     * its boxes and arrives on the stage's empty barrier (counting 8 consumer
     * warps and the 2 helpers), so the producer writes the head again only
     * after both helpers have read it. */
    const bool help = g.qhelp != 0;
    auto go = [&](int s) -> uint32_t { return head + 32 * s + 24; };
    /* Clusters of 2 (g.qmc; tiles of 256 or more tokens): the two CTAs take
     * the same token tile and neighbouring output tiles (a unit is a pair of
     * them, the second past the last where their count is odd: computed, never
     * stored). Each producer loads half of the token box (rows in multiples of
     * 32, so both halves keep the 128B swizzle's 1024-byte atoms) and
     * multicasts it to both CTAs, so that L2 serves each token tile once for
     * 256 weight rows instead of 128; a folded tile's last rows come from CTA
     * 0. Each CTA's full barrier expects the whole token box and its own
     * weights; a stage may be refilled once the consumers of both CTAs have
     * released it (the empty barrier counts the 8 warps of each). In dynamic
     * order CTA 0's producer claims the units and passes each one's number to
     * CTA 1's producer through slot i % 8 (uslot) and its barrier (ubar),
     * as gemm_sm90.cuh's 2 x 1 clusters do: CTA 0 runs at most the ring's
     * depth ahead of CTA 1. */
    const bool mc = NT != 64 && g.qmc != 0;
    const uint32_t rank = mc ? cluster_rank() : 0;
    const uint32_t uslot = head + 32 * STAGES, ubar = uslot + 32; /* slot i at uslot + 4 (i % 8), its barrier ubar + 8 (i % 8) */
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) {
            mbar_init(bar(s), 1);
            mbar_init(bar(STAGES + s), (mc ? 16 : 8) + (help ? 2 : 0));
            if (help) mbar_init(go(s), 1);
        }
        if (mc)
            for (int j = 0; j < 8; j++) mbar_init(ubar + 8 * j, 1);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    if (mc) cluster_sync();
    const int N = g.N, C = g.C;
    const int MU = *g.n_mtiles, NU = (N + NOUT - 1) / NOUT, NUC = mc ? (NU + 1) / 2 : NU, total = MU * NUC,
              kblocks = (C + BK - 1) / BK;
    const int cid = mc ? (int)blockIdx.x / 2 : (int)blockIdx.x, ncl = mc ? (int)gridDim.x / 2 : (int)gridDim.x;
    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
        if (help && (threadIdx.x == 32 || threadIdx.x == 64)) {
            /* a helper: box set h of every stage, until the head says the end */
            const int h = threadIdx.x / 32 - 1;
            int stage = 0;
            uint32_t phase = 0;
            for (;;) {
                mbar_wait(go(stage), phase);
                int e, nu, kb;
                asm volatile("ld.shared.s32 %0, [%3];\n"
                             "ld.shared.s32 %1, [%3+16];\n"
                             "ld.shared.s32 %2, [%3+20];\n"
                             : "=r"(e), "=r"(nu), "=r"(kb)
                             : "r"(head + 32 * stage)
                             : "memory");
                if (e < 0) break;
                const int n0 = nu * NOUT;
                Sm90Quant<QF>::load_g(sbase + stage * STB + TOKB + h * RH, GATED && h ? &tmB1 : &tmB0,
                                      GATED && h ? &xm.b1 : &xm.b0, kb, GATED ? n0 : n0 + 64 * h, e, bar(stage),
                                      g.qlg, g.qmq, (g.qa0 >> (GATED && h ? 3 : 0)) & 7, g.qsn);
                mbar_arrive(bar(STAGES + stage));
                if (++stage == STAGES) { stage = 0; phase ^= 1; }
            }
        } else if (threadIdx.x == 0) {
            int stage = 0;
            uint32_t phase = 0;
            const bool dyn = g.sched != nullptr;
            /* a cluster's unit i: claimed by CTA 0, which writes it into CTA 1's slot */
            auto take = [&](int i, int u0) -> int {
                if (!mc || !dyn) return u0;
                const uint32_t sl = uslot + 4 * (i & 7), ub = ubar + 8 * (i & 7);
                if (rank == 0) {
                    uint32_t ra, rb;
                    asm volatile("mapa.shared::cluster.u32 %0, %1, 1;\n" : "=r"(ra) : "r"(sl));
                    asm volatile("mapa.shared::cluster.u32 %0, %1, 1;\n" : "=r"(rb) : "r"(ub));
                    asm volatile("st.shared::cluster.u32 [%0], %1;\n" ::"r"(ra), "r"(u0) : "memory");
                    asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];\n" ::"r"(rb) : "memory");
                    return u0;
                }
                mbar_wait_cluster(ub, (uint32_t)(i >> 3) & 1u);
                int v;
                asm volatile("ld.shared.s32 %0, [%1];\n" : "=r"(v) : "r"(sl) : "memory");
                return v;
            };
            int u = take(0, cid), i = 0;
            for (; u < total; i++) {
                /* the next unit, claimed as this one starts (dynamic order:
                 * from the counter, see gemm_sm90.cuh, by CTA 0 of a cluster;
                 * static: u + the grid's CTAs or clusters) */
                const int next = !dyn ? u + ncl : !mc || rank == 0 ? ncl + atomicAdd(g.sched, 1) : 0;
                int mu, nu;
                moe_cuda_raster(u, MU, NUC, g.gm, &mu, &nu);
                if (mc) nu = 2 * nu + (int)rank;
                const int2 t = g.tiles[mu];
                const int e = t.x, n0 = nu * NOUT, code = t.y >= 0 ? QS_TILE_CODE(t.y) : 0;
                const int rbase = g.exp_off[e], rend = g.exp_off[e + 1];
                const int arow = t.y >= 0 ? rbase + QS_TILE_ROW(t.y) : rend;
                /* the token box of the tile's size (tail tiles: 128 or 64 rows; a
                 * folded tile: NT rows and a box of 64 after them); in a cluster
                 * the maps' boxes are half as high (moe__cuda_gemm_sm90_q) */
                const CUtensorMap *ta = code == 0 || code == 3 ? &tmA : code == 1 ? &tmA128 : &tmA64;
                const int trows = code == 0 || code == 3 ? NM : code == 1 ? 128 : 64, half = mc ? trows / 2 : 0;
                const uint32_t tx = (code == 0 ? NM : code == 1 ? 128 : code == 2 ? 64 : NT) * BK * 2 + 2 * RH;
                for (int kb = 0; kb < kblocks; kb++) {
                    const uint32_t full = bar(stage), sa = sbase + stage * STB;
                    if (mc) mbar_wait_cluster(bar(STAGES + stage), phase ^ 1); /* released by the peer's consumers too */
                    else mbar_wait(bar(STAGES + stage), phase ^ 1);
                    if (kb == 0 || help) /* the unit, for the consumers (QsHead), and the k-block for the helpers */
                        asm volatile("st.shared.v4.s32 [%0], {%1, %2, %3, %4};\n"
                                     "st.shared.v2.s32 [%0+16], {%5, %6};\n" ::"r"(head + 32 * stage),
                                     "r"(e), "r"(rbase), "r"(rend - rbase), "r"(t.y), "r"(nu), "r"(kb)
                                     : "memory");
                    mbar_expect_tx(full, tx);
                    if (help) mbar_arrive(go(stage));
                    if (!mc) {
                        tma_2d(sa, ta, kb * BK, arow, full);
                        if (QS_FOLDK(NT) && code == 3) tma_2d(sa + NM * BK * 2, &tmAf, kb * BK, arow + NM, full);
                    } else {
                        tma_2d_mc(sa + (uint32_t)(half * (int)rank * BK * 2), ta, kb * BK, arow + half * (int)rank, full,
                                  3);
                        if (QS_FOLDK(NT) && code == 3 && rank == 0)
                            tma_2d_mc(sa + NM * BK * 2, &tmAf, kb * BK, arow + NM, full, 3);
                    }
                    if (!help) {
#pragma unroll
                        for (int h = 0; h < 2; h++)
                            Sm90Quant<QF>::load_g(sa + TOKB + h * RH, GATED && h ? &tmB1 : &tmB0,
                                                  GATED && h ? &xm.b1 : &xm.b0, kb,
                                                  GATED ? n0 : n0 + 64 * h, e, full, g.qlg, g.qmq,
                                                  (g.qa0 >> (GATED && h ? 3 : 0)) & 7, g.qsn);
                    }
                    if (++stage == STAGES) { stage = 0; phase ^= 1; }
                }
                u = take(i + 1, next);
            }
            /* the end: a stage whose full barrier completes without data, e = -1 in its head */
            if (mc) mbar_wait_cluster(bar(STAGES + stage), phase ^ 1);
            else mbar_wait(bar(STAGES + stage), phase ^ 1);
            asm volatile("st.shared.s32 [%0], %1;\n" ::"r"(head + 32 * stage), "r"(-1) : "memory");
            mbar_arrive(bar(stage));
            if (help) mbar_arrive(go(stage));
        }
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(QS_CREGS(NT)));
        QsCons c;
        c.sbase = sbase;
        c.parity = 0; /* of the warpgroup's tiles: which routing-weight table */
        c.stage = 0;
        c.phase = 0;
        c.peer = mc ? (int)(rank ^ 1u) : -1;
        float acc[NT / 2];
        uint32_t fa[16], fb[16];
        for (;;) {
            mbar_wait(bar(c.stage), c.phase); /* the unit's first stage: its QsHead */
            /* read by lane 0, the lane that releases the stage (its arrive
             * then follows the read in program order; reads by the other
             * lanes were reported by racecheck against the producer's next
             * write of the slot, bench/decode/s24 run 1), and shuffled */
            QsHead h;
            if ((threadIdx.x & 31) == 0)
                asm volatile("ld.shared.v4.s32 {%0, %1, %2, %3}, [%5];\n"
                             "ld.shared.s32 %4, [%5+16];\n"
                             : "=r"(h.e), "=r"(h.rbase), "=r"(h.rows), "=r"(h.y), "=r"(h.nu)
                             : "r"(head + 32 * c.stage));
            h.e = __shfl_sync(0xffffffffu, h.e, 0);
            if (h.e < 0) break; /* the producer's end */
            h.nu = __shfl_sync(0xffffffffu, h.nu, 0);
            h.rbase = __shfl_sync(0xffffffffu, h.rbase, 0);
            h.rows = __shfl_sync(0xffffffffu, h.rows, 0);
            h.y = __shfl_sync(0xffffffffu, h.y, 0);
            const int e = h.e, n0 = h.nu * NOUT, rbase = h.rbase;
            const int rows = h.y >= 0 ? h.rows : 0, m0 = h.y >= 0 ? QS_TILE_ROW(h.y) : 0;
            const int code = NT != 64 && h.y >= 0 ? QS_TILE_CODE(h.y) : 0;
            /* a k-loop and epilogue a tile size (NT = 256: 256, 128, 64); with
             * folded tiles (QS_FOLDK) one for 64 and one for the rest (qs_tile
             * FOLD). ptxas keeps each loop's wgmmas in flight (no C7512) and
             * spills only in the 256-token epilogue of the heavier non-SwiGLU
             * activations */
            if constexpr (NT == 64) {
                qs_tile<ACT, T, QF, NT, 64, 0>(c, acc, fa, fb, g, e, n0, rbase, rows, m0, kblocks, code);
            } else if constexpr (QS_FOLDK(NT)) {
                if (code == 2) qs_tile<ACT, T, QF, NT, 64, 0>(c, acc, fa, fb, g, e, n0, rbase, rows, m0, kblocks, code);
                else qs_tile<ACT, T, QF, NT, NM, 1>(c, acc, fa, fb, g, e, n0, rbase, rows, m0, kblocks, code);
            } else {
                if (code == 2) qs_tile<ACT, T, QF, NT, 64, 0>(c, acc, fa, fb, g, e, n0, rbase, rows, m0, kblocks, code);
                else if (code == 1) qs_tile<ACT, T, QF, NT, 128, 0>(c, acc, fa, fb, g, e, n0, rbase, rows, m0, kblocks, code);
                else qs_tile<ACT, T, QF, NT, NT, 0>(c, acc, fa, fb, g, e, n0, rbase, rows, m0, kblocks, code);
            }
        }
    }
    /* a CTA leaves once the peer's consumers have made their last arrivals on its barriers */
    if (mc) cluster_sync();
}
#endif

template <int ACT, typename T, int QF, int NT>
static __global__ void __launch_bounds__(NTHREADS, QS_CTAS(NT))
    gemm_sm90_qs(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB0,
                 const __grid_constant__ CUtensorMap tmB1, const __grid_constant__ CUtensorMap tmA128,
                 const __grid_constant__ CUtensorMap tmA64, const __grid_constant__ CUtensorMap tmAf,
                 const __grid_constant__ QsX xm, const moe_cuda_gemm g) {
#ifdef MOE_SM90A
    gemm_sm90_qs_body<ACT, T, QF, NT>(tmA, tmB0, tmB1, tmA128, tmA64, tmAf, xm, g);
#endif
}

/* Launches instance NT persistently: a CTA an SM slot (slots) and no more than
 * there are units (up to max_mtiles token tiles x the output tiles of nout),
 * or with g->qmc (NT of 128 or more) clusters of 2 that take a pair of output
 * tiles a unit, as many as the device keeps resident at once. ta, t128, t64:
 * the token maps of the tile sizes (boxes half as high for clusters), tf the
 * folded rows' */
template <int ACT, typename T, int QF, int NT>
static cudaError_t qs_launch(const moe_cuda_gemm *g, int nout, int slots, const CUtensorMap &ta,
                             const CUtensorMap &b0, const CUtensorMap &b1, const CUtensorMap &t128,
                             const CUtensorMap &t64, const CUtensorMap &tf, const QsX &xm, cudaStream_t s) {
    const int64_t nu = (g->N + nout - 1) / nout, units = (int64_t)g->max_mtiles * (g->qmc && NT != 64 ? (nu + 1) / 2 : nu);
    cudaLaunchConfig_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = 2;
    at[0].val.clusterDim.y = at[0].val.clusterDim.z = 1;
    cfg.blockDim = dim3(NTHREADS);
    cfg.dynamicSmemBytes = QS_SMEM(QF, NT);
    cfg.stream = s;
    int64_t grid;
    if (g->qmc && NT != 64) {
        static int max_clusters = -1; /* per instance; one device type per process assumed */
        cfg.attrs = at;
        cfg.numAttrs = 1;
        if (max_clusters < 0) {
            int n = 0;
            cfg.gridDim = dim3((unsigned)(2 * (slots / 2)));
            if (cudaOccupancyMaxActiveClusters(&n, gemm_sm90_qs<ACT, T, QF, NT>, &cfg) != cudaSuccess || n < 1) {
                cudaGetLastError();
                n = slots / 2;
            }
            max_clusters = n;
        }
        grid = 2 * (units < max_clusters ? (units < 1 ? 1 : units) : max_clusters);
    } else {
        grid = units < slots ? (units < 1 ? 1 : units) : slots;
    }
    cfg.gridDim = dim3((unsigned)grid);
    const cudaError_t e = cudaLaunchKernelEx(&cfg, gemm_sm90_qs<ACT, T, QF, NT>, ta, b0, b1, t128, t64, tf, xm, *g);
    return e != cudaSuccess ? e : cudaGetLastError();
}

/* The token maps of tiles of 128 or more tokens beside tm[0] (boxes of g->bm
 * rows, moe__cuda_sm90_tmap_a_out): tm[2] and tm[3] for the tail tiles (128
 * and 64 rows), tm[4] for the folded rows (MOE_CUDA_TILE_FOLD); in clusters of
 * 2 (g->qmc) tm[0], tm[2] and tm[3] with boxes half as high, each CTA loading
 * one half (gemm_sm90_qs_body). 0, or nonzero with why. */
static int qs_token_maps(const moe_cuda_gemm *g, CUtensorMap *tm, char *why, size_t n) {
    if (moe__cuda_sm90_tmap_a(g, 128, &tm[2], why, n) || moe__cuda_sm90_tmap_a(g, 64, &tm[3], why, n) ||
        moe__cuda_sm90_tmap_a(g, MOE_CUDA_TILE_FOLD, &tm[4], why, n))
        return 1;
    return g->qmc && (moe__cuda_sm90_tmap_a(g, g->bm / 2, &tm[0], why, n) ||
                      moe__cuda_sm90_tmap_a(g, 64, &tm[2], why, n) || moe__cuda_sm90_tmap_a(g, 32, &tm[3], why, n));
}

#endif /* MOE_CUDA_GEMM_SM90_QS_CUH */
