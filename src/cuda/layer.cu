/*
 * The CUDA backends "cuda-sm90" and "cuda-sm80": one MoE layer forward on the
 * GPU, asynchronous on the context's stream, no host synchronisation and no
 * allocation (graph-capturable). Must match the reference (src/ref/ref.c)
 * within the case table's tolerances. Steps of a forward:
 *   1. count  : tokens per expert (int atomics, through a shared-memory histogram per block)
 *   2. scan   : expert offsets, per-expert M tiles of MOE_CUDA_BM rows and the
 *               per-tile work list (expert, m0); one block looping over E in
 *               chunks, so any E works
 *   3. place  : expert-sorted pair list (pair = t*K + k) and each pair's sorted
 *               position ppos; with MOE_SM90_GATHER=0 (or clusters) sm90 then
 *               copies x's rows into the permuted copy xp so that TMA can load A
 *               tiles; by default its GEMM 1 gathers them
 *   4. GEMM 1 : h = act(x gate^T + bg, x up^T + bu), bf16/f16, sorted rows  (gemm_sm80.cu / gemm_sm90.cu)
 *   5. GEMM 2 : y[r] = w[pair] * (h[r] down^T + bd), sorted rows r (whole tiles
 *               of them stored by TMA), act_type
 *   6. combine: out[t] = sum over k of y[ppos[t*K + k]], in slot order, f32 sums
 * No float atomics anywhere: two runs are bitwise equal. The order of pairs
 * inside one expert depends on atomic order, but each output row depends only
 * on its own A row, so results do not.
 *
 * Ids out of range on the device: pairs whose id is outside [0, E) are
 * skipped by every step (not counted, not scattered, never read or written
 * out of bounds) and contribute nothing to out (the combine skips them).
 * Chosen in src/backends.c order: sm90 first, sm80 second. cuda-jit
 * (jit_backend.cu) runs this same forward with its own GEMM kernels (impl->jit).
 */
#include "common.cuh"
#include "cuda_backends.h"
#include "device_guard.h"
#include "decode.h" /* MOE_DF_* of the GGUF formats the GEMMs decode */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Routing metadata kernels                                                  */
/* ------------------------------------------------------------------------ */

/* Counting and placing the pairs: blocks of RT_THREADS threads, RT_PER pairs a
 * thread (pair p = block * RT_THREADS * RT_PER + j * RT_THREADS + tid), counted
 * first in a shared-memory histogram of the E experts, so that a block adds
 * one global atomic per expert it holds instead of one per pair: at E = 128,
 * T*K = 32768 each counter took 256 same-address atomics, 7 us for counting
 * and as long again for placing (qwen3 T=4096, bench/cuda/s8). Up to
 * RT_MAX_E experts, else the per-pair
 * kernels below (E ints of shared memory: 24 KB). */
#define RT_THREADS 1024
#define RT_PER 4
#define RT_MAX_E 6144
static __global__ void __launch_bounds__(RT_THREADS) k_count_blk(const int32_t *__restrict__ ids, int TK, int E,
                                                                  int *__restrict__ cnt) {
    extern __shared__ int h[];
    for (int i = threadIdx.x; i < E; i += RT_THREADS) h[i] = 0;
    __syncthreads();
    const int p0 = blockIdx.x * RT_THREADS * RT_PER + threadIdx.x;
#pragma unroll
    for (int j = 0; j < RT_PER; j++) {
        const int p = p0 + j * RT_THREADS;
        const int e = p < TK ? ids[p] : -1;
        if ((unsigned)e < (unsigned)E) atomicAdd(h + e, 1);
    }
    __syncthreads();
    for (int i = threadIdx.x; i < E; i += RT_THREADS)
        if (h[i]) atomicAdd(cnt + i, h[i]);
}

/* sorted[off[e] + rank] = p: ranks within the block from the shared histogram,
 * the block's range of each expert reserved with one atomic on cursor[e];
 * ppos[p] = that position (-1: id out of range), for the copy and the combine. */
static __global__ void __launch_bounds__(RT_THREADS) k_place_blk(const int32_t *__restrict__ ids, int TK, int E,
                                                                  const int *__restrict__ off, int *__restrict__ cursor,
                                                                  int32_t *__restrict__ sorted, int32_t *__restrict__ ppos) {
    extern __shared__ int h[];
    for (int i = threadIdx.x; i < E; i += RT_THREADS) h[i] = 0;
    __syncthreads();
    const int p0 = blockIdx.x * RT_THREADS * RT_PER + threadIdx.x;
    int e[RT_PER], r[RT_PER];
#pragma unroll
    for (int j = 0; j < RT_PER; j++) {
        const int p = p0 + j * RT_THREADS;
        e[j] = p < TK ? ids[p] : -1;
        r[j] = (unsigned)e[j] < (unsigned)E ? atomicAdd(h + e[j], 1) : 0;
    }
    __syncthreads();
    for (int i = threadIdx.x; i < E; i += RT_THREADS)
        if (h[i]) h[i] = off[i] + atomicAdd(cursor + i, h[i]); /* the block's first position in expert i */
    __syncthreads();
#pragma unroll
    for (int j = 0; j < RT_PER; j++) {
        const int p = p0 + j * RT_THREADS, in = (unsigned)e[j] < (unsigned)E;
        if (in) sorted[h[e[j]] + r[j]] = p;
        if (p < TK) ppos[p] = in ? h[e[j]] + r[j] : -1;
    }
}

/* xp[ppos[p]] = x[p / K], one warp per pair (sm90 without gather). In pair
 * order, so that the K pairs of a token read its row of x one after another
 * (from L2); in sorted order the rows came in random order, and where x
 * exceeds L2 each was read K times from DRAM (deepseek-v3 T=16384: 1.03x). */
static __global__ void k_copy_rows(int TK, int K, int D, const int32_t *__restrict__ ppos,
                                   const uint4 *__restrict__ x, uint4 *__restrict__ xp) {
    const int p = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    if (p >= TK) return;
    const int pos = ppos[p];
    if (pos < 0) return;
    const int nv = D / 8; /* 16-byte vectors per row */
    const uint4 *src = x + (int64_t)(p / K) * nv;
    uint4 *dst = xp + (int64_t)pos * nv;
    for (int i = lane; i < nv; i += 32) dst[i] = src[i];
}

/* the same, one pair per thread (count) or warp (place and copy): for E > RT_MAX_E */
static __global__ void k_count(const int32_t *__restrict__ ids, int TK, int E, int *__restrict__ cnt) {
    int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= TK) return;
    int e = ids[p];
    if ((unsigned)e < (unsigned)E) atomicAdd(cnt + e, 1);
}

/* One block of 1024 threads; loops over E in chunks of 1024 with a carry. */
/* tail 1: an expert's last rows, when 128 or fewer, in a tile of 128 or 64;
 * 2: besides, its last MOE_CUDA_TILE_FOLD or fewer rows beyond a full tile
 * folded into that tile (MOE_CUDA_TILE_CODE; bm 256 on GGUF weights,
 * gemm_sm90_q.cu) */
static __global__ void __launch_bounds__(1024) k_scan(const int *__restrict__ cnt, int E, int bm, int tail,
                                                      int *__restrict__ off, int2 *__restrict__ tiles,
                                                      int *__restrict__ n_mtiles) {
    __shared__ int s_r[32], s_t[32];
    __shared__ int s_carry[2];
    int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    if (tid == 0) s_carry[0] = s_carry[1] = 0;
    __syncthreads();
    for (int base = 0; base < E; base += 1024) {
        int e = base + tid;
        int c = e < E ? cnt[e] : 0;
        int nt = (c + bm - 1) / bm;
        const int fold = tail == 2 && nt >= 2 && c - (nt - 1) * bm <= MOE_CUDA_TILE_FOLD;
        nt -= fold;
        int ir = c, it = nt;
        for (int o = 1; o < 32; o <<= 1) {
            int a = __shfl_up_sync(0xffffffffu, ir, o), b = __shfl_up_sync(0xffffffffu, it, o);
            if (lane >= o) { ir += a; it += b; }
        }
        if (lane == 31) { s_r[warp] = ir; s_t[warp] = it; }
        __syncthreads();
        if (warp == 0) {
            int wr = s_r[lane], wt = s_t[lane];
            for (int o = 1; o < 32; o <<= 1) {
                int a = __shfl_up_sync(0xffffffffu, wr, o), b = __shfl_up_sync(0xffffffffu, wt, o);
                if (lane >= o) { wr += a; wt += b; }
            }
            s_r[lane] = wr; /* inclusive over warps */
            s_t[lane] = wt;
        }
        __syncthreads();
        int pr = (warp ? s_r[warp - 1] : 0) + s_carry[0] + ir - c;
        int pt = (warp ? s_t[warp - 1] : 0) + s_carry[1] + it - nt;
        if (e < E) {
            off[e] = pr;
            for (int j = 0; j < nt; j++)
                tiles[pt + j] = make_int2(e, j * bm | (fold && j == nt - 1 ? 3 << 28
                                                       : tail                ? MOE_CUDA_TILE_TAIL(c - j * bm) << 28
                                                                             : 0));
        }
        __syncthreads();
        if (tid == 0) { s_carry[0] += s_r[31]; s_carry[1] += s_t[31]; }
        __syncthreads();
    }
    if (tid == 0) {
        off[E] = s_carry[0];
        *n_mtiles = s_carry[1];
    }
}

/* One warp per pair: its sorted position, and (sm90 without gather) the row copy into xp. */
static __global__ void k_scatter(const int32_t *__restrict__ ids, int TK, int E, int K, int D,
                                 const int *__restrict__ off, int *__restrict__ cursor, int32_t *__restrict__ sorted,
                                 int32_t *__restrict__ ppos, const uint4 *__restrict__ x, uint4 *__restrict__ xp) {
    int p = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    if (p >= TK) return;
    int e = ids[p];
    if ((unsigned)e >= (unsigned)E) {
        if (lane == 0) ppos[p] = -1;
        return;
    }
    int pos = 0;
    if (lane == 0) {
        pos = off[e] + atomicAdd(cursor + e, 1);
        sorted[pos] = p;
        ppos[p] = pos;
    }
    if (!xp) return;
    pos = __shfl_sync(0xffffffffu, pos, 0);
    int nv = D / 8; /* 16-byte vectors per row */
    const uint4 *src = x + (int64_t)(p / K) * nv;
    uint4 *dst = xp + (int64_t)pos * nv;
    for (int i = lane; i < nv; i += 32) dst[i] = src[i];
}

/* out[t, :] = sum over k of pair t*K + k's row of y (sorted rows: ppos) in
 * slot order (f32), skipping ids out of range (ppos -1). One thread per 8
 * columns. */
template <typename T>
static __global__ void k_combine(const int32_t *__restrict__ ppos, const uint4 *__restrict__ y, int T_, int K, int D,
                                 uint4 *__restrict__ out) {
    int nv = D / 8;
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (int64_t)T_ * nv) return;
    int64_t t = i / nv;
    int c = (int)(i - t * nv);
    float acc[8];
    for (int j = 0; j < 8; j++) acc[j] = 0.f;
    for (int k = 0; k < K; k++) {
        const int r = ppos[t * K + k];
        if (r < 0) continue;
        uint4 v = y[(int64_t)r * nv + c];
        const T *h = (const T *)&v;
        for (int j = 0; j < 8; j++) acc[j] += (float)h[j];
    }
    uint4 o;
    uint32_t *po = (uint32_t *)&o;
    for (int j = 0; j < 4; j++) po[j] = moe_cuda_pack2<T>(acc[2 * j], acc[2 * j + 1]);
    out[i] = o;
}

/* A bias [E, N] of any dense type and strides -> a contiguous f32 copy, made
 * once at init so the epilogues read one float2 per column pair. */
static __global__ void k_bias_f32(const void *src, int type, int64_t se, int64_t sn, int E, int N, float *dst) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (int64_t)E * N) return;
    int64_t e = i / N, n = i - e * N;
    dst[i] = moe_cuda_load_bias(src, type, e * se + n * sn);
}

/* The tiles of experts [e0, e0 + ne) (a contiguous run: k_scan writes them in
 * expert order) as a list of their own with the experts numbered from 0, and
 * their count: one group of cuda-quant's grouped prefill (moe__cuda_forward_grouped). */
static __global__ void __launch_bounds__(1024) k_group_tiles(const int2 *__restrict__ tiles, const int *__restrict__ ntl,
                                                             int e0, int ne, int2 *__restrict__ gt, int *__restrict__ gn) {
    __shared__ int s_lo, s_hi;
    if (threadIdx.x == 0) {
        const int n = *ntl;
        int lo = 0, hi = n;
        while (lo < hi) {
            int m = (lo + hi) >> 1;
            if (tiles[m].x < e0) lo = m + 1; else hi = m;
        }
        const int first = lo;
        hi = n;
        while (lo < hi) {
            int m = (lo + hi) >> 1;
            if (tiles[m].x < e0 + ne) lo = m + 1; else hi = m;
        }
        s_lo = first;
        s_hi = lo;
        *gn = lo - first;
    }
    __syncthreads();
    for (int i = s_lo + (int)threadIdx.x; i < s_hi; i += blockDim.x) gt[i - s_lo] = make_int2(tiles[i].x - e0, tiles[i].y);
}

/* The work units of a forward in 2 x 1 clusters: the m-tiles of bm rows
 * (tiles, k_scan's or k_group_tiles' order: by expert, m0 ascending) two at a
 * time, one per CTA of the pair. An expert's m-tiles 2i and 2i + 1 make a
 * paired unit (the pair multicasts B); the odd last m-tiles of experts with an
 * odd count go two experts to a unit (each CTA loads its own B), the last one
 * alone (.y = -1) if their number is odd. So the pairing pads no rows; before,
 * a pair took 2 bm rows of one expert and an expert with 129 rows cost two
 * half-empty units. near: the units in the order of their first m-tile, so
 * that a split unit runs beside its first expert's paired units and near its
 * second's, which then read B through L2; else (MOE_SM90_PAIRS=0) the split
 * units after all the paired ones, where they read their experts' B from DRAM
 * a second time (ncu, bench/cuda/s34 run 1, H100: qwen3 T = 4096 in 2 x 1 read
 * 1.33 GB in GEMM 1, 1.03 GB in this order, for 0.8 GB of weights). The layer,
 * this order over the other (bench/cuda/s34): H200 deepseek-v3 T = 2048 /
 * 4096 / 8192 / 16384 0.995 / 0.917-0.930 / 0.949 / 0.944, mixtral T = 4096 /
 * 16384 0.993 / 0.996 (runs 5-6, 5-7 rounds); H100 deepseek-v3 T = 4096 /
 * 16384 0.991 / 1.011, mixtral 0.953 / 0.904 (run 3, 3 rounds; wide ranges);
 * forced 2 x 1 on qwen3 T = 4096 0.84 (run 4). One block; writes units[0, P +
 * ceil(L / 2)), P paired units and L odd m-tiles. */
static __global__ void __launch_bounds__(1024) k_pair_units(const int2 *__restrict__ tiles, const int *__restrict__ ntl,
                                                           int bm, int near, int2 *__restrict__ units,
                                                           int *__restrict__ nunits) {
    /* s_lpos: the unit of each even-ranked odd m-tile of the chunk (near);
     * s_prev: that of the previous chunk's last one, if its partner is here */
    __shared__ int s_w[2][32], s_carry[2], s_lpos[1024], s_prev;
    const int n = *ntl, tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    int P = 0; /* paired units, ahead of the split ones (!near) */
    for (int base = 0; !near && base < n; base += 1024) {
        const int i = base + tid;
        P += __syncthreads_count(i + 1 < n && (tiles[i].y / bm) % 2 == 0 && tiles[i + 1].x == tiles[i].x);
    }
    if (tid == 0) {
        s_carry[0] = s_carry[1] = 0;
        s_prev = 0;
    }
    __syncthreads();
    for (int base = 0; base < n; base += 1024) {
        const int i = base + tid;
        const bool even = i < n && (tiles[i].y / bm) % 2 == 0;
        const bool head = even && i + 1 < n && tiles[i + 1].x == tiles[i].x, left = even && !head;
        const unsigned bh = __ballot_sync(0xffffffffu, head), bl = __ballot_sync(0xffffffffu, left);
        if (lane == 0) {
            s_w[0][warp] = __popc(bh);
            s_w[1][warp] = __popc(bl);
        }
        __syncthreads();
        if (warp == 0) { /* exclusive scan of the warps' counts */
            int a = s_w[0][lane], b = s_w[1][lane];
            for (int o = 1; o < 32; o <<= 1) {
                const int x = __shfl_up_sync(0xffffffffu, a, o), y = __shfl_up_sync(0xffffffffu, b, o);
                if (lane >= o) { a += x; b += y; }
            }
            s_w[0][lane] = a - s_w[0][lane];
            s_w[1][lane] = b - s_w[1][lane];
        }
        __syncthreads();
        const unsigned below = (1u << lane) - 1u;
        const int c0 = s_carry[1];
        /* paired units and odd m-tiles before tile i */
        const int hb = s_carry[0] + s_w[0][warp] + __popc(bh & below), k = c0 + s_w[1][warp] + __popc(bl & below);
        if (!near) {
            if (head) units[hb] = make_int2(i, i + 1);
            if (left) ((int *)&units[P + k / 2])[k & 1] = i;
        } else {
            const int pos = hb + (k + 1) / 2; /* the units that start before tile i */
            if (head) units[pos] = make_int2(i, i + 1);
            if (left && !(k & 1)) {
                units[pos] = make_int2(i, -1);
                s_lpos[k - c0] = pos;
            }
        }
        __syncthreads();
        if (near && left && (k & 1)) units[k - 1 >= c0 ? s_lpos[k - 1 - c0] : s_prev].y = i;
        __syncthreads(); /* s_prev read, before thread 1023 sets it for the next chunk */
        if (tid == 1023) { /* the last warp's exclusive sums plus its own counts: this chunk's totals */
            s_carry[0] += s_w[0][31] + __popc(bh);
            const int c1 = s_carry[1] + s_w[1][31] + __popc(bl);
            if ((c1 & 1) && c1 - 1 >= c0) s_prev = s_lpos[c1 - 1 - c0];
            s_carry[1] = c1;
        }
        __syncthreads();
    }
    if (tid == 0) {
        const int L = s_carry[1];
        if (!near && (L & 1)) units[P + L / 2].y = -1;
        *nunits = s_carry[0] + (L + 1) / 2;
    }
}

/* ------------------------------------------------------------------------ */
/* Workspace                                                                 */
/* ------------------------------------------------------------------------ */

typedef struct {
    size_t cnt, off, ntiles, tiles, gtiles, units, sorted, ppos, xp, h, y, total;
    int max_mtiles;
} ws_layout;

static size_t align_up(size_t v) { return (v + 255) & ~(size_t)255; }

/* sm90: the Hopper tile list; xp: room for the permuted copy of x (sm90 without gather) */
static ws_layout ws_plan(const moe_layer *L, int64_t T, int sm90, int xp) {
    ws_layout w;
    int64_t E = L->desc.E, K = L->desc.K, D = L->desc.D, I = L->desc.I, TK = T * K;
    size_t es = 2;
    w.max_mtiles = (int)(TK / (sm90 ? MOE_CUDA_BM_MIN : MOE_CUDA_BM) + (E < TK ? E : TK) + 1);
    size_t o = 0;
    w.cnt = o; o = align_up(o + sizeof(int) * (size_t)(2 * E + 2)); /* cnt[E], cursor[E], the GEMMs' unit counters */
    w.off = o; o = align_up(o + sizeof(int) * (size_t)(E + 1));
    w.ntiles = o; o = align_up(o + sizeof(int));
    w.tiles = o; o = align_up(o + sizeof(int2) * (size_t)w.max_mtiles);
    w.gtiles = o; o = align_up(o + sizeof(int2) * (size_t)w.max_mtiles + sizeof(int)); /* a group's tiles, then their count */
    w.units = o; if (sm90) o = align_up(o + sizeof(int2) * (size_t)w.max_mtiles + sizeof(int)); /* 2 x 1 units, count */
    w.sorted = o; o = align_up(o + sizeof(int32_t) * (size_t)TK);
    w.ppos = o; o = align_up(o + sizeof(int32_t) * (size_t)TK); /* each pair's sorted position: the copy, the combine */
    w.xp = o; if (xp) o = align_up(o + es * (size_t)(TK * D));
    w.h = o; o = align_up(o + es * (size_t)(TK * I));
    w.y = o; o = align_up(o + es * (size_t)(TK * D));
    w.total = o;
    return w;
}

/* ------------------------------------------------------------------------ */
/* Backend callbacks                                                         */
/* ------------------------------------------------------------------------ */


static int probe_common(moe_ctx *ctx, char *why, size_t n, int *major, int *minor) {
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        cudaGetLastError(); /* clear the sticky-free error so later calls start clean */
        snprintf(why, n, "no CUDA device (cudaGetDeviceCount: %s)", cudaGetErrorString(e));
        return 0;
    }
    if (count <= 0) {
        snprintf(why, n, "no CUDA device (cudaGetDeviceCount: 0 devices)");
        return 0;
    }
    if (ctx->p.cuda_device >= count) {
        snprintf(why, n, "cuda_device = %d but only %d CUDA device(s)", ctx->p.cuda_device, count);
        return 0;
    }
    if (cudaDeviceGetAttribute(major, cudaDevAttrComputeCapabilityMajor, ctx->p.cuda_device) != cudaSuccess ||
        cudaDeviceGetAttribute(minor, cudaDevAttrComputeCapabilityMinor, ctx->p.cuda_device) != cudaSuccess) {
        snprintf(why, n, "cannot read the compute capability of device %d", ctx->p.cuda_device);
        return 0;
    }
    return 1;
}

static int probe_sm90(moe_ctx *ctx, char *why, size_t n) {
    int ma, mi;
    if (!probe_common(ctx, why, n, &ma, &mi)) return 0;
    if (ma != 9 || mi != 0) {
        snprintf(why, n, "device %d has compute capability %d.%d; the sm_90a kernels need 9.0 (Hopper)",
                 ctx->p.cuda_device, ma, mi);
        return 0;
    }
    moe_cuda_dev_guard g;
    if (moe_cuda_dev_enter(ctx->p.cuda_device, &g) != cudaSuccess) {
        snprintf(why, n, "cudaSetDevice(%d) failed", ctx->p.cuda_device);
        return 0;
    }
    int ok = moe__cuda_sm90_available();
    moe_cuda_dev_leave(&g);
    if (!ok) {
        snprintf(why, n, "this build has no sm_90a code (CMAKE_CUDA_ARCHITECTURES must include 90a-real)");
        return 0;
    }
    return 1;
}

static int probe_sm80(moe_ctx *ctx, char *why, size_t n) {
    int ma, mi;
    if (!probe_common(ctx, why, n, &ma, &mi)) return 0;
    if (ma < 8) {
        snprintf(why, n, "device %d has compute capability %d.%d; cuda-sm80 needs 8.0 or later", ctx->p.cuda_device,
                 ma, mi);
        return 0;
    }
    moe_cuda_dev_guard g;
    if (moe_cuda_dev_enter(ctx->p.cuda_device, &g) != cudaSuccess) {
        snprintf(why, n, "cudaSetDevice(%d) failed", ctx->p.cuda_device);
        return 0;
    }
    cudaError_t e = moe__cuda_gemm_sm80_prepare();
    moe_cuda_dev_leave(&g);
    if (e != cudaSuccess) {
        cudaGetLastError();
        snprintf(why, n, "this build has no code for compute capability %d.%d (%s)", ma, mi, cudaGetErrorString(e));
        return 0;
    }
    return 1;
}

/* 1 if a weight tensor fits the kernels: bf16/f16 in device memory, either
 * K-contiguous [E, N, C] or (allow_t, sm80 only) [E, C, N] with N contiguous,
 * strides multiples of 8 elements and 16-byte aligned data (16-byte cp.async
 * and TMA rows). */
static int tensor_ok(const moe_tensor *t, const char *what, int allow_t, char *why, size_t n) {
    if (t->mem != MOE_MEM_DEVICE) {
        snprintf(why, n, "%s must be in device memory (MOE_MEM_DEVICE)", what);
        return 0;
    }
    if (t->type != MOE_TYPE_BF16 && t->type != MOE_TYPE_F16) {
        snprintf(why, n, "%s type %s: the CUDA kernels take bf16 or f16 weights", what, moe_type_name(t->type));
        return 0;
    }
    int64_t other;
    if (t->stride_c == 1) {
        other = t->stride_n;
    } else if (t->stride_n == 1 && allow_t) {
        other = t->stride_c;
    } else {
        snprintf(why, n,
                 "%s strides (e %lld, n %lld, c %lld): %s", what, (long long)t->stride_e, (long long)t->stride_n,
                 (long long)t->stride_c,
                 allow_t ? "need stride_c = 1 ([E, N, C]) or stride_n = 1 ([E, C, N])"
                         : "cuda-sm90 needs K-contiguous weights (stride_c = 1); the [E, C, N] torch._grouped_mm "
                           "layout runs on cuda-sm80");
        return 0;
    }
    if (other % 8 || t->stride_e % 8 || ((uintptr_t)t->data & 15)) {
        snprintf(why, n, "%s: strides (%lld, %lld, %lld) must be multiples of 8 elements and data 16-byte aligned",
                 what, (long long)t->stride_e, (long long)t->stride_n, (long long)t->stride_c);
        return 0;
    }
    return 1;
}

static int supports_common(const moe_layer *L, int allow_t, char *why, size_t n) {
    const moe_layer_desc *d = &L->desc;
    if (d->act_type == MOE_TYPE_F32) {
        snprintf(why, n, "act_type f32: the CUDA kernels take bf16 or f16 activations");
        return 0;
    }
    if (L->gated && !tensor_ok(&L->gate, "gate", allow_t, why, n)) return 0;
    if (!tensor_ok(&L->up, "up", allow_t, why, n) || !tensor_ok(&L->down, "down", allow_t, why, n)) return 0;
    if (L->gated && (L->gate.stride_c == 1) != (L->up.stride_c == 1)) {
        snprintf(why, n, "gate and up must have the same orientation ([E, N, C] or [E, C, N])");
        return 0;
    }
    if (L->up.type != L->down.type || (L->gated && L->gate.type != L->up.type) || L->up.type != d->act_type) {
        snprintf(why, n, "weights (%s) and activations (%s) must have one type, bf16 or f16",
                 moe_type_name(L->up.type), moe_type_name(d->act_type));
        return 0;
    }
    const moe_tensor *bs[] = {&L->gate_bias, &L->up_bias, &L->down_bias};
    for (int i = 0; i < 3; i++)
        if (bs[i]->data && bs[i]->mem != MOE_MEM_DEVICE) {
            snprintf(why, n, "biases must be in device memory (MOE_MEM_DEVICE)");
            return 0;
        }
    if (d->D % 8 || d->I % 8) {
        snprintf(why, n, "D = %lld, I = %lld: both must be multiples of 8 (16-byte rows for cp.async/TMA)",
                 (long long)d->D, (long long)d->I);
        return 0;
    }
    return 1;
}

static int supports_sm80(const moe_layer *L, char *why, size_t n) { return supports_common(L, 1, why, n); }

static int supports_sm90(const moe_layer *L, char *why, size_t n) {
    if (!supports_common(L, 0, why, n)) return 0;
    const moe_tensor *ts[] = {&L->gate, &L->up, &L->down};
    for (int i = 0; i < 3; i++) {
        if (!ts[i]->data) continue;
        if (ts[i]->stride_n * 2 >= ((int64_t)1 << 40) || ts[i]->stride_e * 2 >= ((int64_t)1 << 40)) {
            snprintf(why, n, "weight strides over 2^40 bytes exceed what TMA addresses");
            return 0;
        }
    }
    return 1;
}

static cudaError_t bias_copy(const moe_tensor *b, int64_t E, int64_t N, float **out, cudaStream_t s) {
    *out = NULL;
    if (!b->data) return cudaSuccess;
    cudaError_t e = cudaMalloc((void **)out, sizeof(float) * (size_t)(E * N));
    if (e != cudaSuccess) return e;
    k_bias_f32<<<(unsigned)((E * N + 255) / 256), 256, 0, s>>>(b->data, b->type, b->stride_e, b->stride_n, (int)E,
                                                                 (int)N, *out);
    return cudaGetLastError();
}

static void fini_cuda(moe_layer *L);

/* The TMA descriptors of the layer's weights: gate/up and down in boxes of
 * 128 rows, and the narrow n-tiles' boxes (down: bn2 / 2 rows, gate/up: bn1 /
 * 2; copies of the others where the tile is 256); 0, or -1 and why. */
static int weight_tmaps(const moe_layer *L, moe_cuda_impl *im, char *why, size_t n) {
    const moe_layer_desc *d = &L->desc;
    int dt = L->up.type;
    int bad = 0;
    if (L->gated) {
        bad |= moe__cuda_weight_tmap(&im->tm_b0, L->gate.data, dt, d->E, d->I, d->D, L->gate.stride_e,
                                     L->gate.stride_n, 128, why, n);
        if (!bad)
            bad |= moe__cuda_weight_tmap(&im->tm_b1, L->up.data, dt, d->E, d->I, d->D, L->up.stride_e,
                                         L->up.stride_n, 128, why, n);
    } else {
        bad |= moe__cuda_weight_tmap(&im->tm_b0, L->up.data, dt, d->E, d->I, d->D, L->up.stride_e, L->up.stride_n,
                                     128, why, n);
        im->tm_b1 = im->tm_b0;
    }
    if (!bad)
        bad |= moe__cuda_weight_tmap(&im->tm_down, L->down.data, dt, d->E, d->D, d->I, L->down.stride_e,
                                     L->down.stride_n, 128, why, n);
    im->tm_down_n = im->tm_down;
    if (!bad && im->bn2 != 256)
        bad |= moe__cuda_weight_tmap(&im->tm_down_n, L->down.data, dt, d->E, d->D, d->I, L->down.stride_e,
                                     L->down.stride_n, im->bn2 / 2, why, n);
    /* the register-A kernel's (moe__cuda_sm90_tn): boxes of 64 rows; without
     * them (a dtype apart from the activations') the layer runs the others */
    im->tn_ok = 0;
    if (!bad && dt == d->act_type && L->down.type == dt) {
        const moe_tensor *t0 = L->gated ? &L->gate : &L->up;
        char w2[8];
        int tb = moe__cuda_weight_tmap(&im->tm_dg64, t0->data, dt, d->E, d->I, d->D, t0->stride_e, t0->stride_n, 64,
                                       w2, sizeof w2);
        im->tm_du64 = im->tm_dg64;
        if (!tb && L->gated)
            tb = moe__cuda_weight_tmap(&im->tm_du64, L->up.data, dt, d->E, d->I, d->D, L->up.stride_e,
                                       L->up.stride_n, 64, w2, sizeof w2);
        if (!tb)
            tb = moe__cuda_weight_tmap(&im->tm_dd64, L->down.data, dt, d->E, d->D, d->I, L->down.stride_e,
                                       L->down.stride_n, 64, w2, sizeof w2);
        im->tn_ok = !tb;
    }
    im->tm_b0_n = im->tm_b0;
    im->tm_b1_n = im->tm_b1;
    if (!bad && im->bn1 != 256) {
        const moe_tensor *t0 = L->gated ? &L->gate : &L->up;
        bad |= moe__cuda_weight_tmap(&im->tm_b0_n, t0->data, dt, d->E, d->I, d->D, t0->stride_e, t0->stride_n,
                                     im->bn1 / 2, why, n);
        if (!bad && L->gated)
            bad |= moe__cuda_weight_tmap(&im->tm_b1_n, L->up.data, dt, d->E, d->I, d->D, L->up.stride_e,
                                         L->up.stride_n, im->bn1 / 2, why, n);
        else im->tm_b1_n = im->tm_b0_n;
    }
    return bad;
}

/* GEMM 1 gathers its A rows from x in the producer warpgroup (cp.async) instead
 * of reading a permuted copy xp made by the scatter kernel, where the copy would
 * cost most: it writes and reads T*K*D elements against 6*T*K*D*I FLOPs, about
 * 125 / I of the GEMMs' time on an H200, while the gather costs GEMM 1 up to ~10%
 * near its peak. Measured (bench/cuda/s5, H200): qwen3 (I = 768) 4-12% faster,
 * deepseek-v3 (2048) 4-6%. Above I = 2048 it depends on the rows an expert gets
 * (bench/cuda/s9 runs 3-4, 7 A/B rounds): at T*K/E <= 128 the gather wins or ties
 * (mixtral T=512 0.93, gpt-oss-120b T=4096 0.95, gpt-oss-20b T=512/1024 0.98,
 * gpt-oss-120b T=512-2048 0.99-1.00), at 256 it splits (mixtral 0.91,
 * gpt-oss-120b 0.98, gpt-oss-20b 1.08), from 512 it loses (gpt-oss-20b
 * 1.07-1.13, gpt-oss-120b T=16384 1.14, mixtral 0.99-1.03): full tiles are
 * MMA-bound and the producer's 8 cp.async a thread per k-block cost more
 * than the copy. Default: I <= 2048 or T*K <= 128 E, decided per forward
 * (moe__cuda_sm90_shape); MOE_SM90_GATHER=0|1 forces it. Clusters keep xp:
 * with CN = 2 A is multicast through TMA (MOE_SM90_CN = 2, read here as
 * cuda-jit reads it, rules the gather out), and 2 x 1 clusters gather only
 * where MOE_SM90_GATHER=1 asks (measured slower, see the cluster rule). The
 * workspace size for a T follows the same decision. */
#define SM90_GATHER_MAX_I 2048
#define SM90_GATHER_MAX_ROWS 128
extern "C" int moe__cuda_sm90_env_cluster(int *cm, int *cn) {
    const char *a = getenv("MOE_SM90_CM"), *b = getenv("MOE_SM90_CN");
    *cm = a && atoi(a) == 2 ? 2 : 1;
    *cn = b && atoi(b) == 2 ? 2 : 1;
    return (a && *a) || (b && *b);
}

/* at init: 0 or 1 where the environment decides, -1 for the rule per forward */
static int sm90_gather(void) {
    const char *g = getenv("MOE_SM90_GATHER");
    int cm, cn;
    if (moe__cuda_sm90_env_cluster(&cm, &cn) && cn == 2) return 0;
    if (g && *g) return g[0] != '0';
    return -1;
}

/* a never / always / by-the-rule knob: 0 or 1 as the variable says, else -1 */
static int env_01(const char *name) {
    const char *v = getenv(name);
    return v && (atoi(v) == 0 || atoi(v) == 1) ? atoi(v) : -1;
}

/* the register-A kernel's tiles (GGUF blocks, and bf16/f16 weights where
 * moe__cuda_sm90_tn takes them): tails and folds as the environment says */
static void sm90_qs_env(moe_cuda_impl *im) {
    const char *tail = getenv("MOE_SM90_QS_TAIL"); /* 0: every m-tile of 256 tokens runs 256 */
    im->qs_tail = !(tail && atoi(tail) == 0);
    im->qs_fold = env_01("MOE_SM90_QS_FOLD"); /* never / always fold (moe__cuda_sm90_fold) */
    im->qs_help = env_01("MOE_SM90_QS_HELP"); /* never / always helper warps (sm90_qs_helpers) */
    im->qs_mc = env_01("MOE_SM90_QS_MC");     /* never / always clusters of 2 (sm90_qs_mc) */
}

/* The register-A kernel's weight loads issued by two helper warps beside its
 * producer thread (moe_cuda_gemm qhelp), on GGUF blocks: there the producer
 * thread issued 3-17 TMA boxes a k-block (16 for gpt-oss's MXFP4 rows in
 * groups of 8), about 17 instructions each, and kept the consumers waiting
 * (H100, bench/decode/s39 runs 2-3, the layer with helpers over without:
 * gpt-oss-20b MXFP4 T = 512 / 4096 0.71 / 0.80, Q8_0 0.81 / 0.87, gpt-oss-120b
 * MXFP4 0.83 / 0.78; rows one by one, qwen3 and mixtral Q4_K / Q8_0 0.95-0.99
 * but qwen3 Q5_K T = 512 1.018). Not on bf16/f16 weights (two 8 KB boxes and
 * the tokens a k-block; run 5, MOE_SM90_TN=1 with helpers over without:
 * 0.98-1.01, but gpt-oss-120b T = 8192 1.049, mixtral T = 1024-2048 1.02).
 * MOE_SM90_QS_HELP=0 / 1 never / always. */
static int sm90_qs_helpers(const moe_cuda_impl *im) {
    return im->qs_help == 1 || (im->qs_help < 0 && im->qfmt1 != 0);
}

/* The register-A kernel's tiles of 256 tokens (bm 256; bf16/f16 weights also
 * 128 + folds) in clusters of 2 CTAs that share each token tile by TMA
 * multicast (moe_cuda_gemm qmc), so that L2 serves a token tile once for 256
 * weight rows. MOE_SM90_QS_MC=0 / 1 never / always. The rule: never. It cut
 * the GEMMs' L2 bytes by 21-31% and left their time as it was (H100, ncu: qwen3
 * Q8_0 T = 4096 GEMM 1 417 -> 415 us, mixtral Q4_K 3192 -> 3151, gpt-oss-20b
 * MXFP4 1.03-1.08x slower); the layer within its spread between rounds on the
 * H200 (mixtral 0.96-0.99, deepseek-v3 Q4_K 1.03, qwen3 1.01; bench/decode/s40
 * runs 1, 2, 9). */
static int sm90_qs_mc(const moe_cuda_impl *im, int bm, int tn) {
    if (!(bm == 256 || (tn && bm == 128))) return 0;
    return im->qs_mc == 1;
}

static moe_status init_common(moe_layer *L, int sm90) {
    moe_cuda_impl *im = (moe_cuda_impl *)calloc(1, sizeof *im);
    if (!im) return moe__layer_error(L, MOE_ERR_OUT_OF_MEMORY, "out of memory");
    im->device = L->ctx->p.cuda_device;
    im->sm90 = sm90;
    moe_cuda_dev_guard g;
    cudaError_t e = moe_cuda_dev_enter(im->device, &g);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&im->sm_count, cudaDevAttrMultiProcessorCount, im->device);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&im->l2_bytes, cudaDevAttrL2CacheSize, im->device);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&im->cc_major, cudaDevAttrComputeCapabilityMajor, im->device);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&im->cc_minor, cudaDevAttrComputeCapabilityMinor, im->device);
    if (e == cudaSuccess) e = sm90 ? moe__cuda_gemm_sm90_prepare() : moe__cuda_gemm_sm80_prepare();
    if (e == cudaSuccess && sm90) e = moe__cuda_gemm_sm90_qd_prepare();
    if (e == cudaSuccess) {
        cudaStream_t s = (cudaStream_t)L->ctx->p.cuda_stream;
        const moe_layer_desc *d = &L->desc;
        if (L->gated) e = bias_copy(&L->gate_bias, d->E, d->I, &im->fb_gate, s);
        if (e == cudaSuccess) e = bias_copy(&L->up_bias, d->E, d->I, &im->fb_up, s);
        if (e == cudaSuccess) e = bias_copy(&L->down_bias, d->E, d->D, &im->fb_down, s);
        if (e == cudaSuccess) e = cudaStreamSynchronize(s);
    }
    if (e != cudaSuccess) {
        moe_cuda_dev_leave(&g);
        L->impl = im;
        fini_cuda(L);
        return moe__layer_error(L, MOE_ERR_CUDA, "device %d setup: %s", L->ctx->p.cuda_device, cudaGetErrorString(e));
    }
    im->bn2 = sm90 ? moe__cuda_sm90_bn2(L->desc.D) : 256;
    im->bn1 = sm90 ? moe__cuda_sm90_bn1(L->desc.I, L->gated) : 256;
    if (sm90) {
        im->gather = sm90_gather();
        im->tn = env_01("MOE_SM90_TN"); /* never / always the register-A kernel (moe__cuda_sm90_tn) */
        sm90_qs_env(im);
        char why[256];
        if (weight_tmaps(L, im, why, sizeof why)) {
            moe_cuda_dev_leave(&g);
            L->impl = im;
            fini_cuda(L);
            return moe__layer_error(L, MOE_ERR_UNSUPPORTED, "TMA descriptor: %s", why);
        }
    }
    moe_cuda_dev_leave(&g);
    L->impl = im;
    return MOE_OK;
}

static moe_status init_sm90(moe_layer *L) { return init_common(L, 1); }

/* cuda-quant's prefill (decode.cu) points this layer's weights at the
 * workspace, where it dequantises them before each forward: the tensor maps
 * follow. */
extern "C" moe_status moe__cuda_rebind_weights(moe_layer *L) {
    moe_cuda_impl *im = (moe_cuda_impl *)L->impl;
    char why[256];
    if (im->sm90 && weight_tmaps(L, im, why, sizeof why))
        return moe__layer_error(L, MOE_ERR_CUDA, "TMA descriptor of the dequantised weights: %s", why);
    return MOE_OK;
}
static moe_status init_sm80(moe_layer *L) { return init_common(L, 0); }

extern "C" moe_status moe__cuda_sm90_quant(moe_layer *L, int fmt1, int fmt2, const moe__cuda_qrows w[3]) {
    moe_cuda_impl *im = (moe_cuda_impl *)L->impl;
    if (!im || !im->sm90 || im->jit || L->backend != &moe__backend_cuda_sm90)
        return moe__layer_error(L, MOE_ERR_UNSUPPORTED, "GGUF weights in the GEMMs need a cuda-sm90 layer");
    const int box1 = moe__cuda_quant_box(fmt1), box2 = moe__cuda_quant_box(fmt2);
    if (!box1 || !box2)
        return moe__layer_error(L, MOE_ERR_UNSUPPORTED,
                                "GGUF weights in the GEMMs: formats %d / %d, expected Q4_0, Q8_0, Q2_K..Q6_K or MXFP4",
                                fmt1, fmt2);
    const moe_layer_desc *d = &L->desc;
    /* how TMA reads each weight's rows (decode.h moe__quant_rows_plan) */
    static const char *const wn[3] = {"gate", "up", "down"};
    int lg[3] = {0, 0, 0}, a0[3] = {0, 0, 0};
    for (int i = 0; i < 3; i++) {
        if (!w[i].data) continue;
        const int fmt = i < 2 ? fmt1 : fmt2;
        const int64_t rows = i < 2 ? d->I : d->D, rb = w[i].row_bytes, sn = w[i].sn;
        switch (moe__quant_rows_plan(fmt, (uintptr_t)w[i].data, w[i].se, sn, rb, rows, &lg[i], &a0[i])) {
        case MOE_QROWS_OK: break;
        case MOE_QROWS_PAST_GROUP:
            return moe__layer_error(L, MOE_ERR_UNSUPPORTED,
                                    "GGUF weights in the GEMMs: %s rows at %p (not 16-byte aligned) with rows of %lld "
                                    "bytes %lld apart; TMA would read past a row group",
                                    wn[i], w[i].data, (long long)rb, (long long)sn);
        case MOE_QROWS_GROUP_ROWS:
            return moe__layer_error(L, MOE_ERR_UNSUPPORTED,
                                    "GGUF weights in the GEMMs: %s rows %lld bytes apart are read in groups of %d (TMA "
                                    "needs 16-byte strides), but there are %lld rows",
                                    wn[i], (long long)sn, 1 << lg[i], (long long)rows);
        default:
            return moe__layer_error(L, MOE_ERR_UNSUPPORTED,
                                    "GGUF weights in the GEMMs: %s rows at %p, strides %lld / %lld bytes; TMA needs "
                                    "multiples of 16 (Q8_0, Q4_0 and Q2_K: of 4, MXFP4, Q3_K and Q6_K: of 2; the expert "
                                    "stride of 16)",
                                    wn[i], w[i].data, (long long)w[i].se, (long long)sn);
        }
        /* a box must fit in the map's rows: a row group's bytes from the boundary below it */
        const int fmt_i = i < 2 ? fmt1 : fmt2;
        const int64_t ext = (int64_t)a0[i] * moe__quant_unit(fmt_i) + ((1 << lg[i]) - 1) * sn + rb;
        if (ext < (i < 2 ? box1 : box2) || ext < moe__cuda_quant_box2(fmt_i))
            return moe__layer_error(L, MOE_ERR_UNSUPPORTED,
                                    "GGUF weights in the GEMMs: %s rows of %lld bytes (groups of %d), under a box of "
                                    "%d bytes",
                                    wn[i], (long long)rb, 1 << lg[i], i < 2 ? box1 : box2);
    }
    if (w[0].data && w[0].sn != w[1].sn)
        return moe__layer_error(L, MOE_ERR_UNSUPPORTED,
                                "GGUF weights in the GEMMs: gate and up rows %lld / %lld bytes apart; the GEMMs take "
                                "one stride",
                                (long long)w[0].sn, (long long)w[1].sn);
    char why[256];
    int bad = 0;
    CUtensorMap g[3], u[3], dn[3];
    memset(g, 0, sizeof g);
    memset(u, 0, sizeof u);
    memset(dn, 0, sizeof dn);
    /* boxes of 128 rows (B decoded into shared memory: Q8_0 and Q4_K rows TMA addresses one by one), of 64 (A in
     * registers); k = 2: the second maps (Q6_K), 64 rows */
    const int bdec1 = fmt1 == MOE_DF_Q8_0 || fmt1 == MOE_DF_Q4_K, bdec2 = fmt2 == MOE_DF_Q8_0 || fmt2 == MOE_DF_Q4_K;
    const int grouped = lg[0] | lg[1] | lg[2] | a0[0] | a0[1] | a0[2] | !bdec1 | !bdec2;
    for (int k = grouped ? 1 : 0; k < 3 && !bad; k++) {
        const int br = k ? 64 : 128, bx1 = k < 2 ? box1 : moe__cuda_quant_box2(fmt1);
        const int bx2 = k < 2 ? box2 : moe__cuda_quant_box2(fmt2);
        if (bx1 && w[0].data)
            bad |= moe__cuda_quant_tmap(&g[k], w[0].data, d->E, d->I, w[0].row_bytes, w[0].se, w[0].sn, bx1, br, lg[0],
                                        a0[0] * moe__quant_unit(fmt1), why, sizeof why);
        if (bx1 && !bad)
            bad |= moe__cuda_quant_tmap(&u[k], w[1].data, d->E, d->I, w[1].row_bytes, w[1].se, w[1].sn, bx1, br, lg[1],
                                        a0[1] * moe__quant_unit(fmt1), why, sizeof why);
        if (bx2 && !bad)
            bad |= moe__cuda_quant_tmap(&dn[k], w[2].data, d->E, d->D, w[2].row_bytes, w[2].se, w[2].sn, bx2, br,
                                        lg[2], a0[2] * moe__quant_unit(fmt2), why, sizeof why);
    }
    if (bad) return moe__layer_error(L, MOE_ERR_UNSUPPORTED, "GGUF weights in the GEMMs: %s", why);
    moe_cuda_dev_guard dg;
    cudaError_t e = moe_cuda_dev_enter(im->device, &dg);
    if (e == cudaSuccess) e = moe__cuda_gemm_sm90_q_prepare();
    moe_cuda_dev_leave(&dg);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return moe__layer_error(L, MOE_ERR_CUDA, "GGUF weights in the GEMMs: %s", cudaGetErrorString(e));
    }
    im->tm_qg = w[0].data ? g[0] : u[0];
    im->tm_qu = u[0];
    im->tm_qd = dn[0];
    im->tm_qg64 = w[0].data ? g[1] : u[1];
    im->tm_qu64 = u[1];
    im->tm_qd64 = dn[1];
    im->tm_qg64h = w[0].data ? g[2] : u[2];
    im->tm_qu64h = u[2];
    im->tm_qd64h = dn[2];
    const char *qs = getenv("MOE_SM90_QS"); /* the m-tile: 256 or 64 (register-A kernel), 128 (B decoded) */
    im->qs = qs && (atoi(qs) == 256 || atoi(qs) == 128 || atoi(qs) == 64) ? atoi(qs) : -1;
    sm90_qs_env(im);
    im->qfmt1 = fmt1;
    im->qfmt2 = fmt2;
    /* the kernels' row groups (moe_cuda_gemm qlg, qmq, qsn, qa0): GEMM 1's B0 is the gate (up when not gated) */
    const int b0 = w[0].data ? 0 : 1;
    const int u1 = moe__quant_unit(fmt1), u2 = moe__quant_unit(fmt2); /* 16: no groups, mq 0 */
    im->qlg1 = lg[1];
    im->qmq1 = (int)(w[1].sn % 16) / u1;
    im->qsn1 = u1 < 16 ? (int)w[1].sn : 0;
    im->qa01 = a0[b0] | a0[1] << 3;
    im->qlg2 = lg[2];
    im->qmq2 = (int)(w[2].sn % 16) / u2;
    im->qsn2 = u2 < 16 ? (int)w[2].sn : 0;
    im->qa02 = a0[2];
    im->qgrp = grouped;
    return MOE_OK;
}

static void fini_cuda(moe_layer *L) {
    moe_cuda_impl *im = (moe_cuda_impl *)L->impl;
    if (im) {
        moe_cuda_dev_guard g;
        if (moe_cuda_dev_enter(im->device, &g) == cudaSuccess) {
            if (im->fb_gate) cudaFree(im->fb_gate);
            if (im->fb_up) cudaFree(im->fb_up);
            if (im->fb_down) cudaFree(im->fb_down);
            if (im->jit && im->jit->module) moe__cuda_driver()->module_unload(im->jit->module);
            moe_cuda_dev_leave(&g);
        }
        free(im->jit);
    }
    free(L->impl);
    L->impl = NULL;
}

static size_t ws_sm90(const moe_layer *L, int64_t T) {
    int cm, cn;
    return ws_plan(L, T, 1, !moe__cuda_sm90_shape(L, T, &cm, &cn)).total;
}
static size_t ws_sm80(const moe_layer *L, int64_t T) { return ws_plan(L, T, 0, 0).total; }

static void fill_gemm1(const moe_layer *L, moe_cuda_gemm *g) {
    const moe_layer_desc *d = &L->desc;
    g->mode = 1;
    g->gated = L->gated;
    g->act = d->act;
    g->alpha = d->alpha;
    g->limit = d->limit;
    g->N = (int)d->I;
    g->C = (int)d->D;
    const moe_tensor *b0 = L->gated ? &L->gate : &L->up, *b1 = &L->up;
    const moe_tensor *c0 = L->gated ? &L->gate_bias : &L->up_bias, *c1 = &L->up_bias;
    g->b_trans = b0->stride_c != 1;
    g->b0_sc = b0->stride_c; g->b1_sc = b1->stride_c;
    g->B0 = b0->data; g->b0_se = b0->stride_e; g->b0_sn = b0->stride_n;
    g->B1 = b1->data; g->b1_se = b1->stride_e; g->b1_sn = b1->stride_n;
    g->bias0 = c0->data; g->bias0_type = c0->type; g->bias0_se = c0->stride_e; g->bias0_sn = c0->stride_n;
    g->bias1 = c1->data; g->bias1_type = c1->type; g->bias1_se = c1->stride_e; g->bias1_sn = c1->stride_n;
    const moe_cuda_impl *im = (const moe_cuda_impl *)L->impl;
    g->fb0 = L->gated ? im->fb_gate : im->fb_up;
    g->fb1 = im->fb_up;
}

static void fill_gemm2(const moe_layer *L, moe_cuda_gemm *g) {
    const moe_layer_desc *d = &L->desc;
    g->mode = 2;
    g->gated = 0;
    g->act = 0;
    g->N = (int)d->D;
    g->C = (int)d->I;
    g->B0 = g->B1 = L->down.data;
    g->b_trans = L->down.stride_c != 1;
    g->b0_sc = g->b1_sc = L->down.stride_c;
    g->b0_se = g->b1_se = L->down.stride_e;
    g->b0_sn = g->b1_sn = L->down.stride_n;
    g->bias0 = g->bias1 = L->down_bias.data;
    g->bias0_type = g->bias1_type = L->down_bias.type;
    g->bias0_se = g->bias1_se = L->down_bias.stride_e;
    g->bias0_sn = g->bias1_sn = L->down_bias.stride_n;
    g->fb0 = g->fb1 = ((const moe_cuda_impl *)L->impl)->fb_down;
}

/* The sm90 GEMMs take their units in dynamic order, from a counter
 * (gemm_sm90.cuh, g.sched), without clusters and in 2 x 1 clusters that read A
 * through TMA, and on GGUF blocks in the register-A kernel (BM 64 / 256,
 * gemm_sm90_q.cu; its BM 128 kernel, whose producer decodes B, keeps the
 * static order), unless MOE_SM90_SCHED=0 (read per forward) asks for the
 * static order. Measured: src/cuda/NOTES.md, session 33 (bf16/f16),
 * src/cuda/NOTES_decode.md, session 36 (GGUF: mixtral, whose GEMM 2 lost to
 * the dynamic order until its raster bands were sized by its own A rows,
 * moe__cuda_sm90_raster2). */
extern "C" int moe__cuda_sm90_dynamic(const moe_layer *L, int cm, int cn, int gather, int bm) {
    const moe_cuda_impl *im = (const moe_cuda_impl *)L->impl;
    const char *ev = getenv("MOE_SM90_SCHED");
    if ((ev && ev[0] == '0') || !im->sm90 || !((cm == 1 && cn == 1) || (cm == 2 && cn == 1 && !gather))) return 0;
    return !im->qfmt1 || bm != 128;
}

/* The forward; with group < E (cuda-quant's grouped prefill) the GEMMs run per
 * group of experts [e0, e0 + ne), prep(pctx, e0, ne) first (it puts that
 * group's weights, numbered from 0, where the layer's weights point), then
 * the group's tiles with the experts renumbered, exp_off and the biases
 * offset by e0; routing and combine once. */
static moe_status forward_impl(moe_layer *L, const moe__fwd *a, int64_t group, moe__cuda_group_prep prep, void *pctx) {
    moe_cuda_impl *im = (moe_cuda_impl *)L->impl;
    const moe_layer_desc *d = &L->desc;
    int64_t T = a->T, K = d->K, E = d->E, D = d->D, TK = T * K;
    if (TK > INT32_MAX / 2 || TK * (D > d->I ? D : d->I) / 8 > ((int64_t)1 << 40))
        return moe__layer_error(L, MOE_ERR_SIZE_OVERFLOW, "T = %lld x K = %lld pairs: too many for the CUDA backend",
                                (long long)T, (long long)K);
    /* the scatter, gather and combine kernels move 16-byte pieces of x, out and the workspace */
    if (((uintptr_t)a->x | (uintptr_t)a->out | (uintptr_t)a->ws) & 15)
        return moe__layer_error(L, MOE_ERR_INVALID_ARGUMENT, "x, out and the workspace must be 16-byte aligned for %s",
                                L->backend->name);
    cudaStream_t s = (cudaStream_t)L->ctx->p.cuda_stream;
    /* sm90 cluster shape and A-row source (moe__cuda_sm90_shape): cm = 2 pairs
     * CTAs on two m-tiles (k_pair_units), cn = 2 on neighbouring n-tiles (TMA
     * multicast of A, which then comes through TMA from the permuted copy xp) */
    int cm = 1, cn = 1;
    const int gather = moe__cuda_sm90_shape(L, T, &cm, &cn);
    ws_layout w = ws_plan(L, T, im->sm90, im->sm90 && !gather);
    char *ws = (char *)a->ws;
    int *cnt = (int *)(ws + w.cnt), *cursor = cnt + E, *off = (int *)(ws + w.off), *ntl = (int *)(ws + w.ntiles);
    int2 *tiles = (int2 *)(ws + w.tiles), *gtiles = (int2 *)(ws + w.gtiles);
    int *gntl = (int *)(gtiles + w.max_mtiles);
    int2 *units = (int2 *)(ws + w.units);
    int *nunits = (int *)(units + w.max_mtiles);
    int32_t *sorted = (int32_t *)(ws + w.sorted), *ppos = (int32_t *)(ws + w.ppos);
    void *xp = im->sm90 && !gather ? ws + w.xp : NULL, *h = ws + w.h, *y = ws + w.y;
    moe_status st = MOE_OK;
    moe_cuda_dev_guard g;
    char why[256] = "";
    if (moe_cuda_dev_enter(im->device, &g) != cudaSuccess)
        return moe__layer_error(L, MOE_ERR_CUDA, "cudaSetDevice(%d) failed", im->device);
    {
        MOE_CUDA_CK(cudaMemsetAsync(cnt, 0, sizeof(int) * (size_t)(2 * E + 2), s));
        const int blk = E <= RT_MAX_E; /* the shared-histogram kernels */
        const unsigned nblk = (unsigned)((TK + RT_THREADS * RT_PER - 1) / (RT_THREADS * RT_PER));
        if (blk) k_count_blk<<<nblk, RT_THREADS, sizeof(int) * (size_t)E, s>>>(a->ids, (int)TK, (int)E, cnt);
        else k_count<<<(unsigned)((TK + 255) / 256), 256, 0, s>>>(a->ids, (int)TK, (int)E, cnt);
        MOE_CUDA_CK(cudaGetLastError());
        const int bm = im->sm90 ? moe__cuda_sm90_bm(L, T, cm, cn) : MOE_CUDA_BM;
        const int fold = moe__cuda_sm90_fold(L, T, bm);
        const int tn = moe__cuda_sm90_tn(L, T); /* bf16/f16 weights on the register-A kernel */
        const int tail = (bm == 256 || tn) && im->qs_tail && TK < (1 << 28) ? 1 + fold : 0; /* the register-A kernel */
        k_scan<<<1, 1024, 0, s>>>(cnt, (int)E, bm, tail, off, tiles, ntl);
        MOE_CUDA_CK(cudaGetLastError());
        if (blk) {
            k_place_blk<<<nblk, RT_THREADS, sizeof(int) * (size_t)E, s>>>(a->ids, (int)TK, (int)E, off, cursor, sorted,
                                                                          ppos);
            MOE_CUDA_CK(cudaGetLastError());
            if (xp)
                k_copy_rows<<<(unsigned)((TK + 7) / 8), 256, 0, s>>>((int)TK, (int)K, (int)D, ppos, (const uint4 *)a->x,
                                                                      (uint4 *)xp);
        } else {
            k_scatter<<<(unsigned)((TK + 7) / 8), 256, 0, s>>>(a->ids, (int)TK, (int)E, (int)K, (int)D, off, cursor,
                                                               sorted, ppos, (const uint4 *)a->x, (uint4 *)xp);
        }
        MOE_CUDA_CK(cudaGetLastError());

        moe_cuda_gemm g1, g2;
        memset(&g1, 0, sizeof g1);
        fill_gemm1(L, &g1);
        g1.dtype = d->act_type;
        g1.E = (int)E; g1.K = (int)K; g1.TK = (int)TK;
        g1.A = xp ? xp : a->x;
        g1.gather = gather;
        g1.out = h;
        g1.sorted_pair = sorted; g1.exp_off = off; g1.tiles = tiles; g1.n_mtiles = ntl; g1.w = a->w;
        const int max_tiles = (int)(TK / bm + (E < TK ? E : TK) + 1); /* the tile list's bound for this bm */
        g1.max_mtiles = cm == 2 ? max_tiles / 2 + 1 : max_tiles;         /* and the units' */
        g1.cm = cm;
        g1.cn = cn;
        g1.bm = bm;
        g1.bn = moe__cuda_sm90_tile_n(L, 1, cm, cn, bm);
        g1.gm = moe__cuda_sm90_raster(L, T, bm, cm);
        g1.qfold = fold;
        g2 = g1;
        fill_gemm2(L, &g2);
        g2.gm = moe__cuda_sm90_raster2(L, T, bm, cm);
        g2.bn = moe__cuda_sm90_tile_n(L, 2, cm, cn, bm);
        /* the narrow maps were made for bn1 / bn2 (weight_tmaps): a tile of any
         * other width would read boxes of the wrong height and never complete
         * its stages (a hang, not an error); say so instead of launching */
        if ((g1.bn != 256 && g1.bn != im->bn1) || (g2.bn != 256 && g2.bn != im->bn2)) {
            st = moe__layer_error(L, MOE_ERR_INTERNAL,
                                  "n-tiles %d / %d chosen for GEMM 1 / 2, but the weights' tensor maps were made for "
                                  "256 or %d / %d",
                                  g1.bn, g2.bn, im->bn1, im->bn2);
            goto out;
        }
        const CUtensorMap *tm0 = g1.bn != 256 ? &im->tm_b0_n : &im->tm_b0, *tm1 = g1.bn != 256 ? &im->tm_b1_n : &im->tm_b1;
        const CUtensorMap *tmd = g2.bn != 256 ? &im->tm_down_n : &im->tm_down;
        if (im->qfmt1) { /* GGUF blocks decoded in the GEMMs (moe__cuda_sm90_quant); bm 256: the register-A kernel */
            tm0 = bm != 128 ? &im->tm_qg64 : &im->tm_qg;
            tm1 = bm != 128 ? &im->tm_qu64 : &im->tm_qu;
            tmd = bm != 128 ? &im->tm_qd64 : &im->tm_qd;
            g1.qfmt = im->qfmt1;
            g2.qfmt = im->qfmt2;
            g1.qlg = im->qlg1; g1.qmq = im->qmq1; g1.qsn = im->qsn1; g1.qa0 = im->qa01;
            g2.qlg = im->qlg2; g2.qmq = im->qmq2; g2.qsn = im->qsn2; g2.qa0 = im->qa02;
            if (im->qfmt1 == MOE_DF_Q6_K) { g1.qx0 = &im->tm_qg64h; g1.qx1 = &im->tm_qu64h; }
            if (im->qfmt2 == MOE_DF_Q6_K) g2.qx0 = g2.qx1 = &im->tm_qd64h;
        } else if (tn) { /* bf16/f16 weights on the register-A kernel (moe__cuda_sm90_tn) */
            tm0 = &im->tm_dg64;
            tm1 = &im->tm_du64;
            tmd = &im->tm_dd64;
            g1.qfmt = g2.qfmt = SM90_QF_DENSE;
            g1.bn = g2.bn = 256; /* not read: its units are 64 or 128 outputs */
        }
        g1.qhelp = g2.qhelp = sm90_qs_helpers(im); /* read by the register-A kernel only */
        g1.qmc = g2.qmc = (im->qfmt1 || tn) && sm90_qs_mc(im, bm, tn);
        g2.A = h;
        g2.gather = 0; /* GEMM 2 reads h through TMA */
        g2.out = y;
        for (int64_t e0 = 0; e0 < E; e0 += group) {
            const int64_t ne = E - e0 < group ? E - e0 : group;
            moe_cuda_gemm h1 = g1, h2 = g2;
            if (prep) {
                st = prep(pctx, e0, ne);
                if (st) goto out;
            }
            if (ne < E) { /* one group: its tiles, experts from 0; offsets into the per-expert arrays */
                k_group_tiles<<<1, 1024, 0, s>>>(tiles, ntl, (int)e0, (int)ne, gtiles, gntl);
                MOE_CUDA_CK(cudaGetLastError());
                h1.tiles = h2.tiles = gtiles;
                h1.n_mtiles = h2.n_mtiles = gntl;
            }
            if (cm == 2) { /* the pairs of m-tiles the 2 x 1 clusters take */
                const char *pv = getenv("MOE_SM90_PAIRS");
                k_pair_units<<<1, 1024, 0, s>>>(h1.tiles, h1.n_mtiles, bm, !(pv && pv[0] == '0'), units, nunits);
                MOE_CUDA_CK(cudaGetLastError());
                h1.units = h2.units = units;
                h1.n_mtiles = h2.n_mtiles = nunits;
            }
            if (ne == E && moe__cuda_sm90_dynamic(L, cm, cn, gather, bm)) {
                h1.sched = cursor + E; /* zeroed with the counts */
                h2.sched = cursor + E + 1;
            }
            if (ne < E) {
                h1.exp_off = h2.exp_off = off + e0;
                if (h1.fb0) h1.fb0 += e0 * d->I;
                if (h1.fb1) h1.fb1 += e0 * d->I;
                if (h2.fb0) h2.fb0 += e0 * D;
                h2.fb1 = h2.fb0;
            }
            if (im->jit) {
                /* moe_jit_gemm{1,2}_c21 where the rule picked 2 x 1, moe_jit_gemm{1,2}_m64 */
                const int f = cm != im->jit->cm ? 4 : bm == 64 ? 2 : 0;
                MOE_CUDA_CK(moe__cuda_gemm_sm90_jit(&h1, tm0, tm1, im->jit->fn[f],
                                                    im->jit->max_clusters[f], s, why, sizeof why));
                MOE_CUDA_CK(moe__cuda_gemm_sm90_jit(&h2, tmd, tmd, im->jit->fn[f + 1], im->jit->max_clusters[f + 1], s,
                                                    why, sizeof why));
            } else if (im->sm90) {
                MOE_CUDA_CK(moe__cuda_gemm_sm90(&h1, tm0, tm1, im->sm_count, s, why, sizeof why));
                MOE_CUDA_CK(moe__cuda_gemm_sm90(&h2, tmd, tmd, im->sm_count, s, why, sizeof why));
            } else {
                MOE_CUDA_CK(moe__cuda_gemm_sm80(&h1, im->sm_count, s));
                MOE_CUDA_CK(moe__cuda_gemm_sm80(&h2, im->sm_count, s));
            }
        }
        int64_t nthreads = T * (D / 8);
        unsigned nb = (unsigned)((nthreads + 255) / 256);
        if (d->act_type == MOE_TYPE_BF16)
            k_combine<__nv_bfloat16><<<nb, 256, 0, s>>>(ppos, (const uint4 *)y, (int)T, (int)K, (int)D,
                                                        (uint4 *)a->out);
        else
            k_combine<__half><<<nb, 256, 0, s>>>(ppos, (const uint4 *)y, (int)T, (int)K, (int)D,
                                                 (uint4 *)a->out);
        MOE_CUDA_CK(cudaGetLastError());
    }
out:
    if (st && why[0]) {
        char msg[MOE__ERR_LEN];
        snprintf(msg, sizeof msg, "%s", L->err);
        moe__layer_error(L, st, "%s (%s)", msg, why);
    }
    moe_cuda_dev_leave(&g);
    return st;
}

static moe_status forward_cuda(moe_layer *L, const moe__fwd *a) { return forward_impl(L, a, L->desc.E, NULL, NULL); }

static const char *qfmt_name(int f) {
    switch (f) {
    case MOE_DF_Q4_0: return "Q4_0";
    case MOE_DF_Q8_0: return "Q8_0";
    case MOE_DF_MXFP4: return "MXFP4";
    case MOE_DF_Q2_K: return "Q2_K";
    case MOE_DF_Q3_K: return "Q3_K";
    case MOE_DF_Q5_K: return "Q5_K";
    case MOE_DF_Q6_K: return "Q6_K";
    default: return "Q4_K";
    }
}

static void describe_cuda(const moe_layer *L, int64_t T, char *buf, size_t n) {
    const moe_cuda_impl *im = (const moe_cuda_impl *)L->impl;
    const moe_layer_desc *d = &L->desc;
    int cm, cn;
    const int gather = moe__cuda_sm90_shape(L, T, &cm, &cn);
    const int bm = im->sm90 ? moe__cuda_sm90_bm(L, T, cm, cn) : MOE_CUDA_BM;
    char cl[48] = "", b2[40] = "";
    if (im->sm90) snprintf(cl, sizeof cl, ", clusters %dx%d", cm, cn);
    if (im->sm90 && moe__cuda_sm90_raster2(L, T, bm, cm) != moe__cuda_sm90_raster(L, T, bm, cm))
        snprintf(b2, sizeof b2, ", raster bands of %d", moe__cuda_sm90_raster2(L, T, bm, cm));
    snprintf(buf, n,
             "%s: T = %lld, %s, device %d (sm_%d%d, %d SMs): route count/scan/scatter%s, grouped GEMM gate/up %s "
             "(%s%s, BM %d, raster bands of %d%s), GEMM down with weights (n-tiles of %d%s), deterministic combine over "
             "%lld slots%s",
             L->backend->name, (long long)T, moe_type_name(d->act_type), im->device, im->cc_major, im->cc_minor,
             im->sm_count, im->sm90 && !gather ? " + permuted copy of x" : "",
             im->sm90 ? (gather ? "x rows gathered by cp.async, weights by TMA, wgmma, warp-specialised persistent"
                                : "TMA + wgmma, warp-specialised persistent")
                      : "cp.async row gather + mma.sync",
             moe_act_name(d->act), cl, bm, im->sm90 ? moe__cuda_sm90_raster(L, T, bm, cm) : 16 /* gemm_sm80.cu */,
             moe__cuda_sm90_dynamic(L, cm, cn, gather, bm) ? ", units in dynamic order" : "",
             im->sm90 ? moe__cuda_sm90_tile_n(L, 2, cm, cn, bm) : 128 /* gemm_sm80.cu */, b2,
             (long long)d->K,
             im->fb_up || im->fb_down ? "; biases kept as f32 device copies" : "");
    if (im->qfmt1 && n > strlen(buf) + 260)
        snprintf(buf + strlen(buf), n - strlen(buf), "; GGUF weights (%s / %s) %s",
                 qfmt_name(im->qfmt1), qfmt_name(im->qfmt2),
                 bm == 64    ? "decoded into wgmma's A registers by the consumer warpgroups, 64 tokens a tile"
                 : bm == 256 ? (!im->qs_tail ? "decoded into wgmma's A registers by the consumer warpgroups, 256 "
                                               "tokens a tile"
                                : moe__cuda_sm90_fold(L, T, bm)
                                    ? "decoded into wgmma's A registers by the consumer warpgroups, 256 tokens a tile "
                                      "(an expert's last 128 or fewer rows: 128 or 64; its last 24 or fewer beyond a "
                                      "full tile: folded into it)"
                                              : "decoded into wgmma's A registers by the consumer warpgroups, 256 tokens "
                                                "a tile (an expert's last 128 or fewer rows: 128 or 64)")
                             : "decoded into the B tiles by the producer warpgroup, 3 stages + a raw ring");
    if (!im->qfmt1 && moe__cuda_sm90_tn(L, T) && n > strlen(buf) + 200)
        snprintf(buf + strlen(buf), n - strlen(buf),
                 "; weights as wgmma's A in registers (ldmatrix from 64-row TMA boxes), the tokens as N: %d a tile "
                 "(an expert's last %s rows: %s%s)",
                 bm, bm == 256 ? "128 or fewer" : "64 or fewer", bm == 256 ? "128 or 64" : "64",
                 moe__cuda_sm90_fold(L, T, bm) ? "; its last 24 or fewer beyond a full tile: folded into it" : "");
    if (((im->qfmt1 && bm != 128) || (!im->qfmt1 && moe__cuda_sm90_tn(L, T))) && n > strlen(buf) + 190)
        snprintf(buf + strlen(buf), n - strlen(buf), "; its stages loaded by %s%s",
                 sm90_qs_helpers(im) ? "the producer thread (tokens) and two helper warps (weights)"
                                     : "the producer thread alone",
                 sm90_qs_mc(im, bm, !im->qfmt1 && moe__cuda_sm90_tn(L, T))
                     ? ", in clusters of 2 CTAs sharing each token tile (TMA multicast)"
                     : "");
    if (im->qfmt1 && im->qgrp && n > strlen(buf) + 160) {
        char grp[2][64];
        const int lg[2] = {im->qlg1, im->qlg2}, sn[2] = {im->qsn1, im->qsn2}, a0[2] = {im->qa01, im->qa02};
        for (int i = 0; i < 2; i++)
            if (lg[i] || a0[i])
                snprintf(grp[i], sizeof grp[i], "in groups of %d rows %d bytes apart", 1 << lg[i], sn[i]);
            else
                snprintf(grp[i], sizeof grp[i], "row by row");
        snprintf(buf + strlen(buf), n - strlen(buf), "; TMA reads the rows of gate/up %s, of down %s", grp[0], grp[1]);
    }
}

/* The tile table of the sm90 GEMMs (gemm_sm90.cuh): BM 64 while the average
 * expert has fewer than SM90_BM64_BELOW rows (T * K / E), else BM 128.
 * MOE_SM90_BM=64|128 forces either (read per forward, as MOE_SM90_CM/CN);
 * clusters run with BM 128 only.
 * Measured on an H200 (bench/cuda/README.md, "tile table"; cuda-jit and
 * cuda-sm90, five presets, T = 512..16384, paired A/B rounds): BM 64 is
 * 4-11% faster at 16 and 32 rows per expert (qwen3 T=512, gpt-oss-120b and
 * deepseek-v3 T=512/1024) and 8-62% slower from 64 rows up (gpt-oss-20b
 * T=512, the others at T >= 1024-2048): it reads each expert's weights once
 * per 64 rows, so it pays only where BM 128 would not need fewer tiles. */
#define SM90_BM64_BELOW 48
/* Layers on GGUF weights (moe__cuda_sm90_quant): the m-tile by pairs an
 * expert (T * K / E). From SM90_QS_MIN_PAIRS, gemm_sm90_q.cu's register-A
 * kernel with 256 tokens a tile; below SM90_QS64_BELOW the same with 64; in
 * between the kernel whose producer decodes B into shared memory (BM 128).
 * Measured, times as multiples of bf16's (bench/decode/s20): H200 run 10,
 * 64 / 128 / 256: 16-32 pairs (qwen3 T = 256-512, deepseek-v3 T = 512-1024,
 * mixtral T = 64-128) 0.95-1.23 / 1.35-1.54 / 1.80-2.97; 64 pairs Q8_0
 * 1.28-1.36 / 1.32-1.38, Q4_K 1.49-1.57 / 1.40-1.48; 128 pairs 1.33-2.01 /
 * 1.38-1.64 / 0.98-1.51. H100 run 8, 128 / 256: 128 pairs 1.18-1.35 / 0.87-1.21,
 * 1024 pairs (mixtral T = 4096) 1.78-1.89 / 1.30-1.33. Since the 256-token
 * kernel runs an expert's last 128 or fewer rows as a tile of 128 or 64 (impl
 * qs_tail) it takes over from 64 pairs: H200 bench/decode/s22 run 2 (us, 64 /
 * 128 / 256 forced): 64 pairs (qwen3 T = 1024, deepseek-v3 T = 2048) Q4_K 487 /
 * 454 / 437 and 7727 / 7695 / 6260, Q8_0 495 / 458 / 424 and 7882 / 6781 /
 * 6241; 32 pairs 64 stays ahead (qwen3 T = 512 336 / 444 / 378, deepseek-v3
 * T = 1024 5265 / 7544 / 5481). BM 128 then runs only without the tails
 * (MOE_SM90_QS_TAIL=0). MOE_SM90_QS=64|128|256 forces one (layer creation). */
#define SM90_QS_MIN_PAIRS 128
#define SM90_QS64_BELOW 64
/* moe__cuda_sm90_tn's rule (below, with its measurements) */
#define SM90_TN_MIN_ROWS 192 /* tiles of 256 from here */
#define SM90_TN_MAX_ROWS 384
#define SM90_TN_MIN_ROWS128 112 /* tiles of 128 and folds (bm 128) in [112, 160] */
#define SM90_TN_MAX_ROWS128 160
#define SM90_TN_MIN_D 2048
extern "C" int moe__cuda_sm90_bm(const moe_layer *L, int64_t T, int cm, int cn) {
    const moe_cuda_impl *im = (const moe_cuda_impl *)L->impl;
    if (im->qfmt1) { /* GGUF weights: 256 or 64 tokens as N of the register-A kernel, or BM 128 */
        const int grouped = im->qgrp; /* rows in TMA groups: the register-A kernel only */
        if (im->qs >= 0) return im->qs == 128 && grouped ? 256 : im->qs;
        const int64_t TK = T * L->desc.K, E = L->desc.E;
        if (TK < (int64_t)SM90_QS64_BELOW * E) return 64;
        if (im->qs_tail && TK < (1 << 28)) return 256; /* the tails (k_scan) cover 64-127 rows */
        return TK >= (int64_t)SM90_QS_MIN_PAIRS * E || grouped ? 256 : 128;
    }
    if (moe__cuda_sm90_tn(L, T)) /* the register-A kernel: 256 tokens a tile, or 128 for experts of fewer rows */
        return T * L->desc.K < (int64_t)SM90_TN_MIN_ROWS * L->desc.E ? 128 : 256;
    if (cm != 1 || cn != 1) return 128;
    const char *ev = getenv("MOE_SM90_BM");
    if (ev && (atoi(ev) == 64 || atoi(ev) == 128)) return atoi(ev);
    return T * L->desc.K < (int64_t)SM90_BM64_BELOW * L->desc.E ? 64 : 128;
}

/* GEMM 2's n-tile (1 x 1 clusters): 240 where it pads D less than 256, else
 * 256. On gpt-oss (D = 2880) that is 12 n-tiles of 240 instead of 11 of 256
 * and one of 64 whose MMAs run at full width: 6% fewer MMA columns, for 2%
 * more B bytes per FLOP. Measured on an H200: bench/cuda/s9 (NOTES.md,
 * session 9). MOE_SM90_BN2=256|240 forces either (read at layer creation). */
extern "C" int moe__cuda_sm90_bn2(int64_t D) {
    const char *ev = getenv("MOE_SM90_BN2");
    if (ev && (atoi(ev) == 256 || atoi(ev) == 240)) return atoi(ev);
    return (D + 239) / 240 * 240 < (D + 255) / 256 * 256 ? 240 : 256;
}

/* The raster band of the sm90 GEMMs (gemm_common.cuh moe_cuda_raster): m-tiles
 * (units with clusters) that share a sweep over the n-tiles. 16 lets the
 * concurrent CTAs of one expert's many m-tiles read each B tile from L2; with
 * at most 256 rows an expert (1-2 m-tiles) there is little B to share and 16
 * m-tiles of A (deepseek-v3: 1.8 MB each) are re-read from DRAM on every
 * sweep: ncu (bench/cuda/s9 run 8) showed deepseek-v3 T=4096 GEMM 1 reading
 * 20.6 GB from DRAM for 15 GB of weights, L2 at 97% of its throughput. Bands
 * of 4 measured on an H200 (s9 runs 9-10, 7 A/B rounds): deepseek-v3 T = 2048 /
 * 4096 / 8192 0.96 / 0.95 / 0.95, gpt-oss-120b 0.97 / 0.95 / 0.94, qwen3 T = 2048
 * 0.97 (4096: 0.99), gpt-oss-20b T = 2048 0.99; with more rows 16 stays
 * (mixtral T = 16384 4: 1.03, 8: 0.98; gpt-oss-120b T = 16384 4: 1.01; qwen3,
 * gpt-oss-20b 1.00). BM 64 (fewer than 48 rows an expert) keeps 16, not
 * measured. With the units in dynamic order (session 33), bands of 2 where
 * 16 units' A rows (GEMM 1's, cm m-tiles a unit) exceed the L2: deepseek-v3 T =
 * 16384 in 2 x 1 clusters (59 MB of A against 50 MB) 0.959 in two calls on an
 * H200 (bands of 4: 0.967, 0.977; 1: 0.959) and 0.996 [0.84, 1.11] in a third,
 * 0.918 [0.75, 1.01] on an H100 (noisy, none slower), at T = 8192 (bands of 4 by the
 * rule above) 2 and 4 even; the others even or slower (gpt-oss-120b T = 16384
 * 4: 1.02, mixtral 0.99-1.00, qwen3 1.01; NOTES.md session 33). Tried before
 * in the static order (session 14 run 7): 1.005, noise. MOE_SM90_RASTER=n
 * forces n (read per forward).
 * The register-A kernel (256 tokens a tile: GGUF blocks, and bf16/f16 weights
 * by moe__cuda_sm90_tn) takes bands of 2 in both GEMMs: 16 token tiles of 256
 * rows did not stay in L2 beside the weights (ncu, bench/cuda/s38 run 2:
 * mixtral T = 2048 bf16 GEMM 1 read 5.4 GB from DRAM for 1.9 GB of weights,
 * the token-major kernel 3.2). H100, bench/cuda/s38 runs 3-4 (one round; the
 * layer, bands of 2 over the rule's 16): GGUF Q8_0 qwen3 T = 2048-8192
 * 0.96-0.98, mixtral T = 2048 / 4096 0.95 / 0.94, gpt-oss-20b / 120b T = 4096
 * 0.97 / 0.98; Q4_K 0.97-0.99 (mixtral T = 4096 0.995); MXFP4 1.00-1.01; bf16
 * on the register-A kernel qwen3 T = 2048 / 4096 0.95 / 0.91, mixtral T =
 * 2048 / 4096 0.98 / 0.90. Bands of 1 and 4 within 2-3% of 2 either way.
 */
#define SM90_RASTER_NARROW_ROWS 256

#define SM90_QS_RASTER 2

extern "C" int moe__cuda_sm90_raster(const moe_layer *L, int64_t T, int bm, int cm) {
    const moe_cuda_impl *im = (const moe_cuda_impl *)L->impl;
    const char *ev = getenv("MOE_SM90_RASTER");
    if (ev && atoi(ev) > 0) return atoi(ev);
    if (bm == 256 || moe__cuda_sm90_tn(L, T)) return SM90_QS_RASTER; /* the register-A kernel, both GEMMs (see above) */
    if (bm == 128 && T * L->desc.K <= (int64_t)SM90_RASTER_NARROW_ROWS * L->desc.E) return 4;
    const int64_t band_a = 16 * (int64_t)cm * bm * L->desc.D * 2; /* bytes of A rows in 16 units */
    return im->l2_bytes > 0 && band_a > im->l2_bytes ? 2 : 16;
}

/* GEMM 2's bands: GEMM 1's, but on GGUF blocks sized by GEMM 2's own A rows (h,
 * I wide): mixtral's I = 14336 puts 117 MB of h in 16 units of 256 tokens.
 * There the dynamic order had lost 2-8% at 512-1024 pairs an expert, in GEMM
 * 2 (ncu, bench/decode/s36 run 13, T = 2048: DRAM 1.27 -> 1.70 GB, L2 hits
 * 77 -> 69%), and bands of 2 took the loss away (run 14, 3 rounds, against
 * the static order with bands of 16: T = 2048 0.998-1.001, 4096 0.967-0.986).
 * Not for bf16/f16 B (both GEMMs in bands of 2 ran mixtral T = 2048 1.03x
 * slower there; GEMM 2's alone not measured). */
extern "C" int moe__cuda_sm90_raster2(const moe_layer *L, int64_t T, int bm, int cm) {
    const moe_cuda_impl *im = (const moe_cuda_impl *)L->impl;
    const char *ev = getenv("MOE_SM90_RASTER");
    if (!(im->qfmt1 || bm == 256 || moe__cuda_sm90_tn(L, T)) || (ev && atoi(ev) > 0))
        return moe__cuda_sm90_raster(L, T, bm, cm);
    const int64_t band_a = 16 * (int64_t)cm * bm * L->desc.I * 2;
    return im->l2_bytes > 0 && band_a > im->l2_bytes ? 2 : moe__cuda_sm90_raster(L, T, bm, cm);
}

/* Folded tiles (gemm_sm90_q.cu's kernel of QS_NTF token rows a stage, k_scan's
 * code 3): an expert's last 24 or fewer rows beyond a full tile of 256 go
 * with that tile, whose weights are then decoded once for both, instead of
 * running a tail tile of 64 that decodes them again. Where experts average
 * 256 rows, half of them had such a tail. H100, bench/decode/s37 run 6 (two
 * rounds; us, never folding -> this rule): qwen3 T = 4096 Q4_K / Q8_0 874 /
 * 908 -> 804 / 832, mixtral T = 1024 1572 / 1677 -> 1308 / 1373,
 * deepseek-v3 T = 8192 Q4_K 13848 -> 11900; at 512 rows qwen3 T = 8192
 * 0.97-0.975, gpt-oss-20b T = 4096 0.99-1.0. The folding kernel's one k-loop
 * for every tile size costs unfolded tiles 3-4% (always folding: qwen3 T =
 * 2048 1.031-1.041, mixtral T = 4096 1.02), so it runs only where the
 * average expert's rows lie within 16 of 256 or 512 (more rows spread wider
 * than the 24 a fold takes). MOE_SM90_QS_FOLD=0 / 1: never / always (layer
 * creation). */
#define SM90_FOLD_NEAR 16
#define SM90_FOLD_MAX_ROWS 528
extern "C" int moe__cuda_sm90_fold(const moe_layer *L, int64_t T, int bm) {
    const moe_cuda_impl *im = (const moe_cuda_impl *)L->impl;
    if (!im->qs_tail || im->qs_fold == 0) return 0;
    if (bm == 128 && moe__cuda_sm90_tn(L, T)) return 1; /* tiles of 128 and folds: experts of about 128 rows */
    if (bm != 256) return 0; /* the register-A kernel only */
    if (im->qs_fold == 1) return 1;
    const int64_t p = T * L->desc.K / L->desc.E, d = p % 256; /* the average expert's rows */
    return p >= 256 - SM90_FOLD_NEAR && p <= SM90_FOLD_MAX_ROWS && (d <= SM90_FOLD_NEAR || d >= 256 - SM90_FOLD_NEAR);
}

/* bf16/f16 weights on the register-A kernel (gemm_sm90_qd.cu): the tokens as
 * wgmma's N, 256 a tile, an expert's last 128 or fewer rows in a tile of 128
 * or 64, and (moe__cuda_sm90_fold) its last 24 or fewer beyond a full tile
 * folded into it; the weights as A, 128 rows a tile, read once for up to 280
 * of an expert's rows where the token-major kernel (BM 128) reads them once
 * for every 128. A through TMA from the permuted copy, 1 x 1, units in
 * dynamic order. Not for cuda-jit, clusters forced by the environment, or
 * weights of a dtype apart from the activations'. MOE_SM90_TN=0|1 forces
 * never / always (layer creation).
 * The rule: where the average expert has 192-384 rows (tiles of 256 tokens)
 * or 112-160 (tiles of 128 and folds: QS_NTF128), and rows of D > 2048.
 * H100, bench/cuda/s38 run 5 (two rounds, bands of 2; the layer over the
 * token-major kernel's; rows an expert in brackets): mixtral T = 1024 (256)
 * 0.74, deepseek-v3 T = 8192 (256) 0.90, gpt-oss-120b T = 8192 (256) 0.91;
 * outside it even or slower, but gpt-oss-120b T = 16384 (512) 0.91 and
 * deepseek-v3 T = 4096 (128) 0.95: mixtral T = 2048 (512) 0.96, 4096 (1024)
 * 1.06, 8192 1.11, deepseek-v3 T = 2048 (64) 1.02, 16384 (512) 1.03,
 * gpt-oss-120b T = 1024-4096 (32-128) 1.01-1.04; qwen3 (D = 2048, I = 768:
 * short k-loops, where the kernel's epilogue, not overlapped with the next
 * tile, weighs most) T = 2048 / 4096 (128 / 256) 1.07 / 1.04 (run 3). At 256
 * rows an expert a token-major layer runs two or three m-tiles of 128, each
 * reading the expert's weights, where this one runs one tile (folded).
 * Tiles of 128 and folds (run 8, H100, two rounds, MOE_SM90_TN=1 over the
 * token-major kernel): deepseek-v3 T = 4096 (128) 0.917, gpt-oss-120b T = 4096
 * (128) 0.968, gpt-oss-20b T = 1024 (128) 0.977, mixtral T = 512 (128) 0.948;
 * at 64 rows 1.03-1.07, qwen3 T = 2048 (128) 1.09. The final rule on an
 * H200 (run 10, five rounds, this kernel over the token-major one where it
 * picks it): mixtral T = 512 / 1024 0.914 / 0.847, deepseek-v3 T = 4096 / 8192
 * 0.983 / 0.955, gpt-oss-120b T = 4096 / 8192 0.983 / 0.933, gpt-oss-20b T =
 * 1024 / 2048 0.959 / 0.965; elsewhere 0.991-1.001 (the same kernel). */
extern "C" int moe__cuda_sm90_tn(const moe_layer *L, int64_t T) {
    const moe_cuda_impl *im = (const moe_cuda_impl *)L->impl;
    int cm, cn;
    if (!im->sm90 || im->qfmt1 || im->jit || !im->tn_ok || im->tn == 0 || moe__cuda_sm90_env_cluster(&cm, &cn))
        return 0;
    if (im->tn == 1) return 1;
    const int64_t p = T * L->desc.K / L->desc.E; /* the average expert's rows */
    return L->desc.D > SM90_TN_MIN_D && ((p >= SM90_TN_MIN_ROWS && p <= SM90_TN_MAX_ROWS) ||
                                         (p >= SM90_TN_MIN_ROWS128 && p <= SM90_TN_MAX_ROWS128));
}

/* GEMM 1's n-tile with BM 128 and no clusters: 240 (gate and up boxes of 120
 * rows) where I pads less than with 256 (128 + 128): gpt-oss's I = 2880, 24
 * n-tiles of 120 outputs instead of 22 of 128 and one of 64. Not in BM 64 (its
 * gate and up wgmmas would be n = 60). Measured: NOTES.md session 9 (run 17).
 * MOE_SM90_BN1=256|240 forces either (layer creation). */
extern "C" int moe__cuda_sm90_bn1(int64_t I, int gated) {
    const char *ev = getenv("MOE_SM90_BN1");
    if (ev && (atoi(ev) == 256 || atoi(ev) == 240)) return atoi(ev);
    return gated ? ((I + 119) / 120 * 120 < (I + 127) / 128 * 128 ? 240 : 256)
                 : ((I + 239) / 240 * 240 < (I + 255) / 256 * 256 ? 240 : 256);
}

extern "C" int moe__cuda_sm90_tile_n(const moe_layer *L, int gemm, int cm, int cn, int bm) {
    const moe_cuda_impl *im = (const moe_cuda_impl *)L->impl;
    if (cm != 1 || cn != 1 || im->qfmt1 || bm == 256) return 256; /* the cluster kernels, the register-A kernel */
    if (gemm == 2) return im->bn2;
    return bm == 128 ? im->bn1 : 256; /* BM 64's gate and up halves would be 60 wide */
}

/* Thread-block clusters by default: 2 x 1 (k_pair_units: an expert's m-tiles
 * in pairs whose B tile is multicast to both CTAs, so those weights cross L2
 * once per 256 rows) where a layer has wide rows and on average at least two
 * m-tiles an expert: D >= 4096, T*K >= 8192 and T*K/E >= 128. Measured on an
 * H200 against 1 x 1 (bench/cuda/s9 run 6, 5 A/B rounds, the permuted copy):
 * deepseek-v3 T=4096 0.86, T=16384 0.97 of the former pairing (which padded
 * to 256-row units and lost at T=4096: 1.03, s8 runs 5-6); mixtral T=4096 0.97;
 * left out: qwen3 (D = 2048: 1.13 / 1.06 at T = 4096 / 16384), gpt-oss-20b (D =
 * 2880: 1.03 / 0.99; its 1 x 1 kernels have n-tiles of 240), gpt-oss-120b
 * (0.98 / 0.99, within noise). Again in session 34, with the units in
 * dynamic order and k_pair_units' order (bench/cuda/s34 runs 4-6, 5-7
 * rounds): H200 qwen3 1.13 / 1.17, gpt-oss-20b 1.02-1.08 at T = 1024-16384,
 * gpt-oss-120b 0.955-0.984 at T = 4096 (one m-tile and a partial one an
 * expert, whose B the pair then reads once) but 1.015-1.06 at T = 1024,
 * 1536, 6144 and 16384; H100 gpt-oss-120b T = 4096 0.943, qwen3 1.10: a gain
 * at one point is not a rule. With clusters GEMM 1 reads the permuted copy
 * through TMA: the gather, possible at 2 x 1, measured slower there (deepseek-
 * v3 1.03 / 1.05 of the copy, gpt-oss-120b 1.07, mixtral 1.01-1.03; only qwen3
 * gained), so it runs only where MOE_SM90_GATHER=1 asks. MOE_SM90_CM /
 * MOE_SM90_CN (set to 1 or 2) fix the shape instead. */
#define SM90_C21_MIN_D 4096
#define SM90_C21_MIN_TK 8192
#define SM90_C21_MIN_ROWS 128
static int sm90_c21_rule(const moe_layer *L, int64_t T) {
    const int64_t TK = T * L->desc.K;
    return L->desc.D >= SM90_C21_MIN_D && TK >= SM90_C21_MIN_TK && TK >= (int64_t)SM90_C21_MIN_ROWS * L->desc.E;
}
/* cuda-jit compiles the 2 x 1 kernels beside the 1 x 1 ones when some T can take them */
extern "C" int moe__cuda_sm90_c21_possible(const moe_layer *L) { return L->desc.D >= SM90_C21_MIN_D; }

extern "C" int moe__cuda_sm90_shape(const moe_layer *L, int64_t T, int *cm, int *cn) {
    const moe_cuda_impl *im = (const moe_cuda_impl *)L->impl;
    *cm = *cn = 1;
    if (!im->sm90 || im->qfmt1) return 0; /* GGUF B: 1 x 1, A from the permuted copy (the producer decodes B) */
    if (moe__cuda_sm90_tn(L, T)) return 0; /* the register-A kernel: 1 x 1, A from the permuted copy */
    if (im->jit) {
        *cm = im->jit->cm; /* compiled at init */
        *cn = im->jit->cn;
        if (*cm == 1 && *cn == 1 && im->jit->c21 && sm90_c21_rule(L, T)) *cm = 2;
    } else if (!moe__cuda_sm90_env_cluster(cm, cn) && sm90_c21_rule(L, T)) {
        *cm = 2;
    }
    if (*cm != 1 || *cn != 1) return *cn == 1 && im->gather == 1; /* clusters: xp unless asked (see above) */
    if (im->gather >= 0) return im->gather;
    const moe_layer_desc *d = &L->desc;
    return d->I <= SM90_GATHER_MAX_I || T * d->K <= (int64_t)SM90_GATHER_MAX_ROWS * d->E;
}

extern "C" {
int moe__cuda_probe_device(moe_ctx *ctx, char *why, size_t n, int *major, int *minor) {
    return probe_common(ctx, why, n, major, minor);
}
int moe__cuda_supports_sm90(const moe_layer *L, char *why, size_t n) { return supports_sm90(L, why, n); }
moe_status moe__cuda_init_sm90(moe_layer *L) { return init_sm90(L); }
void moe__cuda_fini(moe_layer *L) { fini_cuda(L); }
size_t moe__cuda_workspace_sm90(const moe_layer *L, int64_t T) { return ws_sm90(L, T); }
moe_status moe__cuda_forward(moe_layer *L, const moe__fwd *a) { return forward_cuda(L, a); }
moe_status moe__cuda_forward_grouped(moe_layer *L, const moe__fwd *a, int64_t group, moe__cuda_group_prep prep,
                                     void *pctx) {
    return forward_impl(L, a, group < 1 ? L->desc.E : group, prep, pctx);
}

const moe__backend moe__backend_cuda_sm90 = {
    "cuda-sm90", MOE_DEVICE_CUDA, probe_sm90, supports_sm90, init_sm90, fini_cuda, ws_sm90, forward_cuda,
    describe_cuda, NULL,
};
const moe__backend moe__backend_cuda_sm80 = {
    "cuda-sm80", MOE_DEVICE_CUDA, probe_sm80, supports_sm80, init_sm80, fini_cuda, ws_sm80, forward_cuda,
    describe_cuda, NULL,
};
}
