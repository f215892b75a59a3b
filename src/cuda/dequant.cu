/*
 * GGUF blocks to bf16/f16 rows: cuda-quant's prefill path (decode.cu,
 * qp_forward) dequantises the weights of the experts a forward uses into the
 * workspace and runs the grouped GEMM backend on them. The format decoders
 * are the decode kernel's (decode_kernels.h: checked bit for bit against
 * src/quant), so a weight becomes exactly the value the mma kernels feed the
 * tensor cores: the GGUF f32 value rounded to the mma type.
 */
#include "decode_kernels.h"

/* A warp takes 8 (expert, row, chunk of FM::CW = 256 columns) units at a
 * time, one per group of 4 lanes: lane t decodes its S steps of 8 columns
 * (the format's xcol layout, as the mma kernels) into shared memory, then the
 * warp writes each unit's 512 bytes with one fully coalesced 16-byte store per
 * lane. (Storing straight from the decode layout put the 32 lanes of a store
 * on 32 different 128-byte lines: 2.1 ms for qwen3's 1.2 GB instead of ~0.5.)
 * Units of experts whose used[] flag is 0 are skipped. */
template <typename FM, typename MT>
static __global__ void __launch_bounds__(256) k_dequant(const uint8_t *__restrict__ w, int64_t se, int64_t sn, int E,
                                                        int N, int C, int nch, const unsigned char *__restrict__ used,
                                                        MT *__restrict__ dst) {
    static_assert(FM::CW == 256 && FM::S == 8, "a unit is 256 columns, 32 pieces of 8");
    __shared__ uint4 stage[8][8][33]; /* [warp][unit][piece], padded against bank conflicts */
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    const int units = E * N * nch; /* < 2^31: checked by the host */
    const int step = gridDim.x * 64;
    for (int base = (blockIdx.x * 8 + wid) * 8; base < units; base += step) {
        int u = base + g;
        bool live = u < units;
        int e = 0, n = 0, ch = 0;
        if (live) {
            int en = u / nch;
            ch = u - en * nch;
            e = en / N;
            n = en - e * N;
            live = !used || used[e];
        }
        if (live) {
            typename FM::Raw r;
            typename FM::Dec dc;
            FM::load(r, w + e * se + n * sn, ch, t, C, true);
            FM::prep(r, t, dc);
#pragma unroll
            for (int s = 0; s < FM::S; s++) stage[wid][g][FM::xcol(t, s) >> 3] = dk_frag<FM, MT>(r, dc, t, s);
        }
        __syncwarp();
#pragma unroll
        for (int k = 0; k < 8; k++) {
            const int uk = __shfl_sync(0xffffffffu, live ? u : -1, 4 * k);
            if (uk < 0) continue;
            const int en = uk / nch, chk = uk - en * nch, col = chk * FM::CW + 8 * lane;
            if (col < C) *(uint4 *)(dst + (int64_t)en * C + col) = stage[wid][k][lane];
        }
        __syncwarp();
    }
}

template <typename FM>
static cudaError_t launch_fmt(int out_f16, const uint8_t *w, int64_t se, int64_t sn, int E, int N, int C,
                              const unsigned char *used, void *dst, int sm_count, cudaStream_t s) {
    const int nch = (C + FM::CW - 1) / FM::CW;
    if ((int64_t)E * N * nch >= ((int64_t)1 << 31)) return cudaErrorInvalidValue;
    const int64_t threads = (int64_t)E * N * nch * 4;
    int64_t blocks = (threads + 255) / 256, most = (int64_t)sm_count * 4; /* 4 x 33 KB of staging per SM */
    if (blocks > most) blocks = most;
    if (blocks < 1) blocks = 1;
    if (out_f16)
        k_dequant<FM, __half><<<(unsigned)blocks, 256, 0, s>>>(w, se, sn, E, N, C, nch, used, (__half *)dst);
    else
        k_dequant<FM, __nv_bfloat16><<<(unsigned)blocks, 256, 0, s>>>(w, se, sn, E, N, C, nch, used,
                                                                      (__nv_bfloat16 *)dst);
    return cudaGetLastError();
}

cudaError_t moe__dec_dequant(int fmt, int out_f16, const uint8_t *w, int64_t se, int64_t sn, int E, int N, int C,
                             const unsigned char *used, void *dst, int sm_count, cudaStream_t s) {
    switch (fmt) {
    case MOE_DF_Q4_0: return launch_fmt<FmtQ4_0>(out_f16, w, se, sn, E, N, C, used, dst, sm_count, s);
    case MOE_DF_Q8_0: return launch_fmt<FmtQ8_0>(out_f16, w, se, sn, E, N, C, used, dst, sm_count, s);
    case MOE_DF_MXFP4: return launch_fmt<FmtMXFP4>(out_f16, w, se, sn, E, N, C, used, dst, sm_count, s);
    case MOE_DF_Q2_K: return launch_fmt<FmtQ2_K>(out_f16, w, se, sn, E, N, C, used, dst, sm_count, s);
    case MOE_DF_Q3_K: return launch_fmt<FmtQ3_K>(out_f16, w, se, sn, E, N, C, used, dst, sm_count, s);
    case MOE_DF_Q4_K: return launch_fmt<FmtQ4_K>(out_f16, w, se, sn, E, N, C, used, dst, sm_count, s);
    case MOE_DF_Q5_K: return launch_fmt<FmtQ5_K>(out_f16, w, se, sn, E, N, C, used, dst, sm_count, s);
    case MOE_DF_Q6_K: return launch_fmt<FmtQ6_K>(out_f16, w, se, sn, E, N, C, used, dst, sm_count, s);
    }
    return cudaErrorInvalidValue;
}

/* used[e] = 1 for every expert an in-range id routes to (used zeroed first). */
static __global__ void k_mark_used(const int32_t *__restrict__ ids, int TK, int E, unsigned char *__restrict__ used) {
    int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= TK) return;
    int e = ids[p];
    if ((unsigned)e < (unsigned)E) used[e] = 1;
}

cudaError_t moe__dec_mark_used(const int32_t *ids, int TK, int E, unsigned char *used, cudaStream_t s) {
    cudaError_t e = cudaMemsetAsync(used, 0, (size_t)E, s);
    if (e != cudaSuccess) return e;
    if (TK > 0) k_mark_used<<<(unsigned)((TK + 255) / 256), 256, 0, s>>>(ids, TK, E, used);
    return cudaGetLastError();
}
