/*
 * NVRTC compilation with an on-disk cache, for the cuda-jit backend. NVRTC is
 * opened at run time (dlopen), so the library loads and runs where it is
 * missing; compiling needs no GPU. Plain C.
 */
#ifndef MOE_CUDA_JIT_H
#define MOE_CUDA_JIT_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 if NVRTC can be opened; otherwise 0 and why ("NVRTC not found
 * (libnvrtc.so.13, libnvrtc.so.12, libnvrtc.so)"). Thread-safe, cached. */
int moe__jit_available(char *why, size_t n);

/* NVRTC's version as major*1000 + minor*10 (13000 for 13.0), or 0. */
int moe__jit_nvrtc_version(void);

typedef struct moe__jit_result {
    void *cubin;        /* malloc'd; the caller frees it */
    size_t size;
    int cache_hit;      /* 1: read from the disk cache */
    double ms;          /* wall time of the compile or of the cache read */
    char cache_path[512]; /* "" when no cache directory could be used */
} moe__jit_result;

/*
 * Compiles src (a complete CUDA C translation unit, with no #include of files
 * outside it) for sm_<arch> (e.g. "90a", "80") with the extra options, or
 * reads the result from the cache. The cache key hashes the source, the
 * options, the arch, NVRTC's version and libmoe's version. The cache directory
 * is $MOE_CACHE_DIR, else $XDG_CACHE_HOME/libmoe, else $HOME/.cache/libmoe;
 * MOE_CACHE_DIR=off disables it. Entries are written to a temporary file and
 * renamed, so processes filling the cache at once never see half a file.
 * Errors (NVRTC missing, a compile error with its log) go to err.
 */
moe_status moe__jit_compile(const char *name, const char *src, const char *arch, const char *const *opts,
                            int n_opts, moe__jit_result *res, char *err, size_t err_n);

/* The layer-specific part of the cuda-jit program (jit_backend.cu). */
typedef struct moe__jit_spec {
    int64_t D, I, E, K;
    int act;          /* moe_act of GEMM 1 */
    int gated;        /* GEMM 1 reads gate and up */
    int dtype;        /* MOE_TYPE_BF16 or MOE_TYPE_F16: x, weights, out */
    int bias1, bias2; /* biases present: GEMM 1 bit 0 gate (or up when not gated), bit 1 up; GEMM 2 bit 0 down */
    int cm, cn;       /* sm90 cluster shape (1 or 2 each) */
    int c21;          /* with cm = cn = 1: also the 2 x 1 cluster kernels, for the T that take them */
    int bn2;          /* GEMM 2's n-tile in the kernels without clusters: 240, or 256 (also 0) */
    int bn1;          /* GEMM 1's n-tile in its BM 128 kernel without clusters: 240, or 256 (also 0) */
} moe__jit_spec;

/* src compiled with ptxas -v, uncached: the NVRTC log (malloc'd; the caller
 * frees it), where ptxas reports registers, spills and the wgmma pipelines it
 * had to serialize (tests/test_jit.c checks the GEMM kernels for those). */
moe_status moe__jit_ptxas_info(const char *name, const char *src, const char *arch, char **log, char *err,
                               size_t err_n);

/* The NVRTC program of the sm_90a kernels specialised to s: a prelude of
 * constants, the device headers embedded at build time, and two extern "C"
 * kernels, moe_jit_gemm1 (gate/up + activation) and moe_jit_gemm2 (down).
 * malloc'd; NULL when out of memory. */
char *moe__jit_sm90_source(const moe__jit_spec *s);

/* That program compiled for sm_90a, or read from the cache (moe__jit_compile). */
moe_status moe__jit_sm90_compile(const moe__jit_spec *s, moe__jit_result *res, char *err, size_t err_n);

/* The cache directory in use (created if needed), or NULL when caching is off
 * or no directory is usable. */
const char *moe__jit_cache_dir(void);

#ifdef __cplusplus
}
#endif

#endif
