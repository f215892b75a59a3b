/*
 * Probe (session 17): how fast do 4-warp blocks stream a [rows, 4352 B]
 * weight matrix (mixtral's Q8_0 gate/up: 8 experts x 28672 rows) through a
 * cp.async ring, as a function of how many bytes of each row a stage takes?
 * k_qg (src/cuda/decode_qmma.cu) takes 128 rows x 136 B a stage; the
 * hypothesis under test is that runs that short leave HBM well below its
 * sequential rate whatever the kernel computes. No compute here: each stage
 * is waited for, one word a thread is read, and the ring moves on.
 *
 *   nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a bench/decode/lab/probe_runs.cu -o probe_runs
 *   ./probe_runs            # table: rows a stage, bytes a row a stage, GB/s, % of a plain read
 *
 * Session 18 adds the same ring filled by bulk copies (cp.async.bulk, the
 * copy engine: one instruction a row a stage, completion counted on an
 * mbarrier a slot) beside the 16-byte cp.async chunks: ncu's stall samples
 * of k_qg put half of a Q4_K block's warp time in the copy loop (its address
 * registers waiting on the LDGSTS before them).
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <vector>
#include <algorithm>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(1); } } while (0)

static __device__ __forceinline__ void cp16(uint32_t dst, const void *src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src) : "memory");
}
static __device__ __forceinline__ void commit(void) { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> static __device__ __forceinline__ void waitg(void) { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

/* ROWS rows a block; a stage takes RUN bytes of each (RUN = 136: k_qg's Q8_0
 * stage, copied as its 16-byte chunks from floor16 to ceil16 as k_qg does) */
template <int ROWS, int RUN, int NS>
__global__ void __launch_bounds__(128) k_probe(const uint8_t *w, int64_t rowbytes, unsigned *sink) {
    extern __shared__ __align__(128) uint8_t sm[];
    constexpr int CH = (RUN % 16) ? (RUN + 31) / 16 : RUN / 16; /* chunks a row a stage, at most */
    constexpr int PITCH = CH * 16 + 16;
    constexpr int SB = ROWS * PITCH;
    const int tid = threadIdx.x;
    const uint8_t *base = w + (int64_t)blockIdx.x * ROWS * rowbytes;
    const int nst = (int)(rowbytes / RUN);
    const uint32_t s0 = (uint32_t)__cvta_generic_to_shared(sm);
    auto load = [&](int s, int slot) {
        const int64_t lo = (int64_t)s * RUN, a0 = lo & ~15LL, a1 = (lo + RUN + 15) & ~15LL;
        const int n = (int)((a1 - a0) / 16);
        for (int idx = tid; idx < ROWS * CH; idx += 128) {
            const int r = idx / CH, c = idx % CH;
            if (c < n) cp16(s0 + slot * SB + r * PITCH + 16 * c, base + (int64_t)r * rowbytes + a0 + 16 * c);
        }
    };
    unsigned acc = 0;
    for (int s = 0; s < NS - 1; s++) {
        if (s < nst) load(s, s);
        commit();
    }
    for (int s = 0; s < nst; s++) {
        waitg<NS - 2>();
        __syncthreads();
        if (s + NS - 1 < nst) load(s + NS - 1, (s + NS - 1) % NS);
        commit();
        acc ^= *(const unsigned *)(sm + (s % NS) * SB + (tid % ROWS) * PITCH + 4 * (tid / ROWS));
    }
    waitg<0>();
    if (acc == 0x12345678u) sink[0] = acc;
}

static __device__ __forceinline__ void bar_init(uint32_t b, int n) {
    asm volatile("mbarrier.init.shared.b64 [%0], %1;\n" ::"r"(b), "r"(n) : "memory");
}
static __device__ __forceinline__ void bar_arrive(uint32_t b) {
    asm volatile("{\n .reg .b64 st;\n mbarrier.arrive.shared.b64 st, [%0];\n}\n" ::"r"(b) : "memory");
}
static __device__ __forceinline__ void bar_arrive_tx(uint32_t b, int bytes) {
    asm volatile("{\n .reg .b64 st;\n mbarrier.arrive.expect_tx.shared.b64 st, [%0], %1;\n}\n" ::"r"(b), "r"(bytes)
                 : "memory");
}
static __device__ __forceinline__ void bar_wait(uint32_t b, uint32_t parity) {
    asm volatile("{\n .reg .pred p;\n W: mbarrier.try_wait.parity.shared.b64 p, [%0], %1;\n @!p bra W;\n}\n" ::"r"(b),
                 "r"(parity)
                 : "memory");
}
static __device__ __forceinline__ void bulk(uint32_t dst, const void *src, int bytes, uint32_t b) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
                 "l"(src), "r"(bytes), "r"(b)
                 : "memory");
}

/* The same ring, each row's stage bytes one bulk copy issued by thread r */
template <int ROWS, int RUN, int NS>
__global__ void __launch_bounds__(128) k_probe_bulk(const uint8_t *w, int64_t rowbytes, unsigned *sink) {
    extern __shared__ __align__(128) uint8_t sm[];
    __shared__ __align__(8) uint64_t bars[NS];
    constexpr int CH = (RUN % 16) ? (RUN + 31) / 16 : RUN / 16;
    constexpr int PITCH = CH * 16 + 16;
    constexpr int SB = ROWS * PITCH;
    const int tid = threadIdx.x;
    const uint8_t *base = w + (int64_t)blockIdx.x * ROWS * rowbytes;
    const int nst = (int)(rowbytes / RUN);
    const uint32_t s0 = (uint32_t)__cvta_generic_to_shared(sm), b0 = (uint32_t)__cvta_generic_to_shared(bars);
    if (tid == 0)
        for (int i = 0; i < NS; i++) bar_init(b0 + 8 * i, 128);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    __syncthreads();
    auto load = [&](int s, int slot) {
        const int64_t lo = (int64_t)s * RUN, a0 = lo & ~15LL, a1 = (lo + RUN + 15) & ~15LL;
        const int n = (int)(a1 - a0);
        const uint32_t b = b0 + 8 * slot;
        if (tid < ROWS) {
            bar_arrive_tx(b, n);
            bulk(s0 + slot * SB + tid * PITCH, base + (int64_t)tid * rowbytes + a0, n, b);
        } else {
            bar_arrive(b);
        }
    };
    unsigned acc = 0;
    for (int s = 0; s < NS - 1 && s < nst; s++) load(s, s);
    for (int s = 0; s < nst; s++) {
        bar_wait(b0 + 8 * (s % NS), (uint32_t)((s / NS) & 1));
        __syncthreads();
        if (s + NS - 1 < nst) load(s + NS - 1, (s + NS - 1) % NS);
        acc ^= *(const unsigned *)(sm + (s % NS) * SB + (tid % ROWS) * PITCH + 4 * (tid / ROWS));
    }
    if (acc == 0x12345678u) sink[0] = acc;
}

__global__ void k_sum(const uint4 *p, int64_t n, unsigned *sink) {
    unsigned a = 0;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        const uint4 v = __ldcs(p + i);
        a ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (a == 0x12345678u) sink[0] = a;
}

static uint8_t *g_w, *g_flush;
static unsigned *g_sink;
static size_t g_flush_bytes;
static const int64_t ROWB = 4352, NROWS = 8 * 28672;

template <typename F> static double time_med(F f, int reps = 9) {
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
    std::vector<double> v;
    for (int r = 0; r < reps + 2; r++) {
        k_sum<<<264, 512>>>((const uint4 *)g_flush, (int64_t)(g_flush_bytes / 16), g_sink);
        CK(cudaEventRecord(a));
        f();
        CK(cudaEventRecord(b));
        CK(cudaEventSynchronize(b));
        float ms;
        CK(cudaEventElapsedTime(&ms, a, b));
        if (r >= 2) v.push_back(ms * 1e3);
    }
    CK(cudaGetLastError());
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

template <int ROWS, int RUN, int NS> static void probe(double plain, int bps) {
    /* bps: blocks an SM asked for; the line prints what the occupancy API gives */
    constexpr int CH = (RUN % 16) ? (RUN + 31) / 16 : RUN / 16;
    const int sb = ROWS * (CH * 16 + 16);
    /* blocks an SM set through shared memory, as k_qg's ring sets it */
    const int smem = std::max(NS * sb, 220 * 1024 / bps - 2048);
    CK(cudaFuncSetAttribute(k_probe<ROWS, RUN, NS>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    const int grid = (int)(NROWS / ROWS);
    int occ = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, k_probe<ROWS, RUN, NS>, 128, smem));
    bps = occ;
    const double us = time_med([&] { k_probe<ROWS, RUN, NS><<<grid, 128, smem>>>(g_w, ROWB, g_sink); });
    const double gbs = (double)NROWS * ROWB / us / 1e3;
    printf("%5d rows x %5d B a stage  ring %d  %d blocks/SM  stage %6d B  %8.1f us  %7.1f GB/s  %5.1f%% of plain  cp.async\n",
           ROWS, RUN, NS, bps, ROWS * RUN, us, gbs, 100.0 * gbs / plain);
    CK(cudaFuncSetAttribute(k_probe_bulk<ROWS, RUN, NS>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, k_probe_bulk<ROWS, RUN, NS>, 128, smem));
    const double ub = time_med([&] { k_probe_bulk<ROWS, RUN, NS><<<grid, 128, smem>>>(g_w, ROWB, g_sink); });
    const double gbb = (double)NROWS * ROWB / ub / 1e3;
    printf("%5d rows x %5d B a stage  ring %d  %d blocks/SM  stage %6d B  %8.1f us  %7.1f GB/s  %5.1f%% of plain  bulk\n", ROWS,
           RUN, NS, occ, ROWS * RUN, ub, gbb, 100.0 * gbb / plain);
}

int main() {
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    g_flush_bytes = (size_t)prop.l2CacheSize * 4;
    CK(cudaMalloc(&g_w, NROWS * ROWB));
    CK(cudaMalloc(&g_flush, g_flush_bytes));
    CK(cudaMalloc(&g_sink, 4));
    CK(cudaMemset(g_w, 1, NROWS * ROWB));
    CK(cudaMemset(g_flush, 3, g_flush_bytes));
    const double us = time_med([&] { k_sum<<<prop.multiProcessorCount * 4, 512>>>((const uint4 *)g_w, NROWS * ROWB / 16, g_sink); });
    const double plain = (double)NROWS * ROWB / us / 1e3;
    printf("%s: plain read of %.0f MB: %.1f us, %.1f GB/s\n", prop.name, NROWS * ROWB / 1e6, us, plain);
    for (int bps = 2; bps <= 3; bps++) {
        probe<128, 136, 4>(plain, bps);
        probe<128, 144, 4>(plain, bps);
        probe<128, 144, 3>(plain, bps);
        probe<128, 272, 3>(plain, bps);
        probe<64, 272, 4>(plain, bps);
        probe<64, 544, 3>(plain, bps);
        probe<32, 544, 4>(plain, bps);
        probe<32, 1088, 3>(plain, bps);
        probe<16, 1088, 4>(plain, bps);
        probe<16, 2176, 3>(plain, bps);
        probe<8, 2176, 4>(plain, bps);
    }
    return 0;
}
