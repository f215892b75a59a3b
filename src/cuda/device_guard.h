/*
 * Makes the context's CUDA device current for the length of a backend call
 * and restores the caller's device after, so that a library call never
 * leaves the caller on another device; and the check of a CUDA runtime call
 * inside a backend callback. Host code, shared by the CUDA backends.
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

/* Checks a CUDA runtime call in a function that has a layer L, a moe_status
 * st and a label out: on failure, L's message names the call, the error and
 * where, st = MOE_ERR_CUDA, and control goes to out. */
#define MOE_CUDA_CK(call)                                                                                     \
    do {                                                                                                      \
        cudaError_t e_ = (call);                                                                              \
        if (e_ != cudaSuccess) {                                                                              \
            st = moe__layer_error(L, MOE_ERR_CUDA, "%s: %s (%s:%d)", #call, cudaGetErrorString(e_), __FILE__, \
                                  __LINE__);                                                                  \
            goto out;                                                                                         \
        }                                                                                                     \
    } while (0)

#endif
