/*
 * Makes the context's CUDA device current for the length of a backend call
 * and restores the caller's device after, so that a library call never
 * leaves the caller on another device. Host code, shared by the CUDA backends.
 */
#ifndef MOE_CUDA_DEVICE_GUARD_H
#define MOE_CUDA_DEVICE_GUARD_H

#include <cuda_runtime.h>

typedef struct { int prev, changed; } moe_cuda_dev_guard;

static inline cudaError_t moe_cuda_dev_enter(int dev, moe_cuda_dev_guard *g) {
    g->changed = 0;
    cudaError_t e = cudaGetDevice(&g->prev);
    if (e != cudaSuccess) return e;
    if (g->prev != dev) {
        e = cudaSetDevice(dev);
        g->changed = e == cudaSuccess;
    }
    return e;
}

static inline void moe_cuda_dev_leave(moe_cuda_dev_guard *g) {
    if (g->changed) cudaSetDevice(g->prev);
}

#endif
