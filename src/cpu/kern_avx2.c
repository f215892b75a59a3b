/*
 * The AVX2 path of the CPU backend (FMA, F16C): the integer dot is
 * vpmaddubsw + vpmaddwd, exact while the unsigned side is <= 127 (true of
 * every 4-, 5- and 6-bit format); Q8_0 uses the sign trick instead.
 */
#define ISA_VAR moe__cpu_isa_avx2
#define ISA_NAME "avx2"
#include "kern_avx256.inc"

static inline vi dot_u8(vi acc, vi u, vi s) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
}
static inline vi vi_dpwssd(vi acc, vi a, vi b) { return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b)); }
static inline vi q8w_prep(vi w) { return w; }
static inline vi q8w_dot(const int32_t *corr, vi w, vi x) {
    (void)corr;
    return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w)),
                             _mm256_set1_epi16(1));
}

#include "kernels.inc"
