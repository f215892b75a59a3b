/*
 * Grouped GEMM for Hopper (backend "cuda-sm90", sm_90a): TMA loads of A and B
 * tiles into a 4-stage shared-memory ring completed
 * on mbarriers, wgmma from shared memory, one producer warpgroup and two
 * consumer warpgroups (64 rows each, m64n256k16, one wgmma group in flight),
 * persistent over (m-tile, n-tile) work in grouped raster order. Same two
 * modes and epilogues as gemm_sm80.cu (see common.cuh); must match
 * src/ref/ref.c. The activation is a template parameter: a run-time switch
 * in the unrolled epilogue made 330 KB kernels that thrashed the instruction
 * cache (NOTES.md, run 3).
 *
 * A rows for TMA must be contiguous, so GEMM 1 either reads the permuted copy
 * xp of x made by the scatter step (layer.cu), or (g.gather, no A multicast;
 * the default without clusters for I <= 2048 or up to 128 rows an expert,
 * layer.cu moe__cuda_sm90_shape) its producer warpgroup gathers the rows from x
 * with cp.async, placed in TMA's 128B-swizzle pattern and completing on the
 * full barrier (cp.async.mbarrier.arrive.noinc; the consumers fence the generic
 * proxy before wgmma). Weights are read through 3-D tensor maps [E, N, C] made
 * once at layer creation: rows past N (the end of one expert) and columns past
 * C are zero-filled by TMA, never read from the next expert. With gate/up, the
 * B tile is BN / 2 gate rows then the same up rows (two TMA boxes), so a
 * thread holds gate and up of the same output column.
 *
 * Thread-block clusters CM x CN with TMA multicast (MOE_SM90_CM, MOE_SM90_CN):
 * 2 x 1 is the default for wide layers with two or more m-tiles an expert
 * (layer.cu sm90_c21_rule; its units pair m-tiles, k_pair_units), 1 x 2 and
 * 2 x 2 measured slower and run only where asked.
 *
 * Tile shapes (gemm_sm90.cuh; which one a forward uses: moe__cuda_sm90_bm in
 * layer.cu, whose comment records where the rule was measured):
 *   BM 128 x BN 256 x BK 64, 4 stages (192 KB) and 32 KB to stage the
 *     epilogue's outputs in boxes that TMA stores (h and y in sorted rows; the
 *     combine finds a pair's y row through ppos), clusters 1x1 (default), 1x2,
 *     2x1, 2x2;
 *   BM 64 x BN 256 x BK 64, 5 stages (200 KB), 1x1 only: for experts with few
 *     rows (an M tile of 128 rows is mostly padding below ~100 rows);
 *   with 1x1 clusters also n-tiles of 240 where that pads N less: GEMM 2
 *     (BM 128 and 64; layer.cu moe__cuda_sm90_bn2) and GEMM 1 (BM 128;
 *     moe__cuda_sm90_bn1).
 */
#include "common.cuh"
#include "gemm_sm90.cuh"

#include <cudaTypedefs.h>
#include <stdio.h>
#include <string.h>

template <int ACT, typename T, int CM, int CN, int BMT, int BNT>
static __global__ void __launch_bounds__(NTHREADS, 1)
    gemm_sm90(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB0,
              const __grid_constant__ CUtensorMap tmB1, const __grid_constant__ CUtensorMap tmO, const moe_cuda_gemm g) {
    gemm_sm90_body<ACT, T, CM, CN, BMT, BNT>(tmA, tmB0, tmB1, tmO, g);
}

/* ---- host side ---- */

static PFN_cuTensorMapEncodeTiled_v12000 encode_fn(void) {
    static PFN_cuTensorMapEncodeTiled_v12000 fn = NULL;
    if (!fn) {
        void *p = NULL;
        cudaDriverEntryPointQueryResult q;
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q) ==
                cudaSuccess &&
            q == cudaDriverEntryPointSuccess)
            fn = (PFN_cuTensorMapEncodeTiled_v12000)p;
    }
    return fn;
}

extern "C" const moe_cuda_driver *moe__cuda_driver(void) {
    static moe_cuda_driver d;
    static int state = 0; /* 0 untried, 1 ok, -1 missing */
    if (state == 0) {
        struct { const char *name; void **fn; } t[] = {
            {"cuModuleLoadData", (void **)&d.module_load_data},
            {"cuModuleGetFunction", (void **)&d.module_get_function},
            {"cuModuleUnload", (void **)&d.module_unload},
            {"cuFuncSetAttribute", (void **)&d.func_set_attribute},
            {"cuOccupancyMaxActiveClusters", (void **)&d.occupancy_max_active_clusters},
            {"cuLaunchKernelEx", (void **)&d.launch_kernel_ex},
            {"cuGetErrorName", (void **)&d.get_error_name},
        };
        int ok = 1;
        for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
            cudaDriverEntryPointQueryResult q;
            if (cudaGetDriverEntryPointByVersion(t[i].name, t[i].fn, 12000, cudaEnableDefault, &q) != cudaSuccess ||
                q != cudaDriverEntryPointSuccess || !*t[i].fn) {
                cudaGetLastError();
                ok = 0;
            }
        }
        state = ok ? 1 : -1;
    }
    return state > 0 ? &d : NULL;
}

static int encode_sw(CUtensorMap *tm, const void *data, int dtype, int rank, const cuuint64_t *dims,
                     const cuuint64_t *strides, const cuuint32_t *box, CUtensorMapSwizzle sw, char *why, size_t n) {
    PFN_cuTensorMapEncodeTiled_v12000 fn = encode_fn();
    if (!fn) {
        snprintf(why, n, "cuTensorMapEncodeTiled is not available from the driver");
        return -1;
    }
    cuuint32_t es[3] = {1, 1, 1};
    CUresult r = fn(tm, dtype == MOE_TYPE_BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
                    (cuuint32_t)rank, (void *)data, dims, strides, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
                    sw, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) {
        snprintf(why, n, "cuTensorMapEncodeTiled failed (CUresult %d)", (int)r);
        return -1;
    }
    return 0;
}
/* the operands' maps: 128B swizzle, as the wgmma descriptors read them */
static int encode(CUtensorMap *tm, const void *data, int dtype, int rank, const cuuint64_t *dims,
                  const cuuint64_t *strides, const cuuint32_t *box, char *why, size_t n) {
    return encode_sw(tm, data, dtype, rank, dims, strides, box, CU_TENSOR_MAP_SWIZZLE_128B, why, n);
}

extern "C" int moe__cuda_weight_tmap(CUtensorMap *tm, const void *data, int dtype, int64_t E, int64_t N, int64_t C,
                                     int64_t se, int64_t sn, int box_rows, char *why, size_t n) {
    cuuint64_t dims[3] = {(cuuint64_t)C, (cuuint64_t)N, (cuuint64_t)E};
    cuuint64_t strides[2] = {(cuuint64_t)sn * 2, (cuuint64_t)(E > 1 ? se : N * sn) * 2};
    cuuint32_t box[3] = {BK, (cuuint32_t)box_rows, 1};
    return encode(tm, data, dtype, 3, dims, strides, box, why, n);
}

/* A quantised weight's GGUF rows as bytes, [E, N, row bytes] with the
 * tensor's byte strides (multiples of 16, as TMA requires), in boxes of
 * box_bytes x box_rows (gemm_sm90.cuh: quantised B, 128 rows; gemm_sm90_q.cu's
 * register-A kernel, 64). lg, a0b (gemm_sm90_q.cu, Sm90Quant load_g):
 * groups of 2^lg rows from the 16-byte boundary a0b bytes below the data,
 * [E, N / 2^lg, a0b + (2^lg - 1) sn + row bytes] with strides 2^lg sn and
 * se, boxes of box_rows / 2^lg groups; the groups' last bytes are their last
 * row's, so no box reads past the tensor. */
extern "C" int moe__cuda_quant_tmap(CUtensorMap *tm, const void *data, int64_t E, int64_t N, int64_t row_bytes,
                                    int64_t se, int64_t sn, int box_bytes, int box_rows, int lg, int a0b, char *why,
                                    size_t n) {
    PFN_cuTensorMapEncodeTiled_v12000 fn = encode_fn();
    if (!fn) {
        snprintf(why, n, "cuTensorMapEncodeTiled is not available from the driver");
        return -1;
    }
    cuuint64_t dims[3] = {(cuuint64_t)(a0b + ((1 << lg) - 1) * sn + row_bytes), (cuuint64_t)(N >> lg),
                          (cuuint64_t)E};
    cuuint64_t strides[2] = {(cuuint64_t)(sn << lg), (cuuint64_t)(E > 1 ? se : N * sn)};
    cuuint32_t box[3] = {(cuuint32_t)box_bytes, (cuuint32_t)(box_rows >> lg), 1}, es[3] = {1, 1, 1};
    CUresult r = fn(tm, CU_TENSOR_MAP_DATA_TYPE_UINT8, 3, (void *)((const char *)data - a0b), dims, strides, box, es,
                    CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                    CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) {
        snprintf(why, n, "cuTensorMapEncodeTiled of the GGUF rows failed (CUresult %d)", (int)r);
        return -1;
    }
    return 0;
}

/* Output columns of one n-tile: g->bn, or half of it for gate/up. */
static int nout_of(const moe_cuda_gemm *g) { return g->mode == 1 && g->gated ? g->bn / 2 : g->bn; }

/* Clusters to launch: as many as are resident at once (persistent CTAs), but
 * no more than could have work (the host bound on M tiles x n-tile units). */
static int64_t grid_clusters(const moe_cuda_gemm *g, int max_clusters) {
    const int nout = nout_of(g), cn = g->cn;
    int64_t NU = ((g->N + nout - 1) / nout + cn - 1) / cn;
    int64_t most = (int64_t)g->max_mtiles * NU;
    int64_t clusters = max_clusters < most ? max_clusters : most;
    return clusters < 1 ? 1 : clusters;
}

template <int ACT, typename T, int CM, int CN, int BMT, int BNT = 256>
static cudaError_t launch(const moe_cuda_gemm *g, const CUtensorMap *tm, const CUtensorMap *b0, const CUtensorMap *b1,
                          int sm_count, cudaStream_t s) {
    const int CS = CM * CN;
    static int max_clusters = -1;               /* per instance; one device type per process assumed */
    cudaLaunchConfig_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = CS;
    at[0].val.clusterDim.y = 1;
    at[0].val.clusterDim.z = 1;
    cfg.blockDim = dim3(NTHREADS);
    cfg.dynamicSmemBytes = SM90_SMEM_BYTES(BMT);
    cfg.stream = s;
    cfg.attrs = at;
    cfg.numAttrs = 1;
    if (max_clusters < 0) {
        int n = 0;
        cfg.gridDim = dim3(CS * (sm_count / CS));
        if (cudaOccupancyMaxActiveClusters(&n, gemm_sm90<ACT, T, CM, CN, BMT, BNT>, &cfg) != cudaSuccess || n < 1) {
            cudaGetLastError();
            n = sm_count / CS;
        }
        max_clusters = n;
    }
    int64_t clusters = grid_clusters(g, max_clusters);
    cfg.gridDim = dim3((unsigned)(clusters * CS));
    /* tm: the A and output maps (tmap_a_out) */
    cudaError_t e = cudaLaunchKernelEx(&cfg, gemm_sm90<ACT, T, CM, CN, BMT, BNT>, tm[0], *b0, *b1, tm[1], *g);
    return e != cudaSuccess ? e : cudaGetLastError();
}

template <int ACT, typename T>
static cudaError_t launch_c(const moe_cuda_gemm *g, const CUtensorMap *tm, const CUtensorMap *b0,
                            const CUtensorMap *b1, int sm_count, cudaStream_t s) {
    /* the narrow n-tiles: 1 x 1 clusters only, GEMM 1's with BM 128 (layer.cu moe__cuda_sm90_tile_n) */
    if (ACT < 0 && g->bn == 240)
        return g->bm == 64 ? launch<-1, T, 1, 1, 64, 240>(g, tm, b0, b1, sm_count, s)
                           : launch<-1, T, 1, 1, 128, 240>(g, tm, b0, b1, sm_count, s);
    if (ACT >= 0 && g->bn == 240) return launch<ACT, T, 1, 1, 128, 240>(g, tm, b0, b1, sm_count, s);
    if (g->bm == 64) return launch<ACT, T, 1, 1, 64>(g, tm, b0, b1, sm_count, s); /* no clusters (layer.cu) */
    if (g->cm == 2)
        return g->cn == 2 ? launch<ACT, T, 2, 2, 128>(g, tm, b0, b1, sm_count, s)
                          : launch<ACT, T, 2, 1, 128>(g, tm, b0, b1, sm_count, s);
    return g->cn == 2 ? launch<ACT, T, 1, 2, 128>(g, tm, b0, b1, sm_count, s)
                      : launch<ACT, T, 1, 1, 128>(g, tm, b0, b1, sm_count, s);
}

template <typename T>
static cudaError_t dispatch(const moe_cuda_gemm *g, const CUtensorMap *tm, const CUtensorMap *b0,
                            const CUtensorMap *b1, int sm_count, cudaStream_t s) {
#define MOE_ACT_CASE_(a) \
    case a: return launch_c<a, T>(g, tm, b0, b1, sm_count, s);
    MOE_CUDA_ACT_DISPATCH(g, MOE_ACT_CASE_);
#undef MOE_ACT_CASE_
}

/* A (the permuted x or h) in boxes of BK columns by `rows` rows */
extern "C" int moe__cuda_sm90_tmap_a(const moe_cuda_gemm *g, int rows, CUtensorMap *tm, char *why, size_t n) {
    cuuint64_t dims[2] = {(cuuint64_t)g->C, (cuuint64_t)g->TK};
    cuuint64_t strides[1] = {(cuuint64_t)g->C * 2};
    cuuint32_t box[2] = {BK, (cuuint32_t)rows};
    return encode(tm, g->A, g->dtype, 2, dims, strides, box, why, n);
}

/* tm[0], A: [TK, C] rows in expert order; with CN = 2 each CTA of a pair loads
 * half of the BM rows. tm[1], the output (h [TK, I] or y [TK, D], rows in
 * expert order) in the boxes of BM 128's staged epilogue: 64 rows of 64 columns
 * (128B swizzle) for n-tiles of 256, of 40 (unswizzled) for 240. Made per call:
 * the workspace moves. */
extern "C" int moe__cuda_sm90_tmap_a_out(const moe_cuda_gemm *g, CUtensorMap *tm, char *why, size_t n) {
    if (g->mode == 1 && g->gather) /* the producer copies x rows itself; the kernel never reads this map */
        memset(&tm[0], 0, sizeof tm[0]);
    else if (moe__cuda_sm90_tmap_a(g, g->bm / g->cn, &tm[0], why, n))
        return -1;
    cuuint64_t odims[2] = {(cuuint64_t)g->N, (cuuint64_t)g->TK};
    cuuint64_t ostrides[1] = {(cuuint64_t)g->N * 2};
    cuuint32_t obox[2] = {g->bn == 240 ? 40u : 64u, 64};
    return encode_sw(&tm[1], g->out, g->dtype, 2, odims, ostrides, obox,
                     g->bn == 240 ? CU_TENSOR_MAP_SWIZZLE_NONE : CU_TENSOR_MAP_SWIZZLE_128B, why, n);
}

extern "C" cudaError_t moe__cuda_gemm_sm90(const moe_cuda_gemm *g, const CUtensorMap *tmB0, const CUtensorMap *tmB1,
                                           int sm_count, cudaStream_t s, char *why, size_t n) {
    if (g->qfmt == SM90_QF_DENSE) return moe__cuda_gemm_sm90_qd(g, tmB0, tmB1, sm_count, s, why, n); /* gemm_sm90_qd.cu */
    if (g->qfmt) return moe__cuda_gemm_sm90_q(g, tmB0, tmB1, sm_count, s, why, n);                   /* gemm_sm90_q.cu */
    CUtensorMap tm[2];
    if (moe__cuda_sm90_tmap_a_out(g, tm, why, n)) return cudaErrorInvalidValue;
    return g->dtype == MOE_TYPE_BF16 ? dispatch<__nv_bfloat16>(g, tm, tmB0, tmB1, sm_count, s)
                                     : dispatch<__half>(g, tm, tmB0, tmB1, sm_count, s);
}

/* ---- cuda-jit: the launch above on the layer's own kernels ---- */

static void jit_config(CUlaunchConfig *cfg, CUlaunchAttribute *at, int cs, int bm, unsigned ctas, cudaStream_t s) {
    memset(cfg, 0, sizeof *cfg);
    memset(at, 0, sizeof *at);
    at->id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    at->value.clusterDim.x = (unsigned)cs;
    at->value.clusterDim.y = at->value.clusterDim.z = 1;
    cfg->gridDimX = ctas;
    cfg->gridDimY = cfg->gridDimZ = 1;
    cfg->blockDimX = NTHREADS;
    cfg->blockDimY = cfg->blockDimZ = 1;
    cfg->sharedMemBytes = SM90_SMEM_BYTES(bm);
    cfg->hStream = (CUstream)s;
    cfg->attrs = at;
    cfg->numAttrs = 1;
}

static cudaError_t cu_fail(CUresult r, const char *call, cudaError_t as, char *why, size_t n) {
    const char *name = NULL;
    moe__cuda_driver()->get_error_name(r, &name);
    snprintf(why, n, "%s: %s", call, name ? name : "unknown CUresult");
    return as;
}

extern "C" cudaError_t moe__cuda_gemm_sm90_jit_prepare(CUfunction f, int cm, int cn, int bm, int sm_count,
                                                       int *max_clusters, char *why, size_t n) {
    const moe_cuda_driver *cu = moe__cuda_driver();
    if (!cu) {
        snprintf(why, n, "the CUDA driver lacks the module and launch functions cuda-jit needs");
        return cudaErrorInvalidValue;
    }
    CUresult r = cu->func_set_attribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, SM90_SMEM_BYTES(bm));
    if (r != CUDA_SUCCESS) return cu_fail(r, "cuFuncSetAttribute(max dynamic shared memory)", cudaErrorInvalidValue, why, n);
    const int cs = cm * cn;
    CUlaunchConfig cfg;
    CUlaunchAttribute at;
    jit_config(&cfg, &at, cs, bm, (unsigned)(cs * (sm_count / cs)), NULL);
    int c = 0;
    if (cu->occupancy_max_active_clusters(&c, f, &cfg) != CUDA_SUCCESS || c < 1) c = sm_count / cs;
    *max_clusters = c;
    return cudaSuccess;
}

extern "C" cudaError_t moe__cuda_gemm_sm90_jit(const moe_cuda_gemm *g, const CUtensorMap *tmB0, const CUtensorMap *tmB1,
                                               CUfunction f, int max_clusters, cudaStream_t s, char *why, size_t n) {
    CUtensorMap tm[2];
    if (moe__cuda_sm90_tmap_a_out(g, tm, why, n)) return cudaErrorInvalidValue;
    const int cs = g->cm * g->cn;
    CUlaunchConfig cfg;
    CUlaunchAttribute at;
    jit_config(&cfg, &at, cs, g->bm, (unsigned)(grid_clusters(g, max_clusters) * cs), s);
    void *args[5] = {&tm[0], (void *)tmB0, (void *)tmB1, &tm[1], (void *)g};
    CUresult r = moe__cuda_driver()->launch_kernel_ex(&cfg, f, args, NULL); /* non-NULL: checked at init */
    return r == CUDA_SUCCESS ? cudaSuccess : cu_fail(r, "cuLaunchKernelEx", cudaErrorLaunchFailure, why, n);
}

template <int ACT, typename T> static cudaError_t prepare_c(void) {
    const cudaFuncAttribute a = cudaFuncAttributeMaxDynamicSharedMemorySize;
    cudaError_t e;
    if ((e = cudaFuncSetAttribute(gemm_sm90<ACT, T, 1, 1, 128, 256>, a, SM90_SMEM_BYTES(128)))) return e;
    if ((e = cudaFuncSetAttribute(gemm_sm90<ACT, T, 1, 2, 128, 256>, a, SM90_SMEM_BYTES(128)))) return e;
    if ((e = cudaFuncSetAttribute(gemm_sm90<ACT, T, 2, 1, 128, 256>, a, SM90_SMEM_BYTES(128)))) return e;
    if ((e = cudaFuncSetAttribute(gemm_sm90<ACT, T, 2, 2, 128, 256>, a, SM90_SMEM_BYTES(128)))) return e;
    if ((e = cudaFuncSetAttribute(gemm_sm90<ACT, T, 1, 1, 128, 240>, a, SM90_SMEM_BYTES(128)))) return e;
    if (ACT < 0 && (e = cudaFuncSetAttribute(gemm_sm90<-1, T, 1, 1, 64, 240>, a, SM90_SMEM_BYTES(64)))) return e;
    return cudaFuncSetAttribute(gemm_sm90<ACT, T, 1, 1, 64, 256>, a, SM90_SMEM_BYTES(64));
}

template <typename T> static cudaError_t prepare_t(void) {
    cudaError_t e = cudaSuccess;
#define MOE_ACT_PREP_(a) \
    if (!e) e = prepare_c<a, T>();
    MOE_CUDA_FOR_ACTS(MOE_ACT_PREP_)
#undef MOE_ACT_PREP_
    return e;
}

extern "C" cudaError_t moe__cuda_gemm_sm90_prepare(void) {
    cudaError_t e = prepare_t<__nv_bfloat16>();
    return e ? e : prepare_t<__half>();
}

/* 1 when the code that runs on this device was compiled for sm_90a (a build
 * for plain sm_90 would run the empty kernel bodies above). */
static __global__ void k_probe_sm90a(int *flag) {
#ifdef MOE_SM90A
    *flag = 1;
#else
    *flag = 0;
#endif
}

extern "C" int moe__cuda_sm90_available(void) {
    int *d = NULL, h = 0;
    if (cudaMalloc(&d, sizeof(int)) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    k_probe_sm90a<<<1, 1>>>(d);
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaMemcpy(&h, d, sizeof(int), cudaMemcpyDeviceToHost);
    cudaFree(d);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return h;
}
