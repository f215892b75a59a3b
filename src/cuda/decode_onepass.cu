/*
 * The one-pass decode kernel (decode_onepass.h has the idea): one launch of
 * one block per SM, 1 producer warp issuing TMA copies into a ring of
 * MOE_OP_SLOT-byte stages, 8 consumer warps on mma.sync m16n8k16 (weights as
 * the 16-row A operand, the group's pairs as the 8 columns of B).
 *
 * Per block, after every block has planned the same split from the ids:
 *   for each pass of at most MOE_OP_UMAX units (64 rows of I) of one group:
 *     gate/up  stages of 64 nbx columns of D x the pass's rows (gate and up
 *              boxes of 64 x 16 len, nbx of each a stage: 8, 4, 2, 2 for len 1..4,
 *              so that stages stay near 32 KB); warp w takes k steps w, w + 8, ...
 *              of every stage and keeps its sums in registers; at the end the 8 warps' sums
 *              meet in shared memory (in warp order) and h = act(g + bg,
 *              u + bu) is rounded to the weights' type, as the other paths do
 *     down     stages of 256 nbd rows of D x the pass's columns (boxes of 16 len
 *              columns x 256 rows, nbd = 4, 2, 1, 1); warp w takes rows 32w..32w+31
 *              of each box; the
 *              16 x 8 results go to the block's partial rows (added to
 *              what its earlier passes of the same group left there)
 *   after the last pass of a group's piece, per 256-row range of D: one
 *   arrival on the group's counter; the last block sums the group's partial
 *   rows in block order into y[pair] (+ down bias), then arrives on each of
 *   its pairs' token counters; the last of a token's valid slots writes
 *   out[t] = sum over slots in order of w * y. No float atomics: bitwise
 *   deterministic for a given device (the split depends on the SM count).
 *
 * Ids outside [0, E) are left out (never read or written out of bounds); a
 * token with no valid slot gets out = 0 (block 0 writes it).
 * Counters (the layer's, zeroed at init) are left zeroed by their last user.
 */
#include "decode_kernels.h"
#include "decode_onepass.h"
#include "sm90_sync.cuh"

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define OP_ON 1
#endif

#define OP_RED_BYTES (8 * 2 * MOE_OP_UMAX * 128 * 4) /* [warp][gate, up][unit][16 x 8] f32 */
#define OP_HS_STRIDE (2 * 16 * MOE_OP_UMAX * MOE_OP_CSMAX + 16) /* bytes of one pair's h row (a cluster's pass) */
#define OP_HS_BYTES (4 * 8 * OP_HS_STRIDE) /* four passes' h: a block may run two passes ahead of another */
#define OP_DB 128 /* down rows of a stage (boxes of 16 columns x OP_DB rows, 32-byte swizzle) */
#define OP_SUM_ITEMS 2048 /* (slot, piece) items k_op_sum lists at a time */

static __host__ __device__ __forceinline__ int op_xs_stride(int D) { return 2 * D + 16; }

#ifdef OP_ON
static __device__ __forceinline__ void op_consumer_sync(void) { asm volatile("bar.sync 1, 256;\n" ::: "memory"); }

static __device__ __forceinline__ void op_tma_3d(uint32_t dst, const CUtensorMap *tm, int c0, int c1, int c2,
                                                 uint32_t bar) {
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, "
                 "%4}], [%5];\n" ::"r"(dst),
                 "l"((uint64_t)tm), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
                 : "memory");
}

static __device__ __forceinline__ void op_ldsm_x4(uint32_t addr, uint32_t &r0, uint32_t &r1, uint32_t &r2,
                                                  uint32_t &r3) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(addr));
}

template <typename MT> struct op_is_bf16 { enum { v = 0 }; };
template <> struct op_is_bf16<__nv_bfloat16> { enum { v = 1 }; };

template <typename MT>
static __device__ __forceinline__ void op_mma(float *c, uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,
                                              uint32_t b1) {
    if (op_is_bf16<MT>::v)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                     "{%8, %9}, {%0, %1, %2, %3};\n"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    else
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                     "{%8, %9}, {%0, %1, %2, %3};\n"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

template <typename MT> static __device__ __forceinline__ MT op_from_float(float v);
template <> __device__ __forceinline__ __nv_bfloat16 op_from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <> __device__ __forceinline__ __half op_from_float<__half>(float v) { return __float2half_rn(v); }

/* The values this lane's down results of row block db add to (a later pass
 * of the same piece): partial rows sbase + j, rows of D as the mma's C. */
static __device__ __forceinline__ void op_load_old(const float *partial, int64_t sbase, int n, int D, int db, int dhi,
                                                   int warp, int lane, float (&o)[4]) {
#pragma unroll
    for (int hh = 0; hh < 2; hh++) {
        const int d = db + 16 * warp + (lane >> 2) + 8 * hh;
#pragma unroll
        for (int jj = 0; jj < 2; jj++) {
            const int j = 2 * (lane & 3) + jj;
            o[2 * hh + jj] = d < dhi && j < n ? partial[(size_t)(sbase + j) * D + d] : 0.f;
        }
    }
}

/* Gate/up boxes (64 columns x 16 len rows) of each tensor a stage takes, so
 * that stages stay near MOE_OP_SLOT bytes whatever the length of the share. */
static __device__ __forceinline__ int op_nbx(int len) { return len == 1 ? 8 : len == 2 ? 4 : 2; }

/* One pass of a group: units [u, u + len) of group c (rows row0.. of I). */
typedef struct op_pass {
    int c, len, row0, first;
} op_pass;

/* The pass of the cluster that starts at unit u of its range [u0, u1): up to
 * MOE_OP_UMAX units for each of its CS blocks, within one group (NU units). */
static __device__ __forceinline__ op_pass op_pass_at(int64_t u, int64_t u0, int64_t u1, int NU, int CS) {
    op_pass p;
    p.c = (int)(u / NU);
    const int64_t gs = (int64_t)p.c * NU, ge = gs + NU, pend = u1 < ge ? u1 : ge;
    const int64_t left = pend - u, most = (int64_t)MOE_OP_UMAX * CS;
    p.len = left < most ? (int)left : (int)most;
    p.row0 = (int)(u - gs) * 16;
    p.first = u == u0 || u == gs;
    return p;
}
#endif

template <typename MT>
__global__ void __launch_bounds__(MOE_OP_THREADS, 1)
    k_op(const __grid_constant__ moe_op_maps m, const moe_op_args a) {
#ifdef OP_ON
    extern __shared__ __align__(1024) uint8_t op_smem_raw[];
    __shared__ int s_id[MOE_OP_PMAX], s_sorted[MOE_OP_PMAX], s_run[MOE_OP_PMAX];
    __shared__ int g_e[MOE_OP_PMAX], g_pos[MOE_OP_PMAX], g_n[MOE_OP_PMAX], g_bf[MOE_OP_PMAX], g_np[MOE_OP_PMAX];
    __shared__ long long g_base[MOE_OP_PMAX];
    __shared__ int s_wsum[8], s_nv, s_ok;
    __shared__ __align__(8) uint64_t s_full[MOE_OP_NSMAX], s_empty[MOE_OP_NSMAX], s_hready[4];

    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int P = a.T * a.K, D = a.D, NU = a.I / 16, NS = a.NS, CS = a.CS;
    const int b = blockIdx.x / CS; /* this block's cluster: the unit of the split */
    uint32_t rk;
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rk));
    const int r = (int)rk;
    unsigned long long tt0 = 0, tt1 = 0, tt2 = 0, tt3 = 0;
    if (a.dbg == 3) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(tt0));
    uint8_t *smem = (uint8_t *)(((uintptr_t)op_smem_raw + 1023) & ~(uintptr_t)1023);
    uint8_t *ring = smem;
    uint8_t *xs = ring + (size_t)NS * MOE_OP_SLOT;
    const int xstride = op_xs_stride(D);
    float *red = (float *)(xs + (size_t)a.VP * xstride);
    uint8_t *hs = (uint8_t *)red + OP_RED_BYTES; /* [4][8][OP_HS_STRIDE]: h of pass p in buffer p % 4 */

    /* ---- routing, the same in every block ---- */
    if (tid < P) {
        const int id = a.ids[tid];
        s_id[tid] = id >= 0 && id < a.E ? id : -1;
    }
    if (tid == 0) {
        for (int i = 0; i < NS; i++) {
            mbar_init(smem_u32(&s_full[i]), 1);
            mbar_init(smem_u32(&s_empty[i]), 256);
        }
        /* one arrival from each block of the cluster once its share of h is in */
        for (int i = 0; i < 4; i++) mbar_init(smem_u32(&s_hready[i]), CS);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    /* every block's barriers initialised before any block of the cluster arrives on them */
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
    {
        const int valid = tid < P && s_id[tid] >= 0;
        if (valid) {
            const int e = s_id[tid];
            int rank = 0, before = 0, total = 0;
            for (int q = 0; q < P; q++) {
                const int f = s_id[q];
                rank += f >= 0 && (f < e || (f == e && q < tid));
                total += f == e;
                before += f == e && q < tid;
            }
            s_sorted[rank] = tid;
            /* a group starts at every VP-th pair of an expert: its size */
            const int left = total - before;
            s_run[rank] = before % a.VP == 0 ? (left < a.VP ? left : a.VP) : 0;
        }
    }
    const int nvalid = __syncthreads_count(tid < P && s_id[tid] >= 0);
    /* groups in sorted order: a prefix count of the group starts */
    int gidx = 0, start = 0;
    if (warp < 8) {
        start = tid < nvalid && s_run[tid] > 0;
        const unsigned bal = __ballot_sync(~0u, start);
        gidx = __popc(bal & ((1u << lane) - 1));
        if (lane == 0) s_wsum[warp] = __popc(bal);
    }
    __syncthreads();
    if (warp < 8) {
        int off = 0;
        for (int w = 0; w < warp; w++) off += s_wsum[w];
        gidx += off;
        if (start) {
            g_e[gidx] = s_id[s_sorted[tid]];
            g_pos[gidx] = tid;
            g_n[gidx] = s_run[tid];
        }
        if (tid == 0) {
            int nv = 0;
            for (int w = 0; w < 8; w++) nv += s_wsum[w];
            s_nv = nv;
        }
    }
    __syncthreads();
    const int nV = s_nv;
    const int64_t U = (int64_t)nV * NU;
    const int G = moe__op_blocks(U, gridDim.x / CS); /* clusters b >= G have no units */
    /* each group's pieces (the clusters that hold its units) and the first of its partial rows */
    if (tid < nV) {
        const int bf = moe__op_block_of((int64_t)tid * NU, U, G), bl = moe__op_block_of((int64_t)(tid + 1) * NU - 1, U, G);
        g_bf[tid] = bf;
        g_np[tid] = bl - bf + 1;
    }
    __syncthreads();
    if (tid == 0) {
        long long o = 0;
        for (int c = 0; c < nV; c++) {
            g_base[c] = o;
            o += (long long)g_np[c] * g_n[c];
        }
        s_ok = o <= a.cap_slots;
    }
    __syncthreads();
    if (!s_ok) {
        /* cannot happen (moe__op_cap_slots bounds it): loud rather than out of bounds */
        if (blockIdx.x == 0 && warp < 8)
            for (int64_t i = tid; i < (int64_t)a.T * D; i += 256) dk_store_out(a.out, a.out_type, i, __int_as_float(0x7fc00000));
        return;
    }
    if (blockIdx.x == 0 && warp < 8) {
        /* each pair's partial rows for k_op_sum: the first, the stride between
         * its pieces, how many (0: an id out of range, nothing to add) */
        for (int i = tid; i < P; i += 256) a.tab[i] = make_int4(0, 0, 0, 0);
        op_consumer_sync();
        for (int c = tid; c < nV; c += 256)
            for (int j = 0; j < g_n[c]; j++)
                a.tab[s_sorted[g_pos[c] + j]] = make_int4((int)(g_base[c] + j), g_n[c], g_np[c], g_e[c]);
    }
    /* k_op_sum may start (its blocks wait for this grid to finish before reading) */
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
    if (a.dbg == 3) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(tt1));
    if (b >= G) return;
    const int64_t u0 = (int64_t)b * U / G, u1 = (int64_t)(b + 1) * U / G;
    const int ntens = a.gated ? 2 : 1;
    /* this block's rows of D in the down phase (multiples of 16) */
    const int dlo = 16 * (int)((int64_t)(D / 16) * r / CS), dhi = 16 * (int)((int64_t)(D / 16) * (r + 1) / CS);

    if (warp == 8) {
        /* ---- producer ---- */
        if (lane != 0) return;
        for (int l = 0; l < MOE_OP_UMAX; l++) {
            if (a.gated) asm volatile("prefetch.tensormap [%0];\n" ::"l"((uint64_t)&m.g[l]) : "memory");
            asm volatile("prefetch.tensormap [%0];\n" ::"l"((uint64_t)&m.u[l]) : "memory");
        }
        asm volatile("prefetch.tensormap [%0];\n" ::"l"((uint64_t)&m.d) : "memory");
        /* gate/up of pass p, then down of pass p - 1: the blocks of a cluster
         * have a pass of slack before they need each other's h */
        unsigned it = 0;
        op_pass pv;
        int have_pv = 0;
        for (int64_t u = u0;;) {
            const int more = u < u1;
            op_pass ps;
            if (more) {
                ps = op_pass_at(u, u0, u1, NU, CS);
                const int e = g_e[ps.c];
                const int ar0 = ps.len * r / CS, lr = ps.len * (r + 1) / CS - ar0, row0 = ps.row0 + 16 * ar0;
                if (lr > 0 && a.dbg != 2) {
                    const int nbx = op_nbx(lr), nA = (D + 64 * nbx - 1) / (64 * nbx);
                    for (int sa = 0; sa < nA; sa++, it++) {
                        const int slot = it % NS;
                        mbar_wait(smem_u32(&s_empty[slot]), ((it / NS) & 1) ^ 1);
                        const int k0 = sa * 64 * nbx, left = (D - k0 + 63) / 64, nb = left < nbx ? left : nbx;
                        const uint32_t full = smem_u32(&s_full[slot]);
                        mbar_expect_tx(full, (uint32_t)(ntens * nb * lr * 2048));
                        const uint32_t base = smem_u32(ring + (size_t)slot * MOE_OP_SLOT);
                        for (int t = 0; t < ntens; t++) {
                            const CUtensorMap *tm = t == 0 && a.gated ? &m.g[lr - 1] : &m.u[lr - 1];
                            for (int h = 0; h < nb; h++)
                                op_tma_3d(base + (t * nbx + h) * lr * 2048, tm, k0 + 64 * h, row0, e, full);
                        }
                    }
                }
            }
            if (have_pv && a.dbg != 1) {
                const int e = g_e[pv.c];
                for (int db = dlo; db < dhi; db += OP_DB)
                    for (int cc = 0; cc < pv.len; cc += 8, it++) {
                        const int slot = it % NS, mc = pv.len - cc < 8 ? pv.len - cc : 8;
                        mbar_wait(smem_u32(&s_empty[slot]), ((it / NS) & 1) ^ 1);
                        const uint32_t full = smem_u32(&s_full[slot]);
                        mbar_expect_tx(full, (uint32_t)(mc * OP_DB * 32));
                        const uint32_t base = smem_u32(ring + (size_t)slot * MOE_OP_SLOT);
                        for (int q = 0; q < mc; q++)
                            op_tma_3d(base + q * OP_DB * 32, &m.d, pv.row0 + 16 * (cc + q), db, e, full);
                    }
            }
            if (!more) break;
            pv = ps;
            have_pv = 1;
            u += ps.len;
        }
        return;
    }

    /* ---- consumers ---- */
    unsigned it = 0, npass = 0;
    unsigned long long ev[16];
    int nev = 0;
#define OP_EV() do { if (a.dbg == 3 && nev < 16) { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ev[nev])); nev++; } } while (0)
    int prev_c = -1;
    const int bj = min(lane >> 2, a.VP - 1); /* this lane's B column (pair) in x; columns past the group's are ignored */
    const int ar = lane & 15, dch = lane >> 4;
    op_pass pv;
    int have_pv = 0;
    for (int64_t u = u0;; npass++) {
        const int more = u < u1;
        op_pass ps;
        if (more) {
        ps = op_pass_at(u, u0, u1, NU, CS);
        const int c = ps.c, n = g_n[c], e = g_e[c], pos = g_pos[c];
        const int ar0 = ps.len * r / CS, lr = ps.len * (r + 1) / CS - ar0;
        uint8_t *hsb = hs + (size_t)(npass & 3) * 8 * OP_HS_STRIDE;
        if (lr > 0) {
            if (c != prev_c) {
                /* stage the group's x rows as the mma type */
                const int per = D / 8;
                for (int idx = tid; idx < n * per; idx += 256) {
                    const int j = idx / per, q = idx - j * per;
                    const int64_t t = s_sorted[pos + j] / a.K;
                    uint4 v;
                    if (a.x_type == (op_is_bf16<MT>::v ? MOE_TYPE_BF16 : MOE_TYPE_F16)) {
                        v = *(const uint4 *)((const uint8_t *)a.x + ((size_t)t * D + 8 * q) * 2);
                    } else {
                        MT f[8];
#pragma unroll
                        for (int q2 = 0; q2 < 8; q2++) f[q2] = op_from_float<MT>(dk_bias(a.x, a.x_type, t * D + 8 * q + q2));
                        memcpy(&v, f, 16);
                    }
                    *(uint4 *)(xs + (size_t)j * xstride + 16 * q) = v;
                }
                op_consumer_sync();
                prev_c = c;
            }
            OP_EV();
            /* gate/up of this block's share of the pass: units ar0 .. ar0 + lr */
            float acc[2][MOE_OP_UMAX][4];
#pragma unroll
            for (int t = 0; t < 2; t++)
#pragma unroll
                for (int g = 0; g < MOE_OP_UMAX; g++)
#pragma unroll
                    for (int q = 0; q < 4; q++) acc[t][g][q] = 0.f;
            const int L = lr * 16, rowb = ps.row0 + 16 * ar0;
            float bgv[2] = {0.f, 0.f}, buv[2] = {0.f, 0.f};
#pragma unroll
            for (int s2 = 0; s2 < 2; s2++) {
                const int idx = tid + 256 * s2;
                if (idx >= L * n) break;
                const int64_t row = rowb + (idx % L);
                if (a.gated && a.bg) bgv[s2] = dk_bias(a.bg, a.bg_type, e * a.bg_se + row * a.bg_sn);
                if (a.bu) buv[s2] = dk_bias(a.bu, a.bu_type, e * a.bu_se + row * a.bu_sn);
            }
            const int nbx = op_nbx(lr), nA = a.dbg == 2 ? 0 : (D + 64 * nbx - 1) / (64 * nbx);
            for (int sa = 0; sa < nA; sa++, it++) {
                const int slot = it % NS;
                mbar_wait(smem_u32(&s_full[slot]), (it / NS) & 1);
                if (a.dbg == 3 && it == 0) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(tt2));
                const uint32_t sbase0 = smem_u32(ring + (size_t)slot * MOE_OP_SLOT) + ar * 128;
                /* k steps warp, warp + 8, ... of the stage's 4 nbx */
                for (int ks = warp; ks < 4 * nbx; ks += 8) {
                    const int k = sa * 64 * nbx + 16 * ks;
                    if (k >= D) break;
                    const uint8_t *xr = xs + (size_t)bj * xstride + 2 * (k + 2 * (lane & 3));
                    const uint32_t b0 = *(const uint32_t *)xr, b1 = *(const uint32_t *)(xr + 16);
                    const int chk = 2 * (ks & 3) + (lane >> 4);
                    const uint32_t base = sbase0 + (ks >> 2) * lr * 2048 + ((chk ^ (ar & 7)) << 4);
#pragma unroll
                    for (int t = 0; t < 2; t++) {
                        if (t >= ntens) break;
#pragma unroll
                        for (int g = 0; g < MOE_OP_UMAX; g++) {
                            if (g >= lr) break;
                            uint32_t a0, a1, a2, a3;
                            op_ldsm_x4(base + t * nbx * lr * 2048 + g * 2048, a0, a1, a2, a3);
                            op_mma<MT>(acc[t][g], a0, a1, a2, a3, b0, b1);
                        }
                    }
                }
                mbar_arrive(smem_u32(&s_empty[slot]));
            }
            OP_EV();
            /* the warps' sums, in warp order, and h, written to every block of the cluster */
            {
                float *rw = red + (size_t)warp * (2 * MOE_OP_UMAX * 128);
#pragma unroll
                for (int t = 0; t < 2; t++)
#pragma unroll
                    for (int g = 0; g < MOE_OP_UMAX; g++) {
                        if (t >= ntens || g >= lr) continue;
                        float *f = rw + (t * MOE_OP_UMAX + g) * 128 + (lane >> 2) * 8 + 2 * (lane & 3);
                        *(float2 *)f = make_float2(acc[t][g][0], acc[t][g][1]);
                        *(float2 *)(f + 64) = make_float2(acc[t][g][2], acc[t][g][3]);
                    }
            }
            op_consumer_sync();
            OP_EV();
#pragma unroll
            for (int s2 = 0; s2 < 2; s2++) {
                const int idx = tid + 256 * s2;
                if (idx >= L * n) break;
                const int j = idx / L, i = idx - j * L;
                const int off = (i >> 4) * 128 + (i & 15) * 8 + j;
                float gs = 0.f, us = 0.f;
                for (int w = 0; w < 8; w++) {
                    const float *rw = red + (size_t)w * (2 * MOE_OP_UMAX * 128);
                    gs += rw[off];
                    if (a.gated) us += rw[MOE_OP_UMAX * 128 + off];
                }
                if (!a.gated) {
                    us = gs;
                    gs = 0.f;
                }
                gs += bgv[s2];
                us += buv[s2];
                const MT hv = op_from_float<MT>(dk_act(a.act, gs, us, a.alpha, a.limit));
                ((MT *)(hsb + (size_t)j * OP_HS_STRIDE))[16 * ar0 + i] = hv;
            }
        }
        OP_EV();
        /* this block's share of h (n rows of 32 lr bytes) to the other blocks of
         * the cluster in 16-byte stores, then one arrival (release, cluster scope)
         * on each block's barrier */
        op_consumer_sync();
        {
            const int cpr = 2 * lr, tot = n * cpr;
            for (int idx = tid; idx < tot * (CS - 1); idx += 256) {
                const int q0 = idx / tot, k = idx - q0 * tot, q = q0 >= r ? q0 + 1 : q0;
                const int j = k / cpr, ch = k - j * cpr;
                const uint32_t la = smem_u32(hsb + (size_t)j * OP_HS_STRIDE + 32 * ar0 + 16 * ch);
                uint32_t v0, v1, v2, v3, ra;
                asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n" : "=r"(v0), "=r"(v1), "=r"(v2), "=r"(v3) : "r"(la));
                asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(ra) : "r"(la), "r"(q));
                asm volatile("st.shared::cluster.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(ra), "r"(v0), "r"(v1), "r"(v2),
                             "r"(v3)
                             : "memory");
            }
        }
        op_consumer_sync();
        if (tid < CS) {
            uint32_t rb;
            asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(rb) : "r"(smem_u32(&s_hready[npass & 3])), "r"(tid));
            asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];\n" ::"r"(rb) : "memory");
        }
        }
        OP_EV();
        if (have_pv) {
        /* down of the previous pass, once every block's h of it is in */
        const unsigned pp = npass - 1;
        const op_pass ps = pv;
        const int c = ps.c, n = g_n[c];
        const uint8_t *hsb = hs + (size_t)(pp & 3) * 8 * OP_HS_STRIDE;
        {
            const uint32_t lb = smem_u32(&s_hready[pp & 3]), par = (pp >> 2) & 1;
            asm volatile("{\n.reg .pred P1;\nOP_HW:\n"
                         "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 P1, [%0], %1;\n"
                         "@P1 bra OP_HD;\nbra OP_HW;\nOP_HD:\n}\n" ::"r"(lb),
                         "r"(par)
                         : "memory");
        }
        OP_EV();
        /* down: this block's rows of D x the pass's columns; a later pass of the
         * cluster's piece adds to what the earlier ones left (loaded a row block ahead) */
        const int64_t sbase = g_base[c] + (int64_t)(b - g_bf[c]) * n;
        float cur[4], nxt[4];
#pragma unroll
        for (int q = 0; q < 4; q++) cur[q] = nxt[q] = 0.f;
        if (!ps.first) op_load_old(a.partial, sbase, n, D, dlo, dhi, warp, lane, cur);
        for (int db = dlo; db < dhi; db += OP_DB) {
            if (!ps.first && db + OP_DB < dhi) op_load_old(a.partial, sbase, n, D, db + OP_DB, dhi, warp, lane, nxt);
            for (int cc = 0; cc < ps.len && a.dbg != 1; cc += 8, it++) {
                const int slot = it % NS, mc = ps.len - cc < 8 ? ps.len - cc : 8;
                uint32_t hb[8][2];
#pragma unroll
                for (int q = 0; q < 8; q++) {
                    const uint8_t *hr = hsb + (size_t)(lane >> 2) * OP_HS_STRIDE + 2 * (16 * (cc + q) + 2 * (lane & 3));
                    hb[q][0] = q < mc ? *(const uint32_t *)hr : 0u;
                    hb[q][1] = q < mc ? *(const uint32_t *)(hr + 16) : 0u;
                }
                mbar_wait(smem_u32(&s_full[slot]), (it / NS) & 1);
                const int rw = 16 * warp + ar;
                const uint32_t ra = smem_u32(ring + (size_t)slot * MOE_OP_SLOT) + rw * 32;
                const int xsw = (rw >> 2) & 1;
#pragma unroll
                for (int q = 0; q < 8; q++) {
                    if (q >= mc) break;
                    uint32_t a0, a1, a2, a3;
                    op_ldsm_x4(ra + q * OP_DB * 32 + ((dch ^ xsw) << 4), a0, a1, a2, a3);
                    op_mma<MT>(cur, a0, a1, a2, a3, hb[q][0], hb[q][1]);
                }
                mbar_arrive(smem_u32(&s_empty[slot]));
            }
#pragma unroll
            for (int hh = 0; hh < 2; hh++) {
                const int d = db + 16 * warp + (lane >> 2) + 8 * hh;
                if (d >= dhi) continue;
#pragma unroll
                for (int jj = 0; jj < 2; jj++) {
                    const int j = 2 * (lane & 3) + jj;
                    if (j < n) a.partial[(size_t)(sbase + j) * D + d] = cur[2 * hh + jj];
                }
            }
#pragma unroll
            for (int q = 0; q < 4; q++) cur[q] = nxt[q];
        }
        }
        OP_EV();
        if (!more) break;
        pv = ps;
        have_pv = 1;
        u += ps.len;
    }
    if (a.dbg == 3 && tid == 0) {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(tt3));
        printf("OPT k_op b %d units %lld %lld start %llu plan %llu first %llu end %llu r %d ev %d %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu\n", b, (long long)u0,
               (long long)u1, tt0 % 100000000ull, tt1 % 100000000ull, tt2 % 100000000ull, tt3 % 100000000ull, r, nev,
               ev[0] % 100000000ull, ev[1] % 100000000ull, ev[2] % 100000000ull, ev[3] % 100000000ull,
               ev[4] % 100000000ull, ev[5] % 100000000ull, ev[6] % 100000000ull, ev[7] % 100000000ull,
               ev[8] % 100000000ull, ev[9] % 100000000ull, ev[10] % 100000000ull, ev[11] % 100000000ull);
    }
#endif
}

/* out[t, d] = sum over t's valid slots k, in order, of w[t, k] (sum over the
 * pair's pieces, in block order, of its partial rows + down bias). Block
 * (8 columns of D, token t); thread stream st (of 32) takes the (slot, piece)
 * items st, st + 32, ... in order, the 32 streams' sums meet in stream order. Launched after k_op
 * with programmatic dependent launch: waits for it before reading. */
__global__ void __launch_bounds__(256) k_op_sum(const moe_op_args a) {
#ifdef OP_ON
    __shared__ float s_sum[32][9];
    __shared__ int4 s_tab[MOE_OP_PMAX];
    __shared__ int s_cum[MOE_OP_PMAX + 1];
    __shared__ int s_row[OP_SUM_ITEMS];
    __shared__ float s_wt[OP_SUM_ITEMS];
    unsigned long long tt0 = 0, tt1 = 0, tt2 = 0;
    if (a.dbg == 3) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(tt0));
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
    if (a.dbg == 3) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(tt1));
    const int t = blockIdx.y, K = a.K, D = a.D, tid = threadIdx.x, col = tid & 7, st = tid >> 3;
    const int d = blockIdx.x * 8 + col;
    if (tid < K) s_tab[tid] = a.tab[(size_t)t * K + tid];
    __syncthreads();
    if (tid == 0) {
        int cum = 0;
        for (int k = 0; k < K; k++) {
            s_cum[k] = cum;
            cum += s_tab[k].z;
        }
        s_cum[K] = cum;
    }
    __syncthreads();
    const int nitems = s_cum[K];
    float sum = 0.f;
    for (int i0 = 0; i0 < nitems; i0 += OP_SUM_ITEMS) {
        /* this chunk's (slot, piece) items: partial row and slot weight, in order */
        const int ni = nitems - i0 < OP_SUM_ITEMS ? nitems - i0 : OP_SUM_ITEMS;
        __syncthreads();
        for (int q = tid; q < ni; q += 256) {
            const int i = i0 + q;
            int lo = 0, hi = K - 1; /* the slot k with s_cum[k] <= i < s_cum[k + 1] */
            while (lo < hi) {
                const int mid = (lo + hi + 1) >> 1;
                if (s_cum[mid] <= i) lo = mid;
                else hi = mid - 1;
            }
            while (s_cum[lo + 1] <= i) lo++;
            const int4 tb = s_tab[lo];
            s_row[q] = tb.x + (i - s_cum[lo]) * tb.y;
            s_wt[q] = a.w[(size_t)t * K + lo];
        }
        __syncthreads();
        /* stream st takes items st, st + 32, ..., eight loads in flight */
        if (d < D)
            for (int q = st; q < ni; q += 256) {
                float v[8];
#pragma unroll
                for (int r = 0; r < 8; r++) v[r] = q + 32 * r < ni ? __ldcg(a.partial + (size_t)s_row[q + 32 * r] * D + d) : 0.f;
#pragma unroll
                for (int r = 0; r < 8; r++)
                    if (q + 32 * r < ni) sum += s_wt[q + 32 * r] * v[r];
            }
    }
    s_sum[st][col] = sum;
    __syncthreads();
    if (tid < 8 && d < D) {
        float o = 0.f;
        for (int q = 0; q < 32; q++) o += s_sum[q][col];
        if (a.bd)
            for (int k = 0; k < K; k++)
                if (s_tab[k].z)
                    o += a.w[(size_t)t * K + k] * dk_bias(a.bd, a.bd_type, s_tab[k].w * a.bd_se + (int64_t)d * a.bd_sn);
        dk_store_out(a.out, a.out_type, (int64_t)t * D + d, o);
    }
    if (a.dbg == 3 && tid == 0 && (blockIdx.x % 16) == 0) {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(tt2));
        printf("OPT k_op_sum b %d start %llu waited %llu end %llu\n", blockIdx.x, tt0 % 100000000ull, tt1 % 100000000ull,
               tt2 % 100000000ull);
    }
#endif
}

/* ---- host side ---- */

extern "C" int moe__op_smem_bytes(int D, int VP, int NS) {
    return 1024 + NS * MOE_OP_SLOT + VP * op_xs_stride(D) + OP_RED_BYTES + OP_HS_BYTES;
}

extern "C" cudaError_t moe__op_prepare(int *max_dyn) {
    int dev = 0, optin = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
    cudaFuncAttributes fa;
    if (e == cudaSuccess) e = cudaFuncGetAttributes(&fa, k_op<__nv_bfloat16>);
    const int dyn = optin - (e == cudaSuccess ? (int)fa.sharedSizeBytes : 0);
    if (e == cudaSuccess) e = cudaFuncSetAttribute(k_op<__nv_bfloat16>, cudaFuncAttributeMaxDynamicSharedMemorySize, dyn);
    if (e == cudaSuccess) e = cudaFuncSetAttribute(k_op<__half>, cudaFuncAttributeMaxDynamicSharedMemorySize, dyn);
    if (e == cudaSuccess && max_dyn) *max_dyn = dyn;
    return e;
}

extern "C" cudaError_t moe__op_launch(int fmt, const moe_op_maps *m, const moe_op_args *a, int grid, cudaStream_t s) {
    const int smem = moe__op_smem_bytes(a->D, a->VP, a->NS);
    cudaLaunchConfig_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cudaLaunchAttribute at[1];
    cfg.gridDim = dim3((unsigned)grid);
    cfg.blockDim = dim3(MOE_OP_THREADS);
    cfg.dynamicSmemBytes = (size_t)smem;
    cfg.stream = s;
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = (unsigned)a->CS;
    at[0].val.clusterDim.y = 1;
    at[0].val.clusterDim.z = 1;
    cfg.attrs = at;
    cfg.numAttrs = 1;
    cudaError_t e;
    if (fmt == MOE_DF_BF16) e = cudaLaunchKernelEx(&cfg, k_op<__nv_bfloat16>, *m, *a);
    else if (fmt == MOE_DF_F16) e = cudaLaunchKernelEx(&cfg, k_op<__half>, *m, *a);
    else return cudaErrorInvalidValue;
    if (e != cudaSuccess) return e;
    cudaLaunchConfig_t c2;
    cudaLaunchAttribute a2;
    dk_launch_config(&c2, &a2, dim3((unsigned)((a->D + 7) / 8), (unsigned)a->T), 256, 0, s, 1);
    return cudaLaunchKernelEx(&c2, k_op_sum, *a);
}

extern "C" cudaError_t moe__op_clusters(int fmt, int CS, int smem, int *n) {
    cudaLaunchConfig_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cudaLaunchAttribute at[1];
    cfg.gridDim = dim3((unsigned)CS);
    cfg.blockDim = dim3(MOE_OP_THREADS);
    cfg.dynamicSmemBytes = (size_t)smem;
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = (unsigned)CS;
    at[0].val.clusterDim.y = 1;
    at[0].val.clusterDim.z = 1;
    cfg.attrs = at;
    cfg.numAttrs = 1;
    return fmt == MOE_DF_F16 ? cudaOccupancyMaxActiveClusters(n, k_op<__half>, &cfg)
                             : cudaOccupancyMaxActiveClusters(n, k_op<__nv_bfloat16>, &cfg);
}
