/*
 * Backend selection, tested on any machine with fake backends and injected
 * probe results (moe__registry_override): the automatic chain, the
 * small-batch split by T, MOE_BACKEND and desc.backend overrides with their
 * fallback and refusal cases, and the log lines that explain the choice.
 */
#include "core.h"
#include "harness.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    int probe_ok, supports_ok, init_status;
    const char *why;
    int64_t max_t; /* > 0: a small-batch backend */
    int forwards;
} fake_cfg;

static fake_cfg cfg[4];
static char log_buf[4096];

static void log_cb(moe_log_level level, const char *msg, void *user) {
    (void)user;
    size_t n = strlen(log_buf);
    snprintf(log_buf + n, sizeof log_buf - n, "[%d] %s\n", (int)level, msg);
}

#define FAKE(i, nm, dev)                                                                                      \
    static int probe_##i(moe_ctx *c, char *why, size_t n) {                                                   \
        (void)c;                                                                                              \
        if (!cfg[i].probe_ok) snprintf(why, n, "%s", cfg[i].why);                                             \
        return cfg[i].probe_ok;                                                                               \
    }                                                                                                         \
    static int supports_##i(const moe_layer *L, char *why, size_t n) {                                        \
        (void)L;                                                                                              \
        if (!cfg[i].supports_ok) snprintf(why, n, "%s", cfg[i].why);                                          \
        return cfg[i].supports_ok;                                                                            \
    }                                                                                                         \
    static moe_status init_##i(moe_layer *L) {                                                                \
        if (cfg[i].init_status) return moe__layer_error(L, (moe_status)cfg[i].init_status, "init refused");   \
        return MOE_OK;                                                                                        \
    }                                                                                                         \
    static size_t ws_##i(const moe_layer *L, int64_t T) { (void)L; return (size_t)(T * (i + 1)); }            \
    static moe_status fwd_##i(moe_layer *L, const moe__fwd *a) { (void)L; (void)a; cfg[i].forwards++; return MOE_OK; } \
    static void describe_##i(const moe_layer *L, int64_t T, char *b, size_t n) {                              \
        (void)L; snprintf(b, n, "%s T=%lld", nm, (long long)T);                                              \
    }                                                                                                         \
    static int64_t maxt_##i(const moe_layer *L) { (void)L; return cfg[i].max_t; }                             \
    __attribute__((unused)) static const moe__backend fake_##i = {nm, dev, probe_##i, supports_##i, init_##i, NULL, ws_##i, fwd_##i,  \
                                          describe_##i, NULL, NULL};                                          \
    __attribute__((unused)) static const moe__backend fake_small_##i = {nm, dev, probe_##i, supports_##i, init_##i, NULL, ws_##i,    \
                                                fwd_##i, describe_##i, NULL, maxt_##i};

FAKE(0, "cuda-decode", MOE_DEVICE_CUDA)
FAKE(1, "cuda-jit", MOE_DEVICE_CUDA)
FAKE(2, "cuda-sm90", MOE_DEVICE_CUDA)
FAKE(3, "cuda-sm80", MOE_DEVICE_CUDA)

static const moe__backend *chain[4];

static float wbuf[4 * 16 * 8];

static moe_ctx *setup(void) {
    memset(cfg, 0, sizeof cfg);
    for (int i = 0; i < 4; i++) { cfg[i].probe_ok = cfg[i].supports_ok = 1; cfg[i].why = "?"; }
    chain[0] = &fake_small_0;
    chain[1] = &fake_1;
    chain[2] = &fake_2;
    chain[3] = &fake_3;
    moe__registry_override(chain, 4);
    log_buf[0] = 0;
    unsetenv("MOE_BACKEND");
    moe_ctx_params p = moe_ctx_default_params();
    p.device = MOE_DEVICE_CUDA; /* no GPU is touched: the backends are fakes */
    p.log = log_cb;
    p.log_level = MOE_LOG_DEBUG;
    moe_ctx *ctx = NULL;
    moe_ctx_create(&p, &ctx);
    return ctx;
}

static void teardown(moe_ctx *ctx) {
    moe_ctx_free(ctx);
    moe__registry_override(NULL, 0);
    unsetenv("MOE_BACKEND");
}

static moe_layer_desc small_desc(void) {
    moe_layer_desc d = moe_layer_desc_default();
    d.E = 4; d.D = 16; d.I = 8; d.K = 2;
    d.gate.data = d.up.data = d.down.data = wbuf;
    d.gate.mem = d.up.mem = d.down.mem = MOE_MEM_DEVICE;
    return d;
}

#define EXPECT_LOG(needle) CHECK_MSG(strstr(log_buf, needle) != NULL, "log lacks '%s':\n%s", needle, log_buf)

TEST(select_auto_passes_over_unavailable) {
    moe_ctx *ctx = setup();
    cfg[0].probe_ok = 0; cfg[0].why = "no small-batch kernels for sm_75";
    cfg[1].probe_ok = 0; cfg[1].why = "NVRTC not found (libnvrtc.so.13)";
    moe_layer_desc d = small_desc();
    moe_layer *L = NULL;
    CHECK_STATUS(moe_layer_create(ctx, &d, &L), MOE_OK);
    CHECK(strcmp(moe_layer_backend(L), "cuda-sm90") == 0);
    EXPECT_LOG("cuda-jit: NVRTC not found (libnvrtc.so.13); using cuda-sm90");
    EXPECT_LOG("cuda-decode: no small-batch kernels for sm_75");
    moe_layer_free(L);
    teardown(ctx);
}

TEST(select_small_batch_split_by_T) {
    moe_ctx *ctx = setup();
    cfg[0].max_t = 64;
    cfg[1].supports_ok = 0; cfg[1].why = "E = 4 is below the JIT's minimum";
    moe_layer_desc d = small_desc();
    moe_layer *L = NULL;
    CHECK_STATUS(moe_layer_create(ctx, &d, &L), MOE_OK);
    EXPECT_LOG("using cuda-decode for T <= 64 and cuda-sm90 above");
    char buf[128];
    moe_layer_describe(L, 64, buf, sizeof buf);
    CHECK(strcmp(buf, "cuda-decode T=64") == 0);
    moe_layer_describe(L, 65, buf, sizeof buf);
    CHECK(strcmp(buf, "cuda-sm90 T=65") == 0);
    size_t ws;
    moe_layer_workspace_size(L, 10, &ws);
    CHECK(ws == 10); /* the decode fake's size */
    moe_layer_workspace_size(L, 100, &ws);
    CHECK(ws == 300); /* the sm90 fake's size */
    char scratch[1024];
    int32_t ids[200 * 2] = {0};
    moe_layer_forward(L, 3, wbuf, ids, wbuf, wbuf, scratch, sizeof scratch);
    moe_layer_forward(L, 100, wbuf, ids, wbuf, wbuf, scratch, sizeof scratch);
    CHECK(cfg[0].forwards == 1 && cfg[2].forwards == 1);
    moe_layer_free(L);
    teardown(ctx);
}

TEST(select_small_batch_alone_runs_every_T) {
    moe_ctx *ctx = setup();
    cfg[0].max_t = 8;
    for (int i = 1; i < 4; i++) { cfg[i].supports_ok = 0; cfg[i].why = "only GGUF blocks here"; }
    moe_layer_desc d = small_desc();
    moe_layer *L = NULL;
    CHECK_STATUS(moe_layer_create(ctx, &d, &L), MOE_OK);
    char buf[128];
    moe_layer_describe(L, 1000, buf, sizeof buf);
    CHECK(strcmp(buf, "cuda-decode T=1000") == 0);
    moe_layer_free(L);
    teardown(ctx);
}

TEST(select_env_unknown_name_falls_back) {
    moe_ctx *ctx = setup();
    setenv("MOE_BACKEND", "cuda-sm100", 1);
    moe_layer_desc d = small_desc();
    moe_layer *L = NULL;
    CHECK_STATUS(moe_layer_create(ctx, &d, &L), MOE_OK);
    CHECK(strcmp(moe_layer_backend(L), "cuda-decode") == 0);
    EXPECT_LOG("MOE_BACKEND=cuda-sm100: no such backend in this build (have: cuda-decode, cuda-jit, cuda-sm90, cuda-sm80)");
    moe_layer_free(L);
    teardown(ctx);
}

TEST(select_env_forces_and_beats_desc) {
    moe_ctx *ctx = setup();
    setenv("MOE_BACKEND", "cuda-sm80", 1);
    moe_layer_desc d = small_desc();
    d.backend = "cuda-sm90";
    moe_layer *L = NULL;
    CHECK_STATUS(moe_layer_create(ctx, &d, &L), MOE_OK);
    CHECK(strcmp(moe_layer_backend(L), "cuda-sm80") == 0);
    EXPECT_LOG("backend cuda-sm80 (forced by MOE_BACKEND)");
    char buf[64];
    moe_layer_describe(L, 5000, buf, sizeof buf); /* forced: every T on it */
    CHECK(strcmp(buf, "cuda-sm80 T=5000") == 0);
    moe_layer_free(L);
    teardown(ctx);
}

TEST(select_forced_but_cannot_run_is_refused) {
    moe_ctx *ctx = setup();
    cfg[2].probe_ok = 0; cfg[2].why = "compute capability 8.0, needs 9.0";
    moe_layer_desc d = small_desc();
    d.backend = "cuda-sm90";
    moe_layer *L = (moe_layer *)0x1;
    CHECK_STATUS(moe_layer_create(ctx, &d, &L), MOE_ERR_BACKEND_UNAVAILABLE);
    CHECK(L == NULL);
    CHECK(strstr(moe_ctx_last_error(ctx), "desc.backend=cuda-sm90 cannot run this layer: compute capability 8.0, needs 9.0"));
    cfg[2].probe_ok = 1;
    cfg[2].supports_ok = 0; cfg[2].why = "f32 activations are not supported";
    CHECK_STATUS(moe_layer_create(ctx, &d, &L), MOE_ERR_BACKEND_UNAVAILABLE);
    CHECK(strstr(moe_ctx_last_error(ctx), "f32 activations are not supported"));
    teardown(ctx);
}

TEST(select_none_fits_lists_every_reason) {
    moe_ctx *ctx = setup();
    for (int i = 0; i < 4; i++) { cfg[i].probe_ok = 0; cfg[i].why = "no CUDA device"; }
    moe_layer_desc d = small_desc();
    moe_layer *L;
    CHECK_STATUS(moe_layer_create(ctx, &d, &L), MOE_ERR_BACKEND_UNAVAILABLE);
    CHECK(strstr(moe_ctx_last_error(ctx), "cuda-decode: no CUDA device; cuda-jit: no CUDA device; cuda-sm90"));
    teardown(ctx);
}

TEST(select_init_failure_propagates) {
    moe_ctx *ctx = setup();
    cfg[0].init_status = MOE_ERR_OUT_OF_MEMORY;
    moe_layer_desc d = small_desc();
    moe_layer *L;
    CHECK_STATUS(moe_layer_create(ctx, &d, &L), MOE_ERR_OUT_OF_MEMORY);
    CHECK(strstr(moe_ctx_last_error(ctx), "backend cuda-decode: init refused"));
    teardown(ctx);
}

TEST(select_cpu_ctx_skips_gpu_backends) {
    /* the real registry: a CPU context never picks a CUDA backend */
    moe_ctx *ctx;
    CHECK_STATUS(moe_ctx_create(NULL, &ctx), MOE_OK);
    moe_layer_desc d = small_desc();
    d.gate.mem = d.up.mem = d.down.mem = MOE_MEM_HOST;
    moe_layer *L;
    CHECK_STATUS(moe_layer_create(ctx, &d, &L), MOE_OK);
    CHECK(moe__backend_find(moe_layer_backend(L))->device == MOE_DEVICE_CPU);
    moe_layer_free(L);
    moe_ctx_free(ctx);
}

TEST(select_log_level_from_env) {
    setenv("MOE_LOG", "error", 1);
    moe_ctx *ctx = setup(); /* asks for DEBUG, MOE_LOG wins */
    unsetenv("MOE_LOG");
    moe_layer_desc d = small_desc();
    moe_layer *L;
    CHECK_STATUS(moe_layer_create(ctx, &d, &L), MOE_OK);
    CHECK_MSG(log_buf[0] == 0, "info line logged at level error: %s", log_buf);
    moe_layer_free(L);
    teardown(ctx);
}
