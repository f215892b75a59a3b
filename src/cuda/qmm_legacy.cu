/*
 * Quantised expert kernels for the 32-element GGUF blocks Q4_0, Q8_0 and
 * MXFP4 (backend "cuda-quant"): instances of k_dec (decode_kernels.h), weights
 * decoded to bf16 in registers, mma.sync bf16, launched by src/cuda/decode.cu.
 */
#include "decode_kernels.h"

cudaError_t moe__dec_launch_qlegacy(int fmt, int ph, int nt, const moe_dec_args *a, dim3 grid, cudaStream_t s) {
    switch (fmt) {
    case MOE_DF_Q4_0: return dk_launch_fmt<FmtQ4_0, __nv_bfloat16>(ph, nt, a, grid, s);
    case MOE_DF_Q8_0: return dk_launch_fmt<FmtQ8_0, __nv_bfloat16>(ph, nt, a, grid, s);
    case MOE_DF_MXFP4: return dk_launch_fmt<FmtMXFP4, __nv_bfloat16>(ph, nt, a, grid, s);
    }
    return cudaErrorInvalidValue;
}
