/*
 * The grouped GEMM's arguments (one launch) and the device helpers of its
 * epilogues: activations, bias loads, packing, raster order. Compiles under
 * nvcc (included by common.cuh) and under NVRTC, for the cuda-jit backend
 * (jit_backend.cu): there it is embedded in the library at build time
 * (cmake/embed_jit.cmake, which blanks the #include lines) and has no host
 * header, so the __CUDACC_RTC__ branch below stands in for stdint.h, cuda.h
 * (CUtensorMap) and the bf16/f16 types, and the program's prelude defines
 * the moe_act values.
 */
#ifndef MOE_CUDA_GEMM_COMMON_CUH
#define MOE_CUDA_GEMM_COMMON_CUH

#ifdef __CUDACC_RTC__
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;
/* storage only: the kernels convert through inline PTX (moe_cuda_pack2) */
struct __nv_bfloat16 { unsigned short x; };
struct __half { unsigned short x; };
/* as in cuda.h: 128 opaque bytes, 64-byte aligned */
typedef struct CUtensorMap_st { alignas(64) unsigned long long opaque[16]; } CUtensorMap;
#else
#include "core.h"

#include <cuda.h> /* CUtensorMap (a plain struct; the driver is reached through cudaGetDriverEntryPointByVersion) */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>
#endif

/* Rows of one M tile: the routing metadata (per-tile work list) is built for
 * this BM (sm80 always; sm90 and cuda-jit also have 64-row tiles, see
 * moe_cuda_gemm.bm). */
#define MOE_CUDA_BM 128
#define MOE_CUDA_BM_MIN 64

/* X(act) for every epilogue a GEMM kernel is instantiated for: -1 is GEMM 2
 * (down), 0..6 the moe_act values of GEMM 1. */
#define MOE_CUDA_FOR_ACTS(X) X(-1) X(0) X(1) X(2) X(3) X(4) X(5) X(6)
/* A launcher's choice of instance by g's epilogue (GEMM 2: -1, else g->act):
 * CASE(a) is `case a: return ...;` for the instance of act a; an act outside
 * MOE_CUDA_FOR_ACTS gives cudaErrorInvalidValue */
#define MOE_CUDA_ACT_DISPATCH(g, CASE)                                                                                 \
    switch ((g)->mode == 2 ? -1 : (g)->act) { MOE_CUDA_FOR_ACTS(CASE) }                                               \
    return cudaErrorInvalidValue

/* One grouped GEMM over the expert-sorted (token, slot) pairs.
 *   mode 1 (gate/up): h[r, n] = act(A[r] . gate_e[n] + bg, A[r] . up_e[n] + bu)   r in expert-sorted order
 *   mode 2 (down):    y[r, n] = w[p] * (h[r] . down_e[n] + bd)                       p = sorted_pair[r]
 * (y in sorted rows too, so that whole tiles of it are stored by TMA; the combine
 * finds pair p's row at ppos[p]).
 * A rows: mode 1 sm80 gathers x[pair / K]; sm90 too (gather = 1), or reads the permuted copy xp[r];
 * mode 2 reads h[r]. Weights are [E, N, C] with stride_c = 1. */
typedef struct moe_cuda_gemm {
    int mode;                 /* 1 or 2 */
    int gated;                /* mode 1: gate and up (else up only) */
    int act;                  /* moe_act */
    float alpha, limit;       /* SWIGLU_OAI */
    int dtype;                /* MOE_TYPE_BF16 or MOE_TYPE_F16: A, B and output */
    int E, K;                 /* experts, slots per token */
    int N, C;                 /* output columns (I or D), reduced dim (D or I) */
    int TK;                   /* rows (pairs) */
    const void *A;            /* x [T, D], xp [TK, D] or h [TK, I] */
    const void *B0, *B1;      /* gate (or up when not gated, or down), up */
    int64_t b0_se, b0_sn, b1_se, b1_sn; /* element strides */
    int b_trans;              /* sm80 only: B stored [E, C, N] (stride_n = 1), strides below */
    int64_t b0_sc, b1_sc;
    const float *fb0, *fb1;   /* biases as f32 [E, N] copies made at init (roles of B0/B1), NULL = none */
    const void *bias0, *bias1; /* the caller's biases (unused by the kernels) */
    int bias0_type, bias1_type;
    int64_t bias0_se, bias0_sn, bias1_se, bias1_sn;
    void *out;                /* h [TK, I] (mode 1) or y [TK, D] (mode 2) */
    const int32_t *sorted_pair; /* [TK] pair index t*K+k in expert order */
    const int32_t *exp_off;   /* [E+1] first sorted row of each expert */
    const int2 *tiles;        /* [max_mtiles] (expert, m0) of bm-row m-tiles, in expert order; m0 < 2^28, bits
                                 28-29 a smaller or folded last tile of the expert (MOE_CUDA_TILE_CODE: bm 256 on GGUF
                                 weights) */
    const int32_t *n_mtiles;  /* [1] tiles in use (cm = 2: units in use) */
    const int2 *units;        /* cm = 2: [max_mtiles] work units, two indices into tiles (rm = 0, 1; the second -1
                                 for none): one expert's m-tiles 2i, 2i + 1 (paired), or two experts' odd last ones */
    const float *w;           /* [T*K] routing weights (mode 2) */
    int max_mtiles;           /* bound on *n_mtiles (the grid's size) */
    int cm, cn;               /* sm90 cluster shape: cm m-tiles of a unit (units), cn n-tiles sharing A */
    int bm;                   /* sm90 M tile: 128 or 64 rows (64: cm = cn = 1) */
    int bn;                   /* sm90 n-tile: 256, or 240 with cm = cn = 1 (GEMM 1: BM 128 only; gate/up: bn / 2
                                 outputs); layer.cu moe__cuda_sm90_tile_n */
    int gm;                   /* sm90 raster: m-tiles (units) per band of n-tiles (moe_cuda_raster) */
    int *sched;               /* sm90 1 x 1 or 2 x 1 (A by TMA), bf16/f16 B or GGUF B in BM 64 / 256: a zeroed
                                 counter, the units in dynamic order (gemm_sm90.cuh, gemm_sm90_q.cu); NULL: the
                                 static order */
    int gather;               /* sm90 mode 1, cn = 1: A = x [T, C], rows x[sorted_pair[r] / K] copied by the
                                 producer warp (cp.async), no permuted copy */
    int qfmt;                 /* sm90: B0/B1 are GGUF blocks of this format (decode.h MOE_DF_Q8_0, Q4_K, Q5_K,
                                 Q6_K, MXFP4), decoded in the kernel (gemm_sm90_q.cu); 0: bf16/f16 weights */
    int qfold;                /* bm 256 on GGUF B: the register-A kernel with folded tiles (the tile list's code 3) */
    int qlg, qmq, qsn, qa0;   /* ... Q8_0 / MXFP4 / Q6_K rows whose stride is not a multiple of 16 bytes (TMA's strides)
                                 or whose start is not 16-byte aligned (gemm_sm90_q.cu QsGroups): the maps address
                                 groups of 2^qlg rows (a multiple of 16 bytes) from the 16-byte boundary at or below
                                 the data; qsn = the row stride in bytes, qmq = (qsn % 16) / U, qa0 = the units from
                                 that boundary to B0's data (bits 0-2) and to B1's (bits 3-5); units of U = 4 bytes
                                 (Q8_0) or 2 (MXFP4, Q6_K). All 0 for rows TMA addresses one by one */
    int qhelp;                /* gemm_sm90_qs: the weights' TMA boxes issued by two helper warps, one a box set, beside
                                 the producer thread (the tokens); 0: by the producer thread alone */
    int qmc;                  /* gemm_sm90_qs (tiles of 256 or more tokens): launched in clusters of 2 CTAs that take
                                 the same token tile and neighbouring output tiles, each loading half of the token
                                 box and multicasting it to both; 0: one CTA a unit */
    const CUtensorMap *qx0, *qx1; /* Q6_K: B0's and B1's second maps (gemm_sm90_q.cu Sm90Quant<Q6_K>), host
                                     pointers the launch copies from; NULL otherwise */
} moe_cuda_gemm;

/* An expert's last m-tile when the tile list has tails (k_scan, gemm_sm90_q.cu):
 * its rows (up to 128 or 64) run a tile of that many tokens; code 0 = bm.
 * Folded (code 3): an expert's last rows beyond a full tile, when
 * MOE_CUDA_TILE_FOLD or fewer, go with that tile (bm + up to 24 rows, whose
 * weights are then decoded once) */
#define MOE_CUDA_TILE_ROW(y) ((y) & 0x0fffffff)
#define MOE_CUDA_TILE_CODE(y) (((y) >> 28) & 3) /* 0: bm rows, 1: 128, 2: 64, 3: bm + up to 24 */
#define MOE_CUDA_TILE_TAIL(r) ((r) <= 64 ? 2 : (r) <= 128 ? 1 : 0)
#define MOE_CUDA_TILE_FOLD 24
/* moe_cuda_gemm qfmt of bf16/f16 weights on the register-A kernel (the weights'
 * dtype the activations'; gemm_sm90_qd.cu): not a GGUF format, past decode.h's
 * MOE_DF_* numbers, which qfmt takes for GGUF blocks */
#define SM90_QF_DENSE 10

#ifdef __CUDACC__
/* ---- device helpers ---- */

/* The sigmoids divide with __fdividef (MUFU.RCP and a multiply): an IEEE
 * division brings a slow-path branch per call, and its convergence barriers
 * kept the compiler from interleaving an epilogue's 64 independent
 * activations (NOTES.md, session 8). __fdividef(x, y) is within 2 ulp for y
 * below 2^126 and 0 above (the sigmoid's true value there is under 1e-36). */
static __device__ __forceinline__ float moe_cuda_act(int act, float g, float u, float alpha, float limit) {
    switch (act) {
    case MOE_ACT_SWIGLU: return __fdividef(g, 1.0f + __expf(-g)) * u;
    case MOE_ACT_GEGLU_TANH: return 0.5f * g * (1.0f + tanhf(0.7978845608028654f * (g + 0.044715f * g * g * g))) * u;
    case MOE_ACT_GEGLU_ERF: return 0.5f * g * (1.0f + erff(g * 0.7071067811865476f)) * u;
    case MOE_ACT_SWIGLU_OAI:
        /* comparisons, not fminf/fmaxf, so that NaN stays NaN (as the reference) */
        g = g > limit ? limit : g;
        u = u > limit ? limit : (u < -limit ? -limit : u);
        return __fdividef(g, 1.0f + __expf(-alpha * g)) * (u + 1.0f);
    case MOE_ACT_SILU: return __fdividef(u, 1.0f + __expf(-u));
    case MOE_ACT_GELU: return 0.5f * u * (1.0f + tanhf(0.7978845608028654f * (u + 0.044715f * u * u * u)));
    case MOE_ACT_RELU2: return u < 0.f ? 0.f : u * u;
    }
    return 0.f;
}

/* bias[e][col], bias[e][col + 1] of an f32 [E, N] copy (col even, N even) */
static __device__ __forceinline__ float2 moe_cuda_bias2(const float *b, int e, int N, int col) {
    return *(const float2 *)(b + (int64_t)e * N + col);
}

/* Two floats packed as two 16-bit values of type T (low half first). */
template <typename T> static __device__ __forceinline__ uint32_t moe_cuda_pack2(float a, float b);
#ifdef __CUDACC_RTC__
/* the instructions __floats2bfloat162_rn / __floats2half2_rn use on sm_80+ */
template <> __device__ __forceinline__ uint32_t moe_cuda_pack2<__nv_bfloat16>(float a, float b) {
    uint32_t v;
    asm("{ cvt.rn.bf16x2.f32 %0, %2, %1;}\n" : "=r"(v) : "f"(a), "f"(b));
    return v;
}
template <> __device__ __forceinline__ uint32_t moe_cuda_pack2<__half>(float a, float b) {
    uint32_t v;
    asm("{ cvt.rn.f16x2.f32 %0, %2, %1; }\n" : "=r"(v) : "f"(a), "f"(b));
    return v;
}
#else
template <> __device__ __forceinline__ uint32_t moe_cuda_pack2<__nv_bfloat16>(float a, float b) {
    __nv_bfloat162 v = __floats2bfloat162_rn(a, b);
    return *(uint32_t *)&v;
}
template <> __device__ __forceinline__ uint32_t moe_cuda_pack2<__half>(float a, float b) {
    __half2 v = __floats2half2_rn(a, b);
    return *(uint32_t *)&v;
}
#endif

/* Tile t of the (m-tile, n-tile) grid in grouped raster order: GM m-tiles
 * share a band of n-tiles so that concurrent CTAs reuse A rows and B columns
 * in L2 (an expert's weights are read once per band instead of once per m-tile). */
static __device__ __forceinline__ void moe_cuda_raster(int t, int MT, int NT, int GM, int *mt, int *nt) {
    int group = t / (GM * NT), first = group * GM;
    int gm = MT - first < GM ? MT - first : GM;
    int idx = t - first * NT;
    *mt = first + idx % gm;
    *nt = idx / gm;
}
#endif

#endif
