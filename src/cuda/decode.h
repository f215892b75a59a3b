/*
 * The small-batch ("decode") expert kernels behind the backends "cuda-decode"
 * (bf16/f16 weights) and "cuda-quant" (GGUF block weights): what
 * src/cuda/decode.cu hands to the per-format kernel files
 * (decode_dense.cu, qmm_legacy.cu, qmm_k.cu). Included by .cu files only.
 *
 * One forward of Tc tokens is two or three launches, no host sync, no allocation:
 *   route   one block: sorts the (expert, pair) keys, lists the active experts
 *           (only when T*K > MOE_DEC_FOLD_MAXP; below, every expert-kernel
 *           block sorts the few keys itself)
 *   phase 1 grid (I row blocks, active experts): h[pair] = act(gate x + bg, up x + bu)
 *   phase 2 grid (D row blocks, active experts): y[pair] = w * (down h + bd), and the
 *           last block of each row block sums the K slots of every token in
 *           slot order into out (an int arrival counter, no float atomics)
 * Phases 1 and 2 are one kernel template: weight fragments decoded into
 * registers (bf16 or f16), tokens as the N = 8 side of mma.sync m16n8k16;
 * formats made of 16-byte pieces (bf16, f16, Q4_K, Q5_K) stream them through
 * a per-warp cp.async ring in shared memory (k_dec_ring).
 */
#ifndef MOE_CUDA_DECODE_H
#define MOE_CUDA_DECODE_H

#include <cuda_runtime.h>
#include <stdint.h>

/* Weight formats of the decode kernels. */
enum {
    MOE_DF_BF16 = 0,
    MOE_DF_F16,
    MOE_DF_Q4_0,
    MOE_DF_Q8_0,
    MOE_DF_MXFP4,
    MOE_DF_Q2_K,
    MOE_DF_Q3_K,
    MOE_DF_Q4_K,
    MOE_DF_Q5_K,
    MOE_DF_Q6_K,
    MOE_DF_COUNT
};

/* Pairs (token, slot) one route launch can sort in shared memory; a forward
 * with more is split into chunks of tokens. */
#define MOE_DEC_MAXP 4096

/* Forwards with at most this many (token, slot) pairs route inside the
 * expert kernels (every block sorts the pairs itself): no k_route launch. */
#define MOE_DEC_FOLD_MAXP 128

/* Phases of the expert kernel. */
enum { MOE_DEC_GATE_UP = 0, MOE_DEC_UP = 1, MOE_DEC_DOWN = 2 };

typedef struct moe_dec_args {
    /* weights [E, N, C]: byte strides per expert and per row; w1 = up in phase GATE_UP */
    const uint8_t *w0, *w1;
    int64_t w0_se, w0_sn, w1_se, w1_sn;
    int64_t row_bytes;        /* bytes of one row of w0 (for the L2 prefetch) */
    int N, C, n_chunks, RW, KS; /* rows, reduced dim, chunks of C, row groups x K slices = 8 warps */
    /* biases [E, N] (element strides), NULL = none; types f32/f16/bf16 */
    const void *b0, *b1;
    int b0_type, b1_type;
    int64_t b0_se, b0_sn, b1_se, b1_sn;
    int act;
    float alpha, limit;
    /* B side: x [T, D] (phase 1; xmode 0 same type as the mma, 1 f32, 2 f16 -> bf16, 3 bf16 -> f16)
     * or h [TK, I] (phase 2, the mma type) */
    const void *xb;
    int64_t ldb; /* elements per row of xb */
    int xmode;
    int T, K, E;
    /* routing (written by the route kernel) */
    const int *n_active, *act_e, *act_off, *sorted;
    /* outputs */
    void *h;                  /* phase 1: [TK, I] mma type */
    float *y;                 /* phase 2: [TK, D] f32 weighted rows */
    const float *w;           /* [T, K] routing weights */
    const int32_t *ids;       /* [T, K] */
    void *out;                /* [T, D] act type */
    int out_type;
    unsigned *counters;       /* [ncnt]: row blocks of phase 2 */
    int ncnt;
    int pdl;                  /* launched with programmatic dependent launch (sm_90) */
    int fold;                 /* routing computed in the kernels (T*K <= MOE_DEC_FOLD_MAXP) */
    int NS;                   /* ring stages (k_dec_ring) */
} moe_dec_args;

/* The expert kernel of format fmt (one of the file's formats) for phase ph
 * and nt token tiles of 8 per pass (1, or 4 when nt > 1): k_dec_ring for the
 * formats with moe__dec_pieces(fmt) > 0, else k_dec. Launched by decode.cu
 * on grid (row blocks, active expert slots) of 256 threads with the single
 * parameter moe_dec_args. NULL if fmt is not in the file. */
const void *moe__dec_kernel_dense(int fmt, int ph, int nt, int ring);
const void *moe__dec_kernel_qlegacy(int fmt, int ph, int nt, int ring);
const void *moe__dec_kernel_qk(int fmt, int ph, int nt, int ring);

/* 16-byte pieces of one row per lane per chunk for the ring kernel (FM::NP),
 * 0 where the format is read in place with narrower loads (k_dec). */
static inline constexpr int moe__dec_pieces(int fmt) {
    return fmt <= MOE_DF_F16 ? 2 : fmt == MOE_DF_Q4_K ? 3 : fmt == MOE_DF_Q5_K ? 5 : 0;
}
/* Whether phase ph with nt token tiles runs k_dec_ring: every format with
 * pieces, except the quantised gate/up kernel at nt = 4, which does not fit
 * in registers next to the ring (ptxas spills; k_dec does not). */
static inline constexpr int moe__dec_uses_ring(int fmt, int ph, int nt) {
    return moe__dec_pieces(fmt) > 0 && !(fmt > MOE_DF_F16 && ph != MOE_DEC_DOWN && nt > 1);
}

/* Columns per chunk (CW) and the smallest alignment in bytes its loads need. */
static inline int moe__dec_chunk_cols(int fmt) { return fmt <= MOE_DF_F16 ? 64 : 256; }
static inline int moe__dec_align(int fmt) {
    switch (fmt) {
    case MOE_DF_BF16: case MOE_DF_F16: case MOE_DF_Q4_K: case MOE_DF_Q5_K: return 16;
    case MOE_DF_Q2_K: return 4;
    case MOE_DF_MXFP4: return 1;
    default: return 2;
    }
}

#endif
