/*
 * Session 21 (no GPU): the error of gemm_sm90_q.cu's lab variant QS_Q4K_H2 on bf16,
 * a Q4_K weight as fma.rn.bf16x2(q, bf16(dl), -bf16(ml)), against the exact decoder
 * (dl q - ml in f32, rounded once to bf16): how many weights differ, the worst and
 * rms error in units of max(|w|, dl), on 2M random (d, dmin, scale, min).
 *   gcc -O2 -o check_q4k_h2 check_q4k_h2.c -lm && ./check_q4k_h2
 * Result (session 21): 34.9% differ, worst 0.111, rms 0.0046 against the exact
 * decoder's 0.0016 (the worst where ml is many times dl: its bf16 rounding).
 */
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <math.h>
#include <stdlib.h>
static float h2f(uint16_t h) { int s = h >> 15, e = (h >> 10) & 31, m = h & 1023; float v;
    if (e == 0) v = ldexpf((float)m, -24); else v = ldexpf((float)(m | 1024), e - 25); return s ? -v : v; }
static float asf(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static uint32_t asu(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float bf(double x) { /* round to bf16 (RNE) through f32 first is double rounding: do it from double */
    float f = (float)x; /* exact enough: x has <= 24 significant bits in our uses? not always */
    uint32_t u = asu(f); u = (u + 0x7fff + ((u >> 16) & 1)) & 0xffff0000u; return asf(u); }
int main(void) {
    srand(11);
    long n = 0, diff = 0; double worst = 0, worst_ulp = 0, sumsq = 0, sumsq0 = 0;
    for (long t = 0; t < 2000000; t++) {
        uint16_t hd = (uint16_t)(0x1000 + rand() % 0x2000), hm = (uint16_t)(0x1000 + rand() % 0x2000);
        const float dl = h2f(hd) * (float)(1 + (rand() & 62)), ml = h2f(hm) * (float)(rand() & 63);
        const float dlb = bf(dl), mlb = bf(ml);
        for (int q = 0; q < 16; q++) {
            const double ex = (double)dl * q - (double)ml;
            const float w_old = bf(fmaf(dl, (float)q, -ml));           /* the exact decoder, rounded once to bf16 */
            const float w_new = bf((double)q * dlb - (double)mlb);     /* fma.rn.bf16x2(q, bf16(dl), -bf16(ml)) */
            n++;
            if (w_new != w_old) diff++;
            double den = fabs(ex) > dl ? fabs(ex) : dl;
            double e = fabs(w_new - ex) / den, e0 = fabs(w_old - ex) / den;
            if (e > worst) worst = e;
            sumsq += e * e; sumsq0 += e0 * e0;
        }
    }
    printf("Q4_K bf16x2 FMA: %.2f%% of weights differ from the exact decoder's bf16; worst error %.3g of max(|w|, dl); rms %.3g (exact decoder's rms %.3g)\n",
           100.0 * diff / n, worst, sqrt(sumsq / n), sqrt(sumsq0 / n));
    return 0;
}
