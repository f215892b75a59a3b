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
 * A rows must be contiguous for TMA, so GEMM 1 reads the permuted copy xp of
 * x made by the scatter step (layer.cu); a cp.async row gather in the
 * producer warpgroup was tried and deadlocked (bench/cuda/lab, NOTES.md run
 * 5). Weights are read through 3-D tensor maps [E, N, C] made once at layer
 * creation: rows past N (the end of one expert) and columns past C are
 * zero-filled by TMA, never read from the next expert. With gate/up, the B
 * tile is 128 gate rows then the same 128 up rows (two TMA boxes), so a
 * thread holds gate and up of the same output column.
 *
 * Optional thread-block clusters CM x CN with TMA multicast (MOE_SM90_CM,
 * MOE_SM90_CN): correct, but measured slower on every preset (run 2, run 4),
 * so the default is 1 x 1.
 *
 * Tile shapes (one entry so far):
 *   BM 128 x BN 256 x BK 64, 4 stages (192 KB), 1 x 1 cluster: H200,
 *   bench/cuda/bench_layer.py, all five presets at T = 512, 4096, 16384
 *   (bench/cuda/README.md).
 */
#include "common.cuh"

#include <cudaTypedefs.h>
#include <stdio.h>
#include <string.h>

#include "wgmma_gen.cuh"

#define BM MOE_CUDA_BM
#define BN 256
#define BK 64
#define STAGES 4
#define A_BYTES (BM * BK * 2)
#define B_BYTES (BN * BK * 2)
#define STAGE_BYTES (A_BYTES + B_BYTES)
#define SMEM_BYTES (STAGES * STAGE_BYTES + 1024 + 2 * STAGES * 8)
#define NTHREADS 384

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define MOE_SM90A 1
#endif

#ifdef MOE_SM90A
static __device__ __forceinline__ uint32_t smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }
static __device__ __forceinline__ void mbar_init(uint32_t bar, int count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
static __device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
static __device__ __forceinline__ void mbar_arrive(uint32_t bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
static __device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
    asm volatile("{\n.reg .pred P1;\nLAB_WAIT:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\n"
                 "@P1 bra DONE;\nbra LAB_WAIT;\nDONE:\n}\n" ::"r"(bar),
                 "r"(parity)
                 : "memory");
}
/* the empty barriers are released by consumers of other CTAs of the cluster */
static __device__ __forceinline__ void mbar_wait_cluster(uint32_t bar, uint32_t parity) {
    asm volatile("{\n.reg .pred P1;\nLAB_WAIT:\n"
                 "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 P1, [%0], %1;\n"
                 "@P1 bra DONE;\nbra LAB_WAIT;\nDONE:\n}\n" ::"r"(bar),
                 "r"(parity)
                 : "memory");
}
/* arrive on the barrier at the same offset in CTA `cta` of the cluster */
static __device__ __forceinline__ void mbar_arrive_cluster(uint32_t bar, uint32_t cta) {
    asm volatile("{\n.reg .b32 ra;\nmapa.shared::cluster.u32 ra, %0, %1;\n"
                 "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [ra];\n}\n" ::"r"(bar),
                 "r"(cta)
                 : "memory");
}
static __device__ __forceinline__ uint32_t cluster_rank() {
    uint32_t r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
    return r;
}
static __device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}
static __device__ __forceinline__ void tma_2d_mc(uint32_t dst, const CUtensorMap *tm, int c0, int c1, uint32_t bar,
                                                 uint16_t mask) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster "
                 "[%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst),
                 "l"((uint64_t)tm), "r"(c0), "r"(c1), "r"(bar), "h"(mask)
                 : "memory");
}
static __device__ __forceinline__ void tma_3d_mc(uint32_t dst, const CUtensorMap *tm, int c0, int c1, int c2,
                                                 uint32_t bar, uint16_t mask) {
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster "
                 "[%0], [%1, {%2, %3, %4}], [%5], %6;\n" ::"r"(dst),
                 "l"((uint64_t)tm), "r"(c0), "r"(c1), "r"(c2), "r"(bar), "h"(mask)
                 : "memory");
}
static __device__ __forceinline__ void tma_2d(uint32_t dst, const CUtensorMap *tm, int c0, int c1, uint32_t bar) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], "
                 "[%4];\n" ::"r"(dst),
                 "l"((uint64_t)tm), "r"(c0), "r"(c1), "r"(bar)
                 : "memory");
}
static __device__ __forceinline__ void tma_3d(uint32_t dst, const CUtensorMap *tm, int c0, int c1, int c2,
                                              uint32_t bar) {
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, "
                 "%4}], [%5];\n" ::"r"(dst),
                 "l"((uint64_t)tm), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
                 : "memory");
}
/* wgmma descriptor of a K-major tile with 128-byte rows, 128B swizzle, 8-row
 * groups 1024 bytes apart. */
static __device__ __forceinline__ uint64_t desc_k128(uint32_t saddr) {
    uint64_t d = (uint64_t)((saddr & 0x3FFFF) >> 4);
    d |= (uint64_t)1 << 16;           /* leading byte offset: unused with swizzle */
    d |= (uint64_t)(1024 >> 4) << 32; /* stride byte offset */
    d |= (uint64_t)1 << 62;           /* 128B swizzle */
    return d;
}
#endif

template <int ACT, typename T, int CM, int CN>
static __global__ void __launch_bounds__(NTHREADS, 1)
    gemm_sm90(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB0,
              const __grid_constant__ CUtensorMap tmB1, const moe_cuda_gemm g) {
#ifdef MOE_SM90A
    /* ACT: the activation (compile time: one epilogue's code per kernel, see
     * NOTES.md run 3), -1 for GEMM 2 (down) */
    constexpr int MODE = ACT < 0 ? 2 : 1;
    constexpr bool GATED = ACT >= 0 && ACT <= MOE_ACT_SWIGLU_OAI;
    extern __shared__ unsigned char smem_raw[];
    uint32_t sbase = smem_u32(smem_raw);
    sbase = (sbase + 1023) & ~1023u;
    const uint32_t bars = sbase + STAGES * STAGE_BYTES; /* full[STAGES] then empty[STAGES] */
    const int wg = threadIdx.x / 128;
    /* Cluster of CM x CN CTAs (rank = rm + CM * rn): CTAs with the same rm
     * work on the same 128 A rows (same expert) and split the A load, each
     * multicasting its share; CTAs with the same rn work on the same n-tile
     * and split the B load. A stage may be refilled only when every CTA that
     * writes into it has been released by this CTA's consumers, so consumers
     * arrive on the empty barriers of all CTAs in their row and column. */
    constexpr int CS = CM * CN;
    const uint32_t rank = CS > 1 ? cluster_rank() : 0;
    const int rm = (int)rank % CM, rn = (int)rank / CM;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) {
            mbar_init(bars + 8 * s, 1);
            mbar_init(bars + 8 * (STAGES + s), 8 * (CM + CN - 1)); /* 2 consumer warpgroups x 4 warps per CTA */
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    if (CS > 1) cluster_sync();
    const int NOUT = GATED ? BN / 2 : BN;
    const int MU = *g.n_mtiles, NT = (g.N + NOUT - 1) / NOUT, NU = (NT + CN - 1) / CN;
    const int total = MU * NU, kblocks = (g.C + BK - 1) / BK;
    const int cid = blockIdx.x / CS, ncl = gridDim.x / CS;

    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
        if (threadIdx.x == 0) {
            uint16_t maskA = 0, maskB = 0;
            for (int j = 0; j < CN; j++) maskA |= (uint16_t)(1u << (rm + CM * j));
            for (int i = 0; i < CM; i++) maskB |= (uint16_t)(1u << (i + CM * rn));
            int stage = 0;
            uint32_t phase = 0;
            for (int u = cid; u < total; u += ncl) {
                int mu, nu;
                moe_cuda_raster(u, MU, NU, &mu, &nu);
                const int2 tl = g.tiles[mu];
                const int e = tl.x, n0 = (nu * CN + rn) * NOUT;
                const int arow = g.exp_off[e] + tl.y + 128 * rm + (128 / CN) * rn;
                for (int kb = 0; kb < kblocks; kb++) {
                    const uint32_t full = bars + 8 * stage, empty = bars + 8 * (STAGES + stage);
                    mbar_wait_cluster(empty, phase ^ 1);
                    mbar_expect_tx(full, STAGE_BYTES);
                    const uint32_t sa = sbase + stage * STAGE_BYTES, sb = sa + A_BYTES;
                    const uint32_t da = sa + (128 / CN) * rn * 128;
                    if (CN == 1) tma_2d(da, &tmA, kb * BK, arow, full);
                    else tma_2d_mc(da, &tmA, kb * BK, arow, full, maskA);
#pragma unroll
                    for (int j = 0; j < 2; j++) {
                        if (CM == 2 && j != rm) continue;
                        const CUtensorMap *tb = GATED && j == 1 ? &tmB1 : &tmB0;
                        const int row = GATED ? n0 : n0 + 128 * j;
                        if (CM == 1) tma_3d(sb + j * (B_BYTES / 2), tb, kb * BK, row, e, full);
                        else tma_3d_mc(sb + j * (B_BYTES / 2), tb, kb * BK, row, e, full, maskB);
                    }
                    if (++stage == STAGES) { stage = 0; phase ^= 1; }
                }
            }
        }
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
        const int cw = wg - 1, lane = threadIdx.x & 31, w4 = (threadIdx.x >> 5) & 3;
        /* frees a stage in every CTA that multicasts into this one */
        auto release = [&](uint32_t bar) {
            if (CS == 1) {
                mbar_arrive(bar);
            } else {
#pragma unroll
                for (int j = 0; j < CN; j++) mbar_arrive_cluster(bar, (uint32_t)(rm + CM * j));
#pragma unroll
                for (int i = 0; i < CM; i++)
                    if (i != rm) mbar_arrive_cluster(bar, (uint32_t)(i + CM * rn));
            }
        };
        float acc[128];
#pragma unroll
        for (int i = 0; i < 128; i++) acc[i] = 0.f;
        int stage = 0;
        uint32_t phase = 0;
        for (int u = cid; u < total; u += ncl) {
            int mu, nu;
            moe_cuda_raster(u, MU, NU, &mu, &nu);
            const int2 tl = g.tiles[mu];
            const int e = tl.x, m0 = tl.y + 128 * rm, n0 = (nu * CN + rn) * NOUT;
            const int rbase = g.exp_off[e], rows = g.exp_off[e + 1] - rbase;
            /* one k-block of wgmma stays in flight: the stage of k-block
             * kb-1 is released once kb's wgmmas are issued and kb-1's done */
            int prev = -1;
            for (int kb = 0; kb < kblocks; kb++) {
                const uint32_t full = bars + 8 * stage;
                mbar_wait(full, phase);
                const uint32_t sa = sbase + stage * STAGE_BYTES + cw * (64 * 128), sb = sbase + stage * STAGE_BYTES + A_BYTES;
                asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
                for (int kk = 0; kk < BK / 16; kk++)
                    wgmma_m64n256k16<T>(acc, desc_k128(sa + kk * 32), desc_k128(sb + kk * 32), (kb > 0 || kk > 0) ? 1 : 0);
                asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
                asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
                if (prev >= 0 && lane == 0) release(bars + 8 * (STAGES + prev));
                prev = stage;
                if (++stage == STAGES) { stage = 0; phase ^= 1; }
            }
            asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
#pragma unroll
            for (int i = 0; i < 128; i++) asm volatile("" : "+f"(acc[i])::"memory");
            if (prev >= 0 && lane == 0) release(bars + 8 * (STAGES + prev));

            /* ---- epilogue: straight from the accumulators to global ---- */
            const int qc = (lane & 3) * 2;
#pragma unroll
            for (int hh = 0; hh < 2; hh++) {
                const int m = m0 + cw * 64 + w4 * 16 + (lane >> 2) + hh * 8;
                if (m >= rows) continue;
                const int srow = rbase + m;
                if (MODE == 1) {
                    T *orow = (T *)g.out + (int64_t)srow * g.N;
                    if (GATED) {
#pragma unroll
                        for (int b = 0; b < 16; b++) {
                            int col = n0 + b * 8 + qc;
                            if (col >= g.N) continue;
                            float g0 = acc[4 * b + 2 * hh], g1 = acc[4 * b + 2 * hh + 1];
                            float u0 = acc[4 * (b + 16) + 2 * hh], u1 = acc[4 * (b + 16) + 2 * hh + 1];
                            if (g.fb0) {
                                float2 b_ = moe_cuda_bias2(g.fb0, e, g.N, col);
                                g0 += b_.x;
                                g1 += b_.y;
                            }
                            if (g.fb1) {
                                float2 b_ = moe_cuda_bias2(g.fb1, e, g.N, col);
                                u0 += b_.x;
                                u1 += b_.y;
                            }
                            *(uint32_t *)(orow + col) = moe_cuda_pack2<T>(moe_cuda_act(ACT, g0, u0, g.alpha, g.limit),
                                                                          moe_cuda_act(ACT, g1, u1, g.alpha, g.limit));
                        }
                    } else {
#pragma unroll
                        for (int b = 0; b < 32; b++) {
                            int col = n0 + b * 8 + qc;
                            if (col >= g.N) continue;
                            float u0 = acc[4 * b + 2 * hh], u1 = acc[4 * b + 2 * hh + 1];
                            if (g.fb0) {
                                float2 b_ = moe_cuda_bias2(g.fb0, e, g.N, col);
                                u0 += b_.x;
                                u1 += b_.y;
                            }
                            *(uint32_t *)(orow + col) = moe_cuda_pack2<T>(moe_cuda_act(ACT, 0.f, u0, g.alpha, g.limit),
                                                                          moe_cuda_act(ACT, 0.f, u1, g.alpha, g.limit));
                        }
                    }
                } else {
                    const int p = g.sorted_pair[srow];
                    const float wt = g.w[p];
                    T *orow = (T *)g.out + (int64_t)p * g.N;
#pragma unroll
                    for (int b = 0; b < 32; b++) {
                        int col = n0 + b * 8 + qc;
                        if (col >= g.N) continue;
                        float v0 = acc[4 * b + 2 * hh], v1 = acc[4 * b + 2 * hh + 1];
                        if (g.fb0) {
                                float2 b_ = moe_cuda_bias2(g.fb0, e, g.N, col);
                                v0 += b_.x;
                                v1 += b_.y;
                            }
                        *(uint32_t *)(orow + col) = moe_cuda_pack2<T>(wt * v0, wt * v1);
                    }
                }
            }
        }
    }
    /* no CTA leaves while a peer may still multicast into it or arrive on it */
    if (CS > 1) cluster_sync();
#endif
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

static int encode(CUtensorMap *tm, const void *data, int dtype, int rank, const cuuint64_t *dims,
                  const cuuint64_t *strides, const cuuint32_t *box, char *why, size_t n) {
    PFN_cuTensorMapEncodeTiled_v12000 fn = encode_fn();
    if (!fn) {
        snprintf(why, n, "cuTensorMapEncodeTiled is not available from the driver");
        return -1;
    }
    cuuint32_t es[3] = {1, 1, 1};
    CUresult r = fn(tm, dtype == MOE_TYPE_BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
                    (cuuint32_t)rank, (void *)data, dims, strides, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
                    CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) {
        snprintf(why, n, "cuTensorMapEncodeTiled failed (CUresult %d)", (int)r);
        return -1;
    }
    return 0;
}

extern "C" int moe__cuda_weight_tmap(CUtensorMap *tm, const void *data, int dtype, int64_t E, int64_t N, int64_t C,
                                     int64_t se, int64_t sn, int box_rows, char *why, size_t n) {
    cuuint64_t dims[3] = {(cuuint64_t)C, (cuuint64_t)N, (cuuint64_t)E};
    cuuint64_t strides[2] = {(cuuint64_t)sn * 2, (cuuint64_t)(E > 1 ? se : N * sn) * 2};
    cuuint32_t box[3] = {BK, (cuuint32_t)box_rows, 1};
    return encode(tm, data, dtype, 3, dims, strides, box, why, n);
}

template <int ACT, typename T, int CM, int CN>
static cudaError_t launch(const moe_cuda_gemm *g, const CUtensorMap *tmA, const CUtensorMap *b0, const CUtensorMap *b1,
                          int sm_count, cudaStream_t s) {
    const int NOUT = ACT >= 0 && ACT <= MOE_ACT_SWIGLU_OAI ? BN / 2 : BN, CS = CM * CN;
    int64_t NU = ((g->N + NOUT - 1) / NOUT + CN - 1) / CN;
    int64_t most = (int64_t)g->max_mtiles * NU; /* clusters that could have work */
    static int max_clusters = -1;               /* per instance; one device type per process assumed */
    cudaLaunchConfig_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = CS;
    at[0].val.clusterDim.y = 1;
    at[0].val.clusterDim.z = 1;
    cfg.blockDim = dim3(NTHREADS);
    cfg.dynamicSmemBytes = SMEM_BYTES;
    cfg.stream = s;
    cfg.attrs = at;
    cfg.numAttrs = 1;
    if (max_clusters < 0) {
        int n = 0;
        cfg.gridDim = dim3(CS * (sm_count / CS));
        if (cudaOccupancyMaxActiveClusters(&n, gemm_sm90<ACT, T, CM, CN>, &cfg) != cudaSuccess || n < 1) {
            cudaGetLastError();
            n = sm_count / CS;
        }
        max_clusters = n;
    }
    int64_t clusters = max_clusters < most ? max_clusters : most;
    if (clusters < 1) clusters = 1;
    cfg.gridDim = dim3((unsigned)(clusters * CS));
    cudaError_t e = cudaLaunchKernelEx(&cfg, gemm_sm90<ACT, T, CM, CN>, *tmA, *b0, *b1, *g);
    return e != cudaSuccess ? e : cudaGetLastError();
}

template <int ACT, typename T>
static cudaError_t launch_c(const moe_cuda_gemm *g, const CUtensorMap *tmA, const CUtensorMap *b0,
                            const CUtensorMap *b1, int sm_count, cudaStream_t s) {
    if (g->cm == 2)
        return g->cn == 2 ? launch<ACT, T, 2, 2>(g, tmA, b0, b1, sm_count, s)
                          : launch<ACT, T, 2, 1>(g, tmA, b0, b1, sm_count, s);
    return g->cn == 2 ? launch<ACT, T, 1, 2>(g, tmA, b0, b1, sm_count, s)
                      : launch<ACT, T, 1, 1>(g, tmA, b0, b1, sm_count, s);
}

template <typename T>
static cudaError_t dispatch(const moe_cuda_gemm *g, const CUtensorMap *tmA, const CUtensorMap *b0,
                            const CUtensorMap *b1, int sm_count, cudaStream_t s) {
    switch (g->mode == 2 ? -1 : g->act) {
#define MOE_ACT_CASE_(a) \
    case a: return launch_c<a, T>(g, tmA, b0, b1, sm_count, s);
        MOE_CUDA_FOR_ACTS(MOE_ACT_CASE_)
#undef MOE_ACT_CASE_
    }
    return cudaErrorInvalidValue;
}

extern "C" cudaError_t moe__cuda_gemm_sm90(const moe_cuda_gemm *g, const CUtensorMap *tmB0, const CUtensorMap *tmB1,
                                           int sm_count, cudaStream_t s, char *why, size_t n) {
    /* A: [TK, C] rows in expert order, made per call (the workspace moves);
     * with CN = 2 each CTA of a pair loads half of the 128 rows */
    CUtensorMap tmA;
    cuuint64_t dims[2] = {(cuuint64_t)g->C, (cuuint64_t)g->TK};
    cuuint64_t strides[1] = {(cuuint64_t)g->C * 2};
    cuuint32_t box[2] = {BK, (cuuint32_t)(BM / g->cn)};
    if (encode(&tmA, g->A, g->dtype, 2, dims, strides, box, why, n)) return cudaErrorInvalidValue;
    return g->dtype == MOE_TYPE_BF16 ? dispatch<__nv_bfloat16>(g, &tmA, tmB0, tmB1, sm_count, s)
                                     : dispatch<__half>(g, &tmA, tmB0, tmB1, sm_count, s);
}

template <int ACT, typename T> static cudaError_t prepare_c(void) {
    cudaError_t e;
    if ((e = cudaFuncSetAttribute(gemm_sm90<ACT, T, 1, 1>, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES)))
        return e;
    if ((e = cudaFuncSetAttribute(gemm_sm90<ACT, T, 1, 2>, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES)))
        return e;
    if ((e = cudaFuncSetAttribute(gemm_sm90<ACT, T, 2, 1>, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES)))
        return e;
    return cudaFuncSetAttribute(gemm_sm90<ACT, T, 2, 2>, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES);
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
