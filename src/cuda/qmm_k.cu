/*
 * Quantised expert kernels for the GGUF K-quants Q2_K .. Q6_K (backend
 * "cuda-quant"): one 256-element super-block per chunk decoded to bf16 in
 * registers, mma.sync bf16. Q4_K and Q5_K (16-byte aligned blocks) stream
 * through k_dec_ring's cp.async ring; Q2_K, Q3_K, Q6_K use k_dec.
 */
#include "decode_kernels.h"

static_assert(FmtQ4_K::NP == moe__dec_pieces(MOE_DF_Q4_K) && FmtQ5_K::NP == moe__dec_pieces(MOE_DF_Q5_K) &&
                  FmtQ2_K::NP == moe__dec_pieces(MOE_DF_Q2_K) && FmtQ3_K::NP == moe__dec_pieces(MOE_DF_Q3_K) &&
                  FmtQ6_K::NP == moe__dec_pieces(MOE_DF_Q6_K),
              "FM::NP");

const void *moe__dec_kernel_qk(int fmt, int ph, int nt, int ring) {
    switch (fmt) {
    case MOE_DF_Q2_K: return dk_kernel_fmt<FmtQ2_K, __nv_bfloat16>(ph, nt, ring);
    case MOE_DF_Q3_K: return dk_kernel_fmt<FmtQ3_K, __nv_bfloat16>(ph, nt, ring);
    case MOE_DF_Q4_K: return dk_kernel_fmt<FmtQ4_K, __nv_bfloat16>(ph, nt, ring);
    case MOE_DF_Q5_K: return dk_kernel_fmt<FmtQ5_K, __nv_bfloat16>(ph, nt, ring);
    case MOE_DF_Q6_K: return dk_kernel_fmt<FmtQ6_K, __nv_bfloat16>(ph, nt, ring);
    }
    return NULL;
}
