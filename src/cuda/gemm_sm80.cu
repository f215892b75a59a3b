/*
 * Grouped GEMM for sm_80 and later (backend "cuda-sm80"): mma.sync
 * m16n8k16 (bf16/f16 in, f32 accumulate) fed by a 4-stage cp.async pipeline.
 * GEMM 1 gathers its A rows straight from the unpermuted x (one row pointer
 * per loaded row, from the expert-sorted pair list); GEMM 2 reads h. The
 * epilogues (biases, activation, routing weight) run on the accumulators.
 * Must match src/ref/ref.c; see common.cuh for the two modes.
 *
 * Tile 128 x 128 x 32, 8 warps (2 x 4, 64 x 32 each), 64 KB of smem, a
 * persistent grid of 2 CTAs per SM over (m-tile, n-tile) work in grouped
 * raster order. Not yet tuned: a first correct version (NOTES.md).
 * With gate/up, an n-tile is 64 gate rows followed by the same 64 up rows, and
 * each warp takes 16 columns of each, so gate and up of one output column sit
 * in the same thread's accumulators.
 */
#include "common.cuh"

#define BM MOE_CUDA_BM
#define BN 128
#define BK 32
#define STAGES 4
#define NTHREADS 256
#define SMEM_BYTES (STAGES * (BM + BN) * BK * 2)

static __device__ __forceinline__ uint32_t smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

static __device__ __forceinline__ void cp_async16(uint32_t dst, const void *src, bool valid) {
    int sz = valid ? 16 : 0; /* 0: nothing read, 16 zero bytes written */
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(sz) : "memory");
}
static __device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> static __device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

static __device__ __forceinline__ void ldsm_x4(uint32_t addr, uint32_t &r0, uint32_t &r1, uint32_t &r2, uint32_t &r3) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(addr));
}

static __device__ __forceinline__ void ldsm_x4_t(uint32_t addr, uint32_t &r0, uint32_t &r1, uint32_t &r2, uint32_t &r3) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(addr));
}

template <typename T> static __device__ __forceinline__ void mma16816(float *c, const uint32_t *a, const uint32_t *b);
template <> __device__ __forceinline__ void mma16816<__nv_bfloat16>(float *c, const uint32_t *a, const uint32_t *b) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
template <> __device__ __forceinline__ void mma16816<__half>(float *c, const uint32_t *a, const uint32_t *b) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

/* Element offset of (row, 16-byte chunk) in a [rows][BK] tile: the chunk is
 * XOR-swizzled by row so that ldmatrix's 8 rows hit 8 distinct bank groups. */
static __device__ __forceinline__ int swz(int row, int chunk) { return row * BK + ((chunk ^ ((row >> 1) & 3)) << 3); }

/* TB: weights stored [E, C, N] (N contiguous, torch._grouped_mm's layout):
 * the B tile is kept [BK][BN] in shared memory (n-chunks XOR-swizzled by k
 * row) and read with ldmatrix.trans, which yields the same fragments. */
template <int ACT, typename T, bool TB>
static __global__ void __launch_bounds__(NTHREADS, 2) gemm_sm80(const moe_cuda_gemm g) {
    /* ACT: the activation (compile time: one epilogue's code per kernel, see
     * NOTES.md run 3), -1 for GEMM 2 (down) */
    constexpr int MODE = ACT < 0 ? 2 : 1;
    constexpr bool GATED = ACT >= 0 && ACT <= MOE_ACT_SWIGLU_OAI;
    extern __shared__ __align__(128) unsigned char smem[];
    T *As = (T *)smem, *Bs = As + STAGES * BM * BK;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, wm = warp >> 2, wn = warp & 3;
    const int NOUT = GATED ? BN / 2 : BN;
    const int MT = *g.n_mtiles, NT = (g.N + NOUT - 1) / NOUT;
    const int kblocks = (g.C + BK - 1) / BK;
    const int ck = tid & 3;
    for (int t = blockIdx.x; t < MT * NT; t += gridDim.x) {
        int mt, nt;
        moe_cuda_raster(t, MT, NT, 16, &mt, &nt);
        const int2 tl = g.tiles[mt];
        const int e = tl.x, m0 = tl.y;
        const int rbase = g.exp_off[e], rows = g.exp_off[e + 1] - rbase;
        const int n0 = nt * NOUT;
        const T *aptr[2], *bptr[2];
        int64_t bsc[2] = {0, 0};
        bool aval[2], bval[2];
#pragma unroll
        for (int i = 0; i < 2; i++) {
            int r = (tid >> 2) + i * 64, m = m0 + r;
            aval[i] = m < rows;
            int64_t arow = 0;
            if (aval[i]) arow = MODE == 1 ? g.sorted_pair[rbase + m] / g.K : rbase + m;
            aptr[i] = (const T *)g.A + arow * g.C + ck * 8;
            const T *bb = (const T *)g.B0;
            int64_t se = g.b0_se, sn = g.b0_sn;
            int nrow = n0 + r;
            if (GATED && r >= BN / 2) {
                bb = (const T *)g.B1;
                se = g.b1_se;
                sn = g.b1_sn;
                nrow = n0 + r - BN / 2;
            }
            bval[i] = nrow < g.N;
            bptr[i] = bb + (int64_t)e * se + (int64_t)(bval[i] ? nrow : 0) * sn + ck * 8;
            if (TB) { /* chunk (k row kr, 8 columns from n) */
                int c = tid + i * NTHREADS, n = (c & 15) * 8;
                bb = (const T *)g.B0;
                se = g.b0_se;
                int ncol = n0 + n;
                bsc[i] = g.b0_sc;
                if (GATED && n >= BN / 2) {
                    bb = (const T *)g.B1;
                    se = g.b1_se;
                    ncol = n0 + n - BN / 2;
                    bsc[i] = g.b1_sc;
                }
                bval[i] = ncol < g.N;
                bptr[i] = bb + (int64_t)e * se + (bval[i] ? ncol : 0);
            }
        }
        auto load = [&](int kb, int st) {
            int k = kb * BK + ck * 8;
            bool kv = k < g.C;
            int64_t ko = kv ? kb * BK : 0;
#pragma unroll
            for (int i = 0; i < 2; i++) {
                int r = (tid >> 2) + i * 64;
                uint32_t off = (uint32_t)swz(r, ck) * 2;
                cp_async16(smem_u32(As + st * BM * BK) + off, aptr[i] + ko, aval[i] && kv);
                if (!TB) {
                    cp_async16(smem_u32(Bs + st * BN * BK) + off, bptr[i] + ko, bval[i] && kv);
                } else {
                    int c = tid + i * NTHREADS, kr = c >> 4, nc = c & 15, kk = kb * BK + kr;
                    bool v = bval[i] && kk < g.C;
                    cp_async16(smem_u32(Bs + st * BN * BK + kr * BN + ((nc ^ (kr & 7)) << 3)),
                               bptr[i] + (v ? kk * bsc[i] : 0), v);
                }
            }
        };
        float acc[4][4][4];
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int j = 0; j < 4; j++)
#pragma unroll
                for (int q = 0; q < 4; q++) acc[i][j][q] = 0.f;
#pragma unroll
        for (int s = 0; s < STAGES - 1; s++) {
            if (s < kblocks) load(s, s);
            cp_async_commit();
        }
        for (int kb = 0; kb < kblocks; kb++) {
            cp_async_wait<STAGES - 2>();
            __syncthreads();
            int nk = kb + STAGES - 1;
            if (nk < kblocks) load(nk, nk % STAGES);
            cp_async_commit();
            const int st = kb % STAGES;
            const T *as = As + st * BM * BK, *bs = Bs + st * BN * BK;
#pragma unroll
            for (int ks = 0; ks < 2; ks++) {
                uint32_t af[4][4], bf[4][2];
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    int row = wm * 64 + i * 16 + (lane & 15), ch = ks * 2 + (lane >> 4);
                    ldsm_x4(smem_u32(as + swz(row, ch)), af[i][0], af[i][1], af[i][2], af[i][3]);
                }
#pragma unroll
                for (int jp = 0; jp < 2; jp++) {
                    int nb = GATED ? (jp == 0 ? wn * 16 : BN / 2 + wn * 16) : wn * 32 + jp * 16;
                    if (!TB) {
                        int row = nb + (lane & 7) + ((lane >> 4) << 3), ch = ks * 2 + ((lane >> 3) & 1);
                        ldsm_x4(smem_u32(bs + swz(row, ch)), bf[2 * jp][0], bf[2 * jp][1], bf[2 * jp + 1][0],
                                bf[2 * jp + 1][1]);
                    } else {
                        int kr = ks * 16 + (lane & 7) + ((lane >> 3) & 1) * 8, nch = nb / 8 + (lane >> 4);
                        ldsm_x4_t(smem_u32(bs + kr * BN + ((nch ^ (kr & 7)) << 3)), bf[2 * jp][0], bf[2 * jp][1],
                                  bf[2 * jp + 1][0], bf[2 * jp + 1][1]);
                    }
                }
#pragma unroll
                for (int i = 0; i < 4; i++)
#pragma unroll
                    for (int j = 0; j < 4; j++) mma16816<T>(acc[i][j], af[i], bf[j]);
            }
        }
        cp_async_wait<0>();
        __syncthreads(); /* the next tile's prologue overwrites the stages */

        /* ---- epilogue ---- A thread's biases depend on its column group j only
         * (GATED: j < 2 gate, j >= 2 the same up columns): 4 independent loads
         * here, where the loop used to load and wait for one before each of
         * its 16-32 stores (stores may alias the bias arrays). Every group is
         * computed; only its store is conditional (NOTES.md session 8). */
        const int qr = lane >> 2, qc = (lane & 3) * 2;
        float2 bias[4];
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const int col = (GATED ? n0 + wn * 16 + (j & 1) * 8 : n0 + wn * 32 + j * 8) + qc;
            const float *fb = GATED && j >= 2 ? g.fb1 : g.fb0;
            bias[j].x = bias[j].y = 0.f;
            if (fb && col < g.N) bias[j] = moe_cuda_bias2(fb, e, g.N, col);
        }
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int hh = 0; hh < 2; hh++) {
                int m = m0 + wm * 64 + i * 16 + qr + hh * 8;
                if (m >= rows) continue;
                int srow = rbase + m;
                if (MODE == 1) {
                    T *orow = (T *)g.out + (int64_t)srow * g.N;
                    if (GATED) {
#pragma unroll
                        for (int j = 0; j < 2; j++) {
                            const int col = n0 + wn * 16 + j * 8 + qc;
                            const float g0 = acc[i][j][hh * 2] + bias[j].x, g1 = acc[i][j][hh * 2 + 1] + bias[j].y;
                            const float u0 = acc[i][j + 2][hh * 2] + bias[j + 2].x, u1 = acc[i][j + 2][hh * 2 + 1] + bias[j + 2].y;
                            const uint32_t v = moe_cuda_pack2<T>(moe_cuda_act(ACT, g0, u0, g.alpha, g.limit),
                                                                 moe_cuda_act(ACT, g1, u1, g.alpha, g.limit));
                            if (col < g.N) *(uint32_t *)(orow + col) = v;
                        }
                    } else {
#pragma unroll
                        for (int j = 0; j < 4; j++) {
                            const int col = n0 + wn * 32 + j * 8 + qc;
                            const float u0 = acc[i][j][hh * 2] + bias[j].x, u1 = acc[i][j][hh * 2 + 1] + bias[j].y;
                            const uint32_t v = moe_cuda_pack2<T>(moe_cuda_act(ACT, 0.f, u0, g.alpha, g.limit),
                                                                 moe_cuda_act(ACT, 0.f, u1, g.alpha, g.limit));
                            if (col < g.N) *(uint32_t *)(orow + col) = v;
                        }
                    }
                } else {
                    /* y in sorted rows, as the sm90 kernels write it (the combine reads ppos) */
                    const float wt = g.w[g.sorted_pair[srow]];
                    T *orow = (T *)g.out + (int64_t)srow * g.N;
#pragma unroll
                    for (int j = 0; j < 4; j++) {
                        const int col = n0 + wn * 32 + j * 8 + qc;
                        const uint32_t v = moe_cuda_pack2<T>(wt * (acc[i][j][hh * 2] + bias[j].x),
                                                             wt * (acc[i][j][hh * 2 + 1] + bias[j].y));
                        if (col < g.N) *(uint32_t *)(orow + col) = v;
                    }
                }
            }
    }
}

template <int ACT, typename T, bool TB>
static cudaError_t launch(const moe_cuda_gemm *g, int sm_count, cudaStream_t s) {
    const int NOUT = ACT >= 0 && ACT <= MOE_ACT_SWIGLU_OAI ? BN / 2 : BN;
    int64_t NT = (g->N + NOUT - 1) / NOUT, most = (int64_t)g->max_mtiles * NT;
    int64_t grid = 2 * (int64_t)sm_count;
    if (grid > most) grid = most;
    if (grid < 1) grid = 1;
    gemm_sm80<ACT, T, TB><<<(unsigned)grid, NTHREADS, SMEM_BYTES, s>>>(*g);
    return cudaGetLastError();
}

template <typename T, bool TB> static cudaError_t dispatch(const moe_cuda_gemm *g, int sm_count, cudaStream_t s) {
#define MOE_ACT_CASE_(a) \
    case a: return launch<a, T, TB>(g, sm_count, s);
    MOE_CUDA_ACT_DISPATCH(g, MOE_ACT_CASE_);
#undef MOE_ACT_CASE_
}

extern "C" cudaError_t moe__cuda_gemm_sm80(const moe_cuda_gemm *g, int sm_count, cudaStream_t s) {
    if (g->b_trans)
        return g->dtype == MOE_TYPE_BF16 ? dispatch<__nv_bfloat16, true>(g, sm_count, s)
                                         : dispatch<__half, true>(g, sm_count, s);
    return g->dtype == MOE_TYPE_BF16 ? dispatch<__nv_bfloat16, false>(g, sm_count, s)
                                     : dispatch<__half, false>(g, sm_count, s);
}

template <typename T, bool TB> static cudaError_t prepare_t(void) {
    cudaError_t e = cudaSuccess;
#define MOE_ACT_PREP_(a) \
    if (!e) e = cudaFuncSetAttribute(gemm_sm80<a, T, TB>, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES);
    MOE_CUDA_FOR_ACTS(MOE_ACT_PREP_)
#undef MOE_ACT_PREP_
    return e;
}

extern "C" cudaError_t moe__cuda_gemm_sm80_prepare(void) {
    cudaError_t e = prepare_t<__nv_bfloat16, false>();
    if (!e) e = prepare_t<__half, false>();
    if (!e) e = prepare_t<__nv_bfloat16, true>();
    return e ? e : prepare_t<__half, true>();
}
