/*
 * The "cpu" backend: the shared case table on every instruction-set path
 * (MOE_CPU_ISA forced per run; a path the CPU lacks is skipped with a
 * message), with 1, 2 and 3 threads; and determinism across thread counts:
 * the same layer and inputs give bitwise the same output with 1, 2 and 3
 * threads (a bf16 case with T = 131, a Q4_K case, a Q8_0 case, f32 with biases,
 * and one case of each K-quant with its own integer kernel: Q2_K, Q3_K, Q5_K, Q6_K);
 * and the repacked bf16 weights (MOE_CPU_REPACK): bitwise the same output as
 * the caller's layout on every path, described, and an allocation failure
 * answered with MOE_ERR_OUT_OF_MEMORY.
 */
#include "cases.h"
#include "harness.h"

#include "half.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const isas[] = {"scalar", "avx2", "avxvnni", "avx512"};

/* 1 if this CPU runs path `isa` (a layer made with it forced succeeds). */
static int isa_available(const char *isa, char *why, size_t n) {
    setenv("MOE_CPU_ISA", isa, 1);
    moe_ctx *ctx;
    if (moe_ctx_create(NULL, &ctx)) return 0;
    static float w[4 * 32 * 32];
    moe_layer_desc d = moe_layer_desc_default();
    d.E = 1; d.D = 32; d.I = 32; d.K = 1;
    d.gate.data = w; d.up.data = w; d.down.data = w;
    d.backend = "cpu";
    moe_layer *L = NULL;
    moe_status s = moe_layer_create(ctx, &d, &L);
    if (s) snprintf(why, n, "%s", moe_ctx_last_error(ctx));
    moe_layer_free(L);
    moe_ctx_free(ctx);
    unsetenv("MOE_CPU_ISA");
    return s == MOE_OK;
}

static void run_table(const char *isa, int n_threads) {
    char why[512];
    if (!isa_available(isa, why, sizeof why)) SKIP("MOE_CPU_ISA=%s not available on this CPU: %s", isa, why);
    setenv("MOE_CPU_ISA", isa, 1);
    moe_ctx_params p = moe_ctx_default_params();
    p.n_threads = n_threads;
    moe_ctx *ctx;
    moe_status s = moe_ctx_create(&p, &ctx);
    if (s) {
        unsetenv("MOE_CPU_ISA");
        CHECK_STATUS(s, MOE_OK);
    }
    int passed, skipped;
    moe_cases_run_all(ctx, "cpu", &passed, &skipped);
    moe_ctx_free(ctx);
    unsetenv("MOE_CPU_ISA");
    if (!moe_test_failed() && passed == 0) moe_test_fail(__FILE__, __LINE__, "no case ran (%d skipped)", skipped);
    if (!moe_test_failed() && skipped)
        moe_test_fail(__FILE__, __LINE__, "%d cases skipped: the cpu backend must run every case", skipped);
}

TEST(cpu_cases_scalar_t1) { run_table("scalar", 1); }
TEST(cpu_cases_scalar_t3) { run_table("scalar", 3); }
TEST(cpu_cases_avx2_t2) { run_table("avx2", 2); }
TEST(cpu_cases_avxvnni_t2) { run_table("avxvnni", 2); }
TEST(cpu_cases_avx512_t1) { run_table("avx512", 1); }
TEST(cpu_cases_avx512_t2) { run_table("avx512", 2); }
TEST(cpu_cases_avx512_t3) { run_table("avx512", 3); }

/* ---- determinism across thread counts ---- */

typedef struct det_case {
    const char *name;
    int64_t T, E, D, I, K;
    moe_type wtype, act_type;
    int bias;
} det_case;

static const det_case det_cases[] = {
    {"bf16_T131", 131, 16, 256, 128, 4, MOE_TYPE_BF16, MOE_TYPE_BF16, 0},
    {"q4_K_T37", 37, 8, 512, 256, 2, MOE_TYPE_Q4_K, MOE_TYPE_F32, 0},
    {"q8_0_T131_bias", 131, 8, 256, 96, 3, MOE_TYPE_Q8_0, MOE_TYPE_F32, 1},
    {"f32_T19_bias", 19, 6, 128, 64, 2, MOE_TYPE_F32, MOE_TYPE_F16, 1},
    {"q6_K_T5", 5, 4, 256, 256, 2, MOE_TYPE_Q6_K, MOE_TYPE_F32, 0},
    {"q3_K_T23", 23, 6, 512, 256, 2, MOE_TYPE_Q3_K, MOE_TYPE_F32, 0},
    {"q2_K_T9", 9, 4, 256, 512, 2, MOE_TYPE_Q2_K, MOE_TYPE_BF16, 0},
    {"q5_K_T17_bias", 17, 4, 256, 256, 3, MOE_TYPE_Q5_K, MOE_TYPE_F32, 1},
};

static void *weights(moe_rng *r, moe_type t, int64_t rows, int64_t C) {
    float *f = malloc(sizeof(float) * (size_t)C);
    int64_t rb = moe_type_row_bytes(t, C);
    char *p = malloc((size_t)(rows * rb));
    for (int64_t i = 0; i < rows; i++) {
        for (int64_t c = 0; c < C; c++) f[c] = (float)(moe_rng_normal(r) / sqrt((double)C));
        moe_quantize_row(t, f, p + i * rb, C);
    }
    free(f);
    return p;
}

/* Runs c with n_threads on path isa; returns the output bytes (malloc) or NULL. */
static void *det_run(const det_case *c, const char *isa, int n_threads, uint64_t seed) {
    moe_rng r;
    moe_rng_seed(&r, seed);
    int64_t T = c->T, E = c->E, D = c->D, I = c->I, K = c->K;
    size_t asz = c->act_type == MOE_TYPE_F32 ? 4 : 2;
    void *g = weights(&r, c->wtype, E * I, D), *u = weights(&r, c->wtype, E * I, D), *dn = weights(&r, c->wtype, E * D, I);
    float *bg = NULL, *bu = NULL, *bd = NULL;
    moe_layer_desc d = moe_layer_desc_default();
    d.E = E; d.D = D; d.I = I; d.K = K;
    d.gate.data = g; d.gate.type = c->wtype;
    d.up.data = u; d.up.type = c->wtype;
    d.down.data = dn; d.down.type = c->wtype;
    d.act_type = c->act_type;
    d.backend = "cpu";
    if (c->bias) {
        bg = malloc(sizeof(float) * (size_t)(E * I));
        bu = malloc(sizeof(float) * (size_t)(E * I));
        bd = malloc(sizeof(float) * (size_t)(E * D));
        for (int64_t i = 0; i < E * I; i++) { bg[i] = (float)moe_rng_normal(&r); bu[i] = (float)moe_rng_normal(&r); }
        for (int64_t i = 0; i < E * D; i++) bd[i] = (float)moe_rng_normal(&r);
        d.gate_bias.data = bg; d.up_bias.data = bu; d.down_bias.data = bd;
    }
    void *x = malloc(asz * (size_t)(T * D)), *out = malloc(asz * (size_t)(T * D));
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)(T * K));
    float *w = malloc(sizeof(float) * (size_t)(T * K));
    for (int64_t i = 0; i < T * D; i++) {
        float v = (float)moe_rng_normal(&r);
        if (asz == 4) ((float *)x)[i] = v;
        else if (c->act_type == MOE_TYPE_BF16) ((uint16_t *)x)[i] = moe__f32_to_bf16(v);
        else ((uint16_t *)x)[i] = moe__f32_to_f16(v);
    }
    for (int64_t i = 0; i < T * K; i++) {
        ids[i] = (int32_t)(moe_rng_u64(&r) % (uint64_t)E);
        w[i] = (float)moe_rng_uniform(&r);
    }
    setenv("MOE_CPU_ISA", isa, 1);
    moe_ctx_params p = moe_ctx_default_params();
    p.n_threads = n_threads;
    moe_ctx *ctx = NULL;
    moe_layer *L = NULL;
    void *ws = NULL;
    size_t wsz = 0;
    int ok = moe_ctx_create(&p, &ctx) == MOE_OK && moe_layer_create(ctx, &d, &L) == MOE_OK &&
             moe_layer_workspace_size(L, T, &wsz) == MOE_OK && (ws = malloc(wsz ? wsz : 1)) &&
             moe_layer_forward(L, T, x, ids, w, out, ws, wsz) == MOE_OK;
    unsetenv("MOE_CPU_ISA");
    moe_layer_free(L);
    moe_ctx_free(ctx);
    free(ws); free(g); free(u); free(dn); free(bg); free(bu); free(bd); free(x); free(ids); free(w);
    if (!ok) { free(out); return NULL; }
    return out;
}

TEST(cpu_threads_bitwise_equal) {
    uint64_t seed = moe_test_seed();
    char why[512];
    int ran = 0;
    for (int ii = 0; ii < 4; ii++) {
        if (!isa_available(isas[ii], why, sizeof why)) continue;
        for (size_t ci = 0; ci < sizeof det_cases / sizeof det_cases[0]; ci++) {
            const det_case *c = &det_cases[ci];
            size_t bytes = (size_t)(c->T * c->D) * (c->act_type == MOE_TYPE_F32 ? 4 : 2);
            void *ref = det_run(c, isas[ii], 1, seed + ci);
            CHECK_MSG(ref, "%s on %s: the 1-thread run failed", c->name, isas[ii]);
            for (int nt = 2; nt <= 3; nt++) {
                void *got = det_run(c, isas[ii], nt, seed + ci);
                int same = got && memcmp(ref, got, bytes) == 0;
                free(got);
                if (!same) {
                    free(ref);
                    CHECK_MSG(0, "%s on %s: %d threads differ from 1 thread", c->name, isas[ii], nt);
                }
            }
            free(ref);
            ran++;
        }
    }
    CHECK(ran > 0);
}

/* ---- the repacked bf16 copy (src/cpu/cpu.c, repack) ---- */

/* bf16 shapes whose row counts leave a partial last row group (rmax 4 on
 * AVX-512, 2 on the 256-bit paths): gate/up with I = 99 rows (down is then
 * generic), down with D = 130 rows (gate/up generic), T at decode (<= 4, one
 * activation row) and prefill sizes, odd pair groups. */
static const det_case rp_cases[] = {
    {"bf16_T1", 1, 8, 256, 128, 4, MOE_TYPE_BF16, MOE_TYPE_F32, 0},
    {"bf16_T3_bias", 3, 8, 192, 128, 2, MOE_TYPE_BF16, MOE_TYPE_BF16, 1},
    {"bf16_T131", 131, 16, 256, 128, 4, MOE_TYPE_BF16, MOE_TYPE_BF16, 0},
    {"bf16_gu_tail_T37", 37, 6, 128, 99, 3, MOE_TYPE_BF16, MOE_TYPE_F32, 1},
    {"bf16_down_tail_T9", 9, 5, 130, 128, 2, MOE_TYPE_BF16, MOE_TYPE_F16, 0},
};

TEST(cpu_repack_bitwise_equal) {
    uint64_t seed = moe_test_seed();
    char why[512];
    int ran = 0;
    for (int ii = 0; ii < 4; ii++) {
        if (!isa_available(isas[ii], why, sizeof why)) continue;
        for (size_t ci = 0; ci < sizeof rp_cases / sizeof rp_cases[0]; ci++) {
            const det_case *c = &rp_cases[ci];
            size_t bytes = (size_t)(c->T * c->D) * (c->act_type == MOE_TYPE_F32 ? 4 : 2);
            setenv("MOE_CPU_REPACK", "0", 1);
            void *ref = det_run(c, isas[ii], 1, seed + ci);
            unsetenv("MOE_CPU_REPACK");
            CHECK_MSG(ref, "%s on %s: the run without the copy failed", c->name, isas[ii]);
            for (int nt = 1; nt <= 3; nt += 2) {
                void *got = det_run(c, isas[ii], nt, seed + ci);
                int same = got && memcmp(ref, got, bytes) == 0;
                free(got);
                if (!same) {
                    free(ref);
                    CHECK_MSG(0, "%s on %s, %d threads: the repacked copy gives other bits than the caller's layout",
                              c->name, isas[ii], nt);
                }
            }
            free(ref);
            ran++;
        }
    }
    CHECK(ran > 0);
}

/* A bf16 layer's describe line on path isa; repack: MOE_CPU_REPACK unset or "0". */
static moe_status describe_bf16(const char *isa, const char *repack, char *buf, size_t n) {
    static uint16_t w[8 * 128 * 128];
    setenv("MOE_CPU_ISA", isa, 1);
    if (repack) setenv("MOE_CPU_REPACK", repack, 1);
    moe_ctx *ctx = NULL;
    moe_layer *L = NULL;
    moe_layer_desc d = moe_layer_desc_default();
    d.E = 8; d.D = 128; d.I = 128; d.K = 2;
    d.gate.data = w; d.up.data = w; d.down.data = w;
    d.gate.type = d.up.type = d.down.type = MOE_TYPE_BF16;
    d.backend = "cpu";
    moe_status s = moe_ctx_create(NULL, &ctx);
    if (!s) s = moe_layer_create(ctx, &d, &L);
    if (!s) s = moe_layer_describe(L, 64, buf, n);
    moe_layer_free(L);
    moe_ctx_free(ctx);
    unsetenv("MOE_CPU_ISA");
    unsetenv("MOE_CPU_REPACK");
    return s;
}

TEST(cpu_repack_described) {
    char buf[1024], why[512];
    int ran = 0;
    for (int ii = 0; ii < 4; ii++) {
        if (!isa_available(isas[ii], why, sizeof why)) continue;
        int simd = ii > 0; /* the SIMD paths read the copy; scalar keeps the caller's layout */
        CHECK_STATUS(describe_bf16(isas[ii], NULL, buf, sizeof buf), MOE_OK);
        CHECK_MSG((strstr(buf, "down bf16 repacked") && strstr(buf, "MB more memory")) == simd, "%s: %s", isas[ii],
                  buf);
        CHECK_MSG((strstr(buf, "weights not repacked") == NULL) == simd, "%s: %s", isas[ii], buf);
        CHECK_STATUS(describe_bf16(isas[ii], "0", buf, sizeof buf), MOE_OK);
        CHECK_MSG(strstr(buf, "weights not repacked (MOE_CPU_REPACK=0)") && strstr(buf, "down bf16 in place"), "%s: %s",
                  isas[ii], buf);
        ran++;
    }
    CHECK(ran > 0);
}

/* The copy cannot be allocated (E = 65536 experts of 4096 x 4096 that all
 * share one buffer, stride_e = 0: TBs to copy): layer creation fails with
 * MOE_ERR_OUT_OF_MEMORY and a message, and succeeds with MOE_CPU_REPACK=0.
 * Skipped where a huge allocation might succeed (overcommit_memory = 1) or
 * abort (AddressSanitizer's allocator). */
TEST(cpu_repack_out_of_memory) {
#if defined(__SANITIZE_ADDRESS__)
    SKIP("AddressSanitizer aborts on a TB allocation instead of returning NULL");
#else
    FILE *f = fopen("/proc/sys/vm/overcommit_memory", "r");
    int mode = -1;
    if (f) {
        if (fscanf(f, "%d", &mode) != 1) mode = -1;
        fclose(f);
    }
    if (mode != 0 && mode != 2) SKIP("vm.overcommit_memory = %d: a TB allocation might succeed", mode);
    char why[512];
    const char *isa = NULL;
    for (int ii = 3; ii > 0 && !isa; ii--)
        if (isa_available(isas[ii], why, sizeof why)) isa = isas[ii];
    if (!isa) SKIP("no SIMD path on this CPU (scalar reads bf16 in place)");
    int64_t D = 4096, I = 4096;
    uint16_t *w = calloc((size_t)(D * I), 2);
    CHECK(w);
    moe_layer_desc d = moe_layer_desc_default();
    d.E = 65536; d.D = D; d.I = I; d.K = 2;
    d.gate.data = w; d.up.data = w; d.down.data = w;
    d.gate.type = d.up.type = d.down.type = MOE_TYPE_BF16;
    d.gate.stride_e = d.up.stride_e = d.down.stride_e = 0;
    d.gate.stride_n = d.up.stride_n = d.down.stride_n = 4096;
    d.gate.stride_c = d.up.stride_c = d.down.stride_c = 1;
    d.backend = "cpu";
    setenv("MOE_CPU_ISA", isa, 1);
    moe_ctx *ctx = NULL;
    moe_layer *L = NULL;
    moe_status s = moe_ctx_create(NULL, &ctx);
    moe_status s1 = s ? s : moe_layer_create(ctx, &d, &L);
    char msg[512];
    snprintf(msg, sizeof msg, "%s", ctx ? moe_ctx_last_error(ctx) : "");
    moe_layer_free(L);
    L = NULL;
    setenv("MOE_CPU_REPACK", "0", 1);
    moe_status s0 = s ? s : moe_layer_create(ctx, &d, &L);
    unsetenv("MOE_CPU_REPACK");
    unsetenv("MOE_CPU_ISA");
    moe_layer_free(L);
    moe_ctx_free(ctx);
    free(w);
    CHECK_STATUS(s, MOE_OK);
    CHECK_STATUS(s1, MOE_ERR_OUT_OF_MEMORY);
    CHECK_MSG(strstr(msg, "repacked copy") && strstr(msg, "MOE_CPU_REPACK=0"), "message: %s", msg);
    CHECK_STATUS(s0, MOE_OK);
#endif
}

/* A planted wrong answer must fail: a case run against a layer whose
 * expert weights differ (the comparison machinery can see a difference). */
TEST(cpu_determinism_check_can_fail) {
    const det_case *c = &det_cases[1];
    void *a = det_run(c, "scalar", 1, 1), *b = det_run(c, "scalar", 1, 2);
    CHECK(a && b);
    size_t bytes = (size_t)(c->T * c->D) * 4;
    int differ = memcmp(a, b, bytes) != 0;
    free(a);
    free(b);
    CHECK(differ);
}

/* The AVX-512 path's vectorised activation code against the scalar code it
 * replaces: the q8 quantizer and the bf16 rounding bit for bit (NaN, Inf,
 * zeros, denormals, every layout and offset), the activation functions within
 * 2e-6 relative (their exp is a polynomial; GELU's 1 + tanh a sigmoid) with NaN and Inf where expf gives them. */
#include "cpu/cpu.h"

static float act_ref(moe_act act, float g, float u, float alpha, float limit) {
    switch (act) {
    case MOE_ACT_SWIGLU: return g / (1.0f + expf(-g)) * u;
    case MOE_ACT_GEGLU_TANH: return 0.5f * g * (1.0f + tanhf(0.7978845608f * (g + 0.044715f * g * g * g))) * u;
    case MOE_ACT_SWIGLU_OAI:
        g = g > limit ? limit : g;
        u = u > limit ? limit : (u < -limit ? -limit : u);
        return g / (1.0f + expf(-alpha * g)) * (u + 1.0f);
    case MOE_ACT_SILU: return u / (1.0f + expf(-u));
    case MOE_ACT_GELU: return 0.5f * u * (1.0f + tanhf(0.7978845608f * (u + 0.044715f * u * u * u)));
    case MOE_ACT_RELU2: return u < 0 ? 0.0f : u * u;
    default: return NAN;
    }
}

TEST(cpu_avx512_activation_code_matches_scalar) {
    char why[512];
    if (!isa_available("avx512", why, sizeof why)) SKIP("avx512 not available: %s", why);
    const moe__cpu_isa *v = &moe__cpu_isa_avx512;
    CHECK(v->quant_q8 && v->to_bf16 && v->act);
    enum { C = 1024 };
    static float x[C], g[C], u[C], hv[C];
    static char r0[8 * C], r1[8 * C];
    static uint16_t b0[C], b1[C];
    moe_rng rng;
    moe_rng_seed(&rng, 7);
    for (int trial = 0; trial < 6 && !moe_test_failed(); trial++) {
        for (int i = 0; i < C; i++) x[i] = (float)(moe_rng_normal(&rng) * (trial < 3 ? 1.0 : 1e-3));
        if (trial == 1) x[77] = NAN;
        if (trial == 2) x[300] = INFINITY;
        if (trial == 3) for (int i = 256; i < 512; i++) x[i] = 0.0f;
        if (trial == 4) x[5] = 1e-40f; /* denormal */
        if (trial == 5) x[9] = -NAN;
        int64_t Cq = trial == 5 ? C - 32 : C; /* padding zeroed */
        for (int lay = 0; lay < 4; lay++)
            for (int off = 0; off <= 128; off += 64) {
                if ((lay & MOE__Q8_SCALE256) && Cq % 256) continue;
                memset(r0, 0x5a, sizeof r0);
                memset(r1, 0x5a, sizeof r1);
                int64_t seg = lay & MOE__Q8_SCALE256 ? 256 : 64;
                for (int64_t c0 = 0; c0 < Cq; c0 += seg) {
                    int64_t n = Cq - c0 < seg ? Cq - c0 : seg;
                    moe__cpu_quant_q8_scalar(x + c0, c0, n, Cq, off, lay, r0);
                    v->quant_q8(x + c0, c0, n, Cq, off, lay, r1);
                }
                CHECK_MSG(memcmp(r0, r1, moe__cpu_q8_row_bytes(Cq)) == 0,
                          "q8 rows differ: trial %d layout %d offset %d", trial, lay, off);
            }
        v->to_bf16(x, b1, C - 3);
        for (int i = 0; i < C - 3; i++) b0[i] = moe__f32_to_bf16(x[i]);
        CHECK_MSG(memcmp(b0, b1, sizeof(uint16_t) * (C - 3)) == 0, "bf16 differs, trial %d", trial);
    }
    static const moe_act acts[] = {MOE_ACT_SWIGLU, MOE_ACT_GEGLU_TANH, MOE_ACT_SWIGLU_OAI,
                                   MOE_ACT_SILU,   MOE_ACT_GELU,       MOE_ACT_RELU2};
    for (int i = 0; i < C; i++) {
        g[i] = (float)(moe_rng_normal(&rng) * (i < 512 ? 3.0 : 40.0));
        u[i] = (float)moe_rng_normal(&rng);
    }
    g[1] = NAN; u[2] = NAN; g[3] = INFINITY; g[4] = -INFINITY; u[5] = INFINITY; g[6] = 100.0f; g[7] = -100.0f;
    g[8] = 0.0f; u[9] = -0.0f;
    for (size_t a = 0; a < sizeof acts / sizeof acts[0]; a++) {
        int n = C - 5; /* a masked tail */
        CHECK(v->act(acts[a], g, u, NULL, NULL, hv, n, 1.702f, 7.0f) == 1);
        for (int i = 0; i < n; i++) {
            float want = act_ref(acts[a], g[i], u[i], 1.702f, 7.0f), got = hv[i];
            /* the scalar 1 + tanhf(z) loses ~1e-7 absolute where tanh is near -1 */
            float gi = moe_act_is_gated(acts[a]) ? g[i] : 0.0f;
            float tol = 1e-7f * (fabsf(gi) + 1.0f) * (fabsf(u[i]) + 1.0f);
            int ok = isnan(want) ? isnan(got) : isinf(want) ? got == want
                                                            : fabsf(got - want) <= 2e-6f * fabsf(want) + tol;
            CHECK_MSG(ok, "act %d: element %d (g %g, u %g): %.9g, expected %.9g", (int)acts[a], i, g[i], u[i], got,
                      want);
            if (!ok) break;
        }
    }
    CHECK(v->act(MOE_ACT_GEGLU_ERF, g, u, NULL, NULL, hv, 16, 1.0f, 0.0f) == 0);
}
