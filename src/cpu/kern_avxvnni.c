/*
 * The AVX-VNNI path of the CPU backend: 256-bit vpdpbusd, no AVX-512.
 * Chosen by src/cpu/cpu.c when cpuid reports avxvnni but not the AVX-512 set.
 */
#define ISA_VAR moe__cpu_isa_avxvnni
#define ISA_NAME "avxvnni"
#include "kern_avx256.inc"

static inline vi dot_u8(vi acc, vi u, vi s) { return _mm256_dpbusd_avx_epi32(acc, u, s); }
static inline vi vi_dpwssd(vi acc, vi a, vi b) { return _mm256_dpwssd_avx_epi32(acc, a, b); }
static inline vi q8w_prep(vi w) { return _mm256_xor_si256(w, _mm256_set1_epi8((char)0x80)); }
static inline vi q8w_dot(const int32_t *corr, vi wp, vi x) { return _mm256_dpbusd_avx_epi32(vi_loadu(corr), wp, x); }

#include "kernels.inc"
