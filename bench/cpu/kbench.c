/*
 * kbench: CPU time of the "cpu" backend's forward, for kernel work on a
 * shared machine where wall time is noisy. Qwen3-30B-A3B expert shape
 * (D 2048, I 768, K 8), E experts (E = K: every expert active at T = 1,
 * weights cache-warm unless E is large), f32 activations; reports the median
 * wall time and the median CPU time of the calling thread (thread 0), which
 * is what the forward takes when the thread is not preempted.
 *   kbench WTYPE T THREADS [E] [ITERS] [K]
 * Build: cc -O2 -Iinclude bench/cpu/kbench.c build/libmoe.a -lpthread -lm
 */
#define _GNU_SOURCE
#include "moe.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static double now(clockid_t c) {
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
static int cmpd(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static int parse_type(const char *s, moe_type *t) {
    static const moe_type all[] = {MOE_TYPE_F32,  MOE_TYPE_F16,  MOE_TYPE_BF16, MOE_TYPE_Q4_0,
                                   MOE_TYPE_Q8_0, MOE_TYPE_Q2_K, MOE_TYPE_Q3_K, MOE_TYPE_Q4_K,
                                   MOE_TYPE_Q5_K, MOE_TYPE_Q6_K, MOE_TYPE_MXFP4};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (strcasecmp(s, moe_type_name(all[i])) == 0) { *t = all[i]; return 0; }
    return -1;
}
static uint64_t rs = 12345;
static double rn(void) {
    rs = rs * 6364136223846793005ull + 1442695040888963407ull;
    double u1 = ((rs >> 11) + 1) * (1.0 / 9007199254740993.0);
    rs = rs * 6364136223846793005ull + 1442695040888963407ull;
    double u2 = (rs >> 11) * (1.0 / 9007199254740992.0);
    return sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2);
}

int main(int argc, char **argv) {
    if (argc < 4) { fprintf(stderr, "usage: kbench WTYPE T THREADS [E] [ITERS] [K]\n"); return 2; }
    moe_type wt;
    if (parse_type(argv[1], &wt)) { fprintf(stderr, "bad type %s\n", argv[1]); return 2; }
    int64_t T = atoll(argv[2]), D = 2048, I = 768, K = argc > 6 ? atoll(argv[6]) : 8, E = argc > 4 ? atoll(argv[4]) : 8;
    int th = atoi(argv[3]), iters = argc > 5 ? atoi(argv[5]) : 50;
    int64_t rbD = moe_type_row_bytes(wt, D), rbI = moe_type_row_bytes(wt, I);
    /* a pool of 64 distinct quantised rows, repeated */
    char *g = malloc((size_t)(E * 2 * I * rbD)), *dn = malloc((size_t)(E * D * rbI));
    float *row = malloc(sizeof(float) * 4096);
    char *poolD = malloc((size_t)(64 * rbD)), *poolI = malloc((size_t)(64 * rbI));
    for (int i = 0; i < 64; i++) {
        for (int c = 0; c < D; c++) row[c] = (float)(rn() / sqrt((double)D));
        moe_quantize_row(wt, row, poolD + i * rbD, D);
        for (int c = 0; c < I; c++) row[c] = (float)(rn() / sqrt((double)I));
        moe_quantize_row(wt, row, poolI + i * rbI, I);
    }
    for (int64_t r = 0; r < E * 2 * I; r++) memcpy(g + r * rbD, poolD + (r * 7 % 64) * rbD, (size_t)rbD);
    for (int64_t r = 0; r < E * D; r++) memcpy(dn + r * rbI, poolI + (r * 13 % 64) * rbI, (size_t)rbI);
    moe_ctx_params p = moe_ctx_default_params();
    p.n_threads = th;
    moe_ctx *ctx;
    if (moe_ctx_create(&p, &ctx)) return 1;
    moe_layer_desc d = moe_layer_desc_default();
    d.E = E; d.D = D; d.I = I; d.K = K;
    d.layout = MOE_GATE_UP_CONCAT;
    d.gate_up.data = g; d.gate_up.type = wt;
    d.down.data = dn; d.down.type = wt;
    d.backend = "cpu";
    moe_layer *L;
    if (moe_layer_create(ctx, &d, &L)) { fprintf(stderr, "%s\n", moe_ctx_last_error(ctx)); return 1; }
    float *x = malloc(sizeof(float) * (size_t)(T * D)), *out = malloc(sizeof(float) * (size_t)(T * D));
    for (int64_t i = 0; i < T * D; i++) x[i] = (float)rn();
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)(T * K));
    float *w = malloc(sizeof(float) * (size_t)(T * K));
    for (int64_t t = 0; t < T; t++) {
        /* K distinct experts per token */
        for (int64_t k = 0; k < K; k++) {
            int32_t e;
            int dup;
            do {
                e = (int32_t)(((rs = rs * 6364136223846793005ull + 1) >> 33) % (uint64_t)E);
                dup = 0;
                for (int64_t j = 0; j < k; j++) dup |= ids[t * K + j] == e;
            } while (dup);
            ids[t * K + k] = e;
            w[t * K + k] = 1.0f / (float)K;
        }
    }
    size_t wsz;
    moe_layer_workspace_size(L, T, &wsz);
    void *ws = malloc(wsz);
    double *tw = malloc(sizeof(double) * (size_t)iters), *tc = malloc(sizeof(double) * (size_t)iters);
    for (int i = 0; i < 3; i++) moe_layer_forward(L, T, x, ids, w, out, ws, wsz);
    for (int i = 0; i < iters; i++) {
        double a = now(CLOCK_MONOTONIC), b = now(CLOCK_THREAD_CPUTIME_ID);
        moe_layer_forward(L, T, x, ids, w, out, ws, wsz);
        tc[i] = now(CLOCK_THREAD_CPUTIME_ID) - b;
        tw[i] = now(CLOCK_MONOTONIC) - a;
    }
    qsort(tw, (size_t)iters, sizeof(double), cmpd);
    qsort(tc, (size_t)iters, sizeof(double), cmpd);
    double fl = 6.0 * (double)(T * K * D * I);
    char desc[600];
    moe_layer_describe(L, T, desc, sizeof desc);
    printf("%-6s T=%-4lld th=%d E=%-3lld wall med %9.1f us min %9.1f | thread0 cpu med %9.1f us min %9.1f = %6.1f GF/s "
           "(%.1f Gelem/s/thread)\n",
           argv[1], (long long)T, th, (long long)E, tw[iters / 2] * 1e6, tw[0] * 1e6, tc[iters / 2] * 1e6, tc[0] * 1e6,
           fl / tc[iters / 2] / 1e9, fl / 2.0 / tc[iters / 2] / 1e9 / th);
    if (getenv("KB_DESC")) printf("  %s\n", desc);
    return 0;
}
