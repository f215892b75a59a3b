/*
 * moe_route_topk on a CUDA context: src/core/route.c's algorithm on the
 * device (softmax or sigmoid scores in double, a selection-only score bias,
 * grouped top-k, renormalisation, routed scaling; NaN ranks last, ties go to
 * the lower index). One warp per token; the token's scores live in shared
 * memory, so any E works (up to what shared memory holds: about 13000).
 * Results equal the host's: the same comparisons, the same slot-order sum;
 * only the softmax denominator is summed in another order (double).
 */
#include "common.cuh"
#include "cuda_backends.h"

#include <math.h>

static __device__ __forceinline__ bool before(double a, int ia, double b, int ib) {
    if (isnan(a)) return isnan(b) ? ia < ib : false;
    if (isnan(b)) return true;
    return a > b || (a == b && ia < ib);
}

/* Every lane ends with the best (v, i) of the warp; i < 0 means none. */
static __device__ __forceinline__ void warp_best(double &v, int &i) {
    for (int o = 16; o; o >>= 1) {
        double ov = __shfl_xor_sync(0xffffffffu, v, o);
        int oi = __shfl_xor_sync(0xffffffffu, i, o);
        if (oi >= 0 && (i < 0 || before(ov, oi, v, i))) { v = ov; i = oi; }
    }
}

static __host__ __device__ size_t per_warp_bytes(int E, int G) {
    size_t b = 16 * (size_t)E + 8 * (size_t)(G > 1 ? G : 1) + (size_t)E;
    return (b + 15) & ~(size_t)15;
}

static __global__ void k_route(const float *__restrict__ logits, int T, int E, int K, int sigmoid, int renorm,
                               const float *__restrict__ bias, int G, int topk_group, float scaling,
                               int32_t *__restrict__ ids, float *__restrict__ w) {
    extern __shared__ double sm[];
    const int wpb = blockDim.x >> 5, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int t = blockIdx.x * wpb + warp;
    if (t >= T) return; /* no block-wide barrier below */
    double *score = (double *)((char *)sm + warp * per_warp_bytes(E, G));
    double *sel = score + E, *gscore = sel + E;
    unsigned char *allowed = (unsigned char *)(gscore + (G > 1 ? G : 1));
    const float *lg = logits + (int64_t)t * E;
    if (!sigmoid) {
        double m = -INFINITY, s = 0;
        for (int e = lane; e < E; e += 32) m = fmax(m, (double)lg[e]);
        for (int o = 16; o; o >>= 1) m = fmax(m, __shfl_xor_sync(0xffffffffu, m, o));
        for (int e = lane; e < E; e += 32) s += score[e] = exp((double)lg[e] - m);
        for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        for (int e = lane; e < E; e += 32) score[e] /= s;
    } else {
        for (int e = lane; e < E; e += 32) score[e] = 1.0 / (1.0 + exp(-(double)lg[e]));
    }
    for (int e = lane; e < E; e += 32) {
        sel[e] = score[e] + (bias ? (double)bias[e] : 0.0);
        allowed[e] = G > 1 ? 0 : 1;
    }
    __syncwarp();
    if (G > 1) {
        const int gs = E / G;
        for (int g = lane; g < G; g += 32) {
            double b1 = NAN, b2 = NAN;
            int i1 = -1, i2 = -1;
            for (int e = g * gs; e < (g + 1) * gs; e++) {
                if (i1 < 0 || before(sel[e], e, b1, i1)) { b2 = b1; i2 = i1; b1 = sel[e]; i1 = e; }
                else if (i2 < 0 || before(sel[e], e, b2, i2)) { b2 = sel[e]; i2 = e; }
            }
            gscore[g] = bias && gs >= 2 ? b1 + b2 : b1;
        }
        __syncwarp();
        for (int j = 0; j < topk_group; j++) {
            double bv = 0;
            int bi = -1;
            for (int g = lane; g < G; g += 32)
                if (gscore[g] != -INFINITY && (bi < 0 || before(gscore[g], g, bv, bi))) { bv = gscore[g]; bi = g; }
            warp_best(bv, bi);
            if (bi < 0) break;
            for (int e = bi * gs + lane; e < (bi + 1) * gs; e += 32) allowed[e] = 1;
            __syncwarp();
            if (lane == 0) gscore[bi] = -INFINITY; /* taken */
            __syncwarp();
        }
    }
    __syncwarp();
    double sum = 0;
    int32_t *tid = ids + (int64_t)t * K;
    for (int k = 0; k < K; k++) {
        double bv = 0;
        int bi = -1;
        for (int e = lane; e < E; e += 32)
            if (allowed[e] && (bi < 0 || before(sel[e], e, bv, bi))) { bv = sel[e]; bi = e; }
        warp_best(bv, bi);
        if (lane == 0) {
            tid[k] = bi;
            if (bi >= 0) {
                allowed[bi] = 0;
                sum += score[bi];
            }
        }
        __syncwarp();
    }
    if (lane == 0)
        for (int k = 0; k < K; k++) {
            double v = tid[k] >= 0 ? score[tid[k]] : 0.0;
            if (renorm) v /= sum;
            w[(int64_t)t * K + k] = (float)(v * scaling);
        }
}

extern "C" moe_status moe__cuda_route_topk(moe_ctx *ctx, const moe_route_params *p, int64_t T, const float *logits,
                                           int32_t *ids, float *w) {
    int E = (int)p->E, G = p->n_group > 1 ? (int)p->n_group : 1;
    size_t per = per_warp_bytes(E, G);
    int wpb = (int)(48 * 1024 / per);
    if (wpb > 8) wpb = 8;
    if (wpb < 1) wpb = 1;
    size_t smem = per * (size_t)wpb;
    int prev = 0, dev = ctx->p.cuda_device;
    cudaError_t e = cudaGetDevice(&prev);
    if (e == cudaSuccess && prev != dev) e = cudaSetDevice(dev);
    if (e != cudaSuccess)
        return moe__ctx_error(ctx, MOE_ERR_NO_DEVICE, "moe_route_topk: CUDA device %d: %s", dev, cudaGetErrorString(e));
    moe_status st = MOE_OK;
    if (smem > 48 * 1024) {
        int optin = 0;
        cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
        if (smem > (size_t)optin) {
            st = moe__ctx_error(ctx, MOE_ERR_UNSUPPORTED,
                                "moe_route_topk: E = %d needs %zu bytes of shared memory per token, more than the %d "
                                "a block can have",
                                E, smem, optin);
            goto out;
        }
        e = cudaFuncSetAttribute(k_route, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    }
    if (e == cudaSuccess) {
        unsigned blocks = (unsigned)((T + wpb - 1) / wpb);
        k_route<<<blocks, 32 * wpb, smem, (cudaStream_t)ctx->p.cuda_stream>>>(
            logits, (int)T, E, (int)p->K, p->score == MOE_SCORE_SIGMOID, p->renormalize, p->score_bias, G,
            (int)p->topk_group, p->routed_scaling, ids, w);
        e = cudaGetLastError();
    }
    if (e != cudaSuccess)
        st = moe__ctx_error(ctx, MOE_ERR_CUDA, "moe_route_topk: kernel launch: %s", cudaGetErrorString(e));
out:
    if (prev != dev) cudaSetDevice(prev);
    return st;
}
