/*
 * Decode expert kernels for bf16 and f16 weights (backend "cuda-decode"):
 * instances of k_dec (decode_kernels.h), launched by src/cuda/decode.cu.
 */
#include "decode_kernels.h"

cudaError_t moe__dec_launch_dense(int fmt, int ph, int nt, const moe_dec_args *a, dim3 grid, cudaStream_t s) {
    switch (fmt) {
    case MOE_DF_BF16: return dk_launch_fmt<FmtDense, __nv_bfloat16>(ph, nt, a, grid, s);
    case MOE_DF_F16: return dk_launch_fmt<FmtDense, __half>(ph, nt, a, grid, s);
    }
    return cudaErrorInvalidValue;
}
