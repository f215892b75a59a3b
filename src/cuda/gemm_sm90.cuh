/*
 * Device code of the Hopper grouped GEMM (see gemm_sm90.cu for the design):
 * tile constants, mbarrier / TMA / wgmma helpers and the kernel body.
 * Compiles under nvcc (included by gemm_sm90.cu, whose host code launches
 * it) and under NVRTC (the cuda-jit program, jit_backend.cu, which defines
 * MOE_JIT and the layer's shape as MOE_JIT_* constants: then the trip counts,
 * column bounds and bias tests are known to the compiler). The ahead-of-time
 * kernel is the code below with MOE_JIT undefined.
 */
#ifndef MOE_CUDA_GEMM_SM90_CUH
#define MOE_CUDA_GEMM_SM90_CUH

#include "gemm_common.cuh"
#include "wgmma_gen.cuh"
#include "sm90_sync.cuh"

/* The tile table's shapes: BM x BN x 64 with BM = 128 (the two consumer
 * warpgroups take 64 rows each, all BN columns: m64nBNk16) or BM = 64 (both
 * take the same 64 rows, BN / 2 columns each: m64n(BN/2)k16, or two m64n64k16
 * for gate and up), so that experts with few rows waste less of each tile.
 * The smaller A tile leaves room for a fifth stage. BN is 256, or 240 where
 * it pads N less: GEMM 2 without clusters (gpt-oss's N = 2880: 12 n-tiles of
 * 240 instead of 11 of 256 and one of 64; layer.cu moe__cuda_sm90_bn2), and
 * GEMM 1 with BM 128 without clusters (gate and up halves of 120,
 * moe__cuda_sm90_bn1). The B tile is two TMA boxes of BN / 2 rows (gate and
 * up rows, or the two halves). */
#define BN 256 /* the widest n-tile: the shared memory the host reserves */
#define BK 64
#define SM90_STAGES(bm) ((bm) == 64 ? 5 : 4)
#define SM90_STAGE_BYTES(bm, bn) (((bm) + (bn)) * BK * 2)
/* BM 128's epilogue staging, stored by TMA: each consumer warpgroup's 64 rows
 * of one pass's output columns (128 with n-tiles of 256, 120 with 240) as TMA
 * boxes of 64 rows: 64 columns (128-byte rows, the 128B swizzle) or 40 columns
 * (80-byte rows, unswizzled: a warp's 8 rows still fall in different banks).
 * SM90_WG_STAGE bytes a warpgroup; GEMM 1's gather table and the barriers after
 * both (gemm_sm90_body). */
#define SM90_WG_STAGE 16384
#define SM90_STAGING_BYTES (2 * SM90_WG_STAGE + 1024)
/* the ring, 1024 for its alignment, then BM 128: the staging and 1024 bytes for
 * the barriers, GEMM 1's gather table and the 8 unit slots (231424 bytes; a
 * block may have 232448); BM 64: only the barriers, the table (x row per A
 * row) and the slots */
#define SM90_SMEM_BYTES(bm)                                                                                            \
    (SM90_STAGES(bm) * SM90_STAGE_BYTES(bm, BN) + 1024 +                                                              \
     ((bm) == 128 ? SM90_STAGING_BYTES : 2 * SM90_STAGES(bm) * 8 + 4 * (bm) + 32))
#define NTHREADS 384

/* Quantised B (cuda-quant's prefill, gemm_sm90_q.cu): the weights stay GGUF
 * blocks in global memory; per k-block TMA brings the B tile's raw bytes into
 * a ring of SM90_Q_RAWS stages (two halves of 128 rows: Q8_0 one box of 80
 * bytes a row, the 68 of its two blocks; Q4_K three boxes of 16, the super-
 * block's header and the 32 bytes of the k-block's codes; 2 stages for Q8_0,
 * 3 for Q4_K) and the producer
 * warpgroup decodes them into the bf16/f16 B stage, 128B-swizzled as TMA
 * would have written it. BM 128, BN 256, no clusters; 3 stages (the raw ring
 * takes the fourth's room). SM90_QF_* are decode.h's MOE_DF_* numbers. */
#define SM90_QF_Q4_0 2 /* gemm_sm90_q.cu's register-A kernel only */
#define SM90_QF_Q8_0 3
#define SM90_QF_MXFP4 4 /* gemm_sm90_q.cu's register-A kernel only */
#define SM90_QF_Q2_K 5  /* register-A kernel only */
#define SM90_QF_Q3_K 6  /* register-A kernel only */
#define SM90_QF_Q4_K 7
#define SM90_QF_Q5_K 8 /* register-A kernel only, as MXFP4 */
#define SM90_QF_Q6_K 9 /* register-A kernel only, as MXFP4 */
/* SM90_QF_DENSE (gemm_common.cuh): bf16/f16 weights, gemm_sm90_qd.cu, register-A kernel only */
#define SM90_Q_RAWS(qf) ((qf) == SM90_QF_Q4_K ? 3 : (qf) ? 2 : 0) /* what fits beside 3 stages */
#define SM90_Q_HALF(qf) ((qf) == SM90_QF_Q8_0 ? 128 * 80 : (qf) == SM90_QF_Q4_K ? 3 * 128 * 16 : 0)
#define SM90_Q_STAGES 3
/* k-blocks the A boxes may run ahead of the decoding: 0, the box of the step
 * being decoded only (2, as soon as a stage is free, measured 1.3-1.6x slower
 * on an H100: bench/decode/s20 run 4; so was an L2 prefetch of the raw bytes) */
#ifndef SM90_Q_AHEAD
#define SM90_Q_AHEAD 0
#endif
#define SM90_SMEM_BYTES_Q(qf)                                                                                          \
    (SM90_Q_STAGES * SM90_STAGE_BYTES(128, BN) + SM90_Q_RAWS(qf) * 2 * SM90_Q_HALF(qf) + 1024 + SM90_STAGING_BYTES)
/* the format's raw loads and row decoder (gemm_sm90_q.cu) */
template <int QF> struct Sm90Quant;

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define MOE_SM90A 1
#endif

#ifndef MOE_SM90_DIRECT_EPILOGUE
#define MOE_SM90_DIRECT_EPILOGUE 0 /* 1: BM 128's epilogue as BM 64's (the A/B of NOTES.md, session 13) */
#endif

#ifdef MOE_SM90A
/* the empty barriers are released by consumers of other CTAs of the cluster */
static __device__ __forceinline__ void mbar_wait_cluster(uint32_t bar, uint32_t parity) {
    asm volatile("{\n.reg .pred P1;\nLAB_WAIT:\n"
                 "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 P1, [%0], %1;\n"
                 "@P1 bra DONE;\nbra LAB_WAIT;\nDONE:\n}\n" ::"r"(bar),
                 "r"(parity)
                 : "memory");
}
/* arrive on the barrier at the same offset in CTA `cta` of the cluster, with
 * the default semantics (release at CTA scope): the stage it frees was read
 * by this thread's completed wgmmas, and the peer refills it through TMA.
 * The .release.cluster form made every cluster shape 1.3-2.2x slower than
 * 1x1 (NOTES.md run 9). */
static __device__ __forceinline__ void mbar_arrive_cluster(uint32_t bar, uint32_t cta) {
    asm volatile("{\n.reg .b32 ra;\nmapa.shared::cluster.u32 ra, %0, %1;\n"
                 "mbarrier.arrive.shared::cluster.b64 _, [ra];\n}\n" ::"r"(bar),
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
/* GEMM 1's gathered A rows (g.gather): 16 bytes from global to shared,
 * zero-filled past src_bytes (16 or 0); the barrier gets one arrival (counted
 * in its init, .noinc) once this thread's earlier copies have landed. They are
 * generic-proxy writes read by wgmma (async proxy): the consumers fence
 * (fence.proxy.async) after the full barrier, before their wgmmas. */
static __device__ __forceinline__ void cp_async16(uint32_t dst, const void *src, uint32_t src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
static __device__ __forceinline__ void cp_async_arrive(uint32_t bar) {
    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}
/* TMA store of the 2D box at src (shared memory, laid out as tm says) to columns c0..,
 * rows c1.. of the tensor tm describes (clipped at its bounds), in this
 * thread's current bulk group */
static __device__ __forceinline__ void tma_store_2d(const CUtensorMap *tm, uint32_t src, int c0, int c1) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n" ::"l"((uint64_t)tm),
                 "r"(c0), "r"(c1), "r"(src)
                 : "memory");
}
static __device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
/* this thread's bulk stores have read their shared-memory sources */
static __device__ __forceinline__ void bulk_wait_read() {
    asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
}
/* ... and written their destinations */
static __device__ __forceinline__ void bulk_wait_all() { asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory"); }
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

/* The layer's shape in the kernel body. Under MOE_JIT (the cuda-jit program)
 * they are constants: N (output columns) and C (reduced dim) of this GEMM, a
 * column bound check only when the last n-tile is partial, and only the
 * biases that exist. Ahead of time they are the fields, spelled exactly as
 * in the kernel measured and verified before cuda-jit existed (even an
 * equivalent `true && g.fb0` changes its SASS). */
#ifdef MOE_JIT
#define GN (MODE == 1 ? MOE_JIT_I : MOE_JIT_D)
#define GC (MODE == 1 ? MOE_JIT_D : MOE_JIT_I)
/* a column past N exists when N is not a multiple of the n-tile, or when a
 * CN = 2 cluster's second n-tile lies past the last one */
#define COL_OUT(col) (GN % (NOUT * CN) != 0 && (col) >= GN)
#define HAS_FB0 ((((MODE == 1 ? MOE_JIT_BIAS1 : MOE_JIT_BIAS2) & 1) != 0) && g.fb0)
#define HAS_FB1 (((MOE_JIT_BIAS1 & 2) != 0) && g.fb1)
#else
#define GN g.N
#define GC g.C
#define COL_OUT(col) (col >= g.N)
#define HAS_FB0 (g.fb0)
#define HAS_FB1 (g.fb1)
#endif

/* The body of the kernel (it is wrapped by gemm_sm90 in gemm_sm90.cu and by
 * the extern "C" kernels of the cuda-jit program): tmA, tmB0, tmB1, tmO and g
 * are the kernel's parameters (the maps __grid_constant__), passed by
 * reference so that TMA reads the descriptors where they are. tmO: the output
 * (h or y, sorted rows) in the boxes BM 128's staged epilogue stores. */
template <int ACT, typename T, int CM, int CN, int BMT, int BNT, int QF = 0>
static __device__ __forceinline__ void gemm_sm90_body(const CUtensorMap &tmA, const CUtensorMap &tmB0,
                                                      const CUtensorMap &tmB1, const CUtensorMap &tmO,
                                                      const moe_cuda_gemm &g) {
#ifdef MOE_SM90A
    /* ACT: the activation (compile time: one epilogue's code per kernel, see
     * NOTES.md run 3), -1 for GEMM 2 (down) */
    constexpr int MODE = ACT < 0 ? 2 : 1;
    constexpr bool GATED = ACT >= 0 && ACT <= MOE_ACT_SWIGLU_OAI;
    static_assert(BMT == 128 || (BMT == 64 && CM == 1 && CN == 1), "BM 64 tiles run without clusters");
    /* BM 64's gate and up wgmmas would be n = 60, not a multiple of 8 */
    static_assert(BNT == 256 || (BNT == 240 && (!GATED || BMT == 128)), "gated n-tiles of 240 need BM 128");
    static_assert(QF == 0 || (BMT == 128 && BNT == 256 && CM == 1 && CN == 1), "quantised B: BM 128, BN 256, 1 x 1");
    constexpr int STAGES = QF ? SM90_Q_STAGES : SM90_STAGES(BMT), A_BYTES = BMT * BK * 2, B_BYTES = BNT * BK * 2,
                  STAGE_BYTES = A_BYTES + B_BYTES, BH = BNT / 2; /* rows of one B box */
    /* accumulators per consumer thread: 64 rows x BN (BM 128) or x BN / 2 (BM 64) columns */
    constexpr int NACC = BMT == 128 ? BNT / 2 : BNT / 4;
    extern __shared__ unsigned char smem_raw[];
    uint32_t sbase = smem_u32(smem_raw);
    sbase = (sbase + 1023) & ~1023u;
    /* BM 128 stages its epilogue through shared memory (below), then the
     * barriers and GEMM 1's gather table; BM 64 (5 stages: no room for the
     * staging) has only those after the ring. */
    constexpr bool STAGED = BMT == 128 && !MOE_SM90_DIRECT_EPILOGUE;
    /* quantised B: the raw ring after the stages */
    constexpr int RAWS = SM90_Q_RAWS(QF), RH = SM90_Q_HALF(QF), RAWB = 2 * RH;
    const uint32_t raw0 = sbase + STAGES * STAGE_BYTES, stg0 = raw0 + RAWS * RAWB,
                   meta = stg0 + (STAGED ? 2 * SM90_WG_STAGE : 0);
    /* full[s] = bar(s), empty[s] = bar(STAGES + s); the raw ring's full[j] =
     * bar(2 STAGES + j), empty[j] = bar(2 STAGES + RAWS + j) */
    auto bar = [&](int i) -> uint32_t { return meta + 8 * i; };
    auto tab = [&](int i) -> int * {
        return (int *)(smem_raw + (meta + 16 * STAGES + 16 * RAWS + 4 * i - smem_u32(smem_raw)));
    };
    /* the dynamic order's unit slots, after the table: the producer writes the
     * number of the CTA's i-th unit into slot i % 8 before the first stage of
     * that unit can complete, the consumers read it once that stage is full */
    auto uslot = [&](int i) -> volatile int * { return (volatile int *)tab(BMT + (i & 7)); };
    /* 2 x 1 clusters: the barrier of slot i % 8 in CTA 1, on which CTA 0's
     * producer arrives once it has written the unit's number there */
    auto ubar = [&](int i) -> uint32_t { return meta + 16 * STAGES + 16 * RAWS + 4 * (BMT + 8) + 8 * (i & 7); };
    const int wg = threadIdx.x / 128;
    /* Cluster of CM x CN CTAs (rank = rm + CM * rn): CTAs with the same rm
     * work on the same 128 A rows and split the A load, each multicasting its
     * share; CTAs with the same rn work on the same n-tile. With CM = 2 a work
     * unit is two m-tiles (g.units: indices into g.tiles, one per rm): of one
     * expert ("paired": the two CTAs split the B load and multicast it), or of
     * two experts, an expert's odd last m-tile each ("split": each CTA loads
     * its own B), so that pairing pads nothing. A stage may be refilled only
     * when every CTA that writes into it has been released by this CTA's
     * consumers, so consumers arrive on the empty barriers of all CTAs in
     * their row and column (in split units too, which keeps the CTAs of a
     * cluster within the ring's depth of each other in every unit). */
    constexpr int CS = CM * CN;
    const uint32_t rank = CS > 1 ? cluster_rank() : 0;
    const int rm = (int)rank % CM, rn = (int)rank / CM;
    /* GEMM 1 without A multicast (CN = 1) may gather its A rows from x (cp.async
     * by the producer warpgroup, 128B-swizzled by hand) instead of a TMA box of
     * xp: then the full barrier counts 1 (its expect_tx for B) + 128 (the
     * producer warpgroup's copies) arrivals */
    const bool gather = QF == 0 && MODE == 1 && CN == 1 && g.gather;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) {
            /* quantised B: 1 (the A box's expect_tx) + the 128 decoding threads */
            mbar_init(bar(s), gather || QF ? 129 : 1);
            mbar_init(bar(STAGES + s), 8 * (CM + CN - 1)); /* 2 consumer warpgroups x 4 warps per CTA */
        }
        for (int j = 0; j < RAWS; j++) {
            mbar_init(bar(2 * STAGES + j), 1);
            mbar_init(bar(2 * STAGES + RAWS + j), 4); /* the producer's 4 warps */
        }
        if (CM == 2 && CN == 1)
            for (int j = 0; j < 8; j++) mbar_init(ubar(j), 1);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    if (CS > 1) cluster_sync();
    const int NOUT = GATED ? BH : BNT;
    const int MU = *g.n_mtiles, NT = (GN + NOUT - 1) / NOUT, NU = (NT + CN - 1) / CN;
    const int total = MU * NU, kblocks = (GC + BK - 1) / BK;
    const int cid = blockIdx.x / CS, ncl = gridDim.x / CS;
    const int GMR = g.gm;
    /* The order of the units. Static: CTA c takes units c, c + ncl, c + 2 ncl...
     * Over 30+ rounds the CTAs drift apart, and the m-tiles of one expert (the
     * raster puts them side by side, in consecutive units, so that they read
     * each B tile from L2 at about the same time) end up on CTAs that are a
     * tile or more out of step: the second reads B from DRAM again. ncu
     * (bench/cuda/s33, H100, gpt-oss-120b T = 4096, 1-2 m-tiles an expert):
     * GEMM 1 read 5.9 GB from DRAM for 4.2 GB of weights, 4.4 GB when every
     * expert had exactly one m-tile, and took 1.37x as long. Dynamic (g.sched,
     * a counter the forward zeroes; bf16/f16 B, 1 x 1 or 2 x 1 through TMA):
     * a CTA's (cluster's) first unit is its number, every later one the next
     * from the counter, so units start in their order whatever the CTAs'
     * pace. The producer takes them and passes each one's number to the
     * consumers (uslot); a number past the last tells them to stop. In a 2 x 1
     * cluster CTA 0's producer takes them, writes each into CTA 1's slot too
     * and arrives on CTA 1's slot barrier (ubar), which CTA 1's producer waits
     * on: CTA 0 runs at most the ring's depth ahead of CTA 1 (its stages are
     * freed by both CTAs' consumers), well within the 8 slots. */
    const bool dyn = QF == 0 && g.sched != nullptr && (CS == 1 || (CM == 2 && CN == 1 && !gather));
    /* unit mu's m-tile for this CTA: expert, first row (-1: none, the odd
     * leftover of a split list), and whether both CTAs of the pair share it */
    auto job = [&](int mu, int *m0, bool *pair) -> int {
        if (CM == 1) {
            const int2 t = g.tiles[mu];
            *m0 = t.y;
            *pair = false;
            return t.x;
        }
        const int2 un = g.units[mu], ta = g.tiles[un.x];
        const int2 tb = un.y >= 0 ? g.tiles[un.y] : make_int2(ta.x, -1);
        *pair = un.y >= 0 && ta.x == tb.x;
        *m0 = rm == 0 ? ta.y : tb.y;
        return rm == 0 ? ta.x : tb.x;
    };

    /* the producer warpgroup's registers: 40, or 64 where it decodes B */
    constexpr int PREG = QF ? 64 : 40, CREG = QF ? 216 : 232;
    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(PREG));
        /* the B tile of k-block kb into sb: two TMA boxes of BH rows (gate and up
         * rows n0.., or rows n0 and n0 + BH of one tensor); in a paired unit
         * each CTA of the pair loads one box and multicasts it (maskB) */
        uint16_t maskA = 0, maskB = 0;
        for (int j = 0; j < CN; j++) maskA |= (uint16_t)(1u << (rm + CM * j));
        for (int i = 0; i < CM; i++) maskB |= (uint16_t)(1u << (i + CM * rn));
        auto load_b = [&](uint32_t sb, int kb, int n0, int e, uint32_t full, bool pair) {
#pragma unroll
            for (int j = 0; j < 2; j++) {
                if (CM == 2 && pair && j != rm) continue;
                const CUtensorMap *tb = GATED && j == 1 ? &tmB1 : &tmB0;
                const int row = GATED ? n0 : n0 + BH * j;
                if (CM == 1 || !pair) tma_3d(sb + j * (B_BYTES / 2), tb, kb * BK, row, e, full);
                else tma_3d_mc(sb + j * (B_BYTES / 2), tb, kb * BK, row, e, full, maskB);
            }
        };
        auto wait_empty = [&](uint32_t bar, uint32_t parity) {
            if (CS > 1) mbar_wait_cluster(bar, parity); /* released by the peers' consumers too */
            else mbar_wait(bar, parity);
        };
        if constexpr (QF != 0) {
            /* Quantised B. Thread 0 keeps the raw ring RAWS - 1 k-blocks ahead of
             * the decoding (a slot refilled once the 4 warps have released it,
             * the raw empty barrier) and brings each step's A box (TMA, as below),
             * walking a cursor for each over the CTA's (unit, k-block) steps (the
             * unit's expert and rows looked up once a unit: a lookup a step put
             * two dependent global loads on every step's path).
             * Every thread decodes row tid of both halves (gate and up, or rows
             * n0 and n0 + 128) into the stage, 16-byte piece s of the row at
             * s ^ (r % 8), fences its writes for the async proxy (wgmma) and
             * arrives on the full barrier; each warp then releases the raw slot. */
            const int tid = threadIdx.x;
            const int nsteps = cid < total ? ((total - 1 - cid) / ncl + 1) * kblocks : 0;
            struct Cur { int u, kb, e, n0, arow, i; };
            auto cur_unit = [&](Cur &c) {
                if (c.u >= total) return;
                int mu, nu, m0;
                bool pair;
                moe_cuda_raster(c.u, MU, NU, GMR, &mu, &nu);
                c.e = job(mu, &m0, &pair);
                c.n0 = nu * NOUT;
                c.arow = m0 >= 0 ? g.exp_off[c.e] + m0 : g.exp_off[c.e + 1];
            };
            auto cur_next = [&](Cur &c) {
                c.i++;
                if (++c.kb == kblocks) {
                    c.kb = 0;
                    c.u += ncl;
                    cur_unit(c);
                }
            };
            /* the next A box and raw load */
            Cur ac = {cid, 0, 0, 0, 0, 0}, rc = ac;
            auto issue_raw = [&]() {
                const int j = rc.i % RAWS;
                if (rc.i >= RAWS) mbar_wait(bar(2 * STAGES + RAWS + j), (uint32_t)(rc.i / RAWS - 1) & 1u);
                const uint32_t dst = raw0 + j * RAWB, rb = bar(2 * STAGES + j);
                mbar_expect_tx(rb, RAWB);
#pragma unroll
                for (int h = 0; h < 2; h++)
                    Sm90Quant<QF>::load(dst + h * RH, GATED && h == 1 ? &tmB1 : &tmB0, rc.kb,
                                        GATED ? rc.n0 : rc.n0 + BH * h, rc.e, rb);
                cur_next(rc);
            };
            /* A boxes run ahead of the decoding by up to SM90_Q_AHEAD k-blocks:
             * one is issued as soon as its stage is free (tested, not waited
             * for, except the box of the step being decoded), so that the A
             * load's latency overlaps the decoding of the steps before it */
            auto issue_a = [&](int upto, int must) {
                while (ac.i <= upto && ac.i < nsteps) {
                    const int st = ac.i % STAGES;
                    const uint32_t em = bar(STAGES + st), par = ((uint32_t)(ac.i / STAGES) & 1u) ^ 1u;
                    if (ac.i <= must) mbar_wait(em, par);
                    else if (!mbar_test(em, par)) break;
                    mbar_expect_tx(bar(st), A_BYTES);
                    tma_2d(sbase + st * STAGE_BYTES, &tmA, ac.kb * BK, ac.arow, bar(st));
                    cur_next(ac);
                }
            };
            if (tid == 0) {
                cur_unit(ac);
                rc = ac;
                while (rc.i < RAWS - 1 && rc.i < nsteps) issue_raw();
            }
            int stage = 0;
            uint32_t phase = 0;
            for (int i = 0; i < nsteps; i++) {
                const int kb = i % kblocks;
                if (tid == 0 && rc.i < nsteps) issue_raw(); /* step i + RAWS - 1 */
                mbar_wait(bar(STAGES + stage), phase ^ 1);
                if (tid == 0) issue_a(i + SM90_Q_AHEAD, i);
                const int j = i % RAWS;
                mbar_wait(bar(2 * STAGES + j), (uint32_t)(i / RAWS) & 1u);
                const uint32_t rs = raw0 + j * RAWB, sb = sbase + stage * STAGE_BYTES + A_BYTES;
#pragma unroll
                for (int h = 0; h < 2; h++)
                    Sm90Quant<QF>::template row<T>(rs + h * RH, tid, kb, sb + h * (B_BYTES / 2) + tid * 128);
                fence_proxy_async_smem();
                mbar_arrive(bar(stage));
                __syncwarp();
                if ((tid & 31) == 0) mbar_arrive(bar(2 * STAGES + RAWS + j));
                if (SM90_Q_AHEAD && tid == 0) issue_a(i + SM90_Q_AHEAD, i);
                if (++stage == STAGES) { stage = 0; phase ^= 1; }
            }
        } else if (gather) {
            /* per k-block the producer warpgroup copies the A tile's BMT rows x 8
             * chunks of 16 bytes, 4 whole rows (4 x 128 contiguous bytes) per warp
             * instruction: warp w takes rows [w BMT/4, (w + 1) BMT/4), lane l chunk
             * l % 8 of row 4j + l / 8 of them; chunk c of row r lands at c ^ (r % 8)
             * (the 128B swizzle TMA would apply); rows past the expert's and columns
             * past C are zeros. The tile's x row of each A row is looked up once per
             * tile into a table (tab(), above; named barrier 1: these 128), its 8
             * entries read per k-block before the copies (read between them, each
             * load waited behind the previous copy: the producer warps spent most of
             * their time there and the consumers a third of theirs waiting for A;
             * NOTES.md, session 14). */
            const int tid = threadIdx.x, c = tid & 7, rw = (tid >> 5) * (BMT / 4) + ((tid & 31) >> 3);
            const T *x = (const T *)g.A;
            int stage = 0;
            uint32_t phase = 0;
            int u = cid, i = 0;
            for (;; i++) {
                asm volatile("bar.sync 1, 128;\n" ::: "memory"); /* the previous tile's copies were issued */
                if (dyn && i > 0) u = *uslot(i); /* thread 0 put it there before the barrier */
                if (u >= total) break;
                int mu, nu, m0;
                bool pair;
                moe_cuda_raster(u, MU, NU, GMR, &mu, &nu);
                const int e = job(mu, &m0, &pair), n0 = nu * NOUT;
                const int rbase = g.exp_off[e], rows = g.exp_off[e + 1] - rbase;
                if (tid < BMT) {
                    const int m = m0 + tid;
                    *tab(tid) = m0 >= 0 && m < rows ? g.sorted_pair[rbase + m] / g.K : -1;
                }
                asm volatile("bar.sync 1, 128;\n" ::: "memory");
                /* the next unit (read by all after the next first barrier; the
                 * slot of unit i + 1 is free: unit i + 1 - 8 has ended) */
                if (dyn && tid == 0) *uslot(i + 1) = ncl + atomicAdd(g.sched, 1);
                for (int kb = 0; kb < kblocks; kb++) {
                    const uint32_t full = bar(stage), empty = bar(STAGES + stage);
                    wait_empty(empty, phase ^ 1);
                    const uint32_t sa = sbase + stage * STAGE_BYTES, sb = sa + A_BYTES;
                    if (tid == 0) {
                        if (dyn && kb == 0) *uslot(i) = u; /* for the consumers */
                        mbar_expect_tx(full, B_BYTES);
                        load_b(sb, kb, n0, e, full, pair);
                    }
                    const int col = kb * BK + 8 * c;
                    int xr[BMT / 16]; /* the table's entries first, then the copies */
#pragma unroll
                    for (int j = 0; j < BMT / 16; j++) xr[j] = *tab(rw + 4 * j);
#pragma unroll
                    for (int j = 0; j < BMT / 16; j++) {
                        const int r = rw + 4 * j;
                        const bool ok = xr[j] >= 0 && col < GC;
                        cp_async16(sa + r * 128 + ((c ^ (r & 7)) << 4), ok ? (const void *)(x + (int64_t)xr[j] * GC + col) : g.A,
                                   ok ? 16u : 0u);
                    }
                    cp_async_arrive(full);
                    if (++stage == STAGES) { stage = 0; phase ^= 1; }
                }
                if (!dyn) u += ncl;
            }
            if (dyn) { /* the end: a stage whose full barrier completes without data */
                wait_empty(bar(STAGES + stage), phase ^ 1);
                if (tid == 0) {
                    /* slot i holds the number past the last already (the
                     * others have just read it), but for a CTA without units */
                    if (i == 0) *uslot(0) = total;
                    mbar_arrive(bar(stage));
                }
                mbar_arrive(bar(stage)); /* 1 + 128 arrivals, as a stage of copies */
            }
        } else if (threadIdx.x == 0) {
            int stage = 0;
            uint32_t phase = 0;
            int u = cid, i = 0;
            /* 2 x 1, dynamic: unit i's number from CTA 0 (rank 1 waits for it) */
            auto take = [&](int i, int u0) -> int {
                if (CS == 1 || !dyn) return u0;
                if (rank == 0) {
                    uint32_t ra, rb;
                    const uint32_t sl = smem_u32((const void *)uslot(i));
                    asm volatile("mapa.shared::cluster.u32 %0, %1, 1;\n" : "=r"(ra) : "r"(sl));
                    asm volatile("mapa.shared::cluster.u32 %0, %1, 1;\n" : "=r"(rb) : "r"(ubar(i)));
                    asm volatile("st.shared::cluster.u32 [%0], %1;\n" ::"r"(ra), "r"(u0) : "memory");
                    asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];\n" ::"r"(rb) : "memory");
                    return u0;
                }
                mbar_wait_cluster(ubar(i), (uint32_t)(i >> 3) & 1u);
                return *uslot(i);
            };
            if (CS > 1 && dyn) u = take(0, cid);
            for (; u < total; i++) {
                /* the next unit, claimed as this one starts (in a 2 x 1 cluster by CTA 0) */
                const int next = !dyn ? u + ncl : CS == 1 || rank == 0 ? ncl + atomicAdd(g.sched, 1) : 0;
                int mu, nu, m0;
                bool pair;
                moe_cuda_raster(u, MU, NU, GMR, &mu, &nu);
                const int e = job(mu, &m0, &pair), n0 = (nu * CN + rn) * NOUT;
                /* no m-tile (-1): the rows after the expert's, never stored */
                const int arow = (m0 >= 0 ? g.exp_off[e] + m0 : g.exp_off[e + 1]) + (BMT / CN) * rn;
                for (int kb = 0; kb < kblocks; kb++) {
                    const uint32_t full = bar(stage), empty = bar(STAGES + stage);
                    wait_empty(empty, phase ^ 1);
                    if (dyn && kb == 0 && (CS == 1 || rank == 0)) *uslot(i) = u; /* for the consumers */
                    mbar_expect_tx(full, STAGE_BYTES);
                    const uint32_t sa = sbase + stage * STAGE_BYTES, sb = sa + A_BYTES;
                    const uint32_t da = sa + (BMT / CN) * rn * 128;
                    if (CN == 1) tma_2d(da, &tmA, kb * BK, arow, full);
                    else tma_2d_mc(da, &tmA, kb * BK, arow, full, maskA);
                    load_b(sb, kb, n0, e, full, pair);
                    if (++stage == STAGES) { stage = 0; phase ^= 1; }
                }
                u = next;
                if (CS > 1 && dyn) u = take(i + 1, u);
            }
            if (dyn) { /* the end: a stage whose full barrier completes without data */
                wait_empty(bar(STAGES + stage), phase ^ 1);
                if (CS == 1 || rank == 0) *uslot(i) = total; /* CTA 1's holds it: take() */
                mbar_arrive(bar(stage));
            }
        }
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(CREG));
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
        /* the accumulators' column groups (8 columns, 4 values a thread):
         * group b of a thread holds columns b * 8 + qc, + 1 of the B rows, for
         * its rows r and r + 8; GATED: groups [0, NG) gate, [NG, 2 NG) up */
        constexpr int NGRP = NACC / 4, NG = NGRP / 2;
        const int qc = (lane & 3) * 2, cb = BMT == 128 ? 0 : cw * (GATED ? NOUT / 2 : BH);
        float acc[NACC];
        int stage = 0, sbuf = 0; /* sbuf: the staging buffer the next box goes to */
        uint32_t phase = 0;
        for (int u = cid, i = 0;; i++) {
            if (dyn) { /* the unit's first stage is full: its number is in the slot */
                mbar_wait(bar(stage), phase);
                u = *uslot(i);
            }
            if (u >= total) break;
            int mu, nu, mt;
            bool pair;
            moe_cuda_raster(u, MU, NU, GMR, &mu, &nu);
            const int e = job(mu, &mt, &pair), n0 = (nu * CN + rn) * NOUT;
            const int rbase = g.exp_off[e], rows = mt >= 0 ? g.exp_off[e + 1] - rbase : 0, m0 = mt >= 0 ? mt : 0;
            /* The biases (or 0) start the accumulators and every wgmma adds to
             * them: the loads are independent and overlap the first full-barrier
             * wait, where the epilogue used to wait for each column's load in
             * turn. Columns past N get 0 (never read past an expert's row).
             * The init is unconditional: one under `if (bias)` with a run-time
             * scale-d made ptxas serialize the wgmmas (C7515). */
            {
#pragma unroll
                for (int b = 0; b < NGRP; b++) {
                    const bool up = GATED && b >= NG;
                    const int col = n0 + cb + (up ? b - NG : b) * 8 + qc;
                    float2 v;
                    v.x = v.y = 0.f;
                    if (!COL_OUT(col)) {
                        if (up) {
                            if (HAS_FB1) v = moe_cuda_bias2(g.fb1, e, GN, col);
                        } else if (HAS_FB0) {
                            v = moe_cuda_bias2(g.fb0, e, GN, col);
                        }
                    }
                    acc[4 * b] = acc[4 * b + 2] = v.x;
                    acc[4 * b + 1] = acc[4 * b + 3] = v.y;
                }
            }
            /* One k-block of wgmma stays in flight: the stage of k-block kb-1
             * is released once kb's wgmmas are issued and kb-1's done. Every
             * wgmma accumulates (scale-d 1) onto the biases or 0. One wgmma
             * shape per tile size, chosen at compile time: ptxas serialized
             * every wgmma of the kernel (a wait after each one; C7515, C7519)
             * as soon as the loop had a second shape chosen at run time (tried:
             * a narrower wgmma for the last n-tile of N = 2880, or no wgmma for
             * a warpgroup whose rows all lie past the expert's, inside the loop
             * or as a second loop). The skip, as a loop of its own ahead of
             * the accumulator init, compiled clean but measured 2-19% slower
             * (NOTES.md, session 8), and 0.97-1.06 in the dynamic order
             * (session 34: the tiles it spares are bound by their B traffic
             * through L2 and DRAM, not by their MMAs). */
            int prev = -1;
            /* BM 128, GEMM 2: the pair indices of the thread's two fragment rows,
             * loaded here without waiting for them, and their routing weights,
             * loaded after k-block kw's wgmmas: in the epilogue the two dependent
             * loads stood between the last wgmma and the stores */
            int pr0 = 0, pr1 = 0;
            float wt0 = 0.f, wt1 = 0.f;
            const int kw = kblocks > 4 ? 3 : kblocks - 1;
            if (STAGED && MODE == 2) {
                const int fm = m0 + cw * 64 + w4 * 16 + (lane >> 2);
                if (fm < rows) pr0 = g.sorted_pair[rbase + fm];
                if (fm + 8 < rows) pr1 = g.sorted_pair[rbase + fm + 8];
            }
            for (int kb = 0; kb < kblocks; kb++) {
                mbar_wait(bar(stage), phase);
                if (gather || QF) fence_proxy_async_smem(); /* A rows or B rows came through the generic proxy */
                asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
                const uint32_t sa = sbase + stage * STAGE_BYTES, sb = sa + A_BYTES;
                if (BMT == 128) {
                    /* this warpgroup's 64 A rows against all BN B rows */
#pragma unroll
                    for (int kk = 0; kk < BK / 16; kk++)
                        wgmma_m64k16<BNT, T>(acc, desc_k128(sa + cw * (64 * 128) + kk * 32), desc_k128(sb + kk * 32), 1);
                } else if (GATED) {
                    /* the 64 A rows against gate rows 64cw.. (first box) and the
                     * same up rows (second box): acc[0..31] gate, acc[32..63] up */
                    const uint32_t sg = sb + cw * (64 * 128);
#pragma unroll
                    for (int kk = 0; kk < BK / 16; kk++) {
                        wgmma_m64k16<64, T>(acc, desc_k128(sa + kk * 32), desc_k128(sg + kk * 32), 1);
                        wgmma_m64k16<64, T>(acc + 32, desc_k128(sa + kk * 32), desc_k128(sg + B_BYTES / 2 + kk * 32), 1);
                    }
                } else {
                    /* the 64 A rows against B rows BH cw.. (BH = 120: 15 groups of 8
                     * rows, 1024-byte aligned like the box it is) */
                    const uint32_t sg = sb + cw * (BH * 128);
#pragma unroll
                    for (int kk = 0; kk < BK / 16; kk++)
                        wgmma_m64k16<BH, T>(acc, desc_k128(sa + kk * 32), desc_k128(sg + kk * 32), 1);
                }
                asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
                if (STAGED && MODE == 2 && kb == kw) {
                    wt0 = g.w[pr0];
                    wt1 = g.w[pr1];
                }
                asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
                if (prev >= 0 && lane == 0) release(bar(STAGES + prev));
                prev = stage;
                if (++stage == STAGES) { stage = 0; phase ^= 1; }
            }
            asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
#pragma unroll
            for (int i = 0; i < NACC; i++) asm volatile("" : "+f"(acc[i])::"memory");
            if (prev >= 0 && lane == 0) release(bar(STAGES + prev));

            /* output column group b (8 columns; GATED: b < NG) of the thread's row
             * half hh, two values packed: the activation of gate and up (GEMM 1) or
             * the routing weight times the sum (GEMM 2) */
            constexpr int OG = GATED ? NG : NGRP;
            auto outv = [&](int b, int hh, float wt) -> uint32_t {
                const float a0 = acc[4 * b + 2 * hh], a1 = acc[4 * b + 2 * hh + 1];
                if (MODE == 2) return moe_cuda_pack2<T>(wt * a0, wt * a1);
                if (GATED) {
                    const int u = 4 * (b + NG) + 2 * hh;
                    return moe_cuda_pack2<T>(moe_cuda_act(ACT, a0, acc[u], g.alpha, g.limit),
                                             moe_cuda_act(ACT, a1, acc[u + 1], g.alpha, g.limit));
                }
                return moe_cuda_pack2<T>(moe_cuda_act(ACT, 0.f, a0, g.alpha, g.limit),
                                         moe_cuda_act(ACT, 0.f, a1, g.alpha, g.limit));
            };
            /* ---- epilogue: straight from the accumulators to global ----
             * (BM 64, where each warpgroup has its own share of the tile's
             * columns; BM 128 for a warpgroup whose 64 rows run past the
             * expert's). Every group is computed and only its store is
             * conditional: a branch per group kept the compiler from
             * interleaving them. The output row is the sorted row, of h (GEMM
             * 1) or of y (GEMM 2: the combine finds a pair's row through ppos). */
            auto direct = [&]() {
#pragma unroll
                for (int hh = 0; hh < 2; hh++) {
                    const int m = m0 + (BMT == 128 ? cw * 64 : 0) + w4 * 16 + (lane >> 2) + hh * 8;
                    if (m >= rows) continue;
                    const int srow = rbase + m;
                    float wt = 1.f;
                    if (MODE == 2) wt = STAGED ? (hh ? wt1 : wt0) : g.w[g.sorted_pair[srow]];
                    T *orow = (T *)g.out + (int64_t)srow * GN;
#pragma unroll
                    for (int b = 0; b < OG; b++) {
                        const int col = n0 + cb + b * 8 + qc;
                        const uint32_t v = outv(b, hh, wt);
                        if (!COL_OUT(col)) *(uint32_t *)(orow + col) = v;
                    }
                }
            };
            const int t128 = threadIdx.x & 127;
            if (STAGED && m0 + cw * 64 + 64 <= rows) {
                /* ---- epilogue: through shared memory, stored by TMA ----
                 * The warpgroup writes its 64 rows' outputs (bf16/f16) a box
                 * of BX columns at a time (64: 16-byte chunk c of row r at
                 * c ^ (r % 8); 40: rows 80 bytes apart; a warp's 8 rows in
                 * different banks either way), into two buffers in turn, and
                 * one thread hands each box to TMA (async proxy); the
                 * warpgroup goes on without waiting for the stores. Before a
                 * box's barrier that thread waits until the previous box's
                 * store has read its buffer, so the next box may overwrite it:
                 * one barrier a box, and the wait has a box's time to pass
                 * (with one buffer it waited for the store just issued, 3.6%
                 * of GEMM 2's samples; session 14). Stored from the
                 * accumulators, GEMM 2's epilogue was a third of its time on
                 * qwen3 T = 16384 (NOTES.md, session 13); a bulk copy a row, 64
                 * a pass issued one after another (their operands are
                 * warp-uniform), was 15% of its warps' time (session 14). */
                constexpr int BX = BNT == 256 ? 64 : 40, PB = BX / 8, NB = OG / PB, BXB = 64 * BX * 2;
                static_assert(NB * PB == OG && 2 * BXB <= SM90_WG_STAGE, "the outputs are whole boxes");
#pragma unroll
                for (int bx = 0; bx < NB; bx++) {
                    const uint32_t buf = stg0 + cw * SM90_WG_STAGE + (sbuf & 1) * BXB;
                    sbuf ^= 1;
#pragma unroll
                    for (int hh = 0; hh < 2; hh++) {
                        const int r = w4 * 16 + (lane >> 2) + hh * 8;
#pragma unroll
                        for (int j = 0; j < PB; j++) {
                            const uint32_t a = BX == 64 ? buf + r * 128 + ((j ^ (r & 7)) << 4) + qc * 2
                                                        : buf + r * 80 + j * 16 + qc * 2;
                            asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(a), "r"(outv(bx * PB + j, hh, hh ? wt1 : wt0))
                                         : "memory");
                        }
                    }
                    fence_proxy_async_smem(); /* the generic-proxy writes, before the async-proxy reads */
                    if (t128 == 0) bulk_wait_read();
                    asm volatile("bar.sync %0, 128;\n" ::"r"(2 + cw) : "memory");
                    if (t128 == 0) {
                        tma_store_2d(&tmO, buf, n0 + bx * BX, rbase + m0 + cw * 64);
                        bulk_commit();
                    }
                }
            } else {
                /* BM 64, or a warpgroup whose rows run past the expert's (a box
                 * would write the next expert's rows) */
                direct();
            }
            if (!dyn) u += ncl;
        }
        /* the stores are done before the block ends (their sources are its
         * shared memory, their results the next kernel's input) */
        if (STAGED && (threadIdx.x & 127) == 0) bulk_wait_all();
    }
    /* no CTA leaves while a peer may still multicast into it or arrive on it */
    if (CS > 1) cluster_sync();
#endif
}

#undef GN
#undef GC
#undef COL_OUT
#undef HAS_FB0
#undef HAS_FB1

#endif
