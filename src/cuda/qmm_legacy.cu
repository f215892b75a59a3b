/*
 * Quantised expert kernels for the 32-element GGUF blocks Q4_0, Q8_0 and
 * MXFP4 (backend "cuda-quant"): instances of k_dec (decode_kernels.h), weights
 * decoded to bf16 in registers, mma.sync bf16, launched by src/cuda/decode.cu.
 */
#include "decode_kernels.h"

static_assert(FmtQ4_0::NP == moe__dec_pieces(MOE_DF_Q4_0) && FmtQ8_0::NP == moe__dec_pieces(MOE_DF_Q8_0) &&
                  FmtMXFP4::NP == moe__dec_pieces(MOE_DF_MXFP4),
              "FM::NP");

const void *moe__dec_kernel_qlegacy(int fmt, int ph, int nt, int ring) {
    switch (fmt) {
    case MOE_DF_Q4_0: return dk_kernel_fmt<FmtQ4_0, __nv_bfloat16>(ph, nt, ring);
    case MOE_DF_Q8_0: return dk_kernel_fmt<FmtQ8_0, __nv_bfloat16>(ph, nt, ring);
    case MOE_DF_MXFP4: return dk_kernel_fmt<FmtMXFP4, __nv_bfloat16>(ph, nt, ring);
    }
    return NULL;
}
