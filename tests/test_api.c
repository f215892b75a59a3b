/*
 * The public API's contract: versions and status strings, defaults, and
 * every bad input of moe.h answered with its own status, a message naming
 * the offending value, and nothing written to the output.
 */
#include "harness.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

TEST(api_version) {
    CHECK(moe_version_number() == MOE_VERSION_NUMBER);
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", MOE_VERSION_MAJOR, MOE_VERSION_MINOR, MOE_VERSION_PATCH);
    CHECK(strcmp(moe_version(), want) == 0);
}

TEST(api_status_strings) {
#define S(name, value, text) CHECK(strcmp(moe_status_string(name), text) == 0); CHECK(strcmp(moe_status_name(name), #name) == 0);
    MOE_STATUS_LIST(S)
#undef S
    CHECK(strcmp(moe_status_string((moe_status)9999), "unknown status") == 0);
}

TEST(api_type_traits) {
    CHECK(moe_type_block_size(MOE_TYPE_Q4_K) == 256 && moe_type_block_bytes(MOE_TYPE_Q4_K) == 144);
    CHECK(moe_type_row_bytes(MOE_TYPE_Q8_0, 64) == 68);
    CHECK(moe_type_row_bytes(MOE_TYPE_Q8_0, 65) == -1);
    CHECK(moe_type_row_bytes(MOE_TYPE_BF16, 3) == 6);
    CHECK(moe_type_block_size((moe_type)77) == 0);
    CHECK(strcmp(moe_type_name(MOE_TYPE_MXFP4), "mxfp4") == 0);
}

TEST(api_free_null) {
    moe_ctx_free(NULL);
    moe_layer_free(NULL);
    CHECK(moe_ctx_last_error(NULL) != NULL);
}

/* A small valid f32 layer on host memory, and its forward buffers. */
typedef struct {
    moe_ctx *ctx;
    moe_layer_desc d;
    float *gate, *up, *down, *x, *w, *out;
    int32_t *ids;
    int64_t T;
} fixture;

static void fx_init(fixture *f) {
    memset(f, 0, sizeof *f);
    moe_ctx_create(NULL, &f->ctx);
    f->d = moe_layer_desc_default();
    f->d.E = 4; f->d.D = 32; f->d.I = 16; f->d.K = 2;
    f->T = 3;
    size_t n = (size_t)(4 * 32 * 16);
    f->gate = calloc(n, 4); f->up = calloc(n, 4); f->down = calloc(n, 4);
    for (size_t i = 0; i < n; i++) { f->gate[i] = 0.01f * (float)(i % 7); f->up[i] = 0.02f; f->down[i] = 0.03f; }
    f->d.gate.data = f->gate; f->d.up.data = f->up; f->d.down.data = f->down;
    f->x = calloc((size_t)(f->T * 32), 4);
    for (int i = 0; i < f->T * 32; i++) f->x[i] = 1.0f;
    f->out = malloc((size_t)(f->T * 32) * 4);
    f->ids = calloc((size_t)(f->T * 2), 4);
    f->w = calloc((size_t)(f->T * 2), 4);
    for (int i = 0; i < f->T * 2; i++) { f->ids[i] = i % 4; f->w[i] = 0.5f; }
}

static void fx_free(fixture *f) {
    moe_ctx_free(f->ctx);
    free(f->gate); free(f->up); free(f->down); free(f->x); free(f->out); free(f->ids); free(f->w);
}

/* Expects moe_layer_create(desc) to fail with want and a message containing needle. */
static int create_fails(fixture *f, const moe_layer_desc *d, moe_status want, const char *needle) {
    moe_layer *L = (moe_layer *)0x1;
    moe_status s = moe_layer_create(f->ctx, d, &L);
    if (s != want) {
        moe_test_fail(__FILE__, __LINE__, "got %s (%s), expected %s", moe_status_name(s), moe_ctx_last_error(f->ctx),
                      moe_status_name(want));
        if (!s) moe_layer_free(L);
        return 0;
    }
    if (L != NULL) { moe_test_fail(__FILE__, __LINE__, "*out not NULL after failure"); return 0; }
    if (!strstr(moe_ctx_last_error(f->ctx), needle)) {
        moe_test_fail(__FILE__, __LINE__, "message '%s' does not contain '%s'", moe_ctx_last_error(f->ctx), needle);
        return 0;
    }
    return 1;
}

TEST(bad_layer_dims) {
    fixture f;
    fx_init(&f);
    moe_layer_desc d = f.d;
    d.E = 0;
    if (!create_fails(&f, &d, MOE_ERR_INVALID_DIM, "E = 0")) goto out;
    d = f.d; d.D = -3;
    if (!create_fails(&f, &d, MOE_ERR_INVALID_DIM, "D = -3")) goto out;
    d = f.d; d.I = 0;
    if (!create_fails(&f, &d, MOE_ERR_INVALID_DIM, "I = 0")) goto out;
    d = f.d; d.K = 0;
    if (!create_fails(&f, &d, MOE_ERR_INVALID_DIM, "K = 0")) goto out;
    d = f.d; d.K = 5;
    if (!create_fails(&f, &d, MOE_ERR_TOPK_EXCEEDS_EXPERTS, "K = 5 but E = 4")) goto out;
    d = f.d; d.E = (int64_t)1 << 40;
    if (!create_fails(&f, &d, MOE_ERR_SIZE_OVERFLOW, "E = 1099511627776")) goto out;
    d = f.d; d.D = (int64_t)1 << 30; d.I = (int64_t)1 << 29; d.E = (int64_t)1 << 30; d.K = 1;
    if (!create_fails(&f, &d, MOE_ERR_SIZE_OVERFLOW, "overflow")) goto out;
out:
    fx_free(&f);
}

TEST(bad_layer_nulls_and_enums) {
    fixture f;
    fx_init(&f);
    moe_layer *L;
    CHECK_STATUS(moe_layer_create(NULL, &f.d, &L), MOE_ERR_NULL_POINTER);
    CHECK_STATUS(moe_layer_create(f.ctx, NULL, &L), MOE_ERR_NULL_POINTER);
    CHECK_STATUS(moe_layer_create(f.ctx, &f.d, NULL), MOE_ERR_NULL_POINTER);
    moe_layer_desc d = f.d;
    d.gate.data = NULL;
    if (!create_fails(&f, &d, MOE_ERR_NULL_POINTER, "desc.gate.data is NULL")) goto out;
    d = f.d; d.down.data = NULL;
    if (!create_fails(&f, &d, MOE_ERR_NULL_POINTER, "desc.down.data is NULL")) goto out;
    d = f.d; d.layout = MOE_GATE_UP_CONCAT;
    if (!create_fails(&f, &d, MOE_ERR_NULL_POINTER, "desc.gate_up.data is NULL")) goto out;
    d = f.d; d.act = (moe_act)42;
    if (!create_fails(&f, &d, MOE_ERR_UNSUPPORTED, "act = 42")) goto out;
    d = f.d; d.layout = (moe_gate_up_layout)9;
    if (!create_fails(&f, &d, MOE_ERR_UNSUPPORTED, "layout = 9")) goto out;
    d = f.d; d.act_type = MOE_TYPE_Q8_0;
    if (!create_fails(&f, &d, MOE_ERR_UNSUPPORTED, "act_type = q8_0")) goto out;
    d = f.d; d.up.type = (moe_type)123;
    if (!create_fails(&f, &d, MOE_ERR_UNSUPPORTED, "desc.up.type = 123")) goto out;
    d = f.d; d.act = MOE_ACT_RELU2; d.layout = MOE_GATE_UP_INTERLEAVED; d.gate_up.data = f.gate;
    if (!create_fails(&f, &d, MOE_ERR_UNSUPPORTED, "needs a gated activation")) goto out;
    d = f.d; d.down_bias.data = f.x; d.down_bias.type = MOE_TYPE_Q4_0;
    if (!create_fails(&f, &d, MOE_ERR_UNSUPPORTED, "for a bias")) goto out;
    d = f.d; d.up.mem = MOE_MEM_DEVICE;
    if (!create_fails(&f, &d, MOE_ERR_MEMORY_SPACE, "desc.up is in device memory")) goto out;
    d = f.d; d.backend = "ref"; d.down.stride_c = -1; d.down.stride_n = 1; d.down.stride_e = 1;
    if (!create_fails(&f, &d, MOE_ERR_INVALID_ARGUMENT, "strides")) goto out;
out:
    fx_free(&f);
}

TEST(bad_layer_nonfinite_params) {
    fixture f;
    fx_init(&f);
    moe_layer_desc d = f.d;
    d.act = MOE_ACT_SWIGLU_OAI;
    d.alpha = NAN;
    if (!create_fails(&f, &d, MOE_ERR_NONFINITE_PARAM, "alpha = nan")) goto out;
    d.alpha = 1.702f; d.limit = INFINITY;
    if (!create_fails(&f, &d, MOE_ERR_NONFINITE_PARAM, "limit = inf")) goto out;
    d.limit = -1.0f;
    if (!create_fails(&f, &d, MOE_ERR_INVALID_ARGUMENT, "limit = -1")) goto out;
out:
    fx_free(&f);
}

TEST(bad_layer_block_shape) {
    fixture f;
    fx_init(&f);
    moe_layer_desc d = f.d;
    d.D = 2880; /* GPT-OSS: not a multiple of 256 */
    d.gate.type = d.up.type = MOE_TYPE_Q4_K;
    if (!create_fails(&f, &d, MOE_ERR_BLOCK_SHAPE, "D = 2880 is not a multiple of 256, required by q4_K")) goto out;
    d = f.d; d.I = 48; d.down.type = MOE_TYPE_Q8_0;
    if (!create_fails(&f, &d, MOE_ERR_BLOCK_SHAPE, "I = 48 is not a multiple of 32, required by q8_0")) goto out;
out:
    fx_free(&f);
}

TEST(bad_backend_name) {
    fixture f;
    fx_init(&f);
    moe_layer_desc d = f.d;
    d.backend = "no-such-backend"; /* unknown: falls back to automatic, with a warning */
    moe_layer *L = NULL;
    CHECK_STATUS(moe_layer_create(f.ctx, &d, &L), MOE_OK);
    moe_layer_free(L);
    fx_free(&f);
}

/* forward: every bad argument fails and leaves out untouched. */
static void check_forward_fails(moe_layer *L, int64_t T, const void *x, const int32_t *ids, const float *w, float *out,
                                size_t nout, moe_status want, const char *needle) {
    for (size_t i = 0; i < nout; i++) out[i] = 12345.0f;
    size_t ws = 0;
    moe_layer_workspace_size(L, T > 0 ? T : 1, &ws);
    void *wsp = malloc(ws ? ws : 1);
    moe_status s = moe_layer_forward(L, T, x, ids, w, out, wsp, ws);
    free(wsp);
    if (s != want) {
        moe_test_fail(__FILE__, __LINE__, "forward returned %s (%s), expected %s", moe_status_name(s),
                      moe_layer_last_error(L), moe_status_name(want));
        return;
    }
    if (needle && !strstr(moe_layer_last_error(L), needle)) {
        moe_test_fail(__FILE__, __LINE__, "message '%s' lacks '%s'", moe_layer_last_error(L), needle);
        return;
    }
    for (size_t i = 0; i < nout; i++)
        if (out != NULL && out[i] != 12345.0f) {
            moe_test_fail(__FILE__, __LINE__, "out[%zu] was written on a failed forward", i);
            return;
        }
}

TEST(bad_forward_args) {
    fixture f;
    fx_init(&f);
    moe_layer *L;
    CHECK_STATUS(moe_layer_create(f.ctx, &f.d, &L), MOE_OK);
    size_t nout = (size_t)(f.T * 32);
    check_forward_fails(L, -1, f.x, f.ids, f.w, f.out, nout, MOE_ERR_INVALID_DIM, "T = -1");
    check_forward_fails(L, f.T, NULL, f.ids, f.w, f.out, nout, MOE_ERR_NULL_POINTER, "x is NULL");
    check_forward_fails(L, f.T, f.x, NULL, f.w, f.out, nout, MOE_ERR_NULL_POINTER, "topk_ids is NULL");
    check_forward_fails(L, f.T, f.x, f.ids, NULL, f.out, nout, MOE_ERR_NULL_POINTER, "topk_weights is NULL");
    f.ids[2 * 2 + 1] = 4; /* token 2, slot 1 = E */
    check_forward_fails(L, f.T, f.x, f.ids, f.w, f.out, nout, MOE_ERR_EXPERT_ID_OUT_OF_RANGE,
                        "topk_ids[2][1] = 4 but E = 4");
    f.ids[5] = -7;
    check_forward_fails(L, f.T, f.x, f.ids, f.w, f.out, nout, MOE_ERR_EXPERT_ID_OUT_OF_RANGE,
                        "topk_ids[2][1] = -7 but E = 4");
    f.ids[5] = 1;
    check_forward_fails(L, (int64_t)1 << 62, f.x, f.ids, f.w, f.out, nout, MOE_ERR_SIZE_OVERFLOW, "too large");
    /* workspace too small */
    size_t ws;
    CHECK_STATUS(moe_layer_workspace_size(L, f.T, &ws), MOE_OK);
    if (ws > 0) {
        void *wsp = malloc(ws);
        CHECK_STATUS(moe_layer_forward(L, f.T, f.x, f.ids, f.w, f.out, wsp, ws - 1), MOE_ERR_WORKSPACE_TOO_SMALL);
        CHECK_STATUS(moe_layer_forward(L, f.T, f.x, f.ids, f.w, f.out, NULL, ws), MOE_ERR_NULL_POINTER);
        free(wsp);
    }
    /* T = 0 is a no-op, even with NULL buffers */
    CHECK_STATUS(moe_layer_forward(L, 0, NULL, NULL, NULL, NULL, NULL, 0), MOE_OK);
    CHECK_STATUS(moe_layer_forward(NULL, 1, f.x, f.ids, f.w, f.out, NULL, 0), MOE_ERR_NULL_POINTER);
    char buf[256];
    CHECK_STATUS(moe_layer_describe(L, 7, buf, sizeof buf), MOE_OK);
    CHECK(strlen(buf) > 0);
    CHECK_STATUS(moe_layer_describe(L, 7, NULL, 5), MOE_ERR_NULL_POINTER);
    moe_layer_free(L);
    fx_free(&f);
}

TEST(forward_valid_after_error) {
    /* a failed call leaves the layer usable */
    fixture f;
    fx_init(&f);
    moe_layer *L;
    CHECK_STATUS(moe_layer_create(f.ctx, &f.d, &L), MOE_OK);
    f.ids[0] = 99;
    size_t ws;
    moe_layer_workspace_size(L, f.T, &ws);
    void *wsp = malloc(ws ? ws : 1);
    CHECK_STATUS(moe_layer_forward(L, f.T, f.x, f.ids, f.w, f.out, wsp, ws), MOE_ERR_EXPERT_ID_OUT_OF_RANGE);
    f.ids[0] = 0;
    CHECK_STATUS(moe_layer_forward(L, f.T, f.x, f.ids, f.w, f.out, wsp, ws), MOE_OK);
    CHECK(isfinite(f.out[0]) && f.out[0] != 0.0f);
    free(wsp);
    moe_layer_free(L);
    fx_free(&f);
}

TEST(bad_ctx_params) {
    moe_ctx *ctx = (moe_ctx *)0x1;
    moe_ctx_params p = moe_ctx_default_params();
    p.n_threads = -2;
    CHECK_STATUS(moe_ctx_create(&p, &ctx), MOE_ERR_INVALID_ARGUMENT);
    CHECK(ctx == NULL);
    CHECK(strstr(moe_ctx_last_error(NULL), "n_threads = -2") != NULL);
    p = moe_ctx_default_params();
    p.device = (moe_device)5;
    CHECK_STATUS(moe_ctx_create(&p, &ctx), MOE_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(moe_ctx_create(&p, NULL), MOE_ERR_NULL_POINTER);
}

/* ---- routing ---- */

TEST(route_basic_and_ties) {
    moe_ctx *ctx;
    CHECK_STATUS(moe_ctx_create(NULL, &ctx), MOE_OK);
    moe_route_params p = moe_route_params_default();
    p.E = 6; p.K = 3; p.renormalize = 1;
    float logits[2 * 6] = {0, 2, 2, 1, 3, 2, /* tie among 1, 2, 5 */ 5, 5, 5, 5, 5, 5};
    int32_t ids[6];
    float w[6];
    CHECK_STATUS(moe_route_topk(ctx, &p, 2, logits, ids, w), MOE_OK);
    CHECK(ids[0] == 4 && ids[1] == 1 && ids[2] == 2);
    CHECK(ids[3] == 0 && ids[4] == 1 && ids[5] == 2);
    CHECK(fabsf(w[0] + w[1] + w[2] - 1.0f) < 1e-6f);
    CHECK(fabsf(w[3] - 1.0f / 3) < 1e-6f);
    moe_ctx_free(ctx);
}

TEST(route_bad_input) {
    moe_ctx *ctx;
    CHECK_STATUS(moe_ctx_create(NULL, &ctx), MOE_OK);
    float logits[8] = {0};
    int32_t ids[8];
    float w[8];
    moe_route_params p = moe_route_params_default();
    p.E = 4; p.K = 5;
    CHECK_STATUS(moe_route_topk(ctx, &p, 1, logits, ids, w), MOE_ERR_TOPK_EXCEEDS_EXPERTS);
    p.K = 2; p.n_group = 3;
    CHECK_STATUS(moe_route_topk(ctx, &p, 1, logits, ids, w), MOE_ERR_INVALID_ARGUMENT);
    CHECK(strstr(moe_ctx_last_error(ctx), "n_group = 3") != NULL);
    p.n_group = 2; p.topk_group = 0;
    CHECK_STATUS(moe_route_topk(ctx, &p, 1, logits, ids, w), MOE_ERR_INVALID_ARGUMENT);
    p.n_group = 0; p.routed_scaling = NAN;
    CHECK_STATUS(moe_route_topk(ctx, &p, 1, logits, ids, w), MOE_ERR_NONFINITE_PARAM);
    p.routed_scaling = 1;
    CHECK_STATUS(moe_route_topk(ctx, &p, -1, logits, ids, w), MOE_ERR_INVALID_DIM);
    CHECK_STATUS(moe_route_topk(ctx, &p, 1, NULL, ids, w), MOE_ERR_NULL_POINTER);
    CHECK_STATUS(moe_route_topk(ctx, &p, 0, NULL, NULL, NULL), MOE_OK);
    moe_ctx_free(ctx);
}

TEST(route_grouped_deepseek) {
    /* 8 experts in 4 groups of 2, keep 2 groups, K = 2, score bias picks. */
    moe_ctx *ctx;
    CHECK_STATUS(moe_ctx_create(NULL, &ctx), MOE_OK);
    moe_route_params p = moe_route_params_default();
    p.E = 8; p.K = 2; p.score = MOE_SCORE_SIGMOID; p.n_group = 4; p.topk_group = 2;
    p.routed_scaling = 2.5f;
    float bias[8] = {0, 0, 0, 0, 0, 0, 1, 1};
    p.score_bias = bias;
    float logits[8] = {4, -4, 3, 3, 0, 0, -1, -1}; /* group 3 wins only through the bias */
    int32_t ids[2];
    float w[2];
    CHECK_STATUS(moe_route_topk(ctx, &p, 1, logits, ids, w), MOE_OK);
    CHECK(ids[0] == 6 && ids[1] == 7);
    float sig = 1.0f / (1.0f + expf(1.0f));
    CHECK(fabsf(w[0] - 2.5f * sig) < 1e-5f); /* unbiased score, scaled, not renormalised */
    moe_ctx_free(ctx);
}
