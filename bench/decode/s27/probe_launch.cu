/*
 * Session 27 probe: what an empty launch costs between two CUDA events after the
 * decode bench's L2 flush (a 264 x 512 read of 4x L2), by shared memory and kind.
 *   nvcc -O2 -std=c++17 -gencode=arch=compute_90a,code=sm_90a bench/decode/s27/probe_launch.cu -o probe_launch
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <algorithm>
#include <vector>

static __global__ void k_sum(const uint4 *p, long long n, unsigned *o) {
    unsigned s = 0;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        uint4 v = p[i];
        s ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (s == 0x12345678u) *o = s;
}
static __global__ void k_empty(int *o) {
    extern __shared__ int sm[];
    if (threadIdx.x == 999) o[0] = sm[0];
}

int main() {
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, 0);
    size_t fb = (size_t)prop.l2CacheSize * 4;
    void *flush;
    unsigned *sink;
    int *o;
    cudaMalloc(&flush, fb); cudaMemset(flush, 3, fb); cudaMalloc(&sink, 4); cudaMalloc(&o, 4);
    cudaFuncSetAttribute(k_empty, cudaFuncAttributeMaxDynamicSharedMemorySize, 110 * 1024);
    cudaEvent_t a, b;
    cudaEventCreate(&a); cudaEventCreate(&b);
    const int sms = prop.multiProcessorCount;
    struct V { const char *name; int blocks, smem, n, pre, coop; };
    V vs[] = {{"1 empty, 264 blocks, no smem", 2 * sms, 0, 1, 0, 0},
              {"1 empty, 264 blocks, 110 KB", 2 * sms, 110 * 1024, 1, 0, 0},
              {"1 empty, 264 x 110 KB after a 110 KB kernel", 2 * sms, 110 * 1024, 1, 1, 0},
              {"2 empty, 264 blocks, 110 KB", 2 * sms, 110 * 1024, 2, 0, 0},
              {"2 empty, 264 x 110 KB after a 110 KB kernel", 2 * sms, 110 * 1024, 2, 1, 0},
              {"1 cooperative, 264 x 110 KB", 2 * sms, 110 * 1024, 1, 0, 1},
              {"1 cooperative, 264 x 110 KB after a 110 KB kernel", 2 * sms, 110 * 1024, 1, 1, 1}};
    for (const V &v : vs) {
        std::vector<float> ts;
        for (int r = 0; r < 53; r++) {
            k_sum<<<264, 512>>>((const uint4 *)flush, (long long)(fb / 16), sink);
            if (v.pre) k_empty<<<1, 32, v.smem>>>(o);
            cudaEventRecord(a);
            for (int i = 0; i < v.n; i++) {
                if (v.coop) {
                    void *args[] = {&o};
                    cudaLaunchCooperativeKernel((void *)k_empty, v.blocks, 288, args, v.smem, 0);
                } else {
                    k_empty<<<v.blocks, 288, v.smem>>>(o);
                }
            }
            cudaEventRecord(b);
            cudaEventSynchronize(b);
            float ms;
            cudaEventElapsedTime(&ms, a, b);
            if (r >= 3) ts.push_back(ms * 1e3f);
        }
        std::sort(ts.begin(), ts.end());
        printf("probe: %-52s median %.2f us, min %.2f  (%s)\n", v.name, ts[ts.size() / 2], ts[0],
               cudaGetErrorString(cudaGetLastError()));
    }
    return 0;
}
