/*
 * The CUDA backends as src/backends.c sees them: the backend objects, in order
 * of preference, and the device router behind moe_route_topk on a CUDA
 * context. Plain C: no CUDA types here.
 */
#ifndef MOE_CUDA_BACKENDS_H
#define MOE_CUDA_BACKENDS_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* "cuda-jit": cuda-sm90 with its GEMMs compiled by NVRTC at layer creation,
 * specialised to the layer's shape (src/cuda/jit_backend.cu). */
extern const moe__backend moe__backend_cuda_jit;
/* "cuda-sm90": Hopper (sm_90a), TMA + wgmma, warp-specialised, persistent. */
extern const moe__backend moe__backend_cuda_sm90;
/* "cuda-sm80": Ampere and later, cp.async + mma.sync. */
extern const moe__backend moe__backend_cuda_sm80;

/* "cuda-decode" (bf16/f16, small T; larger T handed to sm90/sm80) and
 * "cuda-quant" (GGUF blocks): src/cuda/decode.cu. */
extern const moe__backend moe__backend_cuda_decode;
extern const moe__backend moe__backend_cuda_quant;

#define MOE_CUDA_BACKEND_LIST                                                                                  \
    &moe__backend_cuda_decode, &moe__backend_cuda_quant, &moe__backend_cuda_jit, &moe__backend_cuda_sm90,     \
        &moe__backend_cuda_sm80,

/* A cuda-sm90 / cuda-jit / cuda-sm80 layer's weights moved (cuda-quant's
 * prefill dequantises into the workspace): rebuilds what depends on their
 * addresses (the TMA descriptors). */
moe_status moe__cuda_rebind_weights(moe_layer *L);

/* Makes a cuda-sm90 layer's GEMMs read GGUF blocks instead of its bf16/f16
 * weights (cuda-quant's prefill; gemm_sm90_q.cu): gate/up in format fmt1,
 * down in fmt2 (decode.h MOE_DF_Q8_0 or MOE_DF_Q4_K), each a device tensor
 * given by its data and byte strides (w[0] the gate, NULL data when not gated;
 * w[1] up; w[2] down), row_bytes the bytes of one row. MOE_OK, or an error in
 * L's message (unsupported format, strides or addresses not multiples of 16,
 * not the built-in sm90 kernels), the layer unchanged. */
typedef struct {
    const void *data;
    int64_t se, sn, row_bytes;
} moe__cuda_qrows;
moe_status moe__cuda_sm90_quant(moe_layer *L, int fmt1, int fmt2, const moe__cuda_qrows w[3]);
/* gemm_sm90_q.cu: the raw box width in bytes of a format the GEMMs decode (MOE_DF_Q8_0, Q4_K, Q5_K, Q6_K,
 * MXFP4), else 0; the width of its second map (Q6_K), else 0 */
int moe__cuda_quant_box(int fmt);
int moe__cuda_quant_box2(int fmt);

/* The forward of a cuda-sm90 / cuda-jit / cuda-sm80 layer with its GEMMs run
 * per group of `group` experts (routing and combine once): before each group
 * [e0, e0 + ne) prep(pctx, e0, ne) puts those experts' weights, numbered from
 * 0, where the layer's weights point (stream-ordered; the layer's weights
 * then hold one group). cuda-quant's prefill dequantises into them. */
typedef moe_status (*moe__cuda_group_prep)(void *pctx, int64_t e0, int64_t ne);
moe_status moe__cuda_forward_grouped(moe_layer *L, const moe__fwd *a, int64_t group, moe__cuda_group_prep prep,
                                     void *pctx);

/* moe_route_topk on a CUDA context: the algorithm of src/core/route.c on the
 * device, asynchronous on the context's stream. logits [T, E] f32, ids [T, K]
 * int32, w [T, K] f32, all device memory. Parameters are checked by the caller. */
moe_status moe__cuda_route_topk(moe_ctx *ctx, const moe_route_params *p, int64_t T, const float *logits,
                                int32_t *ids, float *w);

#ifdef __cplusplus
}
#endif

#endif
