/*
 * bf16/f16 weights on the register-A grouped GEMM (gemm_sm90_qs.cuh): cuda-sm90's
 * GEMMs with the tokens as wgmma's N, 256 a tile (or 256 and an expert's last
 * MOE_CUDA_TILE_FOLD or fewer rows, the folded tiles; for experts of about 128
 * rows 128 a tile and such folds, BM 128 in the forward), and the weights as A,
 * 128 rows a tile, in registers by ldmatrix from a ring of 64-row TMA boxes
 * (128B-swizzled). An expert's tokens then share one pass over its weights
 * in tiles of up to 280 rows, where the token-major kernel (gemm_sm90.cuh,
 * BM 128) reads them again for every m-tile of 128: a layer whose experts
 * get 200-280 rows runs one pass instead of two or three (layer.cu
 * moe__cuda_sm90_tn, the rule and its measurements).
 *
 * The weights' maps: moe__cuda_weight_tmap with boxes of 64 rows (layer.cu
 * weight_tmaps, tm_dg64 / tm_du64 / tm_dd64); A (the tokens) from the permuted
 * copy xp (GEMM 1) or h (GEMM 2) through TMA, as for GGUF blocks. The weights'
 * dtype is the activations'.
 */
#include "gemm_sm90_qs.cuh"

#include <stdio.h>
#include <string.h>

#ifdef MOE_SM90A
/* A k-block of 64 rows: one box of 64 columns (128 bytes a row); the
 * consumers read it by ldmatrix (qs_tile), so frag is not used */
template <> struct Sm90Quant<SM90_QF_DENSE> {
    static constexpr int RB = 128;
    static __device__ __forceinline__ void load_g(uint32_t dst, const CUtensorMap *tm, const CUtensorMap *, int kb,
                                                  int row, int e, uint32_t bar, int, int, int, int) {
        tma_3d(dst, tm, kb * BK, row, e, bar);
    }
    static __device__ __forceinline__ uint32_t rk(int, int, int, int) { return 0; }
};
#endif
/* the staging of half a GGUF kernel's (QS_STGW) leaves room for 4 stages */
static_assert(QS_STAGES(SM90_QF_DENSE, 256) == 4 && QS_STAGES(SM90_QF_DENSE, QS_NTF) == 4,
              "the dense ring: 4 stages of 256 and of 280 tokens");

/* persistent: one CTA an SM, no more than there are units (qs_launch; clusters of 2 where g->qmc) */
template <int ACT, typename T>
static cudaError_t launch(const moe_cuda_gemm *g, const CUtensorMap *tm, const CUtensorMap *b0, const CUtensorMap *b1,
                          int sm_count, cudaStream_t s) {
    const int nout = g->mode == 1 && g->gated ? 64 : 128;
    QsX xm;
    memset(&xm, 0, sizeof xm);
    if (g->bm == 128) /* experts of about 128 rows: tiles of 128 tokens and folds */
        return qs_launch<ACT, T, SM90_QF_DENSE, QS_NTF128>(g, nout, sm_count, tm[0], *b0, *b1, tm[2], tm[3], tm[4], xm,
                                                           s);
    if (g->qfold)
        return qs_launch<ACT, T, SM90_QF_DENSE, QS_NTF>(g, nout, sm_count, tm[0], *b0, *b1, tm[2], tm[3], tm[4], xm, s);
    return qs_launch<ACT, T, SM90_QF_DENSE, 256>(g, nout, sm_count, tm[0], *b0, *b1, tm[2], tm[3], tm[4], xm, s);
}

template <typename T>
static cudaError_t dispatch(const moe_cuda_gemm *g, const CUtensorMap *tm, const CUtensorMap *b0,
                            const CUtensorMap *b1, int sm_count, cudaStream_t s) {
#define MOE_ACT_CASE_(a) \
    case a: return launch<a, T>(g, tm, b0, b1, sm_count, s);
    MOE_CUDA_ACT_DISPATCH(g, MOE_ACT_CASE_);
#undef MOE_ACT_CASE_
}

extern "C" cudaError_t moe__cuda_gemm_sm90_qd(const moe_cuda_gemm *g, const CUtensorMap *tmB0,
                                              const CUtensorMap *tmB1, int sm_count, cudaStream_t s, char *why,
                                              size_t n) {
    if ((g->bm != 256 && g->bm != 128) || g->cm != 1 || g->cn != 1 || g->gather || g->qlg || g->qa0) {
        snprintf(why, n,
                 "bf16/f16 weights on the register-A kernel run tiles of 256 or 128 tokens, 1 x 1, A through TMA; got BM %d "
                 "%dx%d%s%s",
                 g->bm, g->cm, g->cn, g->gather ? ", gather" : "", g->qlg || g->qa0 ? ", rows in groups" : "");
        return cudaErrorInvalidValue;
    }
    /* tm: A in boxes of 256 rows, the output map (unused here), and A in
     * boxes of 128, 64 and MOE_CUDA_TILE_FOLD rows for the tail and folded tiles */
    CUtensorMap tm[5];
    if (moe__cuda_sm90_tmap_a_out(g, tm, why, n) || qs_token_maps(g, tm, why, n)) return cudaErrorInvalidValue;
    return g->dtype == MOE_TYPE_F16 ? dispatch<__half>(g, tm, tmB0, tmB1, sm_count, s)
                                    : dispatch<__nv_bfloat16>(g, tm, tmB0, tmB1, sm_count, s);
}

template <typename T> static cudaError_t prepare_qd(void) {
    cudaError_t e = cudaSuccess;
#define MOE_ACT_PREP_(a)                                                                                               \
    if (!e)                                                                                                            \
        e = cudaFuncSetAttribute(gemm_sm90_qs<a, T, SM90_QF_DENSE, 256>, cudaFuncAttributeMaxDynamicSharedMemorySize, \
                                 QS_SMEM(SM90_QF_DENSE, 256));                                                         \
    if (!e)                                                                                                            \
        e = cudaFuncSetAttribute(gemm_sm90_qs<a, T, SM90_QF_DENSE, QS_NTF>,                                            \
                                 cudaFuncAttributeMaxDynamicSharedMemorySize, QS_SMEM(SM90_QF_DENSE, QS_NTF));     \
    if (!e)                                                                                                            \
        e = cudaFuncSetAttribute(gemm_sm90_qs<a, T, SM90_QF_DENSE, QS_NTF128>,                                         \
                                 cudaFuncAttributeMaxDynamicSharedMemorySize, QS_SMEM(SM90_QF_DENSE, QS_NTF128));
    MOE_CUDA_FOR_ACTS(MOE_ACT_PREP_)
#undef MOE_ACT_PREP_
    return e;
}

extern "C" cudaError_t moe__cuda_gemm_sm90_qd_prepare(void) {
    cudaError_t e = prepare_qd<__nv_bfloat16>();
    return e == cudaSuccess ? prepare_qd<__half>() : e;
}
