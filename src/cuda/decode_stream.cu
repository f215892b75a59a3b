/*
 * Instances of the streaming small-batch kernels (decode_stream.cuh) for every
 * weight format, and their launch.
 */
#include "decode_stream.cuh"

int moe__sv_rec_bytes(int fmt) { return sv_qact_rb_of(fmt); }

int moe__sv_smem_bytes(const moe_sv_args *a) {
    int r, q, ac, ri, total;
    sv_layout(a, &r, &q, &ac, &ri, &total);
    return total;
}

template <int F, int PH, int NT, bool QM = false> static const void *sv_one(void) {
    return (const void *)k_sv<F, PH, NT, QM>;
}

/* pairs per block (a->NT, at most 8) -> the instance of capacity 1, 4 or 8 */
template <int F, int PH> static const void *sv_nt(const moe_sv_args *a) {
    if (PH == MOE_DEC_DOWN || a->NT <= 1) return sv_one<F, PH, 1>();
    if (a->NT <= 4) return sv_one<F, PH, 4>();
    if (a->NT <= 8) {
        if constexpr (sv_fmt_has_qmma(F) && PH != MOE_DEC_DOWN)
            if (a->qmma) return sv_one<F, PH, 8, true>();
        return sv_one<F, PH, 8>();
    }
    return NULL;
}

template <int F> static const void *sv_fmt(const moe_sv_args *a) {
    if (a->phase == MOE_DEC_GATE_UP) return sv_nt<F, MOE_DEC_GATE_UP>(a);
    if (a->phase == MOE_DEC_UP) return sv_nt<F, MOE_DEC_UP>(a);
    if (a->phase == MOE_SV_DOWN_E) return sv_nt<F, MOE_SV_DOWN_E>(a);
    return sv_nt<F, MOE_DEC_DOWN>(a);
}

template <int F, int PH1, int NT> static void *sv_fused_fn(void) { return (void *)k_svf<F, PH1, NT>; }

/* the single launch has the token-major down phase, phase 1 groups up to 4 pairs */
template <int F> static void *sv_fused_pick(int ph1, int nt) {
    if (nt > 4) return NULL;
    if (ph1 == MOE_DEC_GATE_UP) return nt <= 1 ? sv_fused_fn<F, MOE_DEC_GATE_UP, 1>() : sv_fused_fn<F, MOE_DEC_GATE_UP, 4>();
    return nt <= 1 ? sv_fused_fn<F, MOE_DEC_UP, 1>() : sv_fused_fn<F, MOE_DEC_UP, 4>();
}

#define SV_RB_AGREES(f) static_assert(f <= MOE_DF_F16 || sv_qact_rb_of(f) == sv_qact_rb<f>(), "record bytes of " #f);
SV_RB_AGREES(MOE_DF_Q4_0) SV_RB_AGREES(MOE_DF_Q8_0) SV_RB_AGREES(MOE_DF_MXFP4) SV_RB_AGREES(MOE_DF_Q2_K)
SV_RB_AGREES(MOE_DF_Q3_K) SV_RB_AGREES(MOE_DF_Q4_K) SV_RB_AGREES(MOE_DF_Q5_K) SV_RB_AGREES(MOE_DF_Q6_K)
#undef SV_RB_AGREES

#define SV_FORMATS(X) X(MOE_DF_BF16) X(MOE_DF_F16) X(MOE_DF_Q4_0) X(MOE_DF_Q8_0) X(MOE_DF_MXFP4) \
    X(MOE_DF_Q2_K) X(MOE_DF_Q3_K) X(MOE_DF_Q4_K) X(MOE_DF_Q5_K) X(MOE_DF_Q6_K)

/* the instance a launch of format fmt with arguments a runs, or NULL */
static const void *sv_pick(int fmt, const moe_sv_args *a) {
    switch (fmt) {
#define X(f) case f: return sv_fmt<f>(a);
        SV_FORMATS(X)
#undef X
    }
    return NULL;
}

cudaError_t moe__sv_launch(int fmt, const moe_sv_args *a, dim3 grid, cudaStream_t s) {
    const void *fn = sv_pick(fmt, a);
    if (!fn) return cudaErrorInvalidValue;
    cudaLaunchConfig_t cfg;
    cudaLaunchAttribute at;
    dk_launch_config(&cfg, &at, grid, MOE_SV_THREADS, (size_t)moe__sv_smem_bytes(a), s, a->pdl);
    void *args[] = {(void *)a};
    return cudaLaunchKernelExC(&cfg, fn, args);
}

int moe__sv_blocks_per_sm(int fmt, const moe_sv_args *a) {
    const void *fn = sv_pick(fmt, a);
    int n = 0;
    if (!fn || cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, fn, MOE_SV_THREADS, (size_t)moe__sv_smem_bytes(a)) !=
                   cudaSuccess) {
        cudaGetLastError();
        return -1;
    }
    return n;
}

template <int F> static cudaError_t sv_prep_fmt(int optin, int *max_dyn, int *max_static) {
    cudaError_t e = cudaSuccess;
    constexpr bool Q = sv_fmt_has_qmma(F);
    void *fns[] = {(void *)k_sv<F, MOE_DEC_GATE_UP, 1, false>, (void *)k_sv<F, MOE_DEC_GATE_UP, 4, false>,
                   (void *)k_sv<F, MOE_DEC_GATE_UP, 8, false>, (void *)k_sv<F, MOE_DEC_UP, 1, false>,
                   (void *)k_sv<F, MOE_DEC_UP, 4, false>,      (void *)k_sv<F, MOE_DEC_UP, 8, false>,
                   (void *)k_sv<F, MOE_DEC_DOWN, 1, false>,    (void *)k_sv<F, MOE_SV_DOWN_E, 1, false>,
                   (void *)k_sv<F, MOE_SV_DOWN_E, 4, false>,   (void *)k_sv<F, MOE_SV_DOWN_E, 8, false>,
                   (void *)k_svf<F, MOE_DEC_GATE_UP, 1>,       (void *)k_svf<F, MOE_DEC_GATE_UP, 4>,
                   (void *)k_svf<F, MOE_DEC_UP, 1>,            (void *)k_svf<F, MOE_DEC_UP, 4>,
                   /* the int8 tensor-core instances (the first three again where there are none) */
                   (void *)k_sv<F, MOE_DEC_GATE_UP, 8, Q>,     (void *)k_sv<F, MOE_DEC_UP, 8, Q>,
                   (void *)k_sv<F, MOE_SV_DOWN_E, 8, Q>};
    for (int i = 0; i < (int)(sizeof fns / sizeof fns[0]) && e == cudaSuccess; i++) {
        cudaFuncAttributes fa;
        e = cudaFuncGetAttributes(&fa, fns[i]);
        if (e != cudaSuccess) break;
        int dyn = optin - (int)fa.sharedSizeBytes;
        if (dyn < *max_dyn) *max_dyn = dyn;
        if ((int)fa.sharedSizeBytes > *max_static) *max_static = (int)fa.sharedSizeBytes;
        e = cudaFuncSetAttribute(fns[i], cudaFuncAttributeMaxDynamicSharedMemorySize, dyn);
    }
    return e;
}

cudaError_t moe__sv_prepare(int *max_dyn, int *max_static) {
    int dev = 0, optin = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
    *max_dyn = optin;
    *max_static = 0;
#define X(f) if (e == cudaSuccess) e = sv_prep_fmt<f>(optin, max_dyn, max_static);
    SV_FORMATS(X)
#undef X
    return e;
}

int moe__sv_fused_smem_bytes(const moe_sv_args *a1, const moe_sv_args *a2) { return sv_layout_fused(a1, a2).total; }

static void *sv_fused_lookup(int fmt, int ph1, int nt) {
    switch (fmt) {
#define X(f) case f: return sv_fused_pick<f>(ph1, nt);
        SV_FORMATS(X)
#undef X
    }
    return NULL;
}

cudaError_t moe__sv_fused_launch(int fmt, const moe_sv_args *a1, const moe_sv_args *a2, unsigned *gb, int grid,
                                 cudaStream_t s, int *resident) {
    void *fn = sv_fused_lookup(fmt, a1->phase, a1->NT);
    if (!fn) return cudaErrorInvalidValue;
    const int smem = moe__sv_fused_smem_bytes(a1, a2);
    int per_sm = 0, dev = 0, sms = 0;
    cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fn, MOE_SV_THREADS, (size_t)smem);
    if (e == cudaSuccess) e = cudaGetDevice(&dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    if (e != cudaSuccess) return e;
    *resident = per_sm * sms;
    if (grid > per_sm * sms) return cudaErrorCooperativeLaunchTooLarge;
    cudaLaunchConfig_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDim = dim3((unsigned)grid);
    cfg.blockDim = dim3(MOE_SV_THREADS);
    cfg.dynamicSmemBytes = (size_t)smem;
    cfg.stream = s;
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeCooperative;
    at[0].val.cooperative = 1;
    cfg.attrs = at;
    cfg.numAttrs = 1;
    void *args[] = {(void *)a1, (void *)a2, (void *)&gb};
    return cudaLaunchKernelExC(&cfg, fn, args);
}
