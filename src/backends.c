/*
 * The backends compiled into this build, in order of preference: automatic
 * selection (src/core/layer.c) takes the first that can run a layer. The
 * reference comes last: it runs everything on the CPU, slowly.
 */
#include "core.h"
#include "ref.h"

#ifdef MOE_WITH_CPU
extern const moe__backend moe__backend_cpu;
#endif
#ifdef MOE_WITH_CUDA
#include "cuda/cuda_backends.h"
#endif

const moe__backend *const moe__backends[] = {
#ifdef MOE_WITH_CUDA
    MOE_CUDA_BACKEND_LIST
#endif
#ifdef MOE_WITH_CPU
    &moe__backend_cpu,
#endif
    &moe__backend_ref,
};

const int moe__n_backends = (int)(sizeof moe__backends / sizeof moe__backends[0]);

#ifdef MOE_WITH_CUDA
moe_status (*const moe__route_cuda)(moe_ctx *, const moe_route_params *, int64_t, const float *, int32_t *,
                                    float *) = moe__cuda_route_topk;
#else
moe_status (*const moe__route_cuda)(moe_ctx *, const moe_route_params *, int64_t, const float *, int32_t *,
                                    float *) = NULL;
#endif
