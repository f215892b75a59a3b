/*
 * The CUDA decode backends against the reference: "cuda-decode" (bf16/f16
 * weights) and "cuda-quant" (GGUF blocks) run the shared case table, then
 * every quant type at T in {1, 2, 3, 8, 31, 64, 257} (and the dense types at
 * the same T, which crosses cuda-decode's hand-over to the grouped GEMM),
 * ids out of range on the device, and CUDA-graph capture of a forward.
 * Skipped with "no CUDA device" where there is none.
 */
#include "cases.h"
#include "harness.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef MOE_WITH_CUDA
#include <cuda_runtime_api.h>

#include "cuda/decode.h"

/* cuda-decode's early hand-over to the grouped GEMM (host arithmetic, no GPU):
 * the five presets' bf16 shapes get the T measured on the H200 and the H100
 * (bench/decode/s10 runs 25-26, s27 run 4, s35 run 6): deepseek-v3 from T = 2,
 * mixtral (E <= 4K) not at T = 2 (the streaming kernels win; from 3 by max_t),
 * gpt-oss and qwen3 not below max_t (T > 6: the streaming kernels lead at T =
 * 4-6 since session 32). */
TEST(decode_gemm_min_t_presets) {
    static const struct { const char *name; int64_t E, K, D, I, want, max_t; } p[] = {
        {"qwen3-30b-a3b", 128, 8, 2048, 768, INT64_MAX, 6}, {"mixtral-8x7b", 8, 2, 4096, 14336, INT64_MAX, 2},
        {"deepseek-v3", 256, 8, 7168, 2048, 2, 6},          {"gpt-oss-20b", 32, 4, 2880, 2880, INT64_MAX, 6},
        {"gpt-oss-120b", 128, 4, 2880, 2880, INT64_MAX, 6},
    };
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) {
        const int64_t max_t = moe__dec_max_t(p[i].E, p[i].K);
        CHECK_MSG(max_t == p[i].max_t, "%s: decode kernels to T = %lld, expected %lld", p[i].name, (long long)max_t,
                  (long long)p[i].max_t);
        const int64_t got = moe__dec_gemm_min_t(p[i].E, p[i].K, 3.0 * 2.0 * (double)p[i].D * (double)p[i].I, max_t);
        CHECK_MSG(got == p[i].want, "%s: hand-over from T = %lld, expected %lld", p[i].name, (long long)got,
                  (long long)p[i].want);
    }
}

/* The streaming launches' planned expert columns (decode.h moe__sv_plan_cols,
 * host arithmetic) against a simulated router: each token picks K distinct
 * experts of E uniformly (partial Fisher-Yates on a fixed-seed generator),
 * 4000 forwards per shape. From T = 5 the plan is the mean number of pair
 * groups (within 2% + 0.5); at T <= 4 it covers the distinct experts of at
 * least 60% of the forwards, never more than min(T K, E), and with ksd < 0 it
 * is min(T K, E). */
static uint64_t plan_rng(uint64_t *s) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

TEST(decode_stream_plan_cols) {
    static const struct { int64_t E, K; } m[] = {{8, 2}, {32, 4}, {128, 4}, {128, 8}, {256, 8}};
    static const int64_t Ts[] = {1, 2, 3, 4, 5, 8, 16, 32};
    uint64_t seed = 12345;
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
        const int64_t E = m[i].E, K = m[i].K;
        for (size_t ti = 0; ti < sizeof Ts / sizeof Ts[0]; ti++) {
            const int64_t T = Ts[ti];
            for (int NT = 4; NT <= 8; NT += 4) {
                enum { TRIALS = 4000 };
                int cnt[256], perm[256];
                double gsum = 0.0;
                int covered = 0;
                const int by_groups = T > 4;
                const int64_t plan = moe__sv_plan_cols(T, K, E, NT, by_groups, MOE_SV_PLAN_SD);
                for (int tr = 0; tr < TRIALS; tr++) {
                    memset(cnt, 0, sizeof cnt);
                    for (int64_t t = 0; t < T; t++) {
                        for (int e = 0; e < E; e++) perm[e] = e;
                        for (int64_t k = 0; k < K; k++) { /* K distinct experts */
                            const int64_t j = k + (int64_t)(plan_rng(&seed) % (uint64_t)(E - k));
                            const int tmp = perm[k]; perm[k] = perm[j]; perm[j] = tmp;
                            cnt[perm[k]]++;
                        }
                    }
                    int64_t groups = 0, distinct = 0;
                    for (int e = 0; e < E; e++) { groups += (cnt[e] + NT - 1) / NT; distinct += cnt[e] > 0; }
                    gsum += (double)(by_groups ? groups : distinct);
                    covered += distinct <= plan;
                }
                const double mean = gsum / TRIALS;
                const int64_t all = T * K < E ? T * K : E;
                if (by_groups) {
                    CHECK_MSG(fabs((double)plan - mean) <= 0.02 * mean + 0.5,
                              "E %lld K %lld T %lld NT %d: plans %lld groups, simulated mean %.2f", (long long)E,
                              (long long)K, (long long)T, NT, (long long)plan, mean);
                } else {
                    CHECK_MSG(plan <= all && plan >= (int64_t)floor(mean) && covered >= TRIALS * 6 / 10,
                              "E %lld K %lld T %lld: plans %lld columns (min(TK, E) %lld), simulated mean %.2f distinct, "
                              "covered in %d of %d forwards", (long long)E, (long long)K, (long long)T, (long long)plan,
                              (long long)all, mean, covered, (int)TRIALS);
                    CHECK(moe__sv_plan_cols(T, K, E, NT, 0, -1.0) == all);
                }
            }
        }
    }
}

/* The run-time split's partition (decode.h moe__sv_split_range, host
 * arithmetic): over G groups of nst stage steps and nb blocks, in both block
 * orders, every step goes to exactly one block; no block gets more than one
 * step beyond an even share; where a block's range stays inside one group
 * (the aligned mode) it is because that costs at most that one step. */
TEST(decode_stream_split_range) {
    static const int nsts[] = {1, 2, 3, 5, 24, 48, 96, 512, 1792};
    static const int nbs[] = {132, 264};
    static int owner[200 * 1792];
    for (int G = 0; G <= 200; G += G < 40 ? 1 : 37)
        for (size_t si = 0; si < sizeof nsts / sizeof nsts[0]; si++)
            for (size_t bi = 0; bi < 2; bi++)
                for (int tm = 0; tm < 2; tm++) {
                    const int nst = nsts[si], nb = nbs[bi], U = G * nst, sc = (U + nb - 1) / nb;
                    for (int u = 0; u < U; u++) owner[u] = -1;
                    for (int b = 0; b < nb; b++) {
                        int u0, u1;
                        moe__sv_split_range(G, nst, b, nb, tm, &u0, &u1);
                        if (u1 <= u0) continue;
                        CHECK_MSG(u0 >= 0 && u1 <= U && u1 - u0 <= sc + 1,
                                  "G %d nst %d nb %d: block %d gets [%d, %d) of %d steps (even share %d)", G, nst, nb, b,
                                  u0, u1, U, sc);
                        for (int u = u0; u < u1 && !moe_test_failed(); u++) {
                            CHECK_MSG(owner[u] < 0, "G %d nst %d nb %d order %d: step %d to blocks %d and %d", G, nst,
                                      nb, tm, u, owner[u], b);
                            owner[u] = b;
                        }
                        if (moe_test_failed()) return;
                    }
                    for (int u = 0; u < U; u++)
                        CHECK_MSG(owner[u] >= 0, "G %d nst %d nb %d order %d: step %d of %d to no block", G, nst, nb, tm,
                                  u, U);
                    if (moe_test_failed()) return;
                }
}

/* The split weighted by the groups' pairs (decode.h moe__sv_split_range_w):
 * on groups of 1-8 pairs in the records sv_route_dyn writes, every step goes
 * to exactly one block, a block's range stays in one group where the aligned
 * mode applies, and a group of more pairs never gets fewer blocks than one of
 * fewer. */
TEST(decode_stream_split_weighted) {
    static const int nsts[] = {1, 3, 24, 48, 96};
    static const int nbs[] = {132, 264};
    static int owner[128 * 96], ginfo[128], gblocks[128];
    unsigned rng = 12345u;
    for (int G = 1; G <= 128; G += G < 16 ? 1 : 37)
        for (size_t si = 0; si < sizeof nsts / sizeof nsts[0]; si++)
            for (size_t bi = 0; bi < 2; bi++)
                for (int A = 1; A <= 4; A *= 2) {
                    const int nst = nsts[si], nb = nbs[bi], U = G * nst;
                    int p = 0;
                    for (int k = 0; k < G; k++) {
                        rng = rng * 1664525u + 1013904223u;
                        const int nmax = 255 / G < 8 ? 255 / G : 8; /* the records' start is 8 bits */
                        const int n = 1 + (int)((rng >> 16) % (unsigned)nmax);
                        ginfo[k] = p | (n << 8) | (k << 12);
                        p += n;
                        gblocks[k] = 0;
                    }
                    for (int u = 0; u < U; u++) owner[u] = -1;
                    const int aligned = moe__sv_split_aligned(G, nst, nb);
                    for (int b = 0; b < nb; b++) {
                        int u0, u1;
                        moe__sv_split_range_w(G, nst, ginfo, A, b, nb, &u0, &u1);
                        if (u1 <= u0) continue;
                        CHECK_MSG(u0 >= 0 && u1 <= U, "G %d nst %d nb %d A %d: block %d gets [%d, %d) of %d", G, nst, nb,
                                  A, b, u0, u1, U);
                        if (aligned) {
                            CHECK_MSG(u0 / nst == (u1 - 1) / nst, "G %d nst %d nb %d A %d: block %d crosses groups [%d, %d)",
                                      G, nst, nb, A, b, u0, u1);
                            gblocks[u0 / nst]++;
                        }
                        for (int u = u0; u < u1 && !moe_test_failed(); u++) {
                            CHECK_MSG(owner[u] < 0, "G %d nst %d nb %d A %d: step %d to blocks %d and %d", G, nst, nb, A,
                                      u, owner[u], b);
                            owner[u] = b;
                        }
                        if (moe_test_failed()) return;
                    }
                    for (int u = 0; u < U; u++)
                        CHECK_MSG(owner[u] >= 0, "G %d nst %d nb %d A %d: step %d of %d to no block", G, nst, nb, A, u, U);
                    /* groups with steps to spare (nst >= their blocks): more pairs, no fewer blocks (floors: one) */
                    if (aligned && nst >= 48)
                        for (int k = 0; k < G; k++)
                            for (int l = 0; l < G; l++)
                                if (((ginfo[k] >> 8) & 15) > ((ginfo[l] >> 8) & 15))
                                    CHECK_MSG(gblocks[k] + 1 >= gblocks[l], "G %d nb %d A %d: group %d (%d pairs) %d blocks, "
                                              "group %d (%d pairs) %d", G, nb, A, k, (ginfo[k] >> 8) & 15, gblocks[k], l,
                                              (ginfo[l] >> 8) & 15, gblocks[l]);
                    if (moe_test_failed()) return;
                }
}

static moe_ctx *cuda_ctx(void) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        cudaGetLastError();
        return NULL;
    }
    moe_ctx_params p = moe_ctx_default_params();
    p.device = MOE_DEVICE_CUDA;
    moe_ctx *ctx = NULL;
    if (moe_ctx_create(&p, &ctx) != MOE_OK) return NULL;
    return ctx;
}

static int cuda_ctx_available(void) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        cudaGetLastError();
        return 0;
    }
    return 1;
}

static void run_table(const char *backend) {
    moe_ctx *ctx = cuda_ctx();
    if (!ctx) SKIP("no CUDA device");
    int passed, skipped;
    moe_cases_run_all(ctx, backend, &passed, &skipped);
    moe_ctx_free(ctx);
    if (!moe_test_failed() && passed == 0) moe_test_fail(__FILE__, __LINE__, "no case ran (%d skipped)", skipped);
    printf("     %s: %d cases passed, %d skipped\n", backend, passed, skipped);
}

/* The backends' two kernel families, each forced in turn at every T (no
 * hand-over to the grouped GEMM: MOE_DECODE_MAX_T=-1): the streaming kernels
 * wherever they fit (MOE_DECODE_STREAM=1, every T up to MOE_SV_MAXP / K) and the mma
 * kernels (MOE_DECODE_STREAM=0); the default mixes them and the GEMM by T. */
static void run_table_with(const char *backend, const char *stream) {
    setenv("MOE_DECODE_STREAM", stream, 1);
    setenv("MOE_DECODE_MAX_T", "-1", 1);
    run_table(backend);
    unsetenv("MOE_DECODE_STREAM");
    unsetenv("MOE_DECODE_MAX_T");
}

TEST(cuda_decode_cases) { run_table("cuda-decode"); }
TEST(cuda_quant_cases) { run_table("cuda-quant"); }
TEST(cuda_decode_cases_stream) { run_table_with("cuda-decode", "1"); }
TEST(cuda_decode_cases_mma) { run_table_with("cuda-decode", "0"); }
TEST(cuda_quant_cases_stream) { run_table_with("cuda-quant", "1"); }
/* the streaming kernels as one cooperative launch (dense default: two) and,
 * for GGUF blocks, as two launches (their default: one where it fits, but at
 * T = 2) */
TEST(cuda_decode_cases_stream_1launch) {
    setenv("MOE_DECODE_FUSED", "1", 1);
    run_table_with("cuda-decode", "1");
    unsetenv("MOE_DECODE_FUSED");
}
TEST(cuda_quant_cases_stream_2launch) {
    setenv("MOE_DECODE_FUSED", "0", 1);
    run_table_with("cuda-quant", "1");
    unsetenv("MOE_DECODE_FUSED");
}
TEST(cuda_quant_cases_mma) { run_table_with("cuda-quant", "0"); }
/* the streaming kernels' two down phases, each forced at every T: token-major
 * (one block per token, the default at T = 1 on dense rows of I <= 1024) and expert-major (pair groups,
 * y rows and the per-row-tile combine, the default at T >= 2) */
static void run_table_down(const char *backend, const char *downe) {
    setenv("MOE_SV_DOWNE", downe, 1);
    run_table_with(backend, "1");
    unsetenv("MOE_SV_DOWNE");
}
TEST(cuda_decode_cases_stream_down_token) { run_table_down("cuda-decode", "0"); }
TEST(cuda_decode_cases_stream_down_expert) { run_table_down("cuda-decode", "1"); }
TEST(cuda_quant_cases_stream_down_token) { run_table_down("cuda-quant", "0"); }
TEST(cuda_quant_cases_stream_down_expert) { run_table_down("cuda-quant", "1"); }

/* One case per weight type at many T: small decode batches, a T over the
 * route kernel's tiles, odd T. */
static void sweep(const char *backend, const moe_type *types, int n_types, moe_type act_type) {
    moe_ctx *ctx = cuda_ctx();
    if (!ctx) SKIP("no CUDA device");
    static const int64_t Ts[] = {1, 2, 3, 8, 31, 64, 257};
    int fails = 0, runs = 0;
    char first[1400] = "";
    for (int i = 0; i < n_types; i++)
        for (size_t j = 0; j < sizeof Ts / sizeof Ts[0]; j++) {
            moe_case c = {"sweep", Ts[j], 16, 512, 256, 4, MOE_ACT_SWIGLU, MOE_GATE_UP_SEPARATE, 0, types[i],
                          act_type, ROUTE_RANDOM, 0, 0};
            /* vary the shape so that layouts, biases and activations are crossed too */
            if (j % 3 == 1) { c.layout = MOE_GATE_UP_INTERLEAVED; c.act = MOE_ACT_SWIGLU_OAI; c.bias = 1; }
            if (j % 3 == 2) { c.layout = MOE_GATE_UP_CONCAT; c.act = MOE_ACT_GEGLU_ERF; c.K = 2; c.E = 8; }
            if (j == 6) { c.D = 768; c.K = 2; } /* T over one route tile; D not a multiple of the row blocks */
            char msg[1024];
            moe_case_result r = moe_case_run(&c, ctx, backend, moe_test_seed() + 977u * (unsigned)(i * 16 + j), NULL,
                                             msg, sizeof msg);
            if (r == MOE_CASE_SKIP) {
                fails++;
                snprintf(first, sizeof first, "%s T=%lld skipped: %s", moe_type_name(types[i]), (long long)Ts[j], msg);
                continue;
            }
            runs++;
            if (r != MOE_CASE_PASS) {
                if (!fails) snprintf(first, sizeof first, "%s T=%lld: %s", moe_type_name(types[i]), (long long)Ts[j], msg);
                printf("     %s %s T=%lld FAILED: %s\n", backend, moe_type_name(types[i]), (long long)Ts[j], msg);
                fails++;
            } else if (getenv("MOE_TEST_VERBOSE")) {
                printf("     %s %s T=%lld: %s\n", backend, moe_type_name(types[i]), (long long)Ts[j], msg);
            }
        }
    moe_ctx_free(ctx);
    if (fails) moe_test_fail(__FILE__, __LINE__, "%d of %d sweep runs failed; first: %s", fails, runs, first);
}

TEST(cuda_quant_sweep_T) {
    static const moe_type q[] = {MOE_TYPE_Q4_0, MOE_TYPE_Q8_0, MOE_TYPE_Q2_K, MOE_TYPE_Q3_K,
                                 MOE_TYPE_Q4_K, MOE_TYPE_Q5_K, MOE_TYPE_Q6_K, MOE_TYPE_MXFP4};
    sweep("cuda-quant", q, 8, MOE_TYPE_BF16);
}

TEST(cuda_decode_sweep_T) {
    static const moe_type q[] = {MOE_TYPE_BF16, MOE_TYPE_F16};
    sweep("cuda-decode", q, 1, MOE_TYPE_BF16);
    if (moe_test_failed()) return;
    sweep("cuda-decode", q + 1, 1, MOE_TYPE_F16);
}

/* The same sweeps with each kernel family forced. */
TEST(cuda_quant_sweep_T_stream_and_mma) {
    static const moe_type q[] = {MOE_TYPE_Q4_0, MOE_TYPE_Q8_0, MOE_TYPE_Q2_K, MOE_TYPE_Q3_K,
                                 MOE_TYPE_Q4_K, MOE_TYPE_Q5_K, MOE_TYPE_Q6_K, MOE_TYPE_MXFP4};
    static const char *modes[] = {"1", "0"};
    setenv("MOE_QUANT_PREFILL_T", "-1", 1); /* the decode kernels at every T of the sweep */
    for (int m = 0; m < 2 && !moe_test_failed(); m++) {
        setenv("MOE_DECODE_STREAM", modes[m], 1);
        sweep("cuda-quant", q, 8, MOE_TYPE_BF16);
        unsetenv("MOE_DECODE_STREAM");
    }
    unsetenv("MOE_QUANT_PREFILL_T");
}

TEST(cuda_decode_sweep_T_stream_and_mma) {
    static const moe_type q[] = {MOE_TYPE_BF16, MOE_TYPE_F16};
    static const char *modes[] = {"1", "0"};
    setenv("MOE_DECODE_MAX_T", "-1", 1); /* the forced family at every T, no hand-over */
    for (int m = 0; m < 2 && !moe_test_failed(); m++) {
        setenv("MOE_DECODE_STREAM", modes[m], 1);
        sweep("cuda-decode", q, 1, MOE_TYPE_F32);
        if (!moe_test_failed()) sweep("cuda-decode", q + 1, 1, MOE_TYPE_F16);
        unsetenv("MOE_DECODE_STREAM");
    }
    unsetenv("MOE_DECODE_MAX_T");
}

/* The streaming kernels at every T of a cuda-quant layer (on), or the layer's
 * own choice again (off): MOE_DECODE_STREAM, MOE_DECODE_MAX_T and
 * MOE_QUANT_PREFILL_T set or unset together. */
static void stream_env(int on) {
    if (on) {
        setenv("MOE_DECODE_STREAM", "1", 1);
        setenv("MOE_DECODE_MAX_T", "-1", 1);
        setenv("MOE_QUANT_PREFILL_T", "-1", 1);
    } else {
        unsetenv("MOE_DECODE_STREAM");
        unsetenv("MOE_DECODE_MAX_T");
        unsetenv("MOE_QUANT_PREFILL_T");
    }
}

/* A variable of the environment that a test sets, saved first and put back
 * (set to the value it had, or unset) at the end. */
typedef struct env_saved {
    const char *name;
    int was;
    char val[64];
} env_saved;
static env_saved env_save(const char *name) {
    env_saved e = {name, 0, ""};
    const char *v = getenv(name);
    if (v) {
        e.was = 1;
        snprintf(e.val, sizeof e.val, "%s", v);
    }
    return e;
}
static void env_restore(const env_saved *e) {
    if (e->was) setenv(e->name, e->val, 1);
    else unsetenv(e->name);
}

/* The streaming kernels over more pairs than one chunk (MOE_SV_MAXP = 1024):
 * T = 600 with K = 4 runs as chunks of 256, 256 and 88 tokens, each routed
 * in place by blocks whose pair lies past the first blockDim.x pairs; small
 * rows so that compute-sanitizer can run it. */
static void stream_case(const char *backend, moe_type wt, moe_type act_type, int64_t T, int64_t E, int64_t D,
                        int64_t I, int64_t K) {
    moe_ctx *ctx = cuda_ctx();
    if (!ctx) SKIP("no CUDA device");
    stream_env(1);
    moe_case c = {"stream", T, E, D, I, K, MOE_ACT_SWIGLU, MOE_GATE_UP_CONCAT, 1, wt, act_type, ROUTE_RANDOM, 0, 0};
    char msg[1024];
    moe_case_result r = moe_case_run(&c, ctx, backend, moe_test_seed() + 4242u, NULL, msg, sizeof msg);
    stream_env(0);
    moe_ctx_free(ctx);
    if (r != MOE_CASE_PASS)
        moe_test_fail(__FILE__, __LINE__, "%s T=%lld E=%lld D=%lld I=%lld K=%lld: %s", moe_type_name(wt), (long long)T,
                      (long long)E, (long long)D, (long long)I, (long long)K, msg);
}
static void stream_chunks(const char *backend, moe_type wt, moe_type act_type) {
    stream_case(backend, wt, act_type, 600, 16, 256, 256, 4);
}
TEST(cuda_quant_stream_chunks) {
    static const moe_type q[] = {MOE_TYPE_Q8_0, MOE_TYPE_Q4_K, MOE_TYPE_MXFP4, MOE_TYPE_Q4_0};
    for (int i = 0; i < 4 && !moe_test_failed(); i++) stream_chunks("cuda-quant", q[i], MOE_TYPE_BF16);
}
/* Rows of an odd number of 32-element units (D = 96, I = 160) at T = 2 and
 * 3 in the single cooperative launch (MOE_DECODE_FUSED=1; the GGUF default
 * from T = 3): the second phase's staged activations follow the first's in
 * shared memory (their size once broke the 16-byte alignment there: gpt-oss,
 * 90 units) */
TEST(cuda_quant_stream_odd_units) {
    static const moe_type q[] = {MOE_TYPE_Q8_0, MOE_TYPE_MXFP4, MOE_TYPE_Q4_0};
    setenv("MOE_DECODE_FUSED", "1", 1);
    for (int i = 0; i < 3 && !moe_test_failed(); i++) stream_case("cuda-quant", q[i], MOE_TYPE_BF16, 2, 4, 96, 160, 2);
    for (int i = 0; i < 3 && !moe_test_failed(); i++) stream_case("cuda-quant", q[i], MOE_TYPE_BF16, 3, 4, 160, 96, 2);
    unsetenv("MOE_DECODE_FUSED");
}
/* describe at T of a cuda-quant layer of all-zero wt blocks (a cuda-decode
 * layer where wt is bf16 or f16; weights on the host, copied at init); 0 when
 * the layer could not be made */
/* down in type wd (gate/up in wt) */
static int zero_quant_describe_2(moe_ctx *ctx, moe_type wt, moe_type wd, int64_t T, int64_t E, int64_t D, int64_t I,
                                 int64_t K, moe_gate_up_layout lay, char *desc, size_t n) {
    /* room for gate/up (fused: twice) and for down */
    const int64_t C = D > I ? D : I;
    size_t rb = moe_type_row_bytes(wt, C) > moe_type_row_bytes(wd, C) ? moe_type_row_bytes(wt, C)
                                                                      : moe_type_row_bytes(wd, C);
    size_t bytes = rb * (size_t)(E * 2 * C);
    void *q = calloc(1, bytes);
    if (!q) return 0;
    moe_layer_desc d = moe_layer_desc_default();
    d.E = E; d.D = D; d.I = I; d.K = K;
    moe_tensor t = {q, wt, MOE_MEM_HOST, 0, 0, 0};
    d.layout = lay;
    if (lay == MOE_GATE_UP_SEPARATE) d.gate = d.up = t;
    else d.gate_up = t;
    d.down = t;
    d.down.type = wd;
    d.act_type = MOE_TYPE_BF16;
    d.backend = wt == MOE_TYPE_BF16 || wt == MOE_TYPE_F16 ? "cuda-decode" : "cuda-quant";
    moe_layer *L = NULL;
    moe_status st = moe_layer_create(ctx, &d, &L);
    if (!st) moe_layer_describe(L, T, desc, n);
    moe_layer_free(L);
    free(q);
    return st == MOE_OK;
}
static int zero_quant_describe_l(moe_ctx *ctx, moe_type wt, int64_t T, int64_t E, int64_t D, int64_t I, int64_t K,
                                 moe_gate_up_layout lay, char *desc, size_t n) {
    return zero_quant_describe_2(ctx, wt, wt, T, E, D, I, K, lay, desc, n);
}
static int zero_quant_describe(moe_ctx *ctx, moe_type wt, int64_t T, int64_t E, int64_t D, int64_t I, int64_t K,
                               char *desc, size_t n) {
    return zero_quant_describe_l(ctx, wt, T, E, D, I, K, MOE_GATE_UP_SEPARATE, desc, n);
}

/* the same under stream_case's settings */
static int stream_describe(moe_ctx *ctx, moe_type wt, int64_t T, int64_t E, int64_t D, int64_t I, int64_t K,
                           char *desc, size_t n) {
    stream_env(1);
    int ok = zero_quant_describe(ctx, wt, T, E, D, I, K, desc, n);
    stream_env(0);
    return ok;
}

/* h quantised once by the gate/up launch (decode_stream.cuh sv_hq_quantise;
 * MOE_SV_HQ=2: at every T, not by the layer's rule) against every down block
 * quantising the f32 rows it stages (MOE_SV_HQ=0, the form before): the same
 * integers and scales, so the same output, bit for bit; the check is that
 * the two layers' errors against the reference are the same double. The
 * rule (decode.cu sv_use_hq) must take T = 2, and T = 1 only from K I =
 * 16384. Rows of 2-8 a job (every block of 32 shared by several
 * jobs: the counters), 32-row jobs (whole blocks) and the run-time split's
 * boundaries (T = 3-8); both down forms (token-major at T = 1, expert-major
 * from T = 5 with 16 experts); down in another format than gate/up (MXFP4's
 * nibble order is made in the down launch). */
TEST(cuda_quant_stream_hq) {
    moe_ctx *ctx = cuda_ctx();
    if (!ctx) SKIP("no CUDA device");
    const env_saved saved = env_save("MOE_SV_HQ");
    unsetenv("MOE_SV_HQ");
    static const struct { int64_t T, I, K; int want; } rule[] = {{2, 512, 2, 1}, {1, 512, 2, 0}, {1, 2048, 8, 1}};
    for (size_t i = 0; i < sizeof rule / sizeof rule[0]; i++) {
        char desc[4096] = "";
        CHECK(stream_describe(ctx, MOE_TYPE_Q4_K, rule[i].T, 8, 256, rule[i].I, rule[i].K, desc, sizeof desc));
        CHECK_MSG((strstr(desc, "h quantised once") != NULL) == rule[i].want, "q4_K T=%lld I=%lld K=%lld: %s",
                  (long long)rule[i].T, (long long)rule[i].I, (long long)rule[i].K, desc);
    }
    moe_ctx_free(ctx);
    ctx = cuda_ctx();
    static const struct { moe_type g, d; } ty[] = {{MOE_TYPE_Q8_0, MOE_TYPE_Q8_0}, {MOE_TYPE_Q4_K, MOE_TYPE_Q4_K},
                                                   {MOE_TYPE_MXFP4, MOE_TYPE_MXFP4}, {MOE_TYPE_Q6_K, MOE_TYPE_Q6_K},
                                                   {MOE_TYPE_Q4_K, MOE_TYPE_Q6_K}, {MOE_TYPE_Q8_0, MOE_TYPE_MXFP4}};
    static const struct { int64_t E, D, I, K; } sh[] = {{16, 256, 512, 2}, {4, 512, 2048, 4}, {8, 256, 1280, 2}};
    static const int64_t Ts[] = {1, 2, 3, 5, 8, 16};
    stream_env(1);
    int runs = 0;
    for (size_t i = 0; i < sizeof ty / sizeof ty[0] && !moe_test_failed(); i++)
        for (size_t k = 0; k < sizeof sh / sizeof sh[0] && !moe_test_failed(); k++)
            for (size_t t = 0; t < sizeof Ts / sizeof Ts[0] && !moe_test_failed(); t++) {
                moe_case c = {"hq", Ts[t], sh[k].E, sh[k].D, sh[k].I, sh[k].K, MOE_ACT_SWIGLU, MOE_GATE_UP_CONCAT,
                              1, ty[i].g, MOE_TYPE_BF16, ROUTE_RANDOM, 0, 0};
                char msg[1024];
                double err[2] = {-1.0, -2.0};
                moe_case_result r[2];
                for (int f = 0; f < 2; f++) {
                    setenv("MOE_SV_HQ", f ? "2" : "0", 1);
                    r[f] = moe_case_run_down(&c, ty[i].d, ctx, "cuda-quant", moe_test_seed() + 977u * t + k, &err[f],
                                             msg, sizeof msg);
                    unsetenv("MOE_SV_HQ");
                    CHECK_MSG(r[f] == MOE_CASE_PASS, "%s/%s T=%lld E=%lld D=%lld I=%lld (MOE_SV_HQ %s): %s",
                              moe_type_name(ty[i].g), moe_type_name(ty[i].d), (long long)c.T, (long long)c.E,
                              (long long)c.D, (long long)c.I, f ? "2" : "0", msg);
                }
                CHECK_MSG(err[0] == err[1], "%s/%s T=%lld E=%lld D=%lld I=%lld: error %.17g with h quantised once, "
                          "%.17g without: the outputs differ", moe_type_name(ty[i].g), moe_type_name(ty[i].d),
                          (long long)c.T, (long long)c.E, (long long)c.D, (long long)c.I, err[1], err[0]);
                runs++;
            }
    stream_env(0);
    env_restore(&saved);
    moe_ctx_free(ctx);
    CHECK(runs > 0);
}

/* The run-time split's rule (decode.cu sv_chunk): GGUF gate/up rows split at
 * run time, weighted by the groups' pairs, at T = 3..8, and to T = 16 where
 * T K <= 96 and T K >= E on layers of K >= 4; the planned grid at T K = 128,
 * at T K < E, at K = 2 beyond T = 8 and at T = 2; MOE_SV_DYNW=0 takes the
 * weights off, MOE_SV_DYN=3 gives the rule before session 31 (T = 3..8) and
 * MOE_SV_DYNORD=1 (the tile-major order) splits without weights.
 * Beyond T = 8 the planned grid's blocks take half the rows. */
TEST(cuda_quant_stream_split_rule) {
    moe_ctx *ctx = cuda_ctx();
    if (!ctx) SKIP("no CUDA device");
    static const struct { int64_t T, K, E; const char *env, *val; int dyn, w; } cs[] = {
        {2, 8, 32, NULL, NULL, 0, 0},  {3, 8, 32, NULL, NULL, 1, 1},  {8, 8, 32, NULL, NULL, 1, 1},
        {12, 8, 32, NULL, NULL, 1, 1}, {16, 8, 32, NULL, NULL, 0, 0}, {16, 4, 32, NULL, NULL, 1, 1},
        {12, 8, 128, NULL, NULL, 0, 0}, {12, 2, 32, NULL, NULL, 0, 0}, {8, 2, 32, NULL, NULL, 1, 1},
        {12, 8, 32, "MOE_SV_DYN", "3", 0, 0}, {8, 8, 32, "MOE_SV_DYNW", "0", 1, 0},
        {8, 8, 32, "MOE_SV_DYNORD", "1", 1, 0}};
    for (size_t i = 0; i < sizeof cs / sizeof cs[0] && !moe_test_failed(); i++) {
        char desc[4096] = "";
        if (cs[i].env) setenv(cs[i].env, cs[i].val, 1);
        CHECK(stream_describe(ctx, MOE_TYPE_Q4_K, cs[i].T, cs[i].E, 256, 512, cs[i].K, desc, sizeof desc));
        if (cs[i].env) unsetenv(cs[i].env);
        const char *gu = strstr(desc, "gate/up plan:");
        CHECK_MSG(gu != NULL, "T=%lld K=%lld: %s", (long long)cs[i].T, (long long)cs[i].K, desc);
        if (!gu) break;
        CHECK_MSG((strstr(gu, "split at run time") != NULL) == cs[i].dyn &&
                      (strstr(gu, "by their pairs") != NULL) == cs[i].w,
                  "T=%lld K=%lld E=%lld %s=%s: want split %d, weighted %d: %s", (long long)cs[i].T, (long long)cs[i].K,
                  (long long)cs[i].E, cs[i].env ? cs[i].env : "", cs[i].val ? cs[i].val : "", cs[i].dyn, cs[i].w, desc);
    }
    /* beyond T = 8 a planned gate/up grid takes blocks of half the rows (two waves; MOE_SV_GWAVES=1: one), a
     * split one does not */
    static const struct { int64_t T, K; int halved; } wv[] = {{16, 8, 1}, {24, 8, 1}, {12, 8, 0}, {8, 8, 0}};
    for (size_t i = 0; i < sizeof wv / sizeof wv[0] && !moe_test_failed(); i++) {
        int R[2] = {0, 0};
        for (int f = 0; f < 2; f++) {
            char desc[4096] = "";
            if (f) setenv("MOE_SV_GWAVES", "1", 1);
            CHECK(stream_describe(ctx, MOE_TYPE_Q4_K, wv[i].T, 32, 256, 512, wv[i].K, desc, sizeof desc));
            unsetenv("MOE_SV_GWAVES");
            const char *gu = strstr(desc, "gate/up plan:");
            const char *n = gu ? strpbrk(gu, "0123456789") : NULL;
            R[f] = n ? atoi(n) : 0;
            CHECK_MSG(R[f] > 0, "T=%lld: no gate/up rows in %s", (long long)wv[i].T, desc);
        }
        CHECK_MSG(wv[i].halved ? R[0] < R[1] : R[0] == R[1], "T=%lld K=%lld: gate/up rows %d (default), %d "
                  "(MOE_SV_GWAVES=1): want %s", (long long)wv[i].T, (long long)wv[i].K, R[0], R[1],
                  wv[i].halved ? "fewer" : "the same");
    }
    moe_ctx_free(ctx);
}

/* The streaming kernels' stages copied a row a copy (MOE_SV_CST=0), in
 * copies of a few rows (MOE_SV_CST=4096: as many whole rows as fit in 4 KB)
 * and whole (the default, where rows lie back to back): only where the rows
 * land in shared memory differs (decode_stream.cuh sv_srow), so the three
 * outputs must be the same, bit for bit (their errors against the reference
 * the same double). Rows of 16-byte multiples and not (MXFP4's 136 and 544
 * bytes), stages cut short at the job's end, both down forms, gate/up
 * concatenated (copied whole) and interleaved (rows 2 apart: a copy a row
 * whatever the knob); describe names the copies. */
TEST(cuda_quant_stream_copies) {
    moe_ctx *ctx = cuda_ctx();
    if (!ctx) SKIP("no CUDA device");
    const env_saved saved = env_save("MOE_SV_CST");
    static const char *cst[] = {"0", "4096", NULL};
    static const char *want[] = {NULL, "copy)", "(one copy)"}; /* 4 KB: some rows a copy, or the whole stage */
    for (int f = 0; f < 3; f++) {
        char desc[4096] = "";
        if (cst[f]) setenv("MOE_SV_CST", cst[f], 1);
        else unsetenv("MOE_SV_CST");
        CHECK(stream_describe(ctx, MOE_TYPE_Q8_0, 2, 8, 512, 512, 2, desc, sizeof desc));
        CHECK_MSG(want[f] ? strstr(desc, want[f]) != NULL : strstr(desc, "copy)") == NULL, "MOE_SV_CST=%s: %s",
                  cst[f] ? cst[f] : "(unset)", desc);
    }
    moe_ctx_free(ctx);
    ctx = cuda_ctx();
    static const moe_type ty[] = {MOE_TYPE_Q8_0, MOE_TYPE_Q4_K, MOE_TYPE_MXFP4, MOE_TYPE_Q6_K};
    static const struct { int64_t E, D, I, K; moe_gate_up_layout lay; } sh[] = {
        {16, 256, 512, 2, MOE_GATE_UP_CONCAT}, {4, 512, 1280, 4, MOE_GATE_UP_CONCAT},
        {8, 256, 512, 2, MOE_GATE_UP_INTERLEAVED}};
    static const int64_t Ts[] = {1, 2, 5, 16};
    stream_env(1);
    int runs = 0;
    for (size_t i = 0; i < sizeof ty / sizeof ty[0] && !moe_test_failed(); i++)
        for (size_t k = 0; k < sizeof sh / sizeof sh[0] && !moe_test_failed(); k++)
            for (size_t t = 0; t < sizeof Ts / sizeof Ts[0] && !moe_test_failed(); t++) {
                moe_case c = {"copies", Ts[t], sh[k].E, sh[k].D, sh[k].I, sh[k].K, MOE_ACT_SWIGLU, sh[k].lay,
                              1, ty[i], MOE_TYPE_BF16, ROUTE_RANDOM, 0, 0};
                char msg[1024];
                double err[3] = {-1.0, -2.0, -3.0};
                for (int f = 0; f < 3; f++) {
                    if (cst[f]) setenv("MOE_SV_CST", cst[f], 1);
                    else unsetenv("MOE_SV_CST");
                    moe_case_result r = moe_case_run_down(&c, ty[i], ctx, "cuda-quant", moe_test_seed() + 577u * t + k,
                                                          &err[f], msg, sizeof msg);
                    CHECK_MSG(r == MOE_CASE_PASS, "%s T=%lld E=%lld D=%lld I=%lld layout %d (MOE_SV_CST %s): %s",
                              moe_type_name(ty[i]), (long long)c.T, (long long)c.E, (long long)c.D, (long long)c.I,
                              (int)sh[k].lay, cst[f] ? cst[f] : "unset", msg);
                }
                CHECK_MSG(err[0] == err[1] && err[0] == err[2],
                          "%s T=%lld E=%lld D=%lld I=%lld layout %d: errors %.17g (a copy a row), %.17g (4 KB copies), "
                          "%.17g (whole stages): the outputs differ", moe_type_name(ty[i]), (long long)c.T,
                          (long long)c.E, (long long)c.D, (long long)c.I, (int)sh[k].lay, err[0], err[1], err[2]);
                runs++;
            }
    stream_env(0);
    env_restore(&saved);
    moe_ctx_free(ctx);
    CHECK(runs > 0);
}

/* The dense expert-major down launch planned as one wave of blocks of whole
 * row tiles (decode.cu sv_down_one_wave) against the plan under the 16 KB
 * cap on a block's partial sums (MOE_SV_D1W=0): long down rows' count (D =
 * 8192) over few experts, so that one wave takes more rows a block than the
 * cap allows. describe must show the larger blocks at some T, and the two
 * plans must give the same output bit for bit (a row's sums do not depend
 * on the block that takes it). */
TEST(cuda_decode_stream_down_one_wave) {
    moe_ctx *ctx = cuda_ctx();
    if (!ctx) SKIP("no CUDA device");
    const env_saved saved = env_save("MOE_SV_D1W");
    static const int64_t Ts[] = {3, 4, 8};
    int larger = 0;
    setenv("MOE_SV_DOWNE", "1", 1);
    for (size_t t = 0; t < sizeof Ts / sizeof Ts[0] && !moe_test_failed(); t++) {
        int R[2] = {0, 0};
        double err[2] = {-1.0, -2.0};
        for (int f = 0; f < 2; f++) {
            if (f) setenv("MOE_SV_D1W", "0", 1);
            else unsetenv("MOE_SV_D1W");
            char desc[4096] = "";
            CHECK(stream_describe(ctx, MOE_TYPE_BF16, Ts[t], 8, 8192, 128, 2, desc, sizeof desc));
            const char *dp = strstr(desc, "down plan:");
            R[f] = dp ? atoi(dp + strlen("down plan:")) : 0;
            CHECK_MSG(R[f] > 0, "T=%lld: no down plan in %s", (long long)Ts[t], desc);
            moe_case c = {"one_wave", Ts[t], 8, 8192, 128, 2, MOE_ACT_SWIGLU, MOE_GATE_UP_CONCAT, 0, MOE_TYPE_BF16,
                          MOE_TYPE_BF16, ROUTE_RANDOM, 0, 0};
            char msg[1024];
            stream_env(1);
            moe_case_result r = moe_case_run(&c, ctx, "cuda-decode", moe_test_seed() + 31u * (unsigned)t, &err[f], msg,
                                             sizeof msg);
            stream_env(0);
            CHECK_MSG(r == MOE_CASE_PASS, "T=%lld MOE_SV_D1W %s: %s", (long long)Ts[t], f ? "0" : "unset", msg);
        }
        CHECK_MSG(R[0] >= R[1], "T=%lld: %d rows a down block in one wave, %d under the cap", (long long)Ts[t], R[0], R[1]);
        CHECK_MSG(err[0] == err[1], "T=%lld: errors %.17g (one wave, %d rows a block) and %.17g (%d rows): the outputs "
                  "differ", (long long)Ts[t], err[0], R[0], err[1], R[1]);
        larger += R[0] > R[1];
    }
    unsetenv("MOE_SV_DOWNE");
    env_restore(&saved);
    moe_ctx_free(ctx);
    CHECK_MSG(larger > 0, "the one-wave plan took no more rows a block than the capped one at any T");
}

/* The streaming launches' plans fit as many blocks an SM as they count on
 * (describe adds "(but N fit)" where the device fits fewer with the planned
 * shared memory; the planner once left 64 bytes for the static variables,
 * which take 128), on rows of the presets' sizes and T = 1..8. */
TEST(cuda_stream_plan_fits) {
    moe_ctx *ctx = cuda_ctx();
    if (!ctx) SKIP("no CUDA device");
    static const moe_type q[] = {MOE_TYPE_Q4_K, MOE_TYPE_Q8_0, MOE_TYPE_Q6_K};
    static const struct { int64_t E, D, I, K; } sh[] = {{8, 2048, 768, 8}, {4, 7168, 2048, 4}, {4, 4096, 3584, 2}};
    static const int64_t Ts[] = {1, 2, 4, 8};
    int checked = 0;
    for (size_t s = 0; s < sizeof sh / sizeof sh[0]; s++)
        for (size_t i = 0; i < sizeof q / sizeof q[0]; i++)
            for (size_t t = 0; t < sizeof Ts / sizeof Ts[0] && !moe_test_failed(); t++) {
                char desc[4096] = "";
                CHECK(stream_describe(ctx, q[i], Ts[t], sh[s].E, sh[s].D, sh[s].I, sh[s].K, desc, sizeof desc));
                if (!strstr(desc, "plan:")) continue; /* not the streaming kernels at this T */
                checked++;
                CHECK_MSG(!strstr(desc, "(but "), "%s D=%lld I=%lld T=%lld: %s", moe_type_name(q[i]),
                          (long long)sh[s].D, (long long)sh[s].I, (long long)Ts[t], desc);
            }
    moe_ctx_free(ctx);
    CHECK_MSG(checked > 0, "no streaming plan was described");
}

/* Q8_0 and Q4_0 rows of 2048 elements against groups of 8 tokens (24 pairs
 * an expert): the int8 tensor-core consumer (decode.cu sv_plan), in both
 * phases. The layer must say that it plans that consumer at T = 24, and not
 * at T = 2 (2 pairs an expert), so that the case cannot pass on dp4a. MXFP4
 * runs dp4a at both (decode_stream.h sv_fmt_has_qmma, bench/decode/s13). */
TEST(cuda_quant_stream_int8_mma) {
    static const moe_type q[] = {MOE_TYPE_Q8_0, MOE_TYPE_Q4_0};
    moe_ctx *ctx = cuda_ctx();
    if (!ctx) SKIP("no CUDA device");
    {
        char desc[2048] = "";
        CHECK(stream_describe(ctx, MOE_TYPE_MXFP4, 24, 4, 2048, 2048, 4, desc, sizeof desc));
        CHECK_MSG(strstr(desc, "dp4a") && !strstr(desc, "int8 mma for passes"), "mxfp4 T=24: %s", desc);
    }
    for (int i = 0; i < 2 && !moe_test_failed(); i++) {
        char desc[2048] = "";
        CHECK(stream_describe(ctx, q[i], 24, 4, 2048, 2048, 4, desc, sizeof desc));
        CHECK_MSG(strstr(desc, "int8 mma for passes") != NULL, "%s T=24: %s", moe_type_name(q[i]), desc);
        desc[0] = 0;
        CHECK(stream_describe(ctx, q[i], 2, 4, 2048, 2048, 4, desc, sizeof desc));
        CHECK_MSG(strstr(desc, "dp4a") && !strstr(desc, "int8 mma for passes"), "%s T=2: %s", moe_type_name(q[i]),
                  desc);
    }
    moe_ctx_free(ctx);
    for (int i = 0; i < 2 && !moe_test_failed(); i++) stream_case("cuda-quant", q[i], MOE_TYPE_BF16, 24, 4, 2048, 2048, 4);
    if (!moe_test_failed()) stream_case("cuda-quant", MOE_TYPE_MXFP4, MOE_TYPE_BF16, 24, 4, 2048, 2048, 4);
}
TEST(cuda_decode_stream_chunks) { stream_chunks("cuda-decode", MOE_TYPE_BF16, MOE_TYPE_BF16); }

/* cuda-quant's int8 tensor-core kernels (src/cuda/decode_qmma.cu), forced at
 * every T (no streaming kernels, no prefill path) with each pass size
 * (MOE_QG_NT: 8, 16 or 32 tokens; an expert with more pairs takes several
 * passes), and the mma kernels they replace (MOE_QUANT_I8=0) on the same
 * table. The layer must say which runs, so a case cannot pass on the other. */
static void i8_env(const char *nt, const char *i8) {
    setenv("MOE_DECODE_STREAM", "0", 1);
    setenv("MOE_QUANT_PREFILL_T", "-1", 1);
    if (nt) setenv("MOE_QG_NT", nt, 1);
    if (i8) setenv("MOE_QUANT_I8", i8, 1);
}
static void i8_unenv(void) {
    unsetenv("MOE_DECODE_STREAM");
    unsetenv("MOE_QUANT_PREFILL_T");
    unsetenv("MOE_QG_NT");
    unsetenv("MOE_QUANT_I8");
}
static void i8_check_desc(moe_type wt, const char *i8, int want) {
    moe_ctx *ctx = cuda_ctx();
    if (!ctx) return;
    char desc[2048] = "";
    i8_env(NULL, i8);
    CHECK(zero_quant_describe(ctx, wt, 16, 8, 512, 256, 2, desc, sizeof desc));
    i8_unenv();
    int major = 0;
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
    if (major >= 8)
        CHECK_MSG((strstr(desc, "int8 tensor-core kernels") != NULL) == want, "%s MOE_QUANT_I8=%s: %s",
                  moe_type_name(wt), i8 ? i8 : "(unset)", desc);
    moe_ctx_free(ctx);
}
/* rows of 136 KB (Q8_0, D = 131072): past the int8 kernels' 20-bit chunk
 * offsets, the layer must leave them (moe__qg_row_stride_ok) and say why */
TEST(cuda_quant_i8_long_rows) {
    moe_ctx *ctx = cuda_ctx();
    if (!ctx) SKIP("no CUDA device");
    const int64_t E = 2, D = 131072, I = 256;
    const size_t gu = moe_type_row_bytes(MOE_TYPE_Q8_0, D) * (size_t)(E * I),
                 dn = moe_type_row_bytes(MOE_TYPE_Q8_0, I) * (size_t)(E * D);
    void *w = calloc(1, gu), *wd = calloc(1, dn);
    char desc[2048] = "";
    if (w && wd) {
        moe_layer_desc d = moe_layer_desc_default();
        d.E = E; d.D = D; d.I = I; d.K = 1;
        moe_tensor t = {w, MOE_TYPE_Q8_0, MOE_MEM_HOST, 0, 0, 0}, td = {wd, MOE_TYPE_Q8_0, MOE_MEM_HOST, 0, 0, 0};
        d.gate = d.up = t;
        d.down = td;
        d.act_type = MOE_TYPE_BF16;
        d.backend = "cuda-quant";
        moe_layer *L = NULL;
        i8_env(NULL, NULL);
        moe_status st = moe_layer_create(ctx, &d, &L);
        i8_unenv();
        CHECK_MSG(st == MOE_OK, "create: %s", moe_ctx_last_error(ctx));
        if (!st) moe_layer_describe(L, 16, desc, sizeof desc);
        moe_layer_free(L);
        CHECK_MSG(!strstr(desc, "int8 tensor-core kernels") && strstr(desc, "no int8 kernels: row stride of 139264"),
                  "%s", desc);
    }
    free(w);
    free(wd);
    moe_ctx_free(ctx);
}
static void run_table_i8(const char *nt, const char *i8) {
    if (!cuda_ctx_available()) SKIP("no CUDA device");
    i8_check_desc(MOE_TYPE_Q8_0, i8, !(i8 && i8[0] == '0'));
    if (moe_test_failed()) return;
    i8_env(nt, i8);
    setenv("MOE_DECODE_MAX_T", "-1", 1);
    run_table("cuda-quant");
    unsetenv("MOE_DECODE_MAX_T");
    i8_unenv();
}
TEST(cuda_quant_cases_i8) { run_table_i8(NULL, NULL); }
TEST(cuda_quant_cases_i8_nt1) { run_table_i8("1", NULL); }
TEST(cuda_quant_cases_i8_nt4) { run_table_i8("4", NULL); }
/* the instances for two blocks an SM (the table's layers, D <= 3072, take three) */
TEST(cuda_quant_cases_i8_bps2) {
    setenv("MOE_QG_BPS", "2", 1);
    run_table_i8(NULL, NULL);
    unsetenv("MOE_QG_BPS");
}
TEST(cuda_quant_cases_kdec) { run_table_i8(NULL, "0"); }
/* Row tiles cut by N (phase 1: I = 96 of 32- or 64-row tiles, phase 2: D = 352
 * of 64 or 128, moe__qg_rows), a last stage of fewer blocks of 32 (11 and 3 a
 * row; Q8_0 stages of 8, the others of 8 too), several passes
 * an expert (T = 40, K = 2, E = 4: ~20 pairs an expert, 8 a pass), the
 * instances for three and for two blocks an SM. */
TEST(cuda_quant_i8_ragged) {
    static const moe_type q[] = {MOE_TYPE_Q8_0, MOE_TYPE_MXFP4, MOE_TYPE_Q4_0};
    moe_ctx *ctx = cuda_ctx();
    if (!ctx) SKIP("no CUDA device");
    i8_env("1", NULL);
    for (int i = 0; i < 3 && !moe_test_failed(); i++)
        for (int v = 0; v < 2 && !moe_test_failed(); v++) {
            setenv("MOE_QG_BPS", v ? "2" : "3", 1); /* both instance sets */
            moe_case c = {"i8-ragged", 40, 4, 352, 96, 2, v ? MOE_ACT_SWIGLU_OAI : MOE_ACT_SWIGLU,
                          v ? MOE_GATE_UP_INTERLEAVED : MOE_GATE_UP_SEPARATE, v, q[i], MOE_TYPE_BF16, ROUTE_RANDOM,
                          0, 0};
            char msg[1024];
            moe_case_result r = moe_case_run(&c, ctx, "cuda-quant", moe_test_seed() + 31u * (unsigned)(2 * i + v),
                                             NULL, msg, sizeof msg);
            CHECK_MSG(r == MOE_CASE_PASS, "%s variant %d: %s", moe_type_name(q[i]), v, msg);
        }
    unsetenv("MOE_QG_BPS");
    i8_unenv();
    moe_ctx_free(ctx);
}
/* Variant v of the int8 kernels' A/B cases: T = 40, K = 2, weights wt; v = 0
 * SwiGLU with separate gate and up, 1 the GPT-OSS activation on interleaved
 * gate/up with biases, 2 GELU up-only. */
static moe_case i8_ab_case(const char *name, int64_t E, int64_t D, int64_t I, moe_type wt, int v) {
    const moe_act act = v == 1 ? MOE_ACT_SWIGLU_OAI : v == 2 ? MOE_ACT_GELU : MOE_ACT_SWIGLU;
    moe_case c = {name, 40, E, D, I, 2, act, v == 1 ? MOE_GATE_UP_INTERLEAVED : MOE_GATE_UP_SEPARATE, v == 1, wt,
                  MOE_TYPE_BF16, ROUTE_RANDOM, 0, 0};
    return c;
}
/* Case c (down in type down) on cuda-quant twice, with var=0 and with var
 * unset, each against the reference; the two outputs must be the same bit
 * for bit (the two errors the same double). what names the case. */
static void i8_ab_same(moe_ctx *ctx, const moe_case *c, moe_type down, const char *var, unsigned seed,
                       const char *what) {
    char msg[1024];
    double err[2] = {-1.0, -2.0};
    for (int f = 0; f < 2; f++) {
        if (!f) setenv(var, "0", 1);
        moe_case_result r = moe_case_run_down(c, down, ctx, "cuda-quant", seed, &err[f], msg, sizeof msg);
        unsetenv(var);
        CHECK_MSG(r == MOE_CASE_PASS, "%s (%s %s): %s", what, var, f ? "unset" : "0", msg);
    }
    CHECK_MSG(err[0] == err[1], "%s: error %.17g by default, %.17g with %s=0: the outputs differ", what, err[1],
              err[0], var);
}
/* The int8 kernels' gate/up launch quantising h in its epilogue (the
 * default) against a launch of its own after it (MOE_QG_HQ=0, the form
 * before): the same integers and scales, so the same output, bit for bit
 * (the two layers' errors against the reference the same double). Every
 * format, gated (both gate/up layouts, the GPT-OSS activation with biases)
 * and not, down in another format (MXFP4's nibble order), each token tile,
 * D and I = 96 (a block's rows past I: its last 32-row blocks skipped). */
TEST(cuda_quant_i8_hq) {
    static const struct { moe_type g, d; } ty[] = {{MOE_TYPE_Q8_0, MOE_TYPE_Q8_0}, {MOE_TYPE_Q4_K, MOE_TYPE_Q4_K},
                                                   {MOE_TYPE_MXFP4, MOE_TYPE_MXFP4}, {MOE_TYPE_Q6_K, MOE_TYPE_Q6_K},
                                                   {MOE_TYPE_Q4_0, MOE_TYPE_Q4_0}, {MOE_TYPE_Q5_K, MOE_TYPE_Q5_K},
                                                   {MOE_TYPE_Q4_K, MOE_TYPE_MXFP4}, {MOE_TYPE_MXFP4, MOE_TYPE_Q8_0}};
    static const char *nts[] = {"1", "2", "4"};
    moe_ctx *ctx = cuda_ctx();
    if (!ctx) SKIP("no CUDA device");
    for (int f = 0; f < 2 && !moe_test_failed(); f++) { /* the layer says which form it runs */
        char desc[2048] = "";
        i8_env(NULL, NULL);
        if (!f) setenv("MOE_QG_HQ", "0", 1);
        CHECK(zero_quant_describe(ctx, MOE_TYPE_Q8_0, 16, 8, 512, 256, 2, desc, sizeof desc));
        unsetenv("MOE_QG_HQ");
        i8_unenv();
        const char *want = f ? "h quantised in the gate/up launch's epilogue" : "h quantised between them by a launch";
        int major = 0;
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
        if (major >= 8) /* the int8 kernels' device */
            CHECK_MSG(strstr(desc, "int8 tensor-core kernels") && strstr(desc, want), "MOE_QG_HQ %s: %s",
                      f ? "(default)" : "0", desc);
    }
    int runs = 0;
    for (size_t i = 0; i < sizeof ty / sizeof ty[0] && !moe_test_failed(); i++)
        for (int v = 0; v < 3 && !moe_test_failed(); v++) {
            i8_env(nts[v], NULL);
            const int kq = ty[i].g >= MOE_TYPE_Q2_K && ty[i].g <= MOE_TYPE_Q6_K; /* 256-element blocks */
            const moe_case c = i8_ab_case("i8-hq", 8, kq ? 512 : 96, kq ? 768 : 96, ty[i].g, v);
            char what[160];
            snprintf(what, sizeof what, "%s/%s tiles %s, h quantised by gate/up (MOE_QG_HQ unset) or by a launch of its own",
                     moe_type_name(ty[i].g), moe_type_name(ty[i].d), nts[v]);
            i8_ab_same(ctx, &c, ty[i].d, "MOE_QG_HQ", moe_test_seed() + 131u * (unsigned)(3 * i + v), what);
            i8_unenv();
            runs++;
        }
    moe_ctx_free(ctx);
    CHECK(runs > 0);
}
/* The int8 kernels' stages copied by linear 16-byte chunks on 16-byte
 * aligned rows, MXFP4's 136- and Q6_K's 210-byte stages too (the default),
 * against the copies before session 35 (MOE_QG_LIN=0: those two formats row
 * by row): the same bytes staged at the same places, so the same output bit
 * for bit (the two layers' errors against the reference the same double).
 * Shapes with rows aligned on one side, the other or both (MXFP4 rows of
 * 512 and 1024 elements, Q6_K's of 2048; MXFP4's 352, with a short last
 * stage, and Q6_K's 256 are not), so that both forms run in one layer; Q8_0,
 * whose aligned rows took linear copies before, as the control; gated (both
 * gate/up layouts, the GPT-OSS activation with biases) and up-only, each token
 * tile. The layer says which copies each phase runs (lin by default, lin0
 * with MOE_QG_LIN=0), so a case cannot pass on the other. Its memcheck run
 * checks that the last stage of a row reads nothing past it. */
TEST(cuda_quant_i8_lin) {
    static const struct { moe_type t; int64_t D, I; int lin[2], lin0[2]; } sh[] = {
        {MOE_TYPE_MXFP4, 512, 1024, {1, 1}, {0, 0}}, {MOE_TYPE_MXFP4, 352, 512, {0, 1}, {0, 0}},
        {MOE_TYPE_Q6_K, 2048, 256, {1, 0}, {0, 0}},  {MOE_TYPE_Q6_K, 256, 2048, {0, 1}, {0, 0}},
        {MOE_TYPE_Q8_0, 352, 512, {0, 1}, {0, 1}},
    };
    static const char *nts[] = {"1", "2", "4"};
    static const char *form[] = {"row by row", "by linear 16-byte chunks"};
    moe_ctx *ctx = cuda_ctx();
    if (!ctx) SKIP("no CUDA device");
    int major = 0;
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
    if (major < 8) {
        moe_ctx_free(ctx);
        SKIP("the int8 kernels need sm_80");
    }
    int runs = 0;
    for (size_t i = 0; i < sizeof sh / sizeof sh[0] && !moe_test_failed(); i++) {
        for (int f = 0; f < 2 && !moe_test_failed(); f++) {
            char desc[2048] = "", want[200];
            i8_env(NULL, NULL);
            if (!f) setenv("MOE_QG_LIN", "0", 1);
            CHECK(zero_quant_describe(ctx, sh[i].t, 16, 8, sh[i].D, sh[i].I, 2, desc, sizeof desc));
            unsetenv("MOE_QG_LIN");
            i8_unenv();
            const int *m = f ? sh[i].lin : sh[i].lin0;
            snprintf(want, sizeof want, "stages copied %s and %s)", form[m[0]], form[m[1]]);
            CHECK_MSG(strstr(desc, "int8 tensor-core kernels") && strstr(desc, want), "%s D %lld I %lld MOE_QG_LIN %s: "
                      "want \"%s\" in: %s", moe_type_name(sh[i].t), (long long)sh[i].D, (long long)sh[i].I,
                      f ? "(default)" : "0", want, desc);
        }
        for (int v = 0; v < 3 && !moe_test_failed(); v++) {
            i8_env(nts[v], NULL);
            const moe_case c = i8_ab_case("i8-lin", 4, sh[i].D, sh[i].I, sh[i].t, v);
            char what[160];
            snprintf(what, sizeof what, "%s D %lld I %lld tiles %s, linear copies (MOE_QG_LIN unset) or the copies before",
                     moe_type_name(sh[i].t), (long long)sh[i].D, (long long)sh[i].I, nts[v]);
            i8_ab_same(ctx, &c, sh[i].t, "MOE_QG_LIN", moe_test_seed() + 137u * (unsigned)(3 * i + v), what);
            i8_unenv();
            runs++;
        }
    }
    moe_ctx_free(ctx);
    CHECK(runs > 0);
}
TEST(cuda_quant_sweep_T_i8) {
    static const moe_type q[] = {MOE_TYPE_Q8_0, MOE_TYPE_Q4_K, MOE_TYPE_MXFP4, MOE_TYPE_Q6_K, MOE_TYPE_Q4_0, MOE_TYPE_Q5_K};
    static const char *nts[] = {"1", "2", "4"};
    for (int i = 0; i < 6 && !moe_test_failed(); i++) i8_check_desc(q[i], NULL, 1);
    for (int m = 0; m < 3 && !moe_test_failed(); m++) {
        i8_env(nts[m], NULL);
        sweep("cuda-quant", q, 6, m == 1 ? MOE_TYPE_F16 : MOE_TYPE_BF16);
        i8_unenv();
    }
}
/* Phase 1's run-time split (MOE_SV_DYN: 1 from T = 2, the default; 2 at
 * every T; 0 never, the grid planned per (pair group, row tile)): the layer
 * says which it runs, and the case table (random routing, the routing edge
 * cases, two runs bitwise equal) passes on the streaming kernels with each. */
TEST(cuda_stream_runtime_split) {
    moe_ctx *ctx = cuda_ctx();
    if (!ctx) SKIP("no CUDA device");
    static const struct { const char *dyn; int64_t T; int want; } d[] = {
        {NULL, 4, 1}, {NULL, 1, 0}, {"0", 4, 0}, {"2", 1, 1},
    };
    for (size_t i = 0; i < sizeof d / sizeof d[0] && !moe_test_failed(); i++) {
        if (d[i].dyn) setenv("MOE_SV_DYN", d[i].dyn, 1);
        char desc[4096] = "";
        CHECK(stream_describe(ctx, MOE_TYPE_Q8_0, d[i].T, 16, 512, 256, 4, desc, sizeof desc));
        CHECK_MSG((strstr(desc, "split at run time") != NULL) == d[i].want, "MOE_SV_DYN=%s T=%lld: %s",
                  d[i].dyn ? d[i].dyn : "(default)", (long long)d[i].T, desc);
        unsetenv("MOE_SV_DYN");
    }
    moe_ctx_free(ctx);
    static const char *modes[] = {"0", "2"};
    for (int m = 0; m < 2 && !moe_test_failed(); m++) {
        setenv("MOE_SV_DYN", modes[m], 1);
        run_table_with("cuda-quant", "1");
        if (!moe_test_failed()) run_table_with("cuda-decode", "1");
        unsetenv("MOE_SV_DYN");
    }
}


/* cuda-quant's prefill path (GGUF blocks dequantised into the workspace, then
 * a grouped GEMM backend) forced for every T > 0 (MOE_QUANT_PREFILL_T=0):
 * the layer must say it runs it, and the sweep and the case table must pass
 * on it, also with the experts dequantised a few at a time; then the mma
 * kernels with the path off (-1) at the same T. */
static int prefill_describe(moe_ctx *ctx, int64_t T, char *desc, size_t n) {
    return zero_quant_describe(ctx, MOE_TYPE_Q8_0, T, 4, 64, 32, 2, desc, n);
}

TEST(cuda_quant_prefill_forced) {
    moe_ctx *ctx = cuda_ctx();
    if (!ctx) SKIP("no CUDA device");
    static const moe_type q[] = {MOE_TYPE_Q4_0, MOE_TYPE_Q8_0, MOE_TYPE_Q2_K, MOE_TYPE_Q3_K,
                                 MOE_TYPE_Q4_K, MOE_TYPE_Q5_K, MOE_TYPE_Q6_K, MOE_TYPE_MXFP4};
    static const char *modes[] = {"0", "-1"};
    for (int m = 0; m < 2 && !moe_test_failed(); m++) {
        setenv("MOE_QUANT_PREFILL_T", modes[m], 1);
        char desc[2048] = "";
        CHECK(prefill_describe(ctx, 64, desc, sizeof desc));
        CHECK_MSG((strstr(desc, "(prefill)") != NULL) == (m == 0), "MOE_QUANT_PREFILL_T=%s: %s", modes[m], desc);
        if (!moe_test_failed()) sweep("cuda-quant", q, 8, MOE_TYPE_BF16);
        if (!moe_test_failed() && m == 0) {
            static const moe_type h[] = {MOE_TYPE_Q4_K, MOE_TYPE_Q8_0};
            sweep("cuda-quant", h, 2, MOE_TYPE_F16); /* f16 activations: dequantised to f16 */
        }
        if (!moe_test_failed() && m == 0) run_table("cuda-quant");
        if (!moe_test_failed() && m == 0) {
            /* the experts in groups: 2 MB of workspace holds 2 experts of the sweep's
             * D = 512 shape and 1 of its D = 768 one (8 and 16 groups) */
            setenv("MOE_QUANT_PREFILL_MB", "2", 1);
            sweep("cuda-quant", q, 8, MOE_TYPE_BF16);
            unsetenv("MOE_QUANT_PREFILL_MB");
        }
        unsetenv("MOE_QUANT_PREFILL_T");
    }
    moe_ctx_free(ctx);
}

/* A context for the GEMMs on GGUF blocks (sm_90a kernels), or NULL and why not. */
static moe_ctx *gguf_gemm_ctx(const char **why) {
    moe_ctx *ctx = cuda_ctx();
    if (!ctx) {
        *why = "no CUDA device";
        return NULL;
    }
    int major = 0;
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
    if (major != 9) {
        moe_ctx_free(ctx);
        *why = "quantised B runs on sm_90a (Hopper)";
        return NULL;
    }
    return ctx;
}

/* cuda-quant's prefill path on the GGUF GEMMs at every T (on), or the defaults again (off) */
static void gguf_gemms_everywhere(int on) {
    if (on) {
        setenv("MOE_QUANT_PREFILL_T", "0", 1);
        setenv("MOE_QUANT_PREFILL_FUSED", "1", 1);
    } else {
        unsetenv("MOE_QUANT_PREFILL_FUSED");
        unsetenv("MOE_QUANT_PREFILL_T");
    }
}

/* The prefill GEMMs on the GGUF blocks themselves (cuda-sm90, Hopper; rows of
 * every GGUF type that TMA can address): the layer says
 * which prefill it runs (MOE_QUANT_PREFILL_FUSED=0: the dequantising one), and on the
 * same data both kernels (MOE_SM90_QS=128: B decoded; 256, 64: A in registers; 256
 * also with MOE_SM90_QS_TAIL=0) and the dequantising path pass
 * against the reference, with the same error where they compute the same bf16
 * weights and sums (reported: Q8_0's weights are the dequantised ones, Q4_K's
 * carry one more f32 rounding in the GGUF GEMMs). */
TEST(cuda_quant_prefill_gguf_gemm) {
    const char *why = "";
    moe_ctx *ctx = gguf_gemm_ctx(&why);
    if (!ctx) SKIP("%s", why);
    setenv("MOE_QUANT_PREFILL_T", "0", 1);
    /* Q8_0 rows whose strides are not multiples of 16 bytes: D = 320 and
     * I = 192 make rows of 340 and 204 bytes (4 and 12 mod 16: TMA groups of 4
     * rows), D = 384 and I = 128 408 and 136 (8: groups of 2), interleaved
     * gate/up of D = 320 rows 680 bytes apart, up 340 bytes past an aligned
     * start (groups of 2, from the boundary below) */
    static const struct {
        moe_type t, td; /* gate/up, down (0: t) */
        const char *fused;
        int want;
        int64_t D, I;
        moe_gate_up_layout lay;
        const char *grp;
    } dd[] = {
        {MOE_TYPE_Q8_0, 0, NULL, 1, 512, 256, MOE_GATE_UP_SEPARATE, "row by row"},
        {MOE_TYPE_Q4_K, 0, NULL, 1, 512, 256, MOE_GATE_UP_SEPARATE, NULL},
        {MOE_TYPE_Q5_K, 0, NULL, 1, 512, 256, MOE_GATE_UP_SEPARATE, NULL},
        {MOE_TYPE_Q8_0, 0, "0", 0, 512, 256, MOE_GATE_UP_SEPARATE, NULL},
        /* Q4_0 (18-byte blocks, 4-byte units): rows of 288 one by one, 144
         * (down, I = 256) too; of 180 / 108 (4 and 12 mod 16) in groups of 4 */
        {MOE_TYPE_Q4_0, 0, NULL, 1, 512, 256, MOE_GATE_UP_SEPARATE, "row by row"},
        {MOE_TYPE_Q4_0, 0, NULL, 1, 320, 192, MOE_GATE_UP_SEPARATE,
         "gate/up in groups of 4 rows 180 bytes apart, of down in groups of 4 rows 108 bytes apart"},
        {MOE_TYPE_Q4_0, 0, "0", 0, 512, 256, MOE_GATE_UP_SEPARATE, NULL},
        /* Q2_K (84-byte super-blocks, 4-byte units): rows of 168 (8 mod 16)
         * in pairs, of 84 (4) in groups of 4; Q3_K (110 bytes, 2-byte units):
         * 220 (12) in groups of 4, 110 (14) in groups of 8 (whose 880 bytes
         * hold the 128-byte box a 110-byte row alone would not); llama.cpp's
         * Q3_K_M mix (gate/up Q3_K, down Q4_K) */
        {MOE_TYPE_Q2_K, 0, NULL, 1, 512, 256, MOE_GATE_UP_SEPARATE,
         "gate/up in groups of 2 rows 168 bytes apart, of down in groups of 4 rows 84 bytes apart"},
        {MOE_TYPE_Q3_K, 0, NULL, 1, 512, 256, MOE_GATE_UP_SEPARATE,
         "gate/up in groups of 4 rows 220 bytes apart, of down in groups of 8 rows 110 bytes apart"},
        {MOE_TYPE_Q3_K, MOE_TYPE_Q4_K, NULL, 1, 512, 256, MOE_GATE_UP_SEPARATE,
         "gate/up in groups of 4 rows 220 bytes apart"},
        /* Q6_K (210-byte super-blocks, 2-byte units): rows of 420 (4 mod
         * 16) in groups of 4, of 210 in groups of 8, of 1680 one by one; the
         * Q4_K_M mix (gate/up Q4_K, down Q6_K) */
        {MOE_TYPE_Q6_K, 0, NULL, 1, 512, 256, MOE_GATE_UP_SEPARATE,
         "gate/up in groups of 4 rows 420 bytes apart, of down in groups of 8 rows 210 bytes apart"},
        {MOE_TYPE_Q6_K, 0, NULL, 1, 2048, 512, MOE_GATE_UP_SEPARATE,
         "gate/up row by row, of down in groups of 4 rows 420 bytes apart"},
        {MOE_TYPE_Q4_K, MOE_TYPE_Q6_K, NULL, 1, 512, 256, MOE_GATE_UP_SEPARATE,
         "gate/up row by row, of down in groups of 8 rows 210 bytes apart"},
        {MOE_TYPE_Q8_0, 0, NULL, 1, 320, 192, MOE_GATE_UP_SEPARATE,
         "gate/up in groups of 4 rows 340 bytes apart, of down in groups of 4 rows 204 bytes apart"},
        {MOE_TYPE_Q8_0, 0, NULL, 1, 384, 128, MOE_GATE_UP_CONCAT,
         "gate/up in groups of 2 rows 408 bytes apart, of down in groups of 2 rows 136 bytes apart"},
        {MOE_TYPE_Q8_0, 0, NULL, 1, 320, 256, MOE_GATE_UP_INTERLEAVED,
         "gate/up in groups of 2 rows 680 bytes apart, of down row by row"},
        /* MXFP4 (17-byte blocks, 2-byte units): rows of 272 bytes one by one,
         * 136 (8 mod 16) in pairs, 170 / 102 (10, 6) in groups of 8,
         * interleaved 340 apart (4) in groups of 4 */
        {MOE_TYPE_MXFP4, 0, NULL, 1, 512, 256, MOE_GATE_UP_SEPARATE,
         "gate/up row by row, of down in groups of 2 rows 136 bytes apart"},
        {MOE_TYPE_MXFP4, 0, NULL, 1, 320, 192, MOE_GATE_UP_SEPARATE,
         "gate/up in groups of 8 rows 170 bytes apart, of down in groups of 8 rows 102 bytes apart"},
        {MOE_TYPE_MXFP4, 0, NULL, 1, 320, 256, MOE_GATE_UP_INTERLEAVED,
         "gate/up in groups of 4 rows 340 bytes apart, of down in groups of 2 rows 136 bytes apart"},
    };
    for (size_t i = 0; i < sizeof dd / sizeof dd[0] && !moe_test_failed(); i++) {
        if (dd[i].fused) setenv("MOE_QUANT_PREFILL_FUSED", dd[i].fused, 1);
        char desc[4096] = "";
        CHECK(zero_quant_describe_2(ctx, dd[i].t, dd[i].td ? dd[i].td : dd[i].t, 64, 8, dd[i].D, dd[i].I, 2,
                                    dd[i].lay, desc, sizeof desc));
        CHECK_MSG((strstr(desc, "on the GGUF blocks") != NULL) == dd[i].want && strstr(desc, "(prefill)") != NULL,
                  "%s D %lld I %lld MOE_QUANT_PREFILL_FUSED=%s: %s", moe_type_name(dd[i].t), (long long)dd[i].D,
                  (long long)dd[i].I, dd[i].fused ? dd[i].fused : "(default)", desc);
        /* the row groups are named where they exist, and only there */
        if (dd[i].want && dd[i].grp)
            CHECK_MSG(dd[i].grp[0] == 'r' ? strstr(desc, "groups of") == NULL : strstr(desc, dd[i].grp) != NULL,
                      "%s D %lld I %lld: want \"%s\" in: %s", moe_type_name(dd[i].t), (long long)dd[i].D,
                      (long long)dd[i].I, dd[i].grp, desc);
        unsetenv("MOE_QUANT_PREFILL_FUSED");
    }
    /* the last: gate/up Q4_K, down Q6_K (llama.cpp's Q4_K_M) */
    /* Q6_K hands large T to the dequantising path (decode.cu qp_fused_max_pairs), unless
     * MOE_QUANT_PREFILL_FUSED=1: 8 experts, K = 2, T = 4096 (1024 pairs an expert) */
    for (int f = 0; f < 2 && !moe_test_failed(); f++) {
        if (f) setenv("MOE_QUANT_PREFILL_FUSED", "1", 1);
        char desc[4096] = "";
        CHECK(zero_quant_describe_2(ctx, MOE_TYPE_Q4_K, MOE_TYPE_Q6_K, 4096, 8, 512, 256, 2, MOE_GATE_UP_SEPARATE, desc,
                                    sizeof desc));
        CHECK_MSG((strstr(desc, "on the GGUF blocks") != NULL) == f && (strstr(desc, "dequantised to") != NULL) == !f,
                  "Q4_K / Q6_K T = 4096, MOE_QUANT_PREFILL_FUSED=%s: %s", f ? "1" : "(default)", desc);
        unsetenv("MOE_QUANT_PREFILL_FUSED");
    }
    /* gate/up, down: every type, and the mixes of llama.cpp's Q4_K_M and Q3_K_M */
    static const moe_type q[] = {MOE_TYPE_Q8_0, MOE_TYPE_Q4_K, MOE_TYPE_MXFP4, MOE_TYPE_Q5_K, MOE_TYPE_Q6_K,
                                 MOE_TYPE_Q4_0, MOE_TYPE_Q2_K, MOE_TYPE_Q3_K, MOE_TYPE_Q4_K, MOE_TYPE_Q3_K};
    static const moe_type qd[] = {MOE_TYPE_Q8_0, MOE_TYPE_Q4_K, MOE_TYPE_MXFP4, MOE_TYPE_Q5_K, MOE_TYPE_Q6_K,
                                  MOE_TYPE_Q4_0, MOE_TYPE_Q2_K, MOE_TYPE_Q3_K, MOE_TYPE_Q6_K, MOE_TYPE_Q4_K};
    const int nq = (int)(sizeof q / sizeof q[0]);
    int same = 0, runs = 0;
    for (int i = 0; i < nq && !moe_test_failed(); i++)
        for (int v = 0; v < (q[i] == MOE_TYPE_Q8_0 || q[i] == MOE_TYPE_MXFP4 || q[i] == MOE_TYPE_Q4_0 ? 8 : 5) &&
                        !moe_test_failed();
             v++) {
            /* variants 5-7 have rows of 320 and 192 elements: Q8_0, MXFP4 and Q4_0 only */
            moe_case c = {"gguf-gemm", v < 2 ? 64 : 300, 8, 512, 512, 2, MOE_ACT_SWIGLU, MOE_GATE_UP_SEPARATE, 0, q[i],
                          MOE_TYPE_BF16, ROUTE_RANDOM, 0, 0};
            const moe_type dt = qd[i];
            if (v == 1) { c.layout = MOE_GATE_UP_INTERLEAVED; c.act = MOE_ACT_SWIGLU_OAI; c.bias = 1; c.I = 256; }
            if (v == 2) { c.layout = MOE_GATE_UP_CONCAT; c.act = MOE_ACT_GEGLU_ERF; c.E = 16; c.K = 4; c.D = 768; }
            if (v == 3) { c.act_type = MOE_TYPE_F16; c.routing = ROUTE_SKIP_LAST; c.I = 768; }
            if (v == 4) { c.T = 600; c.K = 4; c.act = MOE_ACT_GELU; c.bias = 1; } /* ~300 rows an expert: 256 + a tail */
            /* Q8_0 / MXFP4 rows in TMA groups (the describe checks above):
             * Q8_0 4 rows of 340 / 204 bytes (MXFP4 8 of 170 / 102);
             * gpt-oss's form (interleaved, rows 680 bytes apart, up at 340,
             * biases, clamped SwiGLU) with down in groups of 2 (MXFP4: 340, up
             * at 170, groups of 4 and 4); up only, Q8_0 groups of 4 (204) and
             * 2 (408) (MXFP4 8 and 4), 256 + tails. MXFP4 runs the register-A
             * kernel only (MOE_SM90_QS=128 gives 256) */
            if (v == 5) { c.D = 320; c.I = 192; }
            if (v == 6) {
                c.layout = MOE_GATE_UP_INTERLEAVED; c.act = MOE_ACT_SWIGLU_OAI; c.bias = 1; c.D = 320; c.I = 128;
            }
            if (v == 7) { c.T = 600; c.K = 4; c.act = MOE_ACT_GELU; c.D = 192; c.I = 384; c.act_type = MOE_TYPE_F16; }
            /* both kernels on GGUF weights (MOE_SM90_QS: B decoded into shared
             * memory, weights decoded into wgmma's A registers, with 256 tokens
             * a tile also without the 128- and 64-token tails), then dequantising */
            static const char *how[5] = {"GGUF GEMMs, B decoded", "GGUF GEMMs, A in registers, 256 tokens (tails 128, 64)",
                                         "GGUF GEMMs, A in registers, 256 tokens only",
                                         "GGUF GEMMs, A in registers, 64 tokens", "dequantising"};
            static const char *qs[4] = {"128", "256", "256", "64"};
            double err[5] = {0, 0, 0, 0, 0};
            for (int f = 0; f < 5 && !moe_test_failed(); f++) {
                if (f < 4) setenv("MOE_SM90_QS", qs[f], 1);
                setenv("MOE_QUANT_PREFILL_FUSED", f < 4 ? "1" : "0", 1); /* 1: at every T, no hand-over */
                if (f == 2) setenv("MOE_SM90_QS_TAIL", "0", 1);
                char msg[1024];
                moe_case_result r = moe_case_run_down(&c, dt, ctx, "cuda-quant",
                                                      moe_test_seed() + 53u * (unsigned)(8 * i + v), &err[f], msg,
                                                      sizeof msg);
                CHECK_MSG(r == MOE_CASE_PASS, "%s (down %s) variant %d, %s: %s", moe_type_name(q[i]),
                          moe_type_name(dt), v, how[f], msg);
                unsetenv("MOE_SM90_QS");
                unsetenv("MOE_SM90_QS_TAIL");
                unsetenv("MOE_QUANT_PREFILL_FUSED");
            }
            runs++;
            for (int f = 0; f < 4; f++) same += err[f] == err[4];
            if (getenv("MOE_TEST_VERBOSE"))
                printf("     %s (down %s) variant %d: error %.3e / %.3e / %.3e / %.3e (GGUF GEMMs) vs %.3e "
                       "(dequantising)\n",
                       moe_type_name(q[i]), moe_type_name(dt), v, err[0], err[1], err[2], err[3], err[4]);
        }
    printf("     GGUF GEMMs against the dequantising path: the same error in %d of %d runs\n", same, 4 * runs);
    unsetenv("MOE_QUANT_PREFILL_T");
    moe_ctx_free(ctx);
}

/* The GGUF GEMMs' units in dynamic order (gemm_sm90_q.cu's register-A kernel,
 * 256 and 64 tokens a tile; session 36): the layer says so, not with
 * MOE_SM90_SCHED=0 nor on the kernel that decodes B (BM 128, static); GEMM
 * 2's raster bands by its own A rows where those exceed the L2; and the
 * forward equals the static order's bit for bit (the two layers' errors
 * against the reference the same double). T = 2048, E = 32, K = 4: some 256
 * rows an expert, 1-2 tiles of 256 (with the tails) or 4-5 of 64, so that
 * either GEMM has more units than an H100's or H200's CTAs and the two orders
 * give the CTAs different units; experts of unequal rows; gated and up-only. */
TEST(cuda_quant_prefill_gguf_order) {
    const char *why = "";
    moe_ctx *ctx = gguf_gemm_ctx(&why);
    if (!ctx) SKIP("%s", why);
    gguf_gemms_everywhere(1);
    static const char *qs[] = {"256", "64", "128"};
    for (int k = 0; k < 3 && !moe_test_failed(); k++)
        for (int f = 0; f < 2 && !moe_test_failed(); f++) {
            char desc[4096] = "";
            setenv("MOE_SM90_QS", qs[k], 1);
            if (!f) setenv("MOE_SM90_SCHED", "0", 1);
            CHECK(zero_quant_describe(ctx, MOE_TYPE_Q8_0, 2048, 32, 256, 256, 4, desc, sizeof desc));
            unsetenv("MOE_SM90_SCHED");
            unsetenv("MOE_SM90_QS");
            const int want = f && k < 2, has = strstr(desc, "units in dynamic order") != NULL;
            CHECK_MSG(has == want && strstr(desc, "on the GGUF blocks") != NULL,
                      "MOE_SM90_QS=%s MOE_SM90_SCHED=%s: \"units in dynamic order\" %s: %s", qs[k],
                      f ? "(unset)" : "0", has ? "present" : "missing", desc);
        }
    /* The raster bands (layer.cu moe__cuda_sm90_raster / raster2): 256 tokens a
     * tile, bands of 2 in both GEMMs; 64 tokens a tile, GEMM 1's by its own A
     * rows (16) and GEMM 2's by its own (h, I wide): E = 8, K = 2, T = 2048; I =
     * 32768 puts 67 MB of h in 16 units of 64 tokens (more than the L2, 50 MB on
     * an H100, 60 on an H200: bands of 2 for down only), I = 256 0.5 MB. (28672,
     * 59 MB, had passed on the H100 and failed on the H200, session 39.) */
    for (int t = 0; t < 3 && !moe_test_failed(); t++) {
        char desc[4096] = "";
        setenv("MOE_SM90_QS", t == 2 ? "256" : "64", 1);
        CHECK(zero_quant_describe(ctx, MOE_TYPE_Q4_K, 2048, 8, 256, t == 1 ? 32768 : 256, 2, desc, sizeof desc));
        unsetenv("MOE_SM90_QS");
        const int dyn = strstr(desc, "units in dynamic order") != NULL, b2 = strstr(desc, "raster bands of 2)") != NULL;
        const int b1 = strstr(desc, t == 2 ? "raster bands of 2," : "raster bands of 16,") != NULL;
        CHECK_MSG(dyn && b1 && b2 == (t == 1) && strstr(desc, "on the GGUF blocks"),
                  "E = 8, I = %d, %s tokens a tile: want the dynamic order, GEMM 1's bands of %d, down's of 2 %s: %s",
                  t == 1 ? 32768 : 256, t == 2 ? "256" : "64", t == 2 ? 2 : 16, t == 1 ? "named" : "not named", desc);
    }
    static const moe_type q[] = {MOE_TYPE_Q8_0, MOE_TYPE_Q4_K, MOE_TYPE_MXFP4, MOE_TYPE_Q6_K};
    int runs = 0;
    for (int i = 0; i < 4 && !moe_test_failed(); i++)
        for (int k = 0; k < 2 && !moe_test_failed(); k++) {
            setenv("MOE_SM90_QS", qs[k], 1);
            moe_case c = {"gguf-order", 2048, 32, 256, 256, 4, i & 1 ? MOE_ACT_GELU : MOE_ACT_SWIGLU,
                          MOE_GATE_UP_SEPARATE, 0, q[i], MOE_TYPE_BF16, ROUTE_RANDOM, 0, 0};
            char what[160];
            snprintf(what, sizeof what, "%s %s, %s tokens a tile, units in dynamic order (MOE_SM90_SCHED unset) or static",
                     moe_type_name(q[i]), moe_act_name(c.act), qs[k]);
            i8_ab_same(ctx, &c, q[i], "MOE_SM90_SCHED", moe_test_seed() + 139u * (unsigned)(2 * i + k), what);
            unsetenv("MOE_SM90_QS");
            runs++;
        }
    gguf_gemms_everywhere(0);
    moe_ctx_free(ctx);
    CHECK(runs > 0);
}

/* The forms the GGUF GEMM tests cycle through: 0 gated SwiGLU as made; 1 up
 * only (GELU) with biases; 2 the GPT-OSS form (interleaved gate/up, clamped
 * SwiGLU, biases); 3 f16 activations, concatenated gate/up, a token's two
 * pairs on one expert. */
static void gguf_case_form(moe_case *c, int w) {
    if (w == 1) { c->act = MOE_ACT_GELU; c->bias = 1; }
    if (w == 2) { c->layout = MOE_GATE_UP_INTERLEAVED; c->act = MOE_ACT_SWIGLU_OAI; c->bias = 1; }
    if (w == 3) { c->act_type = MOE_TYPE_F16; c->layout = MOE_GATE_UP_CONCAT; c->routing = ROUTE_DUPLICATE; }
}

/* An expert's last 24 or fewer rows beyond a full 256-token tile folded into
 * that tile (gemm_sm90_q.cu's kernel with folded tiles, qs_tile FOLD, k_scan's
 * code 3; session 37). The layer says so where the rule folds (the average
 * expert's rows within 16 of 256: E = 8, K = 2, T = 1064) and not where it
 * does not (T = 1360, 340 rows) nor with MOE_SM90_QS_FOLD=0; and the forward
 * with MOE_SM90_QS_FOLD=1 (that kernel, folding) equals the one with =0 (the
 * kernel of three k-loops, those rows in a tail tile of 64) bit for bit:
 * every GGUF type (each its own stage count), gated and up-only, biases, the
 * GPT-OSS form, f16 activations (a token's two pairs on one expert). K = 2;
 * E = 8, T = 1064: some 266 rows an expert, so that about half the experts
 * run one folded tile and the others one tile, or a tile and a tail of 64;
 * E = 4, T = 1040: some 520, two tiles and a tail of 64, or a tile and a
 * folded one; E = 8, T = 1360: some 340, a tile and a tail of 128 (in the
 * folding kernel's one k-loop). */
TEST(cuda_quant_prefill_gguf_fold) {
    const char *why = "";
    moe_ctx *ctx = gguf_gemm_ctx(&why);
    if (!ctx) SKIP("%s", why);
    gguf_gemms_everywhere(1);
    setenv("MOE_SM90_QS", "256", 1);
    for (int f = 0; f < 3 && !moe_test_failed(); f++) {
        char desc[4096] = "";
        if (f == 2) setenv("MOE_SM90_QS_FOLD", "0", 1);
        const int64_t T = f == 1 ? 1360 : 1064;
        CHECK(zero_quant_describe(ctx, MOE_TYPE_Q4_K, T, 8, 256, 256, 2, desc, sizeof desc));
        unsetenv("MOE_SM90_QS_FOLD");
        const int has = strstr(desc, "folded into it") != NULL;
        CHECK_MSG(has == (f == 0) && strstr(desc, "on the GGUF blocks") != NULL && strstr(desc, "256 tokens a tile"),
                  "T = %lld, MOE_SM90_QS_FOLD=%s: \"folded into it\" %s: %s", (long long)T, f == 2 ? "0" : "(unset)",
                  has ? "present" : "missing", desc);
    }
    static const moe_type q[] = {MOE_TYPE_Q8_0, MOE_TYPE_Q4_K, MOE_TYPE_MXFP4, MOE_TYPE_Q6_K,
                                 MOE_TYPE_Q5_K, MOE_TYPE_Q4_0, MOE_TYPE_Q2_K, MOE_TYPE_Q3_K};
    int runs = 0;
    for (int i = 0; i < 8 && !moe_test_failed(); i++)
        for (int v = 0; v < 3 && !moe_test_failed(); v++) {
            moe_case c = {"gguf-fold", v == 0 ? 1064 : v == 1 ? 1040 : 1360, v == 1 ? 4 : 8, 256, 256, 2, MOE_ACT_SWIGLU,
                          MOE_GATE_UP_SEPARATE, 0, q[i], MOE_TYPE_BF16, ROUTE_RANDOM, 0, 0};
            gguf_case_form(&c, (3 * i + v) % 4); /* the form of this run */
            const unsigned seed = moe_test_seed() + 151u * (unsigned)(3 * i + v);
            double err[2] = {-1.0, -2.0};
            for (int f = 0; f < 2 && !moe_test_failed(); f++) {
                char msg[1024];
                setenv("MOE_SM90_QS_FOLD", f ? "1" : "0", 1);
                moe_case_result r = moe_case_run_down(&c, q[i], ctx, "cuda-quant", seed, &err[f], msg, sizeof msg);
                unsetenv("MOE_SM90_QS_FOLD");
                CHECK_MSG(r == MOE_CASE_PASS, "%s %s, E = %d, T = %d, MOE_SM90_QS_FOLD=%d: %s", moe_type_name(q[i]),
                          moe_act_name(c.act), (int)c.E, (int)c.T, f, msg);
            }
            CHECK_MSG(err[0] == err[1],
                      "%s %s, E = %d, T = %d: error %.17g folding, %.17g not (MOE_SM90_QS_FOLD=1 / 0): the outputs differ",
                      moe_type_name(q[i]), moe_act_name(c.act), (int)c.E, (int)c.T, err[1], err[0]);
            runs++;
        }
    unsetenv("MOE_SM90_QS");
    gguf_gemms_everywhere(0);
    moe_ctx_free(ctx);
    CHECK(runs > 0);
}

/* The register-A kernel's forwards with `knob` = "0" and with it `on` (NULL:
 * unset, the default) must be bitwise equal, both against the reference: rows
 * in TMA groups (Q8_0, Q4_0 in groups of 4, MXFP4 of 8, Q6_K of 4 and 8, Q2_K of
 * 2 and 4, Q3_K of 4 and 8) and rows one by one (Q4_K, Q5_K, Q8_0), output
 * tiles odd (D 320, I 192) and even in number; tiles of 256 tokens with tails,
 * folded tiles, tiles of 64 (two CTAs an SM); gated, up only with biases, the
 * GPT-OSS form, f16. *runs counts the cases run (27). */
static void gguf_knob_bitwise(moe_ctx *ctx, const char *knob, const char *on, const char *label, int *runs) {
    static const struct {
        moe_type t;
        int64_t D, I;
    } q[] = {{MOE_TYPE_Q8_0, 320, 192}, {MOE_TYPE_MXFP4, 320, 192}, {MOE_TYPE_Q4_0, 320, 192},
             {MOE_TYPE_Q6_K, 512, 256}, {MOE_TYPE_Q2_K, 512, 256},  {MOE_TYPE_Q3_K, 512, 256},
             {MOE_TYPE_Q4_K, 512, 256}, {MOE_TYPE_Q5_K, 512, 256},  {MOE_TYPE_Q8_0, 512, 256}};
    static const char *qs[3] = {"256", "256", "64"}, *fold[3] = {"0", "1", "0"};
    for (int i = 0; i < (int)(sizeof q / sizeof q[0]) && !moe_test_failed(); i++)
        for (int v = 0; v < 3 && !moe_test_failed(); v++) {
            /* v = 0: tiles of 256 and tails (E = 8, T = 1360: some 340 rows an
             * expert); 1: folded tiles (T = 1064: some 266); 2: tiles of 64 */
            moe_case c = {label, v == 0 ? 1360 : v == 1 ? 1064 : 300, 8, q[i].D, q[i].I, 2, MOE_ACT_SWIGLU,
                          MOE_GATE_UP_SEPARATE, 0, q[i].t, MOE_TYPE_BF16, ROUTE_RANDOM, 0, 0};
            gguf_case_form(&c, (3 * i + v) % 4); /* the form of this run */
            const unsigned seed = moe_test_seed() + 173u * (unsigned)(3 * i + v);
            double err[2] = {-1.0, -2.0};
            for (int h = 0; h < 2 && !moe_test_failed(); h++) {
                char msg[1024];
                setenv("MOE_SM90_QS", qs[v], 1);
                setenv("MOE_SM90_QS_FOLD", fold[v], 1);
                if (!h) setenv(knob, "0", 1);
                else if (on) setenv(knob, on, 1);
                moe_case_result r = moe_case_run_down(&c, q[i].t, ctx, "cuda-quant", seed, &err[h], msg, sizeof msg);
                unsetenv("MOE_SM90_QS");
                unsetenv("MOE_SM90_QS_FOLD");
                unsetenv(knob);
                CHECK_MSG(r == MOE_CASE_PASS, "%s %s D %lld I %lld, T = %d, MOE_SM90_QS=%s FOLD=%s, %s=%s: %s",
                          moe_type_name(q[i].t), moe_act_name(c.act), (long long)c.D, (long long)c.I, (int)c.T, qs[v],
                          fold[v], knob, h ? (on ? on : "(unset)") : "0", msg);
            }
            CHECK_MSG(err[0] == err[1],
                      "%s %s D %lld I %lld, T = %d, MOE_SM90_QS=%s FOLD=%s: error %.17g with %s=%s, %.17g with 0: "
                      "the outputs differ",
                      moe_type_name(q[i].t), moe_act_name(c.act), (long long)c.D, (long long)c.I, (int)c.T, qs[v],
                      fold[v], err[1], knob, on ? on : "(unset)", err[0]);
            (*runs)++;
        }
}

/* A knob of the register-A kernel, on (`on`, NULL: unset, the default) and off
 * ("0"): the layer's description holds text_on when on and, when off, text_off
 * (NULL: not text_on); the forwards equal each other bit for bit
 * (gguf_knob_bitwise's case table, 27 forwards each way). */
static void gguf_knob_test(const char *knob, const char *on, const char *text_on, const char *text_off,
                           const char *label) {
    const char *why = "";
    moe_ctx *ctx = gguf_gemm_ctx(&why);
    if (!ctx) SKIP("%s", why);
    gguf_gemms_everywhere(1);
    for (int f = 0; f < 2 && !moe_test_failed(); f++) {
        char desc[4096] = "";
        if (f) setenv(knob, "0", 1);
        else if (on) setenv(knob, on, 1);
        CHECK(zero_quant_describe_2(ctx, MOE_TYPE_Q8_0, MOE_TYPE_Q8_0, 512, 8, 320, 192, 2, MOE_GATE_UP_SEPARATE, desc,
                                    sizeof desc));
        unsetenv(knob);
        const int ok = !f ? strstr(desc, text_on) != NULL
                          : text_off ? strstr(desc, text_off) != NULL : strstr(desc, text_on) == NULL;
        CHECK_MSG(ok && strstr(desc, "on the GGUF blocks") != NULL, "%s=%s: want %s\"%s\" in: %s", knob,
                  f ? "0" : on ? on : "(unset)", f && !text_off ? "no " : "", f && text_off ? text_off : text_on, desc);
    }
    int runs = 0;
    gguf_knob_bitwise(ctx, knob, on, label, &runs);
    gguf_gemms_everywhere(0);
    moe_ctx_free(ctx);
    CHECK(runs == 27);
}

/* The register-A kernel's weight loads issued by two helper warps beside the
 * producer thread (moe_cuda_gemm qhelp; session 39): the layer says so, or
 * with MOE_SM90_QS_HELP=0 that the producer thread loads alone, and the
 * forward with the helpers (the default) equals the one without bit for bit. */
TEST(cuda_quant_prefill_gguf_help) {
    gguf_knob_test("MOE_SM90_QS_HELP", NULL, "two helper warps", "producer thread alone", "gguf-help");
}

/* The register-A kernel in clusters of 2 sharing each token tile by TMA
 * multicast (moe_cuda_gemm qmc; session 40): with MOE_SM90_QS_MC=1 the layer
 * says so, with 0 it does not, and the forwards in clusters equal those
 * without bit for bit (odd output tiles leave the second CTA a tile past the
 * last; tiles of 64 run without clusters either way). */
TEST(cuda_quant_prefill_gguf_mc) {
    gguf_knob_test("MOE_SM90_QS_MC", "1", "clusters of 2 CTAs sharing each token tile", NULL, "gguf-mc");
}

/* Ids out of range on the device: skipped pairs, nothing out of bounds, the
 * other slots still summed; a token with every id out of range gets 0. */
TEST(cuda_decode_bad_ids) {
    moe_ctx *ctx = cuda_ctx();
    if (!ctx) SKIP("no CUDA device");
    const int64_t T = 3, E = 4, D = 64, I = 32, K = 2;
    size_t wb = (size_t)(E * I * D) * 2;
    uint16_t *hw = malloc(wb);
    for (size_t i = 0; i < wb / 2; i++) hw[i] = 0x3c00; /* 1.0 in f16 */
    void *g, *u, *dn, *x, *out, *ids, *w, *ws = NULL;
    cudaMalloc(&g, wb); cudaMalloc(&u, wb); cudaMalloc(&dn, wb);
    cudaMemcpy(g, hw, wb, cudaMemcpyHostToDevice);
    cudaMemcpy(u, hw, wb, cudaMemcpyHostToDevice);
    cudaMemcpy(dn, hw, wb, cudaMemcpyHostToDevice);
    moe_layer_desc d = moe_layer_desc_default();
    d.E = E; d.D = D; d.I = I; d.K = K;
    d.act = MOE_ACT_RELU2;
    d.up.data = u; d.up.type = MOE_TYPE_F16; d.up.mem = MOE_MEM_DEVICE;
    d.down.data = dn; d.down.type = MOE_TYPE_F16; d.down.mem = MOE_MEM_DEVICE;
    d.act_type = MOE_TYPE_F32;
    d.backend = "cuda-decode";
    int major = 0;
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
    static const char *modes[] = {"1", "0"}; /* streaming kernels, then the mma kernels */
    for (int m = 0; m < 2 && !moe_test_failed(); m++) {
    setenv("MOE_DECODE_STREAM", modes[m], 1);
    setenv("MOE_DECODE_MAX_T", "-1", 1); /* T = 3 on the decode kernels, not the grouped GEMM */
    moe_layer *L = NULL;
    CHECK_STATUS(moe_layer_create(ctx, &d, &L), MOE_OK);
    unsetenv("MOE_DECODE_STREAM");
    unsetenv("MOE_DECODE_MAX_T");
    char desc[1024];
    moe_layer_describe(L, T, desc, sizeof desc);
    if (major >= 9) /* a forced family must be the one that runs */
        CHECK_MSG((strstr(desc, "streaming kernels (") != NULL) == (m == 0), "MOE_DECODE_STREAM=%s: %s", modes[m], desc);
    float hx[3 * 64];
    for (int i = 0; i < 3 * 64; i++) hx[i] = 1.0f / 64;
    int32_t hid[6] = {1, 77, -5, 1 << 30, 2, 3}; /* token 1: no valid id */
    float hwt[6] = {1, 1, 1, 1, 0.5f, 0.25f};
    size_t wsb = 0;
    CHECK_STATUS(moe_layer_workspace_size(L, T, &wsb), MOE_OK);
    cudaMalloc(&x, sizeof hx); cudaMalloc(&out, sizeof hx); cudaMalloc(&ids, sizeof hid); cudaMalloc(&w, sizeof hwt);
    cudaMalloc(&ws, wsb ? wsb : 1);
    cudaMemcpy(x, hx, sizeof hx, cudaMemcpyHostToDevice);
    cudaMemcpy(ids, hid, sizeof hid, cudaMemcpyHostToDevice);
    cudaMemcpy(w, hwt, sizeof hwt, cudaMemcpyHostToDevice);
    cudaMemset(out, 0xFF, sizeof hx);
    CHECK_STATUS(moe_layer_forward(L, T, x, ids, w, out, ws, wsb), MOE_OK);
    float ho[3 * 64];
    CHECK(cudaMemcpy(ho, out, sizeof ho, cudaMemcpyDeviceToHost) == cudaSuccess);
    /* up x = 1 per row, relu2 = 1, down row sums I = 32: one valid slot of weight 1 -> 32 */
    for (int c = 0; c < D; c++) {
        CHECK_MSG(ho[c] > 31.5f && ho[c] < 32.5f, "token 0 col %d = %g, expected 32", c, (double)ho[c]);
        CHECK_MSG(ho[64 + c] == 0.0f, "token 1 col %d = %g, expected 0 (no valid id)", c, (double)ho[64 + c]);
        CHECK_MSG(ho[128 + c] > 23.5f && ho[128 + c] < 24.5f, "token 2 col %d = %g, expected 24", c, (double)ho[128 + c]);
    }
    /* no id in range at all (no expert has work): out = 0 everywhere, then a
     * valid forward again (the expert-major down's counters re-armed) */
    int32_t bad[6] = {-1, 4, 99, -7, 4, 1 << 29};
    cudaMemcpy(ids, bad, sizeof bad, cudaMemcpyHostToDevice);
    cudaMemset(out, 0xFF, sizeof hx);
    CHECK_STATUS(moe_layer_forward(L, T, x, ids, w, out, ws, wsb), MOE_OK);
    CHECK(cudaMemcpy(ho, out, sizeof ho, cudaMemcpyDeviceToHost) == cudaSuccess);
    for (int i = 0; i < 3 * 64; i++) CHECK_MSG(ho[i] == 0.0f, "all ids invalid: out[%d] = %g, expected 0", i, (double)ho[i]);
    cudaMemcpy(ids, hid, sizeof hid, cudaMemcpyHostToDevice);
    cudaMemset(out, 0xFF, sizeof hx);
    CHECK_STATUS(moe_layer_forward(L, T, x, ids, w, out, ws, wsb), MOE_OK);
    CHECK(cudaMemcpy(ho, out, sizeof ho, cudaMemcpyDeviceToHost) == cudaSuccess);
    for (int c = 0; c < D; c++)
        CHECK_MSG(ho[c] > 31.5f && ho[c] < 32.5f && ho[64 + c] == 0.0f, "again: token 0/1 col %d = %g / %g", c,
                  (double)ho[c], (double)ho[64 + c]);
    moe_layer_free(L);
    cudaFree(x); cudaFree(out); cudaFree(ids); cudaFree(w); cudaFree(ws);
    ws = NULL;
    }
    cudaFree(g); cudaFree(u); cudaFree(dn);
    free(hw);
    moe_ctx_free(ctx);
}

/* A forward captured into a CUDA graph and replayed equals a direct forward:
 * bf16 device weights through cuda-decode, or Q8_0 host blocks (uploaded at
 * init) through cuda-quant. A streaming layer whose direct forward is one
 * cooperative launch runs as two launches under capture: same bits. */
static void graph_capture_case(const char *backend, moe_type wt, const char *fused) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        cudaGetLastError();
        SKIP("no CUDA device");
    }
    cudaStream_t st;
    CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) == cudaSuccess);
    moe_ctx_params p = moe_ctx_default_params();
    p.device = MOE_DEVICE_CUDA;
    p.cuda_stream = st;
    moe_ctx *ctx = NULL;
    CHECK_STATUS(moe_ctx_create(&p, &ctx), MOE_OK);
    const int64_t T = 2, E = 8, D = 256, I = 128, K = 2;
    moe_rng r;
    moe_rng_seed(&r, moe_test_seed());
    moe_layer_desc d = moe_layer_desc_default();
    d.E = E; d.D = D; d.I = I; d.K = K;
    void *g = NULL, *u = NULL, *dn = NULL, *hb[3] = {NULL, NULL, NULL};
    if (wt == MOE_TYPE_BF16) {
        size_t wb = (size_t)(E * I * D) * 2;
        uint16_t *hw = malloc(wb);
        for (size_t i = 0; i < wb / 2; i++) hw[i] = (uint16_t)(0x3c00 - 0x800 + (moe_rng_u64(&r) % 0x1000));
        cudaMalloc(&g, wb); cudaMalloc(&u, wb); cudaMalloc(&dn, wb);
        cudaMemcpy(g, hw, wb, cudaMemcpyHostToDevice);
        cudaMemcpy(u, hw, wb, cudaMemcpyHostToDevice);
        cudaMemcpy(dn, hw, wb, cudaMemcpyHostToDevice);
        free(hw);
        d.gate.data = g; d.up.data = u; d.down.data = dn;
        d.gate.mem = d.up.mem = d.down.mem = MOE_MEM_DEVICE;
    } else { /* host blocks: [E, I, D] for gate and up, [E, D, I] for down */
        const int64_t rows[3] = {E * I, E * I, E * D}, cols[3] = {D, D, I};
        float row[256];
        for (int m = 0; m < 3; m++) {
            hb[m] = malloc((size_t)(rows[m] * moe_type_row_bytes(wt, cols[m])));
            for (int64_t i = 0; i < rows[m]; i++) {
                for (int64_t c = 0; c < cols[m]; c++) row[c] = (float)((int64_t)(moe_rng_u64(&r) % 2001) - 1000) / 16000.0f;
                CHECK_STATUS(moe_quantize_row(wt, row, (char *)hb[m] + i * moe_type_row_bytes(wt, cols[m]), cols[m]),
                             MOE_OK);
            }
        }
        d.gate.data = hb[0]; d.up.data = hb[1]; d.down.data = hb[2];
        d.gate.mem = d.up.mem = d.down.mem = MOE_MEM_HOST;
    }
    d.gate.type = d.up.type = d.down.type = wt;
    d.act_type = MOE_TYPE_BF16;
    d.backend = backend;
    if (fused) setenv("MOE_DECODE_FUSED", fused, 1);
    moe_layer *L = NULL;
    moe_status cs = moe_layer_create(ctx, &d, &L);
    unsetenv("MOE_DECODE_FUSED");
    CHECK_STATUS(cs, MOE_OK);
    uint16_t hx[2 * 256];
    for (int i = 0; i < 2 * 256; i++) hx[i] = (uint16_t)(0x3c00 - 0x400 + (moe_rng_u64(&r) % 0x800));
    int32_t hid[4] = {3, 5, 0, 3};
    float hwt[4] = {0.5f, 0.25f, 1.0f, 0.125f};
    size_t wsb = 0;
    void *x, *o1, *o2, *ids, *w, *ws;
    CHECK_STATUS(moe_layer_workspace_size(L, T, &wsb), MOE_OK);
    cudaMalloc(&x, sizeof hx); cudaMalloc(&o1, sizeof hx); cudaMalloc(&o2, sizeof hx);
    cudaMalloc(&ids, sizeof hid); cudaMalloc(&w, sizeof hwt); cudaMalloc(&ws, wsb ? wsb : 1);
    cudaMemcpy(x, hx, sizeof hx, cudaMemcpyHostToDevice);
    cudaMemcpy(ids, hid, sizeof hid, cudaMemcpyHostToDevice);
    cudaMemcpy(w, hwt, sizeof hwt, cudaMemcpyHostToDevice);
    CHECK_STATUS(moe_layer_forward(L, T, x, ids, w, o1, ws, wsb), MOE_OK);
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
    moe_status s = moe_layer_forward(L, T, x, ids, w, o2, ws, wsb);
    CHECK(cudaStreamEndCapture(st, &graph) == cudaSuccess);
    CHECK_STATUS(s, MOE_OK);
    CHECK(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess);
    for (int i = 0; i < 3; i++) CHECK(cudaGraphLaunch(exec, st) == cudaSuccess);
    CHECK(cudaStreamSynchronize(st) == cudaSuccess);
    uint16_t a[2 * 256], b[2 * 256];
    cudaMemcpy(a, o1, sizeof a, cudaMemcpyDeviceToHost);
    cudaMemcpy(b, o2, sizeof b, cudaMemcpyDeviceToHost);
    CHECK_MSG(memcmp(a, b, sizeof a) == 0, "%s: graph replay differs from a direct forward", backend);
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    moe_layer_free(L);
    cudaFree(g); cudaFree(u); cudaFree(dn); cudaFree(x); cudaFree(o1); cudaFree(o2); cudaFree(ids); cudaFree(w);
    cudaFree(ws);
    for (int m = 0; m < 3; m++) free(hb[m]);
    moe_ctx_free(ctx);
    cudaStreamDestroy(st);
}

TEST(cuda_decode_graph_capture) {
    graph_capture_case("cuda-decode", MOE_TYPE_BF16, NULL);
    if (!moe_test_failed()) graph_capture_case("cuda-decode", MOE_TYPE_BF16, "1");
}
TEST(cuda_quant_graph_capture) {
    graph_capture_case("cuda-quant", MOE_TYPE_Q8_0, NULL); /* T = 2: two launches by default */
    if (!moe_test_failed()) graph_capture_case("cuda-quant", MOE_TYPE_Q8_0, "1");
}

/* cuda-quant's streaming limit (pairs an expert) for the measured shapes: MXFP4
 * streams to 16 on gpt-oss's and qwen3's small experts, not on mixtral's or
 * deepseek-v3's (bench/decode/s10 runs 29-33); Q4_K 4 (s12 run 9), Q5_K and Q8_0 8
 * everywhere (s13 run 12: Q5_K at 2 lost 2x at 4 pairs an expert). */
TEST(decode_qg_row_stride) {
    /* the int8 kernels' 20-bit chunk offsets: 128 rows below 16 MB (moe__qg_row_stride_ok) */
    CHECK(moe__qg_row_stride_ok(moe_type_row_bytes(MOE_TYPE_Q8_0, 14336)));  /* mixtral down, 15 KB */
    CHECK(moe__qg_row_stride_ok(moe_type_row_bytes(MOE_TYPE_Q4_K, 229376))); /* 126 KB */
    CHECK(!moe__qg_row_stride_ok(moe_type_row_bytes(MOE_TYPE_Q8_0, 131072))); /* 136 KB */
    CHECK(!moe__qg_row_stride_ok((int64_t)1 << 17));
    CHECK(moe__qg_row_stride_ok(((int64_t)1 << 17) - 16));
    /* the largest offset a block can form at the limit fits in 20 bits of 16 bytes */
    const int64_t sn = ((int64_t)1 << 17) - 16, chunks = 2 * 18; /* a stage of at most 36 chunks */
    CHECK((127 * sn + 16 * (chunks - 1)) / 16 < ((int64_t)1 << 20));
}

/* How TMA reads GGUF rows for the GEMMs on the blocks (moe__quant_rows_plan):
 * row groups and the units below the data, and the layouts refused, from
 * the shapes gpt-oss and the presets store; runs without a GPU. */
TEST(decode_quant_rows_plan) {
    static const struct {
        const char *what;
        int fmt;
        uintptr_t data;
        int64_t se, sn, rb, rows;
        int want, lg, a0;
    } c[] = {
        /* D = 2048: 2176-byte Q8_0 rows, one by one */
        {"Q8_0 aligned", MOE_DF_Q8_0, 0x1000, 2176 * 768, 2176, 2176, 768, MOE_QROWS_OK, 0, 0},
        /* gpt-oss D = 2880: 3060 bytes (4 mod 16): groups of 4 */
        {"Q8_0 3060", MOE_DF_Q8_0, 0x1000, 3060 * 2880, 3060, 3060, 2880, MOE_QROWS_OK, 2, 0},
        /* interleaved gate/up: 6120 apart (8 mod 16), up 3060 past an aligned start (1 word) */
        {"Q8_0 interleaved up", MOE_DF_Q8_0, 0x1000 + 3060, 6120 * 2880, 6120, 3060, 2880, MOE_QROWS_OK, 1, 1},
        /* 12 mod 16 (D = 192: 204 bytes): groups of 4 */
        {"Q8_0 204", MOE_DF_Q8_0, 0x1000, 204 * 64, 204, 204, 64, MOE_QROWS_OK, 2, 0},
        /* contiguous rows from an unaligned start: a group's first row would start before the boundary's row */
        {"Q8_0 unaligned contiguous", MOE_DF_Q8_0, 0x1004, 340 * 64, 340, 340, 64, MOE_QROWS_PAST_GROUP, 2, 1},
        {"Q8_0 rows not in groups", MOE_DF_Q8_0, 0x1000, 340 * 6, 340, 340, 6, MOE_QROWS_GROUP_ROWS, 2, 0},
        /* an odd number of blocks: 102-byte rows are not whole 4-byte units */
        {"Q8_0 odd blocks", MOE_DF_Q8_0, 0x1000, 102 * 64, 102, 102, 64, MOE_QROWS_ALIGN, 0, 0},
        {"Q8_0 expert stride", MOE_DF_Q8_0, 0x1000, 3060 * 2880 + 4, 3060, 3060, 2880, MOE_QROWS_ALIGN, 2, 0},
        /* gpt-oss MXFP4: 1530 bytes (10 mod 16: 5 units of 2): groups of 8 */
        {"MXFP4 1530", MOE_DF_MXFP4, 0x1000, 1530 * 2880, 1530, 1530, 2880, MOE_QROWS_OK, 3, 0},
        /* interleaved: 3060 apart (2 units mod 8: groups of 4), up 1530 past (10 bytes: 5 units) */
        {"MXFP4 interleaved up", MOE_DF_MXFP4, 0x1000 + 1530, 3060 * 2880, 3060, 1530, 2880, MOE_QROWS_OK, 2, 5},
        {"MXFP4 136", MOE_DF_MXFP4, 0x1000, 136 * 64, 136, 136, 64, MOE_QROWS_OK, 1, 0},
        {"MXFP4 odd start", MOE_DF_MXFP4, 0x1001, 1530 * 2880, 1530, 1530, 2880, MOE_QROWS_ALIGN, 0, 0},
        /* Q4_K: 144-byte super-blocks, always whole strides; no groups */
        {"Q4_K", MOE_DF_Q4_K, 0x1000, 1152 * 768, 1152, 1152, 768, MOE_QROWS_OK, 0, 0},
        {"Q4_K unaligned", MOE_DF_Q4_K, 0x1008, 1152 * 768, 1152, 1152, 768, MOE_QROWS_ALIGN, 0, 0},
        /* Q6_K: 210-byte super-blocks (2-byte units): qwen3's D = 2048 1680 bytes one by one, its I = 768
         * 630 (6 mod 16: 3 units) in groups of 8, deepseek-v3's D = 7168 5880 (8: 4 units) in pairs, 420 in
         * groups of 4; interleaved D = 512 (840 apart, up 420 past: 2 units) */
        {"Q6_K 1680", MOE_DF_Q6_K, 0x1000, 1680 * 1536, 1680, 1680, 1536, MOE_QROWS_OK, 0, 0},
        {"Q6_K 630", MOE_DF_Q6_K, 0x1000, 630 * 2048, 630, 630, 2048, MOE_QROWS_OK, 3, 0},
        {"Q6_K 5880", MOE_DF_Q6_K, 0x1000, 5880 * 4096, 5880, 5880, 4096, MOE_QROWS_OK, 1, 0},
        {"Q6_K 420", MOE_DF_Q6_K, 0x1000, 420 * 512, 420, 420, 512, MOE_QROWS_OK, 2, 0},
        {"Q6_K interleaved up", MOE_DF_Q6_K, 0x1000 + 420, 840 * 512, 840, 420, 512, MOE_QROWS_OK, 1, 2},
        {"Q6_K odd start", MOE_DF_Q6_K, 0x1003, 1680 * 1536, 1680, 1680, 1536, MOE_QROWS_ALIGN, 0, 0},
        /* Q5_K: 176-byte super-blocks, whole strides as Q4_K's */
        {"Q5_K", MOE_DF_Q5_K, 0x1000, 1408 * 768, 1408, 1408, 768, MOE_QROWS_OK, 0, 0},
        /* Q4_0: 18-byte blocks in 4-byte units (an even number of blocks a row): qwen3's D = 2048 1152
         * bytes one by one, gpt-oss's D = 2880 1620 (4 mod 16: 1 unit) in groups of 4, D = 384 216 (8) in
         * pairs; interleaved D = 2880 (3240 apart, up 1620 past: 1 unit); 3 blocks (54 bytes) are no units */
        {"Q4_0 1152", MOE_DF_Q4_0, 0x1000, 1152 * 768, 1152, 1152, 768, MOE_QROWS_OK, 0, 0},
        {"Q4_0 1620", MOE_DF_Q4_0, 0x1000, 1620 * 2880, 1620, 1620, 2880, MOE_QROWS_OK, 2, 0},
        {"Q4_0 216", MOE_DF_Q4_0, 0x1000, 216 * 128, 216, 216, 128, MOE_QROWS_OK, 1, 0},
        {"Q4_0 interleaved up", MOE_DF_Q4_0, 0x1000 + 1620, 3240 * 2880, 3240, 1620, 2880, MOE_QROWS_OK, 1, 1},
        {"Q4_0 odd blocks", MOE_DF_Q4_0, 0x1000, 54 * 64, 54, 54, 64, MOE_QROWS_ALIGN, 0, 0},
        {"Q4_0 unaligned contiguous", MOE_DF_Q4_0, 0x1004, 180 * 64, 180, 180, 64, MOE_QROWS_PAST_GROUP, 2, 1},
        /* Q2_K: 84-byte super-blocks in 4-byte units: qwen3's D = 2048 672 bytes one by one, its I = 768 252
         * (12 mod 16: 3 units) in groups of 4, D = 512 168 (8) in pairs; Q3_K: 110 bytes in 2-byte units:
         * qwen3's D = 2048 880 one by one, I = 768 330 (10: 5 units) in groups of 8, D = 512 220 (12) in
         * groups of 4; an interleaved Q3_K up 220 past an aligned start (440 apart, 8 mod 16: pairs) */
        {"Q2_K 672", MOE_DF_Q2_K, 0x1000, 672 * 768, 672, 672, 768, MOE_QROWS_OK, 0, 0},
        {"Q2_K 252", MOE_DF_Q2_K, 0x1000, 252 * 2048, 252, 252, 2048, MOE_QROWS_OK, 2, 0},
        {"Q2_K 168", MOE_DF_Q2_K, 0x1000, 168 * 512, 168, 168, 512, MOE_QROWS_OK, 1, 0},
        {"Q3_K 880", MOE_DF_Q3_K, 0x1000, 880 * 768, 880, 880, 768, MOE_QROWS_OK, 0, 0},
        {"Q3_K 330", MOE_DF_Q3_K, 0x1000, 330 * 2048, 330, 330, 2048, MOE_QROWS_OK, 3, 0},
        {"Q3_K 220", MOE_DF_Q3_K, 0x1000, 220 * 512, 220, 220, 512, MOE_QROWS_OK, 2, 0},
        {"Q3_K interleaved up", MOE_DF_Q3_K, 0x1000 + 220, 440 * 512, 440, 220, 512, MOE_QROWS_OK, 1, 6},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        int lg = -1, a0 = -1;
        const int r = moe__quant_rows_plan(c[i].fmt, c[i].data, c[i].se, c[i].sn, c[i].rb, c[i].rows, &lg, &a0);
        CHECK_MSG(r == c[i].want, "%s: %d, want %d", c[i].what, r, c[i].want);
        if (r == MOE_QROWS_OK || r == MOE_QROWS_GROUP_ROWS || r == MOE_QROWS_PAST_GROUP)
            CHECK_MSG(lg == c[i].lg && a0 == c[i].a0, "%s: groups of %d, %d units below; want %d, %d", c[i].what,
                      1 << lg, a0, 1 << c[i].lg, c[i].a0);
        if (r == MOE_QROWS_OK) {
            /* the group is a multiple of 16 bytes and the map starts on a boundary */
            const int U = moe__quant_unit(c[i].fmt);
            CHECK_MSG(((c[i].sn << lg) % 16) == 0 && ((c[i].data - (uintptr_t)(U < 16 ? U * a0 : 0)) % 16) == 0,
                      "%s", c[i].what);
        }
    }
}

/* The GGUF streaming down phase's form (decode.h moe__sv_down_expert_gguf, host
 * arithmetic): expert-major at T = 1 and from T = 8 where T K >= E or the
 * rows read again by a token-major down reach 300 MB; the first expert-major
 * T >= 2 of each preset and format (session 27, bench/decode/s27 run 12). */
TEST(decode_down_expert_presets) {
    static const struct { const char *name; int64_t D, I, E, K; moe_type t; int64_t want; } p[] = {
        {"deepseek-v3 Q8_0", 7168, 2048, 256, 8, MOE_TYPE_Q8_0, 14},
        {"deepseek-v3 Q6_K", 7168, 2048, 256, 8, MOE_TYPE_Q6_K, 16},
        {"deepseek-v3 MXFP4", 7168, 2048, 256, 8, MOE_TYPE_MXFP4, 20},
        {"gpt-oss-120b Q8_0", 2880, 2880, 128, 4, MOE_TYPE_Q8_0, 27},
        {"gpt-oss-120b MXFP4", 2880, 2880, 128, 4, MOE_TYPE_MXFP4, 32},
        {"qwen3 Q4_K", 2048, 768, 128, 8, MOE_TYPE_Q4_K, 16},
        {"mixtral Q4_K", 4096, 14336, 8, 2, MOE_TYPE_Q4_K, 8},
    };
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) {
        const double down = (double)p[i].D * (double)moe_type_row_bytes(p[i].t, p[i].I);
        CHECK_MSG(moe__sv_down_expert_gguf(1, p[i].K, p[i].E, down), "%s: T = 1 is expert-major", p[i].name);
        int64_t first = 0;
        for (int64_t T = 2; T <= 64 && !first; T++)
            if (moe__sv_down_expert_gguf(T, p[i].K, p[i].E, down)) first = T;
        CHECK_MSG(first == p[i].want, "%s: expert-major from T = %lld, expected %lld", p[i].name, (long long)first,
                  (long long)p[i].want);
    }
}

TEST(decode_stream_pairs_presets) {
    /* want_qg: with the int8 kernels: on experts of 10 MB or more the K-quants 1
     * (session 18), MXFP4 2 (session 19), Q8_0 2, 1 from 100 MB (session 27),
     * the others 3; below, the K-quants, Q8_0 and MXFP4 2 (3 in sessions 17-26),
     * the others unchanged (moe__dec_stream_pairs_qg). want_t: the streaming kernels'
     * last T (moe__dec_stream_max_t; on large experts Q4_K to 1.5 pairs and T = 8,
     * Q5_K to 1.25 pairs, Q6_K to 2 (1.5 from 100 MB): sessions 27-28) */
    static const struct { const char *name; int64_t D, I, E, K; int fmt; int64_t want, want_qg, want_t; } p[] = {
        {"gpt-oss-20b MXFP4", 2880, 2880, 32, 4, MOE_DF_MXFP4, 16, 2, 16},
        {"qwen3 MXFP4", 2048, 768, 128, 8, MOE_DF_MXFP4, 16, 2, 32},
        {"mixtral MXFP4", 4096, 14336, 8, 2, MOE_DF_MXFP4, 8, 2, 8},
        {"deepseek-v3 MXFP4", 7168, 2048, 256, 8, MOE_DF_MXFP4, 8, 2, 64},
        {"qwen3 Q4_K", 2048, 768, 128, 8, MOE_DF_Q4_K, 4, 2, 32},
        {"gpt-oss-20b Q8_0", 2880, 2880, 32, 4, MOE_DF_Q8_0, 8, 2, 16},
        {"gpt-oss-120b Q8_0", 2880, 2880, 128, 4, MOE_DF_Q8_0, 8, 2, 64},
        {"qwen3 Q5_K", 2048, 768, 128, 8, MOE_DF_Q5_K, 8, 2, 32},
        {"mixtral Q5_K", 4096, 14336, 8, 2, MOE_DF_Q5_K, 8, 1, 5},
        {"deepseek-v3 Q5_K", 7168, 2048, 256, 8, MOE_DF_Q5_K, 8, 1, 40},
        {"mixtral Q6_K", 4096, 14336, 8, 2, MOE_DF_Q6_K, 8, 1, 6},
        {"mixtral Q8_0", 4096, 14336, 8, 2, MOE_DF_Q8_0, 8, 1, 4},
        {"deepseek-v3 Q8_0", 7168, 2048, 256, 8, MOE_DF_Q8_0, 8, 2, 64},
        {"qwen3 Q8_0", 2048, 768, 128, 8, MOE_DF_Q8_0, 8, 2, 32},
        {"mixtral Q4_K", 4096, 14336, 8, 2, MOE_DF_Q4_K, 4, 1, 6},
        {"deepseek-v3 Q4_K", 7168, 2048, 256, 8, MOE_DF_Q4_K, 4, 1, 8},
        {"qwen3 Q6_K", 2048, 768, 128, 8, MOE_DF_Q6_K, 8, 2, 32},
        {"deepseek-v3 Q6_K", 7168, 2048, 256, 8, MOE_DF_Q6_K, 8, 1, 64},
    };
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) {
        const moe_type t = p[i].fmt == MOE_DF_MXFP4  ? MOE_TYPE_MXFP4
                           : p[i].fmt == MOE_DF_Q4_K ? MOE_TYPE_Q4_K
                           : p[i].fmt == MOE_DF_Q5_K ? MOE_TYPE_Q5_K
                           : p[i].fmt == MOE_DF_Q6_K ? MOE_TYPE_Q6_K
                                                     : MOE_TYPE_Q8_0;
        /* gate, up and down blocks of one expert */
        const double eb = 2.0 * (double)p[i].I * (double)moe_type_row_bytes(t, p[i].D) +
                          (double)p[i].D * (double)moe_type_row_bytes(t, p[i].I);
        const int64_t got = moe__dec_stream_pairs(p[i].fmt, eb);
        CHECK_MSG(got == p[i].want, "%s (%.1f MB an expert): streams to %lld pairs, expected %lld", p[i].name, eb / 1e6,
                  (long long)got, (long long)p[i].want);
        const int want_qg = (int)p[i].want_qg;
        const int64_t got_qg = moe__dec_stream_pairs_qg(p[i].fmt, eb, 1);
        CHECK_MSG(got_qg == want_qg, "%s with the int8 kernels: streams to %lld pairs, expected %lld", p[i].name,
                  (long long)got_qg, (long long)want_qg);
        const int64_t got_t = moe__dec_stream_max_t(p[i].fmt, eb, 1, p[i].E, p[i].K);
        CHECK_MSG(got_t == p[i].want_t, "%s with the int8 kernels: streams to T = %lld, expected %lld", p[i].name,
                  (long long)got_t, (long long)p[i].want_t);
    }
}

#else
TEST(cuda_decode_cases) { SKIP("no CUDA device (built without CUDA)"); }
#endif
