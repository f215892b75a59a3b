/*
 * Quantised expert kernels for the GGUF K-quants Q2_K .. Q6_K (backend
 * "cuda-quant"): instances of k_dec (decode_kernels.h), one 256-element
 * super-block per chunk decoded to bf16 in registers, mma.sync bf16.
 */
#include "decode_kernels.h"

cudaError_t moe__dec_launch_qk(int fmt, int ph, int nt, const moe_dec_args *a, dim3 grid, cudaStream_t s) {
    switch (fmt) {
    case MOE_DF_Q2_K: return dk_launch_fmt<FmtQ2_K, __nv_bfloat16>(ph, nt, a, grid, s);
    case MOE_DF_Q3_K: return dk_launch_fmt<FmtQ3_K, __nv_bfloat16>(ph, nt, a, grid, s);
    case MOE_DF_Q4_K: return dk_launch_fmt<FmtQ4_K, __nv_bfloat16>(ph, nt, a, grid, s);
    case MOE_DF_Q5_K: return dk_launch_fmt<FmtQ5_K, __nv_bfloat16>(ph, nt, a, grid, s);
    case MOE_DF_Q6_K: return dk_launch_fmt<FmtQ6_K, __nv_bfloat16>(ph, nt, a, grid, s);
    }
    return cudaErrorInvalidValue;
}
