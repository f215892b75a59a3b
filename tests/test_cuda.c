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
TEST(cuda_cases_sm90_cluster2x1_gather) {
    setenv("MOE_SM90_GATHER", "1", 1);
    run_cases_cluster("cuda-sm90", "2", "1");
    unsetenv("MOE_SM90_GATHER");
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

/* The default 2 x 1 clusters at large T (layer.cu moe__cuda_sm90_shape: D >=
 * 4096, T*K >= 8192, T*K/E >= 128): the description names them (and the
 * raster band) at T = 16384 and not at T = 512, and the forward equals, bit
 * for bit, the one with
 * MOE_SM90_CM=1 (1 x 1; and GEMM 1 gathering x's rows, I <= 2048), itself
 * checked against the reference by the case tables. */
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
static void c21_forward(const char *backend, const char *cm_env, const void *const w[3], const void *x,
                        const int32_t *ids, const float *tw, int64_t T, void *out, char *desc, size_t dn, char *why,
                        size_t wn) {
    env_forward(backend, "MOE_SM90_CM", cm_env, 8, 4096, 128, 2, w, x, ids, tw, T, out, desc, dn, why, wn);
}

static void c21_default(const char *backend) {
    char why[256] = "", why2[256] = "", desc[2048] = "", desc1[2048] = "", desc0[2048] = "";
    int ma, mi;
    if (!cuda_device(&ma, &mi, why, sizeof why)) SKIP("%s", why);
    if (!(ma == 9 && mi == 0)) SKIP("device is sm_%d%d; %s needs sm_90", ma, mi, backend);
    enum { CE = 8, CD = 4096, CI = 128, CK = 2, CT = 16384 };
    moe_rng r;
    moe_rng_seed(&r, moe_test_seed() + 91);
    const size_t nw = (size_t)CE * CI * CD, nx = (size_t)CT * CD, nk = (size_t)CT * CK;
    uint16_t *h = malloc(2 * (nw > nx ? nw : nx)), *o1 = malloc(2 * nx), *o2 = malloc(2 * nx);
    int32_t *ids = malloc(sizeof(int32_t) * nk);
    float *tw = malloc(sizeof(float) * nk);
    void *w[3] = {NULL, NULL, NULL}, *x = NULL, *dids = NULL, *dtw = NULL, *out = NULL;
    CHECK(h && o1 && o2 && ids && tw);
    for (int i = 0; i < 3 && h; i++) w[i] = random_bf16_device(&r, h, nw, 0.05);
    for (size_t j = 0; h && j < nx; j++) h[j] = moe__f32_to_bf16((float)moe_rng_normal(&r));
    for (size_t j = 0; ids && tw && j < nk; j++) {
        ids[j] = (int32_t)(moe_rng_u64(&r) % CE);
        tw[j] = (float)moe_rng_uniform(&r);
    }
    cudaMalloc(&x, 2 * nx);
    cudaMalloc(&out, 2 * nx);
    cudaMalloc(&dids, sizeof(int32_t) * nk);
    cudaMalloc(&dtw, sizeof(float) * nk);
    cudaMemcpy(x, h, 2 * nx, cudaMemcpyHostToDevice);
    cudaMemcpy(dids, ids, sizeof(int32_t) * nk, cudaMemcpyHostToDevice);
    cudaMemcpy(dtw, tw, sizeof(float) * nk, cudaMemcpyHostToDevice);
    const void *cw[3] = {w[0], w[1], w[2]};
    cudaMemset(out, 0xff, 2 * nx); /* poisoned: NaN bf16 */
    c21_forward(backend, NULL, cw, x, (const int32_t *)dids, (const float *)dtw, CT, out, desc, sizeof desc, why,
                sizeof why);
    cudaMemcpy(o1, out, 2 * nx, cudaMemcpyDeviceToHost);
    cudaMemset(out, 0xff, 2 * nx);
    c21_forward(backend, "1", cw, x, (const int32_t *)dids, (const float *)dtw, CT, out, desc1, sizeof desc1, why2,
                sizeof why2);
    cudaMemcpy(o2, out, 2 * nx, cudaMemcpyDeviceToHost);
    char why0[256] = "";
    c21_forward(backend, NULL, cw, x, (const int32_t *)dids, (const float *)dtw, 512, out, desc0, sizeof desc0, why0,
                sizeof why0);
    CHECK_MSG(!why[0] && !why2[0] && !why0[0], "%s: %s / %s / %s", backend, why, why2, why0);
    const char *want = strcmp(backend, "cuda-jit") ? "clusters 2x1, BM 128" : "in 2x1 clusters";
    const char *want1 = strcmp(backend, "cuda-jit") ? "clusters 1x1" : "in 1x1 clusters";
    CHECK_MSG(strstr(desc, want) != NULL, "%s T=%d: no \"%s\": %s", backend, CT, want, desc);
    CHECK_MSG(strstr(desc1, want1) != NULL, "%s T=%d MOE_SM90_CM=1: no \"%s\": %s", backend, CT, want1, desc1);
    CHECK_MSG(strstr(desc0, want1) != NULL, "%s T=512: no \"%s\": %s", backend, want1, desc0);
    /* the raster rule (layer.cu moe__cuda_sm90_raster): bands of 4 m-tiles at 128 rows an expert, 16 at 4096 */
    CHECK_MSG(strstr(desc, "raster bands of 16") != NULL, "%s T=%d: no \"raster bands of 16\": %s", backend, CT, desc);
    CHECK_MSG(strstr(desc0, "raster bands of 4") != NULL, "%s T=512: no \"raster bands of 4\": %s", backend, desc0);
    if (!why[0] && !why2[0] && o1 && o2) {
        size_t bad = nx, nan = 0;
        for (size_t j = 0; j < nx; j++) {
            if (o1[j] != o2[j] && bad == nx) bad = j;
            nan += moe__bf16_to_f32(o1[j]) != moe__bf16_to_f32(o1[j]);
        }
        CHECK_MSG(nan == 0, "%s: %zu NaN outputs with 2x1 clusters", backend, nan);
        CHECK_MSG(bad == nx, "%s: 2x1 and 1x1 differ first at token %zu column %zu: %g vs %g", backend, bad / CD,
                  bad % CD, bad < nx ? (double)moe__bf16_to_f32(o1[bad]) : 0.0,
                  bad < nx ? (double)moe__bf16_to_f32(o2[bad]) : 0.0);
    }
    for (int i = 0; i < 3; i++) cudaFree(w[i]);
    cudaFree(x); cudaFree(out); cudaFree(dids); cudaFree(dtw);
    free(h); free(o1); free(o2); free(ids); free(tw);
}
TEST(cuda_sm90_c21_default) { c21_default("cuda-sm90"); }
TEST(cuda_jit_c21_default) { c21_default("cuda-jit"); }

/* GEMM 2 in n-tiles of 240 where D pads less so (layer.cu moe__cuda_sm90_bn2;
 * gpt-oss's D = 2880: 12 of 240 instead of 12 of 256): the description says
 * so, and the forward equals, bit for bit, the one with MOE_SM90_BN2=256, at
 * a T with BM 128 and at one with BM 64 (n-tiles of 120 per warpgroup); the
 * case table's `narrow_n_tiles` checks both against the reference. */
static void bn240_default(const char *backend) {
    char why[4][256] = {"", "", "", ""}, desc[4][2048];
    int ma, mi;
    if (!cuda_device(&ma, &mi, why[0], sizeof why[0])) SKIP("%s", why[0]);
    if (!(ma == 9 && mi == 0)) SKIP("device is sm_%d%d; %s needs sm_90", ma, mi, backend);
    enum { CE = 32, CD = 2880, CI = 256, CK = 4, CT = 2048 };
    const int64_t Ts[2] = {CT, 256}; /* 256 and 32 rows an expert: BM 128, BM 64 */
    moe_rng r;
    moe_rng_seed(&r, moe_test_seed() + 93);
    const size_t nw = (size_t)CE * CI * CD, nx = (size_t)CT * CD, nk = (size_t)CT * CK;
    uint16_t *h = malloc(2 * (nw > nx ? nw : nx)), *o[4] = {malloc(2 * nx), malloc(2 * nx), malloc(2 * nx), malloc(2 * nx)};
    int32_t *ids = malloc(sizeof(int32_t) * nk);
    float *tw = malloc(sizeof(float) * nk);
    void *w[3] = {NULL, NULL, NULL}, *x = NULL, *dids = NULL, *dtw = NULL, *out = NULL;
    CHECK(h && o[0] && o[1] && o[2] && o[3] && ids && tw);
    if (!(h && o[0] && o[1] && o[2] && o[3] && ids && tw)) goto done;
    for (int i = 0; i < 3; i++) w[i] = random_bf16_device(&r, h, nw, 0.05);
    for (size_t j = 0; j < nx; j++) h[j] = moe__f32_to_bf16((float)moe_rng_normal(&r));
    for (size_t j = 0; j < nk; j++) {
        ids[j] = (int32_t)(moe_rng_u64(&r) % CE);
        tw[j] = (float)moe_rng_uniform(&r);
    }
    cudaMalloc(&x, 2 * nx);
    cudaMalloc(&out, 2 * nx);
    cudaMalloc(&dids, sizeof(int32_t) * nk);
    cudaMalloc(&dtw, sizeof(float) * nk);
    cudaMemcpy(x, h, 2 * nx, cudaMemcpyHostToDevice);
    cudaMemcpy(dids, ids, sizeof(int32_t) * nk, cudaMemcpyHostToDevice);
    cudaMemcpy(dtw, tw, sizeof(float) * nk, cudaMemcpyHostToDevice);
    const void *cw[3] = {w[0], w[1], w[2]};
    for (int v = 0; v < 4; v++) { /* T = 2048, 256; default, then n-tiles of 256 */
        cudaMemset(out, 0xff, 2 * nx); /* poisoned: NaN bf16 */
        env_forward(backend, "MOE_SM90_BN2", v < 2 ? NULL : "256", CE, CD, CI, CK, cw, x, (const int32_t *)dids,
                    (const float *)dtw, Ts[v & 1], out, desc[v], sizeof desc[v], why[v], sizeof why[v]);
        cudaMemcpy(o[v], out, 2 * nx, cudaMemcpyDeviceToHost);
    }
    CHECK_MSG(!why[0][0] && !why[1][0] && !why[2][0] && !why[3][0], "%s: %s / %s / %s / %s", backend, why[0], why[1],
              why[2], why[3]);
    const char *want = strcmp(backend, "cuda-jit") ? "(n-tiles of %d)" : "%dx64 (down)";
    for (int v = 0; v < 4; v++) {
        char w1[64];
        snprintf(w1, sizeof w1, want, v < 2 ? 240 : 256);
        CHECK_MSG(strstr(desc[v], w1) != NULL, "%s T=%lld%s: no \"%s\": %s", backend, (long long)Ts[v & 1],
                  v < 2 ? "" : " MOE_SM90_BN2=256", w1, desc[v]);
    }
    for (int v = 0; v < 2 && !why[v][0] && !why[v + 2][0]; v++) {
        const size_t n = (size_t)Ts[v] * CD;
        size_t bad = n, nan = 0;
        for (size_t j = 0; j < n; j++) {
            if (o[v][j] != o[v + 2][j] && bad == n) bad = j;
            nan += moe__bf16_to_f32(o[v][j]) != moe__bf16_to_f32(o[v][j]);
        }
        CHECK_MSG(nan == 0, "%s T=%lld: %zu NaN outputs with n-tiles of 240", backend, (long long)Ts[v], nan);
        CHECK_MSG(bad == n, "%s T=%lld: n-tiles of 240 and 256 differ first at token %zu column %zu: %g vs %g", backend,
                  (long long)Ts[v], bad / CD, bad % CD, bad < n ? (double)moe__bf16_to_f32(o[v][bad]) : 0.0,
                  bad < n ? (double)moe__bf16_to_f32(o[v + 2][bad]) : 0.0);
    }
    for (int i = 0; i < 3; i++) cudaFree(w[i]);
    cudaFree(x); cudaFree(out); cudaFree(dids); cudaFree(dtw);
done:
    free(h); free(ids); free(tw);
    for (int v = 0; v < 4; v++) free(o[v]);
}
TEST(cuda_sm90_bn240_default) { bn240_default("cuda-sm90"); }
TEST(cuda_jit_bn240_default) { bn240_default("cuda-jit"); }

/* The gather rule above I = 2048 (layer.cu moe__cuda_sm90_shape): GEMM 1
 * gathers x's rows at T*K <= 128 E and reads the permuted copy above; the
 * description says which, and the gathered forward equals, bit for bit, the
 * one through the copy (MOE_SM90_GATHER=0). */
static void gather_rule(const char *backend) {
    char why[3][256] = {"", "", ""}, desc[3][2048];
    int ma, mi;
    if (!cuda_device(&ma, &mi, why[0], sizeof why[0])) SKIP("%s", why[0]);
    if (!(ma == 9 && mi == 0)) SKIP("device is sm_%d%d; %s needs sm_90", ma, mi, backend);
    enum { CE = 8, CD = 256, CI = 2304, CK = 2, CT = 1024 };
    const int64_t Ts[3] = {512, CT, 512}; /* 128 and 256 rows an expert; 128 through the copy */
    moe_rng r;
    moe_rng_seed(&r, moe_test_seed() + 95);
    const size_t nw = (size_t)CE * CI * CD, nx = (size_t)CT * CD, nk = (size_t)CT * CK;
    uint16_t *h = malloc(2 * (nw > nx ? nw : nx)), *o[3] = {malloc(2 * nx), malloc(2 * nx), malloc(2 * nx)};
    int32_t *ids = malloc(sizeof(int32_t) * nk);
    float *tw = malloc(sizeof(float) * nk);
    void *w[3] = {NULL, NULL, NULL}, *x = NULL, *dids = NULL, *dtw = NULL, *out = NULL;
    CHECK(h && o[0] && o[1] && o[2] && ids && tw);
    if (!(h && o[0] && o[1] && o[2] && ids && tw)) goto done;
    for (int i = 0; i < 3; i++) w[i] = random_bf16_device(&r, h, nw, 0.05);
    for (size_t j = 0; j < nx; j++) h[j] = moe__f32_to_bf16((float)moe_rng_normal(&r));
    for (size_t j = 0; j < nk; j++) {
        ids[j] = (int32_t)(moe_rng_u64(&r) % CE);
        tw[j] = (float)moe_rng_uniform(&r);
    }
    cudaMalloc(&x, 2 * nx);
    cudaMalloc(&out, 2 * nx);
    cudaMalloc(&dids, sizeof(int32_t) * nk);
    cudaMalloc(&dtw, sizeof(float) * nk);
    cudaMemcpy(x, h, 2 * nx, cudaMemcpyHostToDevice);
    cudaMemcpy(dids, ids, sizeof(int32_t) * nk, cudaMemcpyHostToDevice);
    cudaMemcpy(dtw, tw, sizeof(float) * nk, cudaMemcpyHostToDevice);
    const void *cw[3] = {w[0], w[1], w[2]};
    for (int v = 0; v < 3; v++) {
        cudaMemset(out, 0xff, 2 * nx); /* poisoned: NaN bf16 */
        env_forward(backend, "MOE_SM90_GATHER", v < 2 ? NULL : "0", CE, CD, CI, CK, cw, x, (const int32_t *)dids,
                    (const float *)dtw, Ts[v], out, desc[v], sizeof desc[v], why[v], sizeof why[v]);
        cudaMemcpy(o[v], out, 2 * nx, cudaMemcpyDeviceToHost);
    }
    CHECK_MSG(!why[0][0] && !why[1][0] && !why[2][0], "%s: %s / %s / %s", backend, why[0], why[1], why[2]);
    const char *gat = strcmp(backend, "cuda-jit") ? "x rows gathered" : "gathers x's rows";
    CHECK_MSG(strstr(desc[0], gat) != NULL, "%s T=512 (128 rows an expert): no \"%s\": %s", backend, gat, desc[0]);
    CHECK_MSG(strstr(desc[1], "permuted copy") != NULL, "%s T=1024: no \"permuted copy\": %s", backend, desc[1]);
    CHECK_MSG(strstr(desc[2], "permuted copy") != NULL, "%s MOE_SM90_GATHER=0: no \"permuted copy\": %s", backend,
              desc[2]);
    if (!why[0][0] && !why[2][0]) {
        const size_t n = (size_t)512 * CD;
        size_t bad = n, nan = 0;
        for (size_t j = 0; j < n; j++) {
            if (o[0][j] != o[2][j] && bad == n) bad = j;
            nan += moe__bf16_to_f32(o[0][j]) != moe__bf16_to_f32(o[0][j]);
        }
        CHECK_MSG(nan == 0, "%s: %zu NaN outputs with the gather", backend, nan);
        CHECK_MSG(bad == n, "%s: gather and copy differ first at token %zu column %zu", backend, bad / CD, bad % CD);
    }
    for (int i = 0; i < 3; i++) cudaFree(w[i]);
    cudaFree(x); cudaFree(out); cudaFree(dids); cudaFree(dtw);
done:
    free(h); free(ids); free(tw);
    for (int v = 0; v < 3; v++) free(o[v]);
}
TEST(cuda_sm90_gather_rule) { gather_rule("cuda-sm90"); }
TEST(cuda_jit_gather_rule) { gather_rule("cuda-jit"); }

TEST(cuda_bad_ids_graph_sm80) { bad_ids_and_graph("cuda-sm80", 0, NULL); }
TEST(cuda_bad_ids_graph_sm90) { bad_ids_and_graph("cuda-sm90", 1, NULL); }
TEST(cuda_bad_ids_graph_sm90_bm64) { bad_ids_and_graph("cuda-sm90", 1, "64"); }
TEST(cuda_bad_ids_graph_sm90_bm128) { bad_ids_and_graph("cuda-sm90", 1, "128"); }
TEST(cuda_bad_ids_graph_jit_bm64) { bad_ids_and_graph("cuda-jit", 1, "64"); }

#else
TEST(cuda_cases) { SKIP("no CUDA device (library built without CUDA)"); }
#endif
