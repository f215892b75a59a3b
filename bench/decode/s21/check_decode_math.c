/*
 * Session 21 (no GPU in the session): a host check of gemm_sm90_q.cu's decoding
 * arithmetic, the byte permutes (__byte_perm modelled bit for bit) and the one
 * FFMA a weight:
 *   Q8_0: fma(2^15 + (q ^ 0x80), d, -32896 d) == d * q for every finite f16 d,
 *         every q and every byte position (exhaustive);
 *   Q4_K: fma(128 + q, dl, -(128 dl + ml)) against dl q - ml, on 2M random
 *         (d, dmin, scale, min): the worst error in units of 128 dl + ml and
 *         how often the bf16 weight differs from the one-rounding decoder's;
 *   Q4_K's scales and mins (Sm90Quant<Q4_K>::prep) against get_scale_min_k4.
 *   gcc -O2 -o check_decode_math check_decode_math.c -lm && ./check_decode_math
 */
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <math.h>
#include <stdlib.h>
static float h2f(uint16_t h) { /* exact f16 -> f32 */
    int s = h >> 15, e = (h >> 10) & 31, m = h & 1023; float v;
    if (e == 0) v = ldexpf((float)m, -24); else if (e == 31) v = m ? NAN : INFINITY; else v = ldexpf((float)(m | 1024), e - 25);
    return s ? -v : v;
}
static float asf(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static uint32_t asu(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static uint32_t perm(uint32_t x, uint32_t y, uint32_t s) { /* __byte_perm, selector nibbles 0-7 */
    uint64_t v = ((uint64_t)y << 32) | x; uint32_t r = 0;
    for (int i = 0; i < 4; i++) r |= (uint32_t)((v >> (8 * ((s >> (4 * i)) & 7))) & 0xff) << (8 * i);
    return r;
}
static uint16_t bf16(float f) { uint32_t u = asu(f); return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16); }
int main(void) {
    long bad = 0, n = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        if (((h >> 10) & 31) == 31) continue;
        const float d = h2f((uint16_t)h), c = -32896.0f * d;
        if ((double)c != -32896.0 * (double)d) { printf("c inexact at %04x\n", h); return 1; }
        for (int q = -128; q < 128; q++) {
            const uint32_t u = ((uint32_t)(uint8_t)q ^ 0x80u) * 0x01010101u; /* all 4 bytes */
            for (int j = 0; j < 4; j++) {
                const float f = asf(perm(u, 0x47000000u, 0x7404 | (j << 4)));
                const float w = fmaf(f, d, c), ref = d * (float)q;
                n++;
                if (!(w == ref) || (ref != 0 && asu(w) != asu(ref))) bad++;
            }
        }
    }
    printf("Q8_0: %ld of %ld (d, q, byte) differ from d * q\n", bad, n);
    /* Q4_K: dl = d * sc, ml = dmin * m (f32, as FmtQ4_K::prep), q 0..15 */
    srand(7);
    long diff = 0, m2 = 0; double worst = 0;
    for (long t = 0; t < 2000000; t++) {
        uint16_t hd = (uint16_t)(rand() & 0x7bff), hm = (uint16_t)(rand() & 0x7bff);
        if (t & 1) { hd = (uint16_t)(0x1000 + rand() % 0x2000); hm = (uint16_t)(0x1000 + rand() % 0x2000); } /* typical ranges */
        const float dl = h2f(hd) * (float)(rand() & 63), ml = h2f(hm) * (float)(rand() & 63);
        const float c = -fmaf(128.0f, dl, ml);
        for (int q = 0; q < 16; q++) {
            const uint32_t nb = (uint32_t)q * 0x01010101u;
            for (int j = 0; j < 4; j++) {
                const float f = asf(perm(nb, 0x43000000u, 0x7044 | (j << 8)));
                if (f != 128.0f + q) { printf("q4 magic wrong\n"); return 1; }
                const float w = fmaf(f, dl, c), ref = fmaf(dl, (float)q, -ml);
                const double ex = (double)dl * q - (double)ml;
                m2++;
                { double e = fabs((double)w - ex) / (128.0 * dl + ml); if (e > worst) worst = e; }
                if (bf16(w) != bf16(ref)) diff++;
            }
        }
    }
    /* Q4_K's scales: gemm_sm90_q.cu Sm90Quant<Q4_K>::prep (the eight 6-bit scales
     * and mins as bytes of four words, a permute under 2^23, one FFMA) against
     * get_scale_min_k4 and d * sc, dmin * m, on 4M random headers, every t */
    long pbad = 0, pn = 0;
    for (long t = 0; t < 4000000; t++) {
        uint32_t w[4];
        for (int i = 0; i < 4; i++) w[i] = ((uint32_t)rand() << 16) ^ (uint32_t)rand() ^ ((uint32_t)rand() << 30);
        if (((w[0] >> 10) & 31) == 31 || ((w[0] >> 26) & 31) == 31) continue; /* inf/nan scales */
        const uint8_t *s12 = (const uint8_t *)&w[1];
        const float d = h2f((uint16_t)(w[0] & 0xffff)), dmin = h2f((uint16_t)(w[0] >> 16));
        for (int tt = 0; tt < 4; tt++) {
            const uint32_t sc = tt < 2 ? w[1] & 0x3F3F3F3Fu : (w[3] & 0x0F0F0F0Fu) | ((w[1] >> 2) & 0x30303030u);
            const uint32_t mn = tt < 2 ? w[2] & 0x3F3F3F3Fu : ((w[3] >> 4) & 0x0F0F0F0Fu) | ((w[2] >> 2) & 0x30303030u);
            const uint32_t b = 2 * (tt & 1);
            for (int k = 0; k < 2; k++) {
                const int j = 2 * tt + k;
                int rsc, rm; /* get_scale_min_k4 */
                if (j < 4) { rsc = s12[j] & 63; rm = s12[j + 4] & 63; }
                else { rsc = (s12[j + 4] & 0xF) | ((s12[j - 4] >> 6) << 4); rm = (s12[j + 4] >> 4) | ((s12[j] >> 6) << 4); }
                const float dl = fmaf(d, asf(perm(sc, 0x4B000000u, 0x7440u | (b + k))), -8388608.0f * d);
                const float ml = fmaf(dmin, asf(perm(mn, 0x4B000000u, 0x7440u | (b + k))), -8388608.0f * dmin);
                pn++;
                /* values (a zero scale gives +0 where d * 0 is -0 for a negative d: equal) */
                if (!(dl == d * (float)rsc) || !(ml == dmin * (float)rm)) pbad++;
            }
        }
    }
    printf("Q4_K scales: %ld of %ld (header, sub-block) differ from get_scale_min_k4's d * sc, dmin * m\n", pbad, pn);
    printf("Q4_K: worst |w - (dl q - ml)| = %.3g (128 dl + ml); bf16 differs from the exact decoder's in %ld of %ld\n", worst, diff, m2);
    return bad != 0 || pbad != 0;
}
