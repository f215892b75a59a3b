/*
 * The CUDA backends: the shared case table on "cuda-sm80", "cuda-sm90" and
 * "cuda-jit" against the reference, the device router against the host
 * router, ids out of range (no fault, documented behaviour) and CUDA-graph
 * capture of a forward. Every test says "skipped" where no CUDA device is usable.
 */
#include "cases.h"
#include "harness.h"
#include "half.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef MOE_WITH_CUDA
#include <cuda_runtime_api.h>

/* 1 and the compute capability when a CUDA device is usable, else 0 and why. */
static int cuda_device(int *major, int *minor, char *why, size_t n) {
    int c = 0;
    cudaError_t e = cudaGetDeviceCount(&c);
    if (e != cudaSuccess) {
        snprintf(why, n, "no CUDA device (cudaGetDeviceCount: %s)", cudaGetErrorString(e));
        return 0;
    }
    if (c <= 0) {
        snprintf(why, n, "no CUDA device (cudaGetDeviceCount: 0 devices)");
        return 0;
    }
    cudaDeviceGetAttribute(major, cudaDevAttrComputeCapabilityMajor, 0);
    cudaDeviceGetAttribute(minor, cudaDevAttrComputeCapabilityMinor, 0);
    return 1;
}

static void run_cases(const char *backend, int need_sm90) {
    char why[256];
    int ma = 0, mi = 0;
    if (!cuda_device(&ma, &mi, why, sizeof why)) SKIP("%s", why);
    if (need_sm90 && !(ma == 9 && mi == 0)) SKIP("device is sm_%d%d; %s needs sm_90", ma, mi, backend);
    if (!need_sm90 && ma < 8) SKIP("device is sm_%d%d; %s needs sm_80 or later", ma, mi, backend);
    moe_ctx_params p = moe_ctx_default_params();
    p.device = MOE_DEVICE_CUDA;
    moe_ctx *ctx;
    CHECK_STATUS(moe_ctx_create(&p, &ctx), MOE_OK);
    int passed, skipped;
    moe_cases_run_all(ctx, backend, &passed, &skipped);
    moe_ctx_free(ctx);
    if (!moe_test_failed() && passed == 0) moe_test_fail(__FILE__, __LINE__, "no case ran (%d skipped)", skipped);
    printf("     %s: %d cases passed, %d skipped (refused by the backend)\n", backend, passed, skipped);
}

TEST(cuda_cases_sm80) { run_cases("cuda-sm80", 0); }
TEST(cuda_cases_sm90) { run_cases("cuda-sm90", 1); }
/* the sm90 kernels compiled by NVRTC for each case's shape (skipped without NVRTC) */
TEST(cuda_cases_jit) { run_cases("cuda-jit", 1); }

/* Each M tile of the sm90 tile table forced (MOE_SM90_BM), whatever the
 * rule would pick for the case's T: the cases run on both tiles. */
static void run_cases_bm(const char *backend, const char *bm) {
    setenv("MOE_SM90_BM", bm, 1);
    run_cases(backend, 1);
    unsetenv("MOE_SM90_BM");
}
TEST(cuda_cases_sm90_bm64) { run_cases_bm("cuda-sm90", "64"); }
TEST(cuda_cases_sm90_bm128) { run_cases_bm("cuda-sm90", "128"); }
TEST(cuda_cases_jit_bm64) { run_cases_bm("cuda-jit", "64"); }
TEST(cuda_cases_jit_bm128) { run_cases_bm("cuda-jit", "128"); }

/* GEMM 1's A rows through the permuted copy xp and TMA (MOE_SM90_GATHER=0),
 * and gathered from x by the producer warpgroup (=1; the default for I <= 2048
 * or T*K <= 128 E), each forced on both tiles. */
static void run_cases_gather(const char *backend, const char *bm, const char *gather) {
    setenv("MOE_SM90_GATHER", gather, 1);
    run_cases_bm(backend, bm);
    unsetenv("MOE_SM90_GATHER");
}
TEST(cuda_cases_sm90_xp_bm64) { run_cases_gather("cuda-sm90", "64", "0"); }
TEST(cuda_cases_sm90_xp_bm128) { run_cases_gather("cuda-sm90", "128", "0"); }
TEST(cuda_cases_sm90_gather_bm64) { run_cases_gather("cuda-sm90", "64", "1"); }
TEST(cuda_cases_sm90_gather_bm128) { run_cases_gather("cuda-sm90", "128", "1"); }
TEST(cuda_cases_jit_xp) { run_cases_gather("cuda-jit", "128", "0"); }
TEST(cuda_cases_jit_gather) { run_cases_gather("cuda-jit", "64", "1"); }

/* Thread-block clusters with TMA multicast (MOE_SM90_CM / MOE_SM90_CN; 2 x 1
 * is the default at large T only): the case table under each shape; cuda-jit
 * reads them at layer creation, cuda-sm90 per forward. With cm = 2 the units
 * pair an expert's m-tiles or two experts' odd last ones (layer.cu
 * k_pair_units): the table's routings give both kinds and the odd one out.
 * GEMM 1 reads the permuted copy through TMA there, or gathers x's rows
 * where MOE_SM90_GATHER=1 asks. */
static void run_cases_cluster(const char *backend, const char *cm, const char *cn) {
    setenv("MOE_SM90_CM", cm, 1);
    setenv("MOE_SM90_CN", cn, 1);
    run_cases(backend, 1);
    unsetenv("MOE_SM90_CM");
    unsetenv("MOE_SM90_CN");
}
TEST(cuda_cases_sm90_cluster2x1) { run_cases_cluster("cuda-sm90", "2", "1"); }
TEST(cuda_cases_sm90_cluster1x2) { run_cases_cluster("cuda-sm90", "1", "2"); }
TEST(cuda_cases_sm90_cluster2x2) { run_cases_cluster("cuda-sm90", "2", "2"); }
TEST(cuda_cases_jit_cluster2x2) { run_cases_cluster("cuda-jit", "2", "2"); }
TEST(cuda_cases_jit_cluster2x1) { run_cases_cluster("cuda-jit", "2", "1"); }
/* The GEMMs' units in the static order (MOE_SM90_SCHED=0; the default takes
 * them from a counter in dynamic order, gemm_sm90.cuh): the case table, BM 128
 * with the gather and BM 64 with the copy. */
static void run_cases_static(const char *backend, const char *bm, const char *gather) {
    setenv("MOE_SM90_SCHED", "0", 1);
    run_cases_gather(backend, bm, gather);
    unsetenv("MOE_SM90_SCHED");
}
TEST(cuda_cases_sm90_static_bm128) { run_cases_static("cuda-sm90", "128", "1"); }
TEST(cuda_cases_sm90_static_bm64) { run_cases_static("cuda-sm90", "64", "0"); }
TEST(cuda_cases_jit_static) { run_cases_static("cuda-jit", "128", "0"); }
/* 2 x 1 clusters in the static order (the default's dynamic order passes each
 * unit's number from CTA 0 to CTA 1: gemm_sm90.cuh) */
static void run_cases_cluster_static(const char *backend) {
    setenv("MOE_SM90_SCHED", "0", 1);
    run_cases_cluster(backend, "2", "1");
    unsetenv("MOE_SM90_SCHED");
}
TEST(cuda_cases_sm90_cluster2x1_static) { run_cases_cluster_static("cuda-sm90"); }
TEST(cuda_cases_jit_cluster2x1_static) { run_cases_cluster_static("cuda-jit"); }
TEST(cuda_cases_sm90_cluster2x1_gather) {
    setenv("MOE_SM90_GATHER", "1", 1);
    run_cases_cluster("cuda-sm90", "2", "1");
    unsetenv("MOE_SM90_GATHER");
}

/* bf16/f16 weights on the register-A kernel (gemm_sm90_qd.cu; MOE_SM90_TN=1
 * forces it at every T): the case table, with the tiles of 256 tokens and
 * their tails of 128 and 64 (every case), and again with every tile of 256
 * folding (MOE_SM90_QS_FOLD=1: the kernel of 280-token stages). Cases whose
 * weights and activations differ in dtype, or f32, run the other kernels. */
static void run_cases_tn(const char *fold) {
    setenv("MOE_SM90_TN", "1", 1);
    if (fold) setenv("MOE_SM90_QS_FOLD", fold, 1);
    run_cases("cuda-sm90", 1);
    unsetenv("MOE_SM90_QS_FOLD");
    unsetenv("MOE_SM90_TN");
}
TEST(cuda_cases_sm90_tn) { run_cases_tn(NULL); }
TEST(cuda_cases_sm90_tn_fold) { run_cases_tn("1"); }

/* The register-A kernel on bf16/f16 weights at shapes of many full tiles:
 * K = 2; E = 8, T = 1064 (some 266 rows an expert: a folded tile, a tile, or
 * a tile and a tail of 64), E = 4, T = 1040 (some 520: two tiles and a tail,
 * or a tile and a folded one), E = 8, T = 1360 (some 340: a tile and a tail of
 * 128), E = 16, T = 1040 (some 130: tiles of 128 tokens, folded ones, tails
 * of 64); gated SwiGLU, up-only GELU with biases, the GPT-OSS form (interleaved,
 * clamped, biases), f16 with a token's two pairs on one expert. Each against
 * the reference, folding (MOE_SM90_QS_FOLD=1) and not (=0) bit for bit (the
 * same error), and folding with helper warps loading the weights
 * (MOE_SM90_QS_HELP=1; bf16 takes none by default) and in clusters of 2 sharing the token tiles
 * (MOE_SM90_QS_MC=1) as without, and the description names the kernel (and the fold where the
 * rule folds: T = 1064) under MOE_SM90_TN=1, not under =0, and by the rule
 * (moe__cuda_sm90_tn) at D = 4096 with 256 rows an expert (and with 128: tiles
 * of 128), not with 512 or 88 nor at D = 256. */
TEST(cuda_sm90_tn_tiles) {
    char why[256];
    int ma, mi;
    if (!cuda_device(&ma, &mi, why, sizeof why)) SKIP("%s", why);
    if (!(ma == 9 && mi == 0)) SKIP("device is sm_%d%d; the register-A kernel needs sm_90", ma, mi);
    moe_ctx_params p = moe_ctx_default_params();
    p.device = MOE_DEVICE_CUDA;
    moe_ctx *ctx;
    CHECK_STATUS(moe_ctx_create(&p, &ctx), MOE_OK);
    /* MOE_SM90_TN (NULL: unset, the rule), D, T; the kernel named, the fold named */
    static const struct { const char *env; int D, T, tn, fold; } dc[] = {
        {"1", 256, 1064, 1, 1},  {"1", 256, 1360, 1, 0},   {"0", 256, 1064, 0, 0},
        {NULL, 256, 1064, 0, 0}, /* the rule: D = 256 is too short */
        {NULL, 4096, 1024, 1, 1}, /* 256 rows an expert, D > 2048 */
        {NULL, 4096, 2048, 0, 0}, /* 512 rows: the token-major kernel */
        {"1", 256, 512, 2, 1},    /* 128 rows: 128 tokens a tile, and folds */
        {NULL, 4096, 512, 2, 1},  /* the rule at 128 rows, D > 2048 */
        {NULL, 4096, 352, 0, 0},  /* 88 rows: the token-major kernel */
    };
    for (int f = 0; f < 9 && !moe_test_failed(); f++) {
        if (dc[f].env) setenv("MOE_SM90_TN", dc[f].env, 1);
        const int D = dc[f].D;
        moe_layer_desc d = moe_layer_desc_default();
        d.E = 8; d.D = D; d.I = 256; d.K = 2;
        d.act = MOE_ACT_SWIGLU;
        d.act_type = MOE_TYPE_BF16;
        d.gate.type = d.up.type = d.down.type = MOE_TYPE_BF16;
        d.gate.mem = d.up.mem = d.down.mem = MOE_MEM_DEVICE;
        void *w[3] = {NULL, NULL, NULL};
        for (int i = 0; i < 3; i++) cudaMalloc(&w[i], 2 * (size_t)D * 256 * 8);
        d.gate.data = w[0]; d.up.data = w[1]; d.down.data = w[2];
        d.backend = "cuda-sm90";
        moe_layer *L = NULL;
        CHECK_STATUS(moe_layer_create(ctx, &d, &L), MOE_OK);
        unsetenv("MOE_SM90_TN");
        const int64_t T = dc[f].T;
        char desc[4096] = "";
        if (L) moe_layer_describe(L, T, desc, sizeof desc);
        const int tn = strstr(desc, "weights as wgmma's A in registers") == NULL ? 0
                       : strstr(desc, "the tokens as N: 128 a tile") != NULL ? 2 : 1;
        const int fold = strstr(desc, "folded into it") != NULL;
        CHECK_MSG(!tn || strstr(desc, "the producer thread alone"), "D = %d, T = %lld: want \"the producer thread "
                  "alone\" in: %s", D, (long long)T, desc);
        CHECK_MSG(tn == dc[f].tn && fold == dc[f].fold, "D = %d, T = %lld, MOE_SM90_TN=%s: kernel %s, fold %s: %s", D,
                  (long long)T, dc[f].env ? dc[f].env : "(unset)", tn ? "named" : "not named",
                  fold ? "named" : "not named", desc);
        moe_layer_free(L);
        for (int i = 0; i < 3; i++) cudaFree(w[i]);
    }
    int runs = 0;
    setenv("MOE_SM90_TN", "1", 1);
    for (int v = 0; v < 4 && !moe_test_failed(); v++)
        for (int w = 0; w < 4 && !moe_test_failed(); w++) {
            moe_case c = {"tn-tiles", v == 0 ? 1064 : v == 1 ? 1040 : v == 2 ? 1360 : 1040, v == 1 ? 4 : v == 3 ? 16 : 8,
                          256, 256, 2,
                          MOE_ACT_SWIGLU, MOE_GATE_UP_SEPARATE, 0, MOE_TYPE_BF16, MOE_TYPE_BF16, ROUTE_RANDOM, 0, 0};
            if (w == 1) { c.act = MOE_ACT_GELU; c.bias = 1; } /* up only */
            if (w == 2) { c.layout = MOE_GATE_UP_INTERLEAVED; c.act = MOE_ACT_SWIGLU_OAI; c.bias = 1; }
            if (w == 3) {
                c.wtype = c.act_type = MOE_TYPE_F16;
                c.layout = MOE_GATE_UP_CONCAT;
                c.routing = ROUTE_DUPLICATE;
            }
            const unsigned long long seed = moe_test_seed() + 173ull * (unsigned)(4 * v + w);
            double err[4] = {-1.0, -2.0, -3.0, -4.0};
            for (int f = 0; f < 4 && !moe_test_failed(); f++) {
                char msg[1024];
                setenv("MOE_SM90_QS_FOLD", f ? "1" : "0", 1);
                if (f == 2) setenv("MOE_SM90_QS_HELP", "1", 1); /* helper warps (on GGUF blocks only by default) */
                if (f == 3) setenv("MOE_SM90_QS_MC", "1", 1);   /* clusters of 2 sharing the token tiles */
                moe_case_result r = moe_case_run(&c, ctx, "cuda-sm90", seed, &err[f], msg, sizeof msg);
                unsetenv("MOE_SM90_QS_FOLD");
                unsetenv("MOE_SM90_QS_HELP");
                unsetenv("MOE_SM90_QS_MC");
                CHECK_MSG(r == MOE_CASE_PASS, "%s %s, E = %d, T = %d, MOE_SM90_QS_FOLD=%d%s: %s",
                          moe_type_name(c.wtype), moe_act_name(c.act), (int)c.E, (int)c.T, f ? 1 : 0,
                          f == 2 ? " MOE_SM90_QS_HELP=1" : f == 3 ? " MOE_SM90_QS_MC=1" : "", msg);
            }
            CHECK_MSG(err[0] == err[1], "%s %s, E = %d, T = %d: error %.17g folding, %.17g not: the outputs differ",
                      moe_type_name(c.wtype), moe_act_name(c.act), (int)c.E, (int)c.T, err[1], err[0]);
            CHECK_MSG(err[1] == err[2],
                      "%s %s, E = %d, T = %d: error %.17g with the helper warps, %.17g without: the outputs differ",
                      moe_type_name(c.wtype), moe_act_name(c.act), (int)c.E, (int)c.T, err[1], err[2]);
            CHECK_MSG(err[1] == err[3],
                      "%s %s, E = %d, T = %d: error %.17g in clusters of 2, %.17g without: the outputs differ",
                      moe_type_name(c.wtype), moe_act_name(c.act), (int)c.E, (int)c.T, err[3], err[1]);
            runs++;
        }
    unsetenv("MOE_SM90_TN");
    moe_ctx_free(ctx);
    CHECK(runs == 16);
}

/* ---- router ---- */

typedef struct { int T, E, K; moe_score score; int renorm, bias, G, TG; float scaling; } route_cfg;

TEST(cuda_route_topk) {
    char why[256];
    int ma, mi;
    if (!cuda_device(&ma, &mi, why, sizeof why)) SKIP("%s", why);
    static const route_cfg cfgs[] = {
        {100, 8, 2, MOE_SCORE_SOFTMAX, 0, 0, 0, 0, 1.0f},
        {257, 128, 8, MOE_SCORE_SOFTMAX, 1, 0, 0, 0, 1.0f},
        {300, 256, 8, MOE_SCORE_SIGMOID, 1, 1, 8, 4, 2.5f}, /* DeepSeek-V3 */
        {64, 512, 16, MOE_SCORE_SOFTMAX, 0, 0, 0, 0, 1.0f},
        {33, 64, 6, MOE_SCORE_SIGMOID, 0, 1, 0, 0, 1.0f},
        {10, 40, 40, MOE_SCORE_SOFTMAX, 1, 0, 0, 0, 1.0f}, /* K = E */
        {50, 96, 4, MOE_SCORE_SOFTMAX, 0, 1, 4, 2, 1.0f},
        {20, 2048, 8, MOE_SCORE_SOFTMAX, 1, 0, 0, 0, 1.0f},
    };
    moe_ctx *hctx, *dctx;
    moe_ctx_params p = moe_ctx_default_params();
    CHECK_STATUS(moe_ctx_create(&p, &hctx), MOE_OK);
    p.device = MOE_DEVICE_CUDA;
    CHECK_STATUS(moe_ctx_create(&p, &dctx), MOE_OK);
    moe_rng r;
    moe_rng_seed(&r, moe_test_seed());
    for (size_t c = 0; c < sizeof cfgs / sizeof cfgs[0] && !moe_test_failed(); c++) {
        const route_cfg *k = &cfgs[c];
        size_t nl = (size_t)k->T * k->E, nk = (size_t)k->T * k->K;
        float *lg = malloc(sizeof(float) * nl), *bias = malloc(sizeof(float) * k->E);
        int32_t *hid = malloc(sizeof(int32_t) * nk), *did = malloc(sizeof(int32_t) * nk);
        float *hw = malloc(sizeof(float) * nk), *dw = malloc(sizeof(float) * nk);
        for (size_t i = 0; i < nl; i++) lg[i] = (float)(round(moe_rng_normal(&r) * 4.0) / 4.0); /* many ties */
        lg[3] = NAN;
        for (int i = 0; i < k->E; i++) bias[i] = (float)(moe_rng_uniform(&r) * 0.1);
        moe_route_params rp = moe_route_params_default();
        rp.E = k->E; rp.K = k->K; rp.score = k->score; rp.renormalize = k->renorm;
        rp.n_group = k->G; rp.topk_group = k->TG; rp.routed_scaling = k->scaling;
        rp.score_bias = k->bias ? bias : NULL;
        moe_status s = moe_route_topk(hctx, &rp, k->T, lg, hid, hw);
        float *dlg = NULL, *dbias = NULL, *dwd = NULL;
        int32_t *didd = NULL;
        cudaMalloc((void **)&dlg, sizeof(float) * nl);
        cudaMalloc((void **)&dbias, sizeof(float) * k->E);
        cudaMalloc((void **)&didd, sizeof(int32_t) * nk);
        cudaMalloc((void **)&dwd, sizeof(float) * nk);
        cudaMemcpy(dlg, lg, sizeof(float) * nl, cudaMemcpyHostToDevice);
        cudaMemcpy(dbias, bias, sizeof(float) * k->E, cudaMemcpyHostToDevice);
        rp.score_bias = k->bias ? dbias : NULL;
        moe_status sd = moe_route_topk(dctx, &rp, k->T, dlg, didd, dwd);
        cudaError_t ce = cudaDeviceSynchronize();
        cudaMemcpy(did, didd, sizeof(int32_t) * nk, cudaMemcpyDeviceToHost);
        cudaMemcpy(dw, dwd, sizeof(float) * nk, cudaMemcpyDeviceToHost);
        cudaFree(dlg); cudaFree(dbias); cudaFree(didd); cudaFree(dwd);
        int bad = -1;
        for (size_t i = 0; i < nk && bad < 0; i++)
            if (hid[i] != did[i] || fabsf(hw[i] - dw[i]) > 1e-6f * fmaxf(1.0f, fabsf(hw[i]))) bad = (int)i;
        if (s || sd || ce != cudaSuccess)
            moe_test_fail(__FILE__, __LINE__, "config %zu: host %s, device %s (%s), cuda %s", c, moe_status_name(s),
                          moe_status_name(sd), moe_ctx_last_error(dctx), cudaGetErrorString(ce));
        else if (bad >= 0)
            moe_test_fail(__FILE__, __LINE__, "config %zu (E %d K %d): token %d slot %d: host (%d, %g), device (%d, %g)",
                          c, k->E, k->K, bad / k->K, bad % k->K, hid[bad], (double)hw[bad], did[bad], (double)dw[bad]);
        free(lg); free(bias); free(hid); free(did); free(hw); free(dw);
    }
    moe_ctx_free(hctx);
    moe_ctx_free(dctx);
}

/* ---- ids out of range, graph capture ---- */

typedef struct {
    moe_ctx *ctx;
    moe_layer *L;
    void *w[3], *x, *out, *out2, *ws;
    int32_t *ids;
    float *tw;
    size_t wsz;
    cudaStream_t stream;
} small_layer;

enum { ST = 37, SE = 8, SD = 128, SI = 64, SK = 2 };

/* n bf16 values of N(0, scale^2) copied to a new device buffer (h: host scratch of n) */
static void *random_bf16_device(moe_rng *r, uint16_t *h, size_t n, double scale) {
    void *p = NULL;
    for (size_t j = 0; j < n; j++) h[j] = moe__f32_to_bf16((float)(moe_rng_normal(r) * scale));
    if (cudaMalloc(&p, 2 * n) == cudaSuccess) cudaMemcpy(p, h, 2 * n, cudaMemcpyHostToDevice);
    return p;
}

/* a bf16 layer of separate gate, up and down weights on the device */
static moe_layer_desc bf16_device_desc(int64_t E, int64_t D, int64_t I, int64_t K, const char *backend,
                                       void *const w[3]) {
    moe_layer_desc d = moe_layer_desc_default();
    d.E = E; d.D = D; d.I = I; d.K = K;
    d.act_type = MOE_TYPE_BF16;
    d.backend = backend;
    moe_tensor *ts[3] = {&d.gate, &d.up, &d.down};
    for (int i = 0; i < 3; i++) {
        ts[i]->data = w[i];
        ts[i]->type = MOE_TYPE_BF16;
        ts[i]->mem = MOE_MEM_DEVICE;
    }
    return d;
}

static int small_make(small_layer *s, const char *backend, char *why, size_t n) {
    memset(s, 0, sizeof *s);
    if (cudaStreamCreate(&s->stream) != cudaSuccess) { snprintf(why, n, "cudaStreamCreate"); return -1; }
    moe_ctx_params p = moe_ctx_default_params();
    p.device = MOE_DEVICE_CUDA;
    p.cuda_stream = s->stream;
    if (moe_ctx_create(&p, &s->ctx)) { snprintf(why, n, "ctx"); return -1; }
    moe_rng r;
    moe_rng_seed(&r, moe_test_seed() + 17);
    size_t nw = (size_t)SE * SI * SD;
    uint16_t *h = malloc(2 * nw);
    for (int i = 0; i < 3 && h; i++) s->w[i] = random_bf16_device(&r, h, nw, 0.1);
    moe_layer_desc d = bf16_device_desc(SE, SD, SI, SK, backend, s->w);
    moe_status st = moe_layer_create(s->ctx, &d, &s->L);
    free(h);
    if (st) { snprintf(why, n, "%s", moe_ctx_last_error(s->ctx)); return (int)st; }
    moe_layer_workspace_size(s->L, ST, &s->wsz);
    uint16_t xh[ST * SD];
    int32_t ids[ST * SK];
    float tw[ST * SK];
    for (int i = 0; i < ST * SD; i++) xh[i] = moe__f32_to_bf16((float)moe_rng_normal(&r));
    for (int i = 0; i < ST * SK; i++) {
        ids[i] = (int32_t)(moe_rng_u64(&r) % SE);
        tw[i] = (float)moe_rng_uniform(&r);
    }
    ids[3] = -1; /* out of range: skipped */
    ids[8] = SE + 5;
    cudaMalloc(&s->x, sizeof xh);
    cudaMalloc((void **)&s->ids, sizeof ids);
    cudaMalloc((void **)&s->tw, sizeof tw);
    cudaMalloc(&s->out, 2 * ST * SD);
    cudaMalloc(&s->out2, 2 * ST * SD);
    cudaMalloc(&s->ws, s->wsz);
    cudaMemcpy(s->x, xh, sizeof xh, cudaMemcpyHostToDevice);
    cudaMemcpy(s->ids, ids, sizeof ids, cudaMemcpyHostToDevice);
    cudaMemcpy(s->tw, tw, sizeof tw, cudaMemcpyHostToDevice);
    return 0;
}

static void small_free(small_layer *s) {
    moe_layer_free(s->L);
    moe_ctx_free(s->ctx);
    for (int i = 0; i < 3; i++) cudaFree(s->w[i]);
    cudaFree(s->x); cudaFree(s->ids); cudaFree(s->tw); cudaFree(s->out); cudaFree(s->out2); cudaFree(s->ws);
    if (s->stream) cudaStreamDestroy(s->stream);
}

/* bm: the sm90 M tile to force (MOE_SM90_BM), and to find in the description; NULL: the rule's */
static void bad_ids_and_graph(const char *backend, int need_sm90, const char *bm) {
    char why[256];
    int ma, mi;
    if (!cuda_device(&ma, &mi, why, sizeof why)) SKIP("%s", why);
    if (need_sm90 && !(ma == 9 && mi == 0)) SKIP("device is sm_%d%d; %s needs sm_90", ma, mi, backend);
    small_layer s;
    int rc = small_make(&s, backend, why, sizeof why);
    if (rc) {
        small_free(&s);
        CHECK_MSG(0, "setup: %s", why);
    }
    if (bm) {
        char desc[1024], want[64];
        setenv("MOE_SM90_BM", bm, 1);
        CHECK_STATUS(moe_layer_describe(s.L, ST, desc, sizeof desc), MOE_OK);
        snprintf(want, sizeof want, strcmp(backend, "cuda-jit") ? "BM %s, raster" : "this T: %sx256x64", bm);
        CHECK_MSG(strstr(desc, want) != NULL, "MOE_SM90_BM=%s: the description lacks \"%s\": %s", bm, want, desc);
    }
    /* direct forward with two ids out of range: no fault, finite output */
    moe_status st = moe_layer_forward(s.L, ST, s.x, s.ids, s.tw, s.out, s.ws, s.wsz);
    cudaError_t ce = cudaStreamSynchronize(s.stream);
    uint16_t a[ST * SD], b[ST * SD];
    cudaMemcpy(a, s.out, sizeof a, cudaMemcpyDeviceToHost);
    int finite = 1;
    for (int i = 0; i < ST * SD; i++) finite &= isfinite(moe__bf16_to_f32(a[i]));
    /* the same forward captured into a graph and replayed */
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    cudaError_t cg = cudaStreamBeginCapture(s.stream, cudaStreamCaptureModeGlobal);
    moe_status st2 = moe_layer_forward(s.L, ST, s.x, s.ids, s.tw, s.out2, s.ws, s.wsz);
    if (cg == cudaSuccess) cg = cudaStreamEndCapture(s.stream, &graph);
    if (cg == cudaSuccess) cg = cudaGraphInstantiate(&exec, graph, 0);
    if (cg == cudaSuccess) cg = cudaGraphLaunch(exec, s.stream);
    if (cg == cudaSuccess) cg = cudaStreamSynchronize(s.stream);
    cudaMemcpy(b, s.out2, sizeof b, cudaMemcpyDeviceToHost);
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
    /* x off its 16-byte alignment: refused before any launch */
    moe_status st3 = moe_layer_forward(s.L, ST, (const char *)s.x + 8, s.ids, s.tw, s.out2, s.ws, s.wsz);
    cudaError_t ce3 = cudaStreamSynchronize(s.stream);
    small_free(&s);
    CHECK_MSG(st3 == MOE_ERR_INVALID_ARGUMENT && ce3 == cudaSuccess, "misaligned x: %s, %s (want MOE_ERR_INVALID_ARGUMENT)",
              moe_status_name(st3), cudaGetErrorString(ce3));
    if (bm) unsetenv("MOE_SM90_BM");
    CHECK_MSG(st == MOE_OK && ce == cudaSuccess, "forward with ids out of range: %s, %s", moe_status_name(st),
              cudaGetErrorString(ce));
    CHECK_MSG(finite, "non-finite output with ids out of range");
    CHECK_MSG(st2 == MOE_OK && cg == cudaSuccess, "graph capture: %s, %s", moe_status_name(st2), cudaGetErrorString(cg));
    CHECK_MSG(memcmp(a, b, sizeof a) == 0, "graph replay differs from the direct forward");
}

/* One forward of a fresh bf16 layer (E, D, I, K; weights w as made by
 * dev_inputs_make) over T tokens, with the environment variable env set to
 * val (NULL: unset) while the layer is created and runs; its description at
 * T into desc; why empty on success. */
static void env_forward(const char *backend, const char *env, const char *val, int E, int D, int I, int K,
                        const void *const w[3], const void *x, const int32_t *ids, const float *tw, int64_t T, void *out,
                        char *desc, size_t dn, char *why, size_t wn) {
    if (val) setenv(env, val, 1);
    moe_ctx_params p = moe_ctx_default_params();
    p.device = MOE_DEVICE_CUDA;
    moe_ctx *ctx = NULL;
    moe_layer *L = NULL;
    void *ws = NULL;
    size_t wsz = 0;
    void *const wv[3] = {(void *)w[0], (void *)w[1], (void *)w[2]};
    moe_layer_desc d = bf16_device_desc(E, D, I, K, backend, wv);
    if (moe_ctx_create(&p, &ctx)) snprintf(why, wn, "ctx");
    else if (moe_layer_create(ctx, &d, &L)) snprintf(why, wn, "create: %s", moe_ctx_last_error(ctx));
    else if (moe_layer_describe(L, T, desc, dn) || moe_layer_workspace_size(L, T, &wsz)) snprintf(why, wn, "describe");
    else if (cudaMalloc(&ws, wsz) != cudaSuccess) snprintf(why, wn, "cudaMalloc(%zu)", wsz);
    else if (moe_layer_forward(L, T, x, ids, tw, out, ws, wsz)) snprintf(why, wn, "forward: %s", moe_layer_last_error(L));
    else if (cudaDeviceSynchronize() != cudaSuccess) snprintf(why, wn, "sync");
    cudaFree(ws);
    moe_layer_free(L);
    moe_ctx_free(ctx);
    if (val) unsetenv(env);
}
/* A bf16 layer's inputs on the device for the rule tests below: the three
 * weight tensors (random, as random_bf16_device), x [T, D], ids [T, K] uniform
 * over the experts, routing weights, and out; ok = 0 if anything failed. */
typedef struct {
    void *w[3], *x, *out, *ids, *tw;
    int ok;
} dev_inputs;
static dev_inputs dev_inputs_make(uint64_t seed, int E, int D, int I, int K, int T) {
    dev_inputs in;
    memset(&in, 0, sizeof in);
    moe_rng r;
    moe_rng_seed(&r, seed);
    const size_t nw = (size_t)E * I * D, nx = (size_t)T * D, nk = (size_t)T * K;
    uint16_t *h = malloc(2 * (nw > nx ? nw : nx));
    int32_t *ids = malloc(sizeof(int32_t) * nk);
    float *tw = malloc(sizeof(float) * nk);
    if (h && ids && tw) {
        for (int i = 0; i < 3; i++) in.w[i] = random_bf16_device(&r, h, nw, 0.05);
        for (size_t j = 0; j < nx; j++) h[j] = moe__f32_to_bf16((float)moe_rng_normal(&r));
        for (size_t j = 0; j < nk; j++) {
            ids[j] = (int32_t)(moe_rng_u64(&r) % (uint64_t)E);
            tw[j] = (float)moe_rng_uniform(&r);
        }
        in.ok = in.w[0] && in.w[1] && in.w[2] && cudaMalloc(&in.x, 2 * nx) == cudaSuccess &&
                cudaMalloc(&in.out, 2 * nx) == cudaSuccess && cudaMalloc(&in.ids, sizeof(int32_t) * nk) == cudaSuccess &&
                cudaMalloc(&in.tw, sizeof(float) * nk) == cudaSuccess &&
                cudaMemcpy(in.x, h, 2 * nx, cudaMemcpyHostToDevice) == cudaSuccess &&
                cudaMemcpy(in.ids, ids, sizeof(int32_t) * nk, cudaMemcpyHostToDevice) == cudaSuccess &&
                cudaMemcpy(in.tw, tw, sizeof(float) * nk, cudaMemcpyHostToDevice) == cudaSuccess;
    }
    free(h);
    free(ids);
    free(tw);
    return in;
}
static void dev_inputs_free(dev_inputs *in) {
    for (int i = 0; i < 3; i++) cudaFree(in->w[i]);
    cudaFree(in->x);
    cudaFree(in->out);
    cudaFree(in->ids);
    cudaFree(in->tw);
}
/* env_forward on in, out poisoned (NaN bf16) first and copied to o [T, D] after */
static void env_forward_in(const char *backend, const char *env, const char *val, int E, int D, int I, int K,
                           const dev_inputs *in, int64_t T, uint16_t *o, char *desc, size_t dn, char *why, size_t wn) {
    const void *cw[3] = {in->w[0], in->w[1], in->w[2]};
    cudaMemset(in->out, 0xff, 2 * (size_t)T * D);
    env_forward(backend, env, val, E, D, I, K, cw, in->x, (const int32_t *)in->ids, (const float *)in->tw, T, in->out,
                desc, dn, why, wn);
    cudaMemcpy(o, in->out, 2 * (size_t)T * D, cudaMemcpyDeviceToHost);
}
/* a and b [T, D] bf16 bit for bit, and a without NaN; what names the pair of variants */
static void check_bitwise(const char *backend, const char *what, const uint16_t *a, const uint16_t *b, int64_t T,
                          int D) {
    const size_t n = (size_t)T * D;
    size_t bad = n, nan = 0;
    for (size_t j = 0; j < n; j++) {
        if (a[j] != b[j] && bad == n) bad = j;
        nan += moe__bf16_to_f32(a[j]) != moe__bf16_to_f32(a[j]);
    }
    CHECK_MSG(nan == 0, "%s T=%lld: %zu NaN outputs (%s)", backend, (long long)T, nan, what);
    CHECK_MSG(bad == n, "%s T=%lld: %s differ first at token %zu column %zu: %g vs %g", backend, (long long)T, what,
              bad / D, bad % D, bad < n ? (double)moe__bf16_to_f32(a[bad]) : 0.0,
              bad < n ? (double)moe__bf16_to_f32(b[bad]) : 0.0);
}

/* The rule tests below: forwards of one layer's inputs under variants v of
 * one environment variable (vals[v], NULL: unset) at Ts[v] tokens, each
 * output kept in o[v] (malloc'd by the caller, [Ts[v], D]); returns 0 when
 * any setup or forward failed (reported). */
static int rule_forwards(const char *backend, const char *env, const char *const *vals, const dev_inputs *in, int E,
                         int D, int I, int K, const int64_t *Ts, int nv, uint16_t **o, char (*desc)[2048]) {
    char why[4][256] = {"", "", "", ""};
    int ok = in->ok;
    for (int v = 0; v < nv; v++) ok = ok && o[v];
    if (!ok) moe_test_fail(__FILE__, __LINE__, "%s: setup (device inputs or host buffers) failed", backend);
    for (int v = 0; ok && v < nv && v < 4; v++) {
        env_forward_in(backend, env, vals[v], E, D, I, K, in, Ts[v], o[v], desc[v], sizeof desc[v], why[v],
                       sizeof why[v]);
        if (why[v][0])
            moe_test_fail(__FILE__, __LINE__, "%s T=%lld %s=%s: %s", backend, (long long)Ts[v], env,
                          vals[v] ? vals[v] : "(unset)", why[v]);
        ok = ok && !why[v][0];
    }
    return ok;
}

/* The default 2 x 1 clusters at large T (layer.cu moe__cuda_sm90_shape: D >=
 * 4096, T*K >= 8192, T*K/E >= 128): the description names them (and the
 * raster band, and the units' dynamic order) at T = 16384 and not at T = 512, and the forward equals, bit
 * for bit, the one with MOE_SM90_CM=1 (1 x 1; and GEMM 1 gathering x's rows,
 * I <= 2048), itself checked against the reference by the case tables. The
 * token-major kernel's rules: MOE_SM90_TN=0, since at T = 512 (128 rows an
 * expert, D = 4096) moe__cuda_sm90_tn gives the layer to the register-A
 * kernel, whose bands are 2 (cuda_sm90_tn_tiles checks that choice). */
static void c21_default(const char *backend) {
    char desc[3][2048], why[256];
    int ma, mi;
    if (!cuda_device(&ma, &mi, why, sizeof why)) SKIP("%s", why);
    if (!(ma == 9 && mi == 0)) SKIP("device is sm_%d%d; %s needs sm_90", ma, mi, backend);
    enum { CE = 8, CD = 4096, CI = 128, CK = 2, CT = 16384 };
    const int64_t Ts[3] = {CT, CT, 512};
    const char *const cm[3] = {NULL, "1", NULL};
    dev_inputs in = dev_inputs_make(moe_test_seed() + 91, CE, CD, CI, CK, CT);
    uint16_t *o[3] = {malloc(2 * (size_t)CT * CD), malloc(2 * (size_t)CT * CD), malloc(2 * (size_t)512 * CD)};
    setenv("MOE_SM90_TN", "0", 1);
    const int fwd = rule_forwards(backend, "MOE_SM90_CM", cm, &in, CE, CD, CI, CK, Ts, 3, o, desc);
    unsetenv("MOE_SM90_TN");
    if (fwd) {
        const char *want = strcmp(backend, "cuda-jit") ? "clusters 2x1, BM 128" : "in 2x1 clusters";
        const char *want1 = strcmp(backend, "cuda-jit") ? "clusters 1x1" : "in 1x1 clusters";
        CHECK_MSG(strstr(desc[0], want) != NULL, "%s T=%d: no \"%s\": %s", backend, CT, want, desc[0]);
        CHECK_MSG(strstr(desc[1], want1) != NULL, "%s T=%d MOE_SM90_CM=1: no \"%s\": %s", backend, CT, want1, desc[1]);
        CHECK_MSG(strstr(desc[2], want1) != NULL, "%s T=512: no \"%s\": %s", backend, want1, desc[2]);
        /* the raster rule (layer.cu moe__cuda_sm90_raster): bands of 4 m-tiles at 128 rows an expert, 16 at 4096 */
        CHECK_MSG(strstr(desc[0], "raster bands of 16") != NULL, "%s T=%d: no \"raster bands of 16\": %s", backend, CT,
                  desc[0]);
        CHECK_MSG(strstr(desc[2], "raster bands of 4") != NULL, "%s T=512: no \"raster bands of 4\": %s", backend,
                  desc[2]);
        CHECK_MSG(strstr(desc[0], "units in dynamic order") != NULL, "%s T=%d: no \"units in dynamic order\": %s",
                  backend, CT, desc[0]);
        check_bitwise(backend, "2x1 and 1x1", o[0], o[1], CT, CD);
    }
    dev_inputs_free(&in);
    for (int v = 0; v < 3; v++) free(o[v]);
}
/* The raster rule's wide case (layer.cu moe__cuda_sm90_raster): at T = 16384
 * in 2 x 1 clusters, bands of 2 where 16 units' A rows exceed the L2 (D = 7168:
 * 59 MB against the H100's and H200's 50), 16 at D = 4096 (34 MB). The
 * descriptions only: no forward. */
static void raster_rule(const char *backend) {
    char why[256];
    int ma, mi;
    if (!cuda_device(&ma, &mi, why, sizeof why)) SKIP("%s", why);
    if (!(ma == 9 && mi == 0)) SKIP("device is sm_%d%d; %s needs sm_90", ma, mi, backend);
    int l2 = 0;
    cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0);
    const int Ds[2] = {7168, 4096};
    for (int v = 0; v < 2; v++) {
        const int64_t band_a = 16 * 2 * 128 * (int64_t)Ds[v] * 2;
        char want[64], desc[2048] = "";
        snprintf(want, sizeof want, "raster bands of %d,", band_a > l2 ? 2 : 16);
        dev_inputs in = dev_inputs_make(moe_test_seed() + 99, 8, Ds[v], 64, 2, 16);
        moe_ctx_params p = moe_ctx_default_params();
        p.device = MOE_DEVICE_CUDA;
        moe_ctx *ctx = NULL;
        moe_layer *L = NULL;
        moe_layer_desc d = bf16_device_desc(8, Ds[v], 64, 2, backend, in.w);
        CHECK(in.ok);
        CHECK_STATUS(moe_ctx_create(&p, &ctx), MOE_OK);
        if (ctx && in.ok && moe_layer_create(ctx, &d, &L) == MOE_OK) {
            CHECK_STATUS(moe_layer_describe(L, 16384, desc, sizeof desc), MOE_OK);
            CHECK_MSG(strstr(desc, want) != NULL, "%s D=%d T=16384 (L2 %d bytes): no \"%s\": %s", backend, Ds[v],
                      l2, want, desc);
            CHECK_MSG(strstr(desc, "2x1") != NULL, "%s D=%d T=16384: not in 2x1 clusters: %s", backend, Ds[v], desc);
        } else {
            moe_test_fail(__FILE__, __LINE__, "%s D=%d: create: %s", backend, Ds[v], ctx ? moe_ctx_last_error(ctx) : "ctx");
        }
        moe_layer_free(L);
        moe_ctx_free(ctx);
        dev_inputs_free(&in);
    }
}
TEST(cuda_sm90_raster_rule) { raster_rule("cuda-sm90"); }
TEST(cuda_jit_raster_rule) { raster_rule("cuda-jit"); }

TEST(cuda_sm90_c21_default) { c21_default("cuda-sm90"); }
TEST(cuda_jit_c21_default) { c21_default("cuda-jit"); }

/* n-tiles of 240 where N pads less so: GEMM 2 (layer.cu moe__cuda_sm90_bn2;
 * gpt-oss's D = 2880: 12 of 240 instead of 12 of 256) and, in cuda-jit's BM
 * 128 kernel, GEMM 1 (moe__cuda_sm90_bn1: gate and up halves of 120, here I =
 * 240): the description says so, and the forward equals, bit for bit, the one
 * with MOE_SM90_BN1=256 and MOE_SM90_BN2=256, at a T with BM 128 and at one
 * with BM 64 (GEMM 2 in n-tiles of 120 per warpgroup, GEMM 1 in 256); the
 * case table's `narrow_n_tiles` and its small I check them against the
 * reference. */
static void bn240_default(const char *backend) {
    char desc[4][2048], why[256];
    int ma, mi;
    if (!cuda_device(&ma, &mi, why, sizeof why)) SKIP("%s", why);
    if (!(ma == 9 && mi == 0)) SKIP("device is sm_%d%d; %s needs sm_90", ma, mi, backend);
    enum { CE = 32, CD = 2880, CI = 240, CK = 4, CT = 2048 };
    const int64_t Ts[4] = {CT, 256, CT, 256}; /* 256 and 32 rows an expert: BM 128, BM 64 */
    const char *const bn[2] = {"256", "256"};
    /* 256 rows an expert at D = 2880 is the register-A kernel's by its rule
     * (moe__cuda_sm90_tn): the token-major kernels here */
    setenv("MOE_SM90_TN", "0", 1);
    dev_inputs in = dev_inputs_make(moe_test_seed() + 93, CE, CD, CI, CK, CT);
    uint16_t *o[4];
    for (int v = 0; v < 4; v++) o[v] = malloc(2 * (size_t)Ts[v] * CD);
    int ok = rule_forwards(backend, "MOE_SM90_BN2", (const char *const[]){NULL, NULL}, &in, CE, CD, CI, CK, Ts, 2, o,
                           desc);
    setenv("MOE_SM90_BN1", "256", 1);
    ok = ok && rule_forwards(backend, "MOE_SM90_BN2", bn, &in, CE, CD, CI, CK, Ts + 2, 2, o + 2, desc + 2);
    unsetenv("MOE_SM90_BN1");
    unsetenv("MOE_SM90_TN");
    if (ok) {
        const int jit = !strcmp(backend, "cuda-jit");
        for (int v = 0; v < 4; v++) {
            char w1[64], w2[64];
            snprintf(w1, sizeof w1, jit ? "%dx64 (down)" : "(n-tiles of %d)", v < 2 ? 240 : 256);
            snprintf(w2, sizeof w2, "this T: %dx%dx64 (gate/up)", v == 0 ? 128 : v == 1 || v == 3 ? 64 : 128,
                     v == 0 ? 240 : 256);
            CHECK_MSG(strstr(desc[v], w1) != NULL, "%s T=%lld%s: no \"%s\": %s", backend, (long long)Ts[v],
                      v < 2 ? "" : " MOE_SM90_BN1/2=256", w1, desc[v]);
            CHECK_MSG(!jit || strstr(desc[v], w2) != NULL, "%s T=%lld%s: no \"%s\": %s", backend, (long long)Ts[v],
                      v < 2 ? "" : " MOE_SM90_BN1/2=256", w2, desc[v]);
        }
        check_bitwise(backend, "n-tiles of 240 and 256 (BM 128)", o[0], o[2], Ts[0], CD);
        check_bitwise(backend, "n-tiles of 240 and 256 (BM 64)", o[1], o[3], Ts[1], CD);
    }
    dev_inputs_free(&in);
    for (int v = 0; v < 4; v++) free(o[v]);
}
TEST(cuda_sm90_bn240_default) { bn240_default("cuda-sm90"); }
TEST(cuda_jit_bn240_default) { bn240_default("cuda-jit"); }

/* The gather rule above I = 2048 (layer.cu moe__cuda_sm90_shape): GEMM 1
 * gathers x's rows at T*K <= 128 E and reads the permuted copy above; the
 * description says which, and the gathered forward equals, bit for bit, the
 * one through the copy (MOE_SM90_GATHER=0). */
static void gather_rule(const char *backend) {
    char desc[3][2048], why[256];
    int ma, mi;
    if (!cuda_device(&ma, &mi, why, sizeof why)) SKIP("%s", why);
    if (!(ma == 9 && mi == 0)) SKIP("device is sm_%d%d; %s needs sm_90", ma, mi, backend);
    enum { CE = 8, CD = 256, CI = 2304, CK = 2, CT = 1024 };
    const int64_t Ts[3] = {512, CT, 512}; /* 128 and 256 rows an expert; 128 through the copy */
    const char *const ga[3] = {NULL, NULL, "0"};
    dev_inputs in = dev_inputs_make(moe_test_seed() + 95, CE, CD, CI, CK, CT);
    uint16_t *o[3];
    for (int v = 0; v < 3; v++) o[v] = malloc(2 * (size_t)Ts[v] * CD);
    if (rule_forwards(backend, "MOE_SM90_GATHER", ga, &in, CE, CD, CI, CK, Ts, 3, o, desc)) {
        const char *gat = strcmp(backend, "cuda-jit") ? "x rows gathered" : "gathers x's rows";
        CHECK_MSG(strstr(desc[0], gat) != NULL, "%s T=512 (128 rows an expert): no \"%s\": %s", backend, gat, desc[0]);
        CHECK_MSG(strstr(desc[1], "permuted copy") != NULL, "%s T=1024: no \"permuted copy\": %s", backend, desc[1]);
        CHECK_MSG(strstr(desc[2], "permuted copy") != NULL, "%s MOE_SM90_GATHER=0: no \"permuted copy\": %s", backend,
                  desc[2]);
        check_bitwise(backend, "the gather and the copy", o[0], o[2], 512, CD);
    }
    dev_inputs_free(&in);
    for (int v = 0; v < 3; v++) free(o[v]);
}
TEST(cuda_sm90_gather_rule) { gather_rule("cuda-sm90"); }
TEST(cuda_jit_gather_rule) { gather_rule("cuda-jit"); }

/* The units' order (gemm_sm90.cuh): dynamic by default, the description says
 * so, and the forward equals, bit for bit, the one in the static order
 * (MOE_SM90_SCHED=0), at a T where each CTA takes many units of unequal
 * experts (BM 128, GEMM 1 gathering; and T = 256, BM 64 through the copy),
 * so that the two orders give the CTAs different units. */
static void dynamic_order(const char *backend) {
    char desc[4][2048], why[256];
    int ma, mi;
    if (!cuda_device(&ma, &mi, why, sizeof why)) SKIP("%s", why);
    if (!(ma == 9 && mi == 0)) SKIP("device is sm_%d%d; %s needs sm_90", ma, mi, backend);
    enum { CE = 24, CD = 512, CI = 640, CK = 4, CT = 6000 };
    const int64_t Ts[4] = {CT, CT, 256, 256};
    const char *const order[4] = {NULL, "0", NULL, "0"};
    dev_inputs in = dev_inputs_make(moe_test_seed() + 97, CE, CD, CI, CK, CT);
    uint16_t *o[4];
    for (int v = 0; v < 4; v++) o[v] = malloc(2 * (size_t)Ts[v] * CD);
    setenv("MOE_SM90_GATHER", "1", 1);
    int ok = rule_forwards(backend, "MOE_SM90_SCHED", order, &in, CE, CD, CI, CK, Ts, 2, o, desc);
    setenv("MOE_SM90_GATHER", "0", 1);
    setenv("MOE_SM90_BM", "64", 1);
    ok = ok && rule_forwards(backend, "MOE_SM90_SCHED", order + 2, &in, CE, CD, CI, CK, Ts + 2, 2, o + 2, desc + 2);
    unsetenv("MOE_SM90_GATHER");
    unsetenv("MOE_SM90_BM");
    if (ok) {
        for (int v = 0; v < 4; v++) {
            const int has = strstr(desc[v], "units in dynamic order") != NULL;
            CHECK_MSG(has == (order[v] == NULL), "%s T=%lld MOE_SM90_SCHED=%s: \"units in dynamic order\" %s: %s",
                      backend, (long long)Ts[v], order[v] ? order[v] : "(unset)", has ? "present" : "missing",
                      desc[v]);
        }
        check_bitwise(backend, "the dynamic and the static order (BM 128, gather)", o[0], o[1], CT, CD);
        check_bitwise(backend, "the dynamic and the static order (BM 64, copy)", o[2], o[3], 256, CD);
    }
    dev_inputs_free(&in);
    for (int v = 0; v < 4; v++) free(o[v]);
}
TEST(cuda_sm90_dynamic_order) { dynamic_order("cuda-sm90"); }
TEST(cuda_jit_dynamic_order) { dynamic_order("cuda-jit"); }

/* 2 x 1 clusters' units in the order of their first m-tile (layer.cu
 * k_pair_units): the forward equals, bit for bit, the one with the split
 * units after the paired ones (MOE_SM90_PAIRS=0) and the one in 1 x 1
 * clusters, which has no units. E = 1200 experts of 128 +- 11 rows: some 1800
 * m-tiles, units of both kinds past k_pair_units' first chunk of 1024 (in
 * about half the seeds a split unit's two m-tiles fall in different chunks,
 * the case s_prev carries); E = 24 of 1000 rows: 7-9 m-tiles an expert. */
static void pair_order(const char *backend) {
    char desc[4][2048], why[256];
    int ma, mi;
    if (!cuda_device(&ma, &mi, why, sizeof why)) SKIP("%s", why);
    if (!(ma == 9 && mi == 0)) SKIP("device is sm_%d%d; %s needs sm_90", ma, mi, backend);
    const int64_t Ta[3] = {38400, 38400, 38400}, Tb[3] = {6000, 6000, 6000};
    const char *const pairs[2] = {NULL, "0"}, *const cm[1] = {"1"};
    dev_inputs a = dev_inputs_make(moe_test_seed() + 99, 1200, 128, 128, 4, 38400);
    dev_inputs b = dev_inputs_make(moe_test_seed() + 101, 24, 512, 640, 4, 6000);
    uint16_t *o[6];
    for (int v = 0; v < 6; v++) o[v] = malloc(2 * (size_t)(v < 3 ? 38400 * 128 : 6000 * 512));
    setenv("MOE_SM90_CM", "2", 1);
    int ok = rule_forwards(backend, "MOE_SM90_PAIRS", pairs, &a, 1200, 128, 128, 4, Ta, 2, o, desc);
    ok = ok && rule_forwards(backend, "MOE_SM90_PAIRS", pairs, &b, 24, 512, 640, 4, Tb, 2, o + 3, desc);
    ok = ok && rule_forwards(backend, "MOE_SM90_CM", cm, &a, 1200, 128, 128, 4, Ta + 2, 1, o + 2, desc);
    ok = ok && rule_forwards(backend, "MOE_SM90_CM", cm, &b, 24, 512, 640, 4, Tb + 2, 1, o + 5, desc);
    unsetenv("MOE_SM90_CM");
    if (ok) {
        check_bitwise(backend, "2x1 units by first m-tile and split units last (E = 1200)", o[0], o[1], Ta[0], 128);
        check_bitwise(backend, "2x1 and 1x1 (E = 1200)", o[0], o[2], Ta[0], 128);
        check_bitwise(backend, "2x1 units by first m-tile and split units last (E = 24)", o[3], o[4], Tb[0], 512);
        check_bitwise(backend, "2x1 and 1x1 (E = 24)", o[3], o[5], Tb[0], 512);
    }
    dev_inputs_free(&a);
    dev_inputs_free(&b);
    for (int v = 0; v < 6; v++) free(o[v]);
}
TEST(cuda_sm90_pair_order) { pair_order("cuda-sm90"); }
TEST(cuda_jit_pair_order) { pair_order("cuda-jit"); }

TEST(cuda_bad_ids_graph_sm80) { bad_ids_and_graph("cuda-sm80", 0, NULL); }
TEST(cuda_bad_ids_graph_sm90) { bad_ids_and_graph("cuda-sm90", 1, NULL); }
TEST(cuda_bad_ids_graph_sm90_bm64) { bad_ids_and_graph("cuda-sm90", 1, "64"); }
TEST(cuda_bad_ids_graph_sm90_bm128) { bad_ids_and_graph("cuda-sm90", 1, "128"); }
TEST(cuda_bad_ids_graph_jit_bm64) { bad_ids_and_graph("cuda-jit", 1, "64"); }

#else
TEST(cuda_cases) { SKIP("no CUDA device (library built without CUDA)"); }
#endif
