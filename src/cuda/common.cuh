/*
 * Shared pieces of the CUDA backends: the per-layer state, the arguments of
 * one grouped GEMM launch, the workspace layout, and small device helpers
 * (activations, conversions). Included by every src/cuda/*.cu file.
 */
#ifndef MOE_CUDA_COMMON_CUH
#define MOE_CUDA_COMMON_CUH

#include "core.h"

#include <cuda.h> /* CUtensorMap (a plain struct; the driver is reached through cudaGetDriverEntryPointByVersion) */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

/* Rows of one M tile: the routing metadata (per-tile work list) is built for
 * this BM, shared by the sm80 and sm90 kernels. */
#define MOE_CUDA_BM 128

/* X(act) for every epilogue a GEMM kernel is instantiated for: -1 is GEMM 2
 * (down), 0..6 the moe_act values of GEMM 1. */
#define MOE_CUDA_FOR_ACTS(X) X(-1) X(0) X(1) X(2) X(3) X(4) X(5) X(6)

/* One grouped GEMM over the expert-sorted (token, slot) pairs.
 *   mode 1 (gate/up): h[r, n] = act(A[r] . gate_e[n] + bg, A[r] . up_e[n] + bu)   r in expert-sorted order
 *   mode 2 (down):    y[p, n] = w[p] * (h[r] . down_e[n] + bd)                       p = sorted_pair[r]
 * A rows: mode 1 sm80 gathers x[pair / K]; sm90 reads the permuted copy xp[r];
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
    const int2 *tiles;        /* [max_mtiles] (expert, m0) */
    const int32_t *n_mtiles;  /* [1] tiles in use */
    const float *w;           /* [T*K] routing weights (mode 2) */
    int max_mtiles;
    int cm, cn;               /* sm90 cluster shape: M tiles of 128*cm rows split over cm CTAs; cn n-tiles share A */
} moe_cuda_gemm;

typedef struct moe_cuda_impl {
    int device, sm_count, cc_major, cc_minor;
    int sm90;                 /* this layer runs the Hopper kernels */
    /* sm90: tensor maps of the weights, made once at init (the weights are fixed) */
    CUtensorMap tm_b0, tm_b1, tm_down;
    /* biases as f32 [E, N] device copies (NULL when absent), made at init */
    float *fb_gate, *fb_up, *fb_down;
} moe_cuda_impl;

#ifdef __cplusplus
extern "C" {
#endif
/* src/cuda/gemm_sm80.cu */
cudaError_t moe__cuda_gemm_sm80(const moe_cuda_gemm *g, int sm_count, cudaStream_t s);
cudaError_t moe__cuda_gemm_sm80_prepare(void); /* raises the smem limits; once per device */
/* src/cuda/gemm_sm90.cu */
cudaError_t moe__cuda_gemm_sm90(const moe_cuda_gemm *g, const CUtensorMap *tmB0, const CUtensorMap *tmB1,
                                int sm_count, cudaStream_t s, char *why, size_t n);
cudaError_t moe__cuda_gemm_sm90_prepare(void);
/* 1 if the sm90 kernels were compiled into this build for the current device. */
int moe__cuda_sm90_available(void);
/* Makes a 3-D tensor map over weights [E, N, C] (stride_c = 1) with boxes of
 * 64 x box_rows x 1; 0 on success, else -1 and why. */
int moe__cuda_weight_tmap(CUtensorMap *tm, const void *data, int dtype, int64_t E, int64_t N, int64_t C,
                          int64_t se, int64_t sn, int box_rows, char *why, size_t n);
#ifdef __cplusplus
}
#endif

#ifdef __CUDACC__
/* ---- device helpers ---- */

static __device__ __forceinline__ float moe_cuda_act(int act, float g, float u, float alpha, float limit) {
    switch (act) {
    case MOE_ACT_SWIGLU: return g / (1.0f + __expf(-g)) * u;
    case MOE_ACT_GEGLU_TANH: return 0.5f * g * (1.0f + tanhf(0.7978845608028654f * (g + 0.044715f * g * g * g))) * u;
    case MOE_ACT_GEGLU_ERF: return 0.5f * g * (1.0f + erff(g * 0.7071067811865476f)) * u;
    case MOE_ACT_SWIGLU_OAI:
        /* comparisons, not fminf/fmaxf, so that NaN stays NaN (as the reference) */
        g = g > limit ? limit : g;
        u = u > limit ? limit : (u < -limit ? -limit : u);
        return g / (1.0f + __expf(-alpha * g)) * (u + 1.0f);
    case MOE_ACT_SILU: return u / (1.0f + __expf(-u));
    case MOE_ACT_GELU: return 0.5f * u * (1.0f + tanhf(0.7978845608028654f * (u + 0.044715f * u * u * u)));
    case MOE_ACT_RELU2: return u < 0.f ? 0.f : u * u;
    }
    return 0.f;
}

/* bias[e][col], bias[e][col + 1] of an f32 [E, N] copy (col even, N even) */
static __device__ __forceinline__ float2 moe_cuda_bias2(const float *b, int e, int N, int col) {
    return *(const float2 *)(b + (int64_t)e * N + col);
}

static __device__ __forceinline__ float moe_cuda_load_bias(const void *p, int type, int64_t i) {
    if (type == MOE_TYPE_BF16) return __bfloat162float(((const __nv_bfloat16 *)p)[i]);
    if (type == MOE_TYPE_F16) return __half2float(((const __half *)p)[i]);
    return ((const float *)p)[i];
}

/* Two floats packed as two 16-bit values of type T (low half first). */
template <typename T> static __device__ __forceinline__ uint32_t moe_cuda_pack2(float a, float b);
template <> __device__ __forceinline__ uint32_t moe_cuda_pack2<__nv_bfloat16>(float a, float b) {
    __nv_bfloat162 v = __floats2bfloat162_rn(a, b);
    return *(uint32_t *)&v;
}
template <> __device__ __forceinline__ uint32_t moe_cuda_pack2<__half>(float a, float b) {
    __half2 v = __floats2half2_rn(a, b);
    return *(uint32_t *)&v;
}

/* Tile t of the (m-tile, n-tile) grid in grouped raster order: GM m-tiles
 * share a band of n-tiles so that concurrent CTAs reuse A rows and B columns
 * in L2 (an expert's weights are read once per band instead of once per m-tile). */
static __device__ __forceinline__ void moe_cuda_raster(int t, int MT, int NT, int *mt, int *nt) {
    const int GM = 16;
    int group = t / (GM * NT), first = group * GM;
    int gm = MT - first < GM ? MT - first : GM;
    int idx = t - first * NT;
    *mt = first + idx % gm;
    *nt = idx / gm;
}
#endif

#endif
