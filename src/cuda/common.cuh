/*
 * Shared pieces of the CUDA backends: the per-layer state, the host entry
 * points of the GEMMs, and small device helpers; the arguments of one grouped
 * GEMM launch and the epilogue helpers are in gemm_common.cuh (shared with
 * the cuda-jit program). Included by every src/cuda/*.cu file.
 */
#ifndef MOE_CUDA_COMMON_CUH
#define MOE_CUDA_COMMON_CUH

#include "core.h"

#include <cuda.h> /* CUtensorMap (a plain struct; the driver is reached through cudaGetDriverEntryPointByVersion) */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "gemm_common.cuh"

/* cuda-jit: the layer's own sm_90a kernels, loaded at init (jit_backend.cu) */
typedef struct moe_cuda_jit {
    CUmodule module;
    CUfunction fn[6];         /* GEMM 1 (gate/up + act), GEMM 2 (down) with BM 128; the same with BM 64 (1 x 1 only);
                                 the same in 2 x 1 clusters (c21: for the T where moe__cuda_sm90_shape picks them) */
    int max_clusters[6];      /* clusters of cm x cn CTAs resident at once */
    int nfn;                  /* 4 (+ 2 with c21), or 2 when clusters leave out the BM 64 kernels */
    int cm, cn;               /* cluster shape of fn[0..3], fixed at init */
    int c21;                  /* fn[4], fn[5] exist */
    int cache_hit;
    double ms;                /* NVRTC compile or cache read */
    char cache_path[512];
} moe_cuda_jit;

typedef struct moe_cuda_impl {
    int device, sm_count, cc_major, cc_minor;
    int l2_bytes; /* the device's L2 (the raster rule, layer.cu moe__cuda_sm90_raster) */
    int sm90;                 /* this layer runs the Hopper kernels */
    /* sm90: tensor maps of the weights, made once at init (the weights are fixed);
     * tm_down_n has boxes of bn2 / 2 rows (the same as tm_down when bn2 = 256) */
    CUtensorMap tm_b0, tm_b1, tm_down, tm_down_n, tm_b0_n, tm_b1_n;
    int bn2;                  /* sm90: GEMM 2's n-tile with 1 x 1 clusters, 256 or 240 (moe__cuda_sm90_bn2) */
    int bn1;                  /* sm90: GEMM 1's n-tile with BM 128 and 1 x 1 clusters, 256 or 240
                                 (moe__cuda_sm90_bn1); tm_b0_n / tm_b1_n have boxes of bn1 / 2 rows */
    /* biases as f32 [E, N] device copies (NULL when absent), made at init */
    float *fb_gate, *fb_up, *fb_down;
    moe_cuda_jit *jit;        /* cuda-jit: launched instead of the built-in sm90 kernels; NULL otherwise */
    int gather;               /* sm90: GEMM 1 gathers its A rows from x (no permuted copy xp; needs cn = 1, and
                                 runs in 2 x 1 clusters only when forced): 1 / 0 as MOE_SM90_GATHER (or 1 x 2 / 2 x 2
                                 clusters) force it, -1 the rule per forward (moe__cuda_sm90_shape) */
    /* cuda-quant's prefill on GGUF blocks (moe__cuda_sm90_quant): the formats of gate/up and down (decode.h
     * MOE_DF_*; 0: bf16/f16 weights) and the raw maps (gemm_sm90_q.cu); the GEMMs then run BM 128, BN 256, 1 x 1,
     * A through TMA from the permuted copy */
    int qfmt1, qfmt2;
    CUtensorMap tm_qg, tm_qu, tm_qd;
    int qs;                   /* ... the m-tile: 256 or 64 (the kernel with the weights as A in registers; its maps
                                 have 64-row boxes) or 128 (B decoded into shared memory) as MOE_SM90_QS forces,
                                 -1 the rule per forward (moe__cuda_sm90_bm) */
    int qs_tail;              /* m-tiles of 256: an expert's last rows in a tile of 128 or 64 when they are that
                                 few (MOE_CUDA_TILE_CODE); MOE_SM90_QS_TAIL=0 turns it off */
    int qs_fold;              /* ... and (with qs_tail) its last 24 or fewer rows beyond a full tile folded into that
                                 tile: -1 by the rule (moe__cuda_sm90_fold), MOE_SM90_QS_FOLD=0 never, =1 always */
    int qs_help;              /* the register-A kernel's weight loads issued by two helper warps beside the producer
                                 thread (moe_cuda_gemm qhelp): -1 on GGUF blocks (layer.cu sm90_qs_helpers),
                                 MOE_SM90_QS_HELP=0 never, =1 always */
    int qs_mc;                /* the register-A kernel's tiles of 256 (or 128 + folds) in clusters of 2 sharing each
                                 token tile by multicast (moe_cuda_gemm qmc): -1 by the rule (layer.cu sm90_qs_mc),
                                 MOE_SM90_QS_MC=0 never, =1 always */
    CUtensorMap tm_qg64, tm_qu64, tm_qd64;
    CUtensorMap tm_qg64h, tm_qu64h, tm_qd64h; /* ... Q6_K's second maps (moe__cuda_quant_box2) of the same rows */
    /* GEMM 1's and 2's Q8_0 / MXFP4 rows in groups (moe_cuda_gemm qlg, qmq, qsn, qa0; all 0: none); with groups
     * only the 64-row maps exist */
    int qlg1, qmq1, qsn1, qa01, qlg2, qmq2, qsn2, qa02;
    int qgrp;                 /* some of them in groups, or MXFP4, Q5_K, Q6_K: the register-A kernel only
                                 (moe__cuda_sm90_bm) */
    /* bf16/f16 weights on the register-A kernel (gemm_sm90_qd.cu; layer.cu moe__cuda_sm90_tn): -1 by the rule
     * per forward, 0 / 1 as MOE_SM90_TN forces; tn_ok: the weights' dtype is the activations' and their maps in
     * boxes of 64 rows (tm_dg64: gate, or up when not gated; tm_du64: up; tm_dd64: down) exist */
    int tn, tn_ok;
    CUtensorMap tm_dg64, tm_du64, tm_dd64;
} moe_cuda_impl;

#ifdef __cplusplus
extern "C" {
#endif
/* src/cuda/layer.cu: the cluster shape and A-row source of a forward over T
 * tokens on the sm90 kernels (AOT or cuda-jit); returns 1 when GEMM 1 gathers
 * its A rows from x (no permuted copy). */
int moe__cuda_sm90_shape(const moe_layer *L, int64_t T, int *cm, int *cn);
/* MOE_SM90_CM / MOE_SM90_CN (2, else 1) into cm, cn; returns whether either is set */
int moe__cuda_sm90_env_cluster(int *cm, int *cn);
/* whether some T may take the 2 x 1 clusters by default (cuda-jit then compiles them) */
int moe__cuda_sm90_c21_possible(const moe_layer *L);
/* src/cuda/gemm_sm80.cu */
cudaError_t moe__cuda_gemm_sm80(const moe_cuda_gemm *g, int sm_count, cudaStream_t s);
cudaError_t moe__cuda_gemm_sm80_prepare(void); /* raises the smem limits; once per device */
/* src/cuda/gemm_sm90.cu */
cudaError_t moe__cuda_gemm_sm90(const moe_cuda_gemm *g, const CUtensorMap *tmB0, const CUtensorMap *tmB1,
                                int sm_count, cudaStream_t s, char *why, size_t n);
cudaError_t moe__cuda_gemm_sm90_prepare(void);
/* the A and output maps of a launch (tm[0], tm[1]); 0, or -1 and why */
int moe__cuda_sm90_tmap_a_out(const moe_cuda_gemm *g, CUtensorMap *tm, char *why, size_t n);
/* the A map alone, in boxes of `rows` rows (gemm_sm90_q.cu's tail tiles) */
int moe__cuda_sm90_tmap_a(const moe_cuda_gemm *g, int rows, CUtensorMap *tm, char *why, size_t n);
/* src/cuda/gemm_sm90_q.cu: the launch with GGUF blocks as B (g->qfmt; tmB0 / tmB1
 * made by moe__cuda_quant_tmap with the format's box, moe__cuda_quant_box) */
cudaError_t moe__cuda_gemm_sm90_q(const moe_cuda_gemm *g, const CUtensorMap *tmB0, const CUtensorMap *tmB1,
                                  int sm_count, cudaStream_t s, char *why, size_t n);
cudaError_t moe__cuda_gemm_sm90_q_prepare(void);
/* src/cuda/gemm_sm90_qd.cu: bf16/f16 weights on the register-A kernel (g->qfmt =
 * SM90_QF_DENSE; tmB0 / tmB1 moe__cuda_weight_tmap's in boxes of 64 rows) */
cudaError_t moe__cuda_gemm_sm90_qd(const moe_cuda_gemm *g, const CUtensorMap *tmB0, const CUtensorMap *tmB1,
                                   int sm_count, cudaStream_t s, char *why, size_t n);
cudaError_t moe__cuda_gemm_sm90_qd_prepare(void);
int moe__cuda_quant_tmap(CUtensorMap *tm, const void *data, int64_t E, int64_t N, int64_t row_bytes, int64_t se,
                         int64_t sn, int box_bytes, int box_rows, int lg, int a0b, char *why, size_t n);
/* The driver functions cuda-jit calls, resolved through the runtime
 * (cudaGetDriverEntryPointByVersion), so that the library does not link
 * libcuda and loads where no driver is installed; NULL when unavailable. */
typedef struct moe_cuda_driver {
    CUresult (*module_load_data)(CUmodule *, const void *);
    CUresult (*module_get_function)(CUfunction *, CUmodule, const char *);
    CUresult (*module_unload)(CUmodule);
    CUresult (*func_set_attribute)(CUfunction, CUfunction_attribute, int);
    CUresult (*occupancy_max_active_clusters)(int *, CUfunction, const CUlaunchConfig *);
    CUresult (*launch_kernel_ex)(const CUlaunchConfig *, CUfunction, void **, void **);
    CUresult (*get_error_name)(CUresult, const char **);
} moe_cuda_driver;
const moe_cuda_driver *moe__cuda_driver(void);
/* cuda-jit: the same launch on a kernel compiled at run time (gemm1/gemm2 of
 * the JIT program): prepare raises its shared memory limit and counts the
 * clusters that fit; both return cudaErrorInvalidValue / LaunchFailure with why. */
cudaError_t moe__cuda_gemm_sm90_jit_prepare(CUfunction f, int cm, int cn, int bm, int sm_count, int *max_clusters,
                                            char *why, size_t n);
cudaError_t moe__cuda_gemm_sm90_jit(const moe_cuda_gemm *g, const CUtensorMap *tmB0, const CUtensorMap *tmB1,
                                    CUfunction f, int max_clusters, cudaStream_t s, char *why, size_t n);
/* 1 if the sm90 kernels were compiled into this build for the current device. */
int moe__cuda_sm90_available(void);
/* The M tile (128 or 64 rows) of the sm90 / cuda-jit GEMMs for a forward of T
 * tokens with clusters cm x cn (layer.cu: the tile table's rule). */
int moe__cuda_sm90_bm(const moe_layer *L, int64_t T, int cm, int cn);
/* The raster band (m-tiles or units per sweep over the n-tiles) of a forward
 * over T tokens with M tiles of bm rows (layer.cu: the rule). */
int moe__cuda_sm90_raster(const moe_layer *L, int64_t T, int bm, int cm);
/* ... of GEMM 2 (on GGUF blocks sized by its own A rows, I wide) */
int moe__cuda_sm90_raster2(const moe_layer *L, int64_t T, int bm, int cm);
int moe__cuda_sm90_fold(const moe_layer *L, int64_t T, int bm);
/* 1 where a forward of T tokens on bf16/f16 weights runs the register-A kernel
 * (gemm_sm90_qd.cu: 256 tokens a tile, BM 256 in the forward) */
int moe__cuda_sm90_tn(const moe_layer *L, int64_t T);
/* 1 where the GEMMs of a forward in cm x cn clusters (GEMM 1 gathering x's
 * rows or not) with m-tiles of bm take their units in dynamic order (layer.cu:
 * 1 x 1, or 2 x 1 through TMA; on GGUF blocks not with bm 128; unless
 * MOE_SM90_SCHED=0) */
int moe__cuda_sm90_dynamic(const moe_layer *L, int cm, int cn, int gather, int bm);
/* GEMM 2's n-tile for a layer of D output columns (layer.cu: the rule and
 * where it was measured; MOE_SM90_BN2 forces 256 or 240). */
int moe__cuda_sm90_bn2(int64_t D);
/* GEMM 1's (N = I outputs, gate and up or up only; MOE_SM90_BN1 forces 256 or 240) */
int moe__cuda_sm90_bn1(int64_t I, int gated);
/* The n-tile of GEMM 1 or 2 (gemm) in a forward with clusters cm x cn and
 * M tiles of bm rows: 256, bn1 or bn2 (layer.cu) */
int moe__cuda_sm90_tile_n(const moe_layer *L, int gemm, int cm, int cn, int bm);

/* Makes a 3-D tensor map over weights [E, N, C] (stride_c = 1) with boxes of
 * 64 x box_rows x 1; 0 on success, else -1 and why. */
int moe__cuda_weight_tmap(CUtensorMap *tm, const void *data, int dtype, int64_t E, int64_t N, int64_t C,
                          int64_t se, int64_t sn, int box_rows, char *why, size_t n);
/* src/cuda/layer.cu: the pieces of cuda-sm90 that cuda-jit reuses */
int moe__cuda_probe_device(moe_ctx *ctx, char *why, size_t n, int *major, int *minor);
int moe__cuda_supports_sm90(const moe_layer *L, char *why, size_t n);
moe_status moe__cuda_init_sm90(moe_layer *L);
void moe__cuda_fini(moe_layer *L); /* also unloads impl->jit */
size_t moe__cuda_workspace_sm90(const moe_layer *L, int64_t T);
moe_status moe__cuda_forward(moe_layer *L, const moe__fwd *a);
#ifdef __cplusplus
}
#endif

#ifdef __CUDACC__
/* ---- device helpers (more in gemm_common.cuh) ---- */

static __device__ __forceinline__ float moe_cuda_load_bias(const void *p, int type, int64_t i) {
    if (type == MOE_TYPE_BF16) return __bfloat162float(((const __nv_bfloat16 *)p)[i]);
    if (type == MOE_TYPE_F16) return __half2float(((const __half *)p)[i]);
    return ((const float *)p)[i];
}

#endif

#endif
