/*
 * Kernel lab check, host only (no GPU): the format decoders of
 * src/cuda/decode_kernels.h against src/quant's dequantisation, for every
 * lane t and step s of a chunk: each column must be produced exactly once
 * with the value moe_dequantize_row gives.
 *   nvcc -std=c++17 -Iinclude -Isrc -Isrc/cuda -Isrc/core -Isrc/quant bench/decode/test_formats.cu \
 *        build-cuda/libmoe.a -o /tmp/tf && /tmp/tf
 */
#include "decode_kernels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <vector>

template <typename FM> static int check(moe_type type, int C, const char *name) {
    std::vector<float> src(C), ref(C), got(C, NAN);
    std::vector<int> seen(C, 0);
    srand(1234);
    for (int i = 0; i < C; i++) src[i] = (float)(rand() / (double)RAND_MAX * 2 - 1) * (1 + (i % 7));
    int64_t rb = moe_type_row_bytes(type, C);
    std::vector<uint8_t> row(rb + 64);
    if (moe_quantize_row(type, src.data(), row.data(), C) || moe_dequantize_row(type, row.data(), ref.data(), C)) {
        printf("%s: quantize failed\n", name);
        return 1;
    }
    int nch = (C + FM::CW - 1) / FM::CW, bad = 0;
    for (int c = 0; c < nch; c++)
        for (int t = 0; t < 4; t++) {
            typename FM::Raw r;
            typename FM::Dec d;
            FM::load(r, row.data(), c, t, C, true);
            FM::prep(r, t, d);
            for (int s = 0; s < FM::S; s++) {
                float f[8];
                FM::dq(r, d, t, s, f);
                int col = c * FM::CW + FM::xcol(t, s);
                for (int j = 0; j < 8; j++) {
                    if (col + j >= C) { if (f[j] != 0.f) bad++; continue; }
                    seen[col + j]++;
                    got[col + j] = f[j];
                }
            }
        }
    for (int i = 0; i < C; i++)
        if (seen[i] != 1 || !(got[i] == ref[i])) {
            if (bad < 5) printf("%s: col %d seen %d got %g ref %g\n", name, i, seen[i], got[i], ref[i]);
            bad++;
        }
    printf("%-6s C=%d: %s\n", name, C, bad ? "FAIL" : "ok");
    return bad != 0;
}

int main(void) {
    int f = 0;
    f += check<FmtQ4_0>(MOE_TYPE_Q4_0, 512, "q4_0");
    f += check<FmtQ4_0>(MOE_TYPE_Q4_0, 2880, "q4_0");
    f += check<FmtQ8_0>(MOE_TYPE_Q8_0, 2880, "q8_0");
    f += check<FmtMXFP4>(MOE_TYPE_MXFP4, 2880, "mxfp4");
    f += check<FmtQ2_K>(MOE_TYPE_Q2_K, 1024, "q2_K");
    f += check<FmtQ3_K>(MOE_TYPE_Q3_K, 1024, "q3_K");
    f += check<FmtQ4_K>(MOE_TYPE_Q4_K, 1024, "q4_K");
    f += check<FmtQ5_K>(MOE_TYPE_Q5_K, 1024, "q5_K");
    f += check<FmtQ6_K>(MOE_TYPE_Q6_K, 1024, "q6_K");
    printf("%s\n", f ? "FAILED" : "all formats ok");
    return f != 0;
}
