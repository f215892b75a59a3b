/*
 * Decode expert kernels for bf16 and f16 weights (backend "cuda-decode"):
 * instances of k_dec_ring (decode_kernels.h), launched by src/cuda/decode.cu.
 */
#include "decode_kernels.h"

static_assert(FmtDense::NP == moe__dec_pieces(MOE_DF_BF16) && FmtDense::NP == moe__dec_pieces(MOE_DF_F16),
              "FmtDense::NP");

const void *moe__dec_kernel_dense(int fmt, int ph, int nt, int ring) {
    switch (fmt) {
    case MOE_DF_BF16: return dk_kernel_fmt<FmtDense, __nv_bfloat16>(ph, nt, ring);
    case MOE_DF_F16: return dk_kernel_fmt<FmtDense, __half>(ph, nt, ring);
    }
    return NULL;
}
