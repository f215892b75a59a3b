/*
 * The shared case table and its runner (see cases.h).
 */
#include "cases.h"

#include "harness.h"
#include "half.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef MOE_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

#define SW MOE_ACT_SWIGLU
#define SEP MOE_GATE_UP_SEPARATE
#define CAT MOE_GATE_UP_CONCAT
#define ILV MOE_GATE_UP_INTERLEAVED
#define F32 MOE_TYPE_F32
#define F16 MOE_TYPE_F16
#define BF16 MOE_TYPE_BF16

const moe_case moe_cases[] = {
    /* name                      T    E   D    I    K  act                  layout bias wtype act  routing  tr nan */
    {"basic_f32",                5,   4,  64,  32,  2, SW,                  SEP, 0, F32, F32, ROUTE_RANDOM, 0, 0},
    {"geglu_tanh",               7,   6,  48,  40,  2, MOE_ACT_GEGLU_TANH,  SEP, 0, F32, F32, ROUTE_RANDOM, 0, 0},
    {"geglu_erf",                7,   6,  48,  40,  2, MOE_ACT_GEGLU_ERF,   SEP, 0, F32, F32, ROUTE_RANDOM, 0, 0},
    {"swiglu_oai",               7,   6,  48,  40,  2, MOE_ACT_SWIGLU_OAI,  SEP, 1, F32, F32, ROUTE_RANDOM, 0, 0},
    {"silu_nongated",            7,   6,  48,  40,  2, MOE_ACT_SILU,        SEP, 0, F32, F32, ROUTE_RANDOM, 0, 0},
    {"gelu_nongated",            7,   6,  48,  40,  2, MOE_ACT_GELU,        SEP, 0, F32, F32, ROUTE_RANDOM, 0, 0},
    {"relu2_nongated_bias",      7,   6,  48,  40,  2, MOE_ACT_RELU2,       SEP, 1, F32, F32, ROUTE_RANDOM, 0, 0},
    {"concat_swiglu",            9,   5,  64,  48,  2, SW,                  CAT, 0, F32, F32, ROUTE_RANDOM, 0, 0},
    {"concat_swiglu_bias",       9,   5,  64,  48,  2, SW,                  CAT, 1, F32, F32, ROUTE_RANDOM, 0, 0},
    {"interleaved_oai_bias",     9,   5,  64,  48,  2, MOE_ACT_SWIGLU_OAI,  ILV, 1, F32, F32, ROUTE_RANDOM, 0, 0},
    {"interleaved_geglu",        9,   5,  64,  48,  2, MOE_ACT_GEGLU_TANH,  ILV, 0, F32, F32, ROUTE_RANDOM, 0, 0},
    {"separate_bias",            9,   5,  64,  48,  2, SW,                  SEP, 1, F32, F32, ROUTE_RANDOM, 0, 0},
    {"w_f16_x_f32",             11,   8, 128,  64,  2, SW,                  SEP, 0, F16, F32, ROUTE_RANDOM, 0, 0},
    {"w_bf16_x_f32",            11,   8, 128,  64,  2, SW,                  SEP, 0, BF16, F32, ROUTE_RANDOM, 0, 0},
    {"w_bf16_x_bf16",           11,   8, 128,  64,  2, SW,                  SEP, 0, BF16, BF16, ROUTE_RANDOM, 0, 0},
    {"w_f16_x_f16",             11,   8, 128,  64,  2, SW,                  SEP, 0, F16, F16, ROUTE_RANDOM, 0, 0},
    {"w_f32_x_bf16",            11,   8, 128,  64,  2, SW,                  SEP, 0, F32, BF16, ROUTE_RANDOM, 0, 0},
    {"w_bf16_oai_ilv_bias",     13,   8, 128,  64,  4, MOE_ACT_SWIGLU_OAI,  ILV, 1, BF16, BF16, ROUTE_RANDOM, 0, 0},
    {"transposed_f32",           9,   5,  64,  48,  2, SW,                  SEP, 0, F32, F32, ROUTE_RANDOM, 1, 0},
    {"transposed_bf16",         17,   8, 128,  64,  2, SW,                  SEP, 1, BF16, BF16, ROUTE_RANDOM, 1, 0},
    {"transposed_concat_bf16",  17,   8, 128,  64,  2, SW,                  CAT, 0, BF16, BF16, ROUTE_RANDOM, 1, 0},
    {"T1",                       1,   8, 128,  64,  2, SW,                  SEP, 0, BF16, BF16, ROUTE_RANDOM, 0, 0},
    {"K_equals_E",               6,   4,  64,  32,  4, SW,                  SEP, 1, F32, F32, ROUTE_RANDOM, 0, 0},
    {"E1_K1",                    5,   1,  64,  32,  1, SW,                  SEP, 0, F32, F32, ROUTE_RANDOM, 0, 0},
    {"expert_without_tokens",   21,   8, 128,  64,  2, SW,                  SEP, 0, BF16, BF16, ROUTE_SKIP_LAST, 0, 0},
    {"all_tokens_same_experts", 40,   8, 128,  64,  2, SW,                  SEP, 0, BF16, BF16, ROUTE_ALL_SAME, 0, 0},
    /* two 128-row M tiles per expert, the second of 22 rows (a consumer warpgroup of it has no row) */
    {"all_same_two_tiles_oai", 150,   8, 128,  64,  2, MOE_ACT_SWIGLU_OAI,  ILV, 1, BF16, BF16, ROUTE_ALL_SAME, 0, 0},
    {"duplicate_ids",           10,   8, 128,  64,  3, SW,                  SEP, 1, BF16, BF16, ROUTE_DUPLICATE, 0, 0},
    /* more experts than the CUDA routing's shared-memory histogram takes (layer.cu RT_MAX_E) */
    {"many_experts",            64, 8192,  32,  16,  2, SW,                  SEP, 0, BF16, BF16, ROUTE_RANDOM, 0, 0},
    /* D = 472: GEMM 2 in n-tiles of 240 on sm90 (moe__cuda_sm90_bn2), the second partial */
    {"narrow_n_tiles",         150,   8, 472, 200,  2, SW,                  SEP, 1, BF16, BF16, ROUTE_RANDOM, 0, 0},
    /* the same n-tiles of 240 with whole 64-row halves of M tiles (sm90: their TMA-stored epilogue, boxes
     * of 40 columns clipped at D and I) and a half of 8 rows; an ungated layer's two passes likewise */
    {"narrow_tiles_full_rows", 200,   8, 472, 200,  2, SW,                  SEP, 1, BF16, BF16, ROUTE_ALL_SAME, 0, 0},
    {"ungated_full_rows",      150,   4, 256, 320,  2, MOE_ACT_GELU,        SEP, 1, BF16, BF16, ROUTE_ALL_SAME, 0, 0},
    {"odd_D_I",                 13,   5,  67,  33,  2, SW,                  SEP, 1, F32, F32, ROUTE_RANDOM, 0, 0},
    {"odd_D_I_bf16",            13,   5,  72,  40,  2, MOE_ACT_GEGLU_ERF,   SEP, 0, BF16, BF16, ROUTE_RANDOM, 0, 0},
    {"T_not_tile_multiple",    131,  16, 256, 128,  4, SW,                  SEP, 0, BF16, BF16, ROUTE_RANDOM, 0, 0},
    {"tiles_oai_concat",       300,   8, 256, 192,  2, MOE_ACT_SWIGLU_OAI,  CAT, 1, BF16, BF16, ROUTE_RANDOM, 0, 0},
    {"nan_input",                6,   4,  64,  32,  2, SW,                  SEP, 0, F32, F32, ROUTE_RANDOM, 0, 1},
    {"nan_input_bf16",           6,   4, 128,  64,  2, SW,                  SEP, 0, BF16, BF16, ROUTE_RANDOM, 0, 1},
    {"q8_0",                     9,   4, 256, 256,  2, SW,                  SEP, 0, MOE_TYPE_Q8_0, F32, ROUTE_RANDOM, 0, 0},
    {"q4_0",                     9,   4, 256, 256,  2, SW,                  SEP, 0, MOE_TYPE_Q4_0, F32, ROUTE_RANDOM, 0, 0},
    {"q2_K",                     9,   4, 256, 256,  2, SW,                  SEP, 0, MOE_TYPE_Q2_K, F32, ROUTE_RANDOM, 0, 0},
    {"q3_K",                     9,   4, 256, 256,  2, SW,                  SEP, 0, MOE_TYPE_Q3_K, F32, ROUTE_RANDOM, 0, 0},
    {"q4_K",                     9,   4, 256, 256,  2, SW,                  SEP, 0, MOE_TYPE_Q4_K, F32, ROUTE_RANDOM, 0, 0},
    {"q5_K",                     9,   4, 256, 256,  2, SW,                  SEP, 0, MOE_TYPE_Q5_K, F32, ROUTE_RANDOM, 0, 0},
    {"q6_K",                     9,   4, 256, 256,  2, SW,                  SEP, 0, MOE_TYPE_Q6_K, F32, ROUTE_RANDOM, 0, 0},
    {"mxfp4_oai_ilv_bias",       9,   4, 256, 256,  2, MOE_ACT_SWIGLU_OAI,  ILV, 1, MOE_TYPE_MXFP4, F32, ROUTE_RANDOM, 0, 0},
    {"q4_K_x_bf16",             33,   8, 512, 256,  2, SW,                  SEP, 0, MOE_TYPE_Q4_K, BF16, ROUTE_RANDOM, 0, 0},
    {"q8_0_K_equals_E_T1",       1,   4, 256,  64,  4, SW,                  CAT, 1, MOE_TYPE_Q8_0, F32, ROUTE_DUPLICATE, 0, 0},
    {"q6_K_concat_many_tokens", 70,   4, 256, 256,  2, MOE_ACT_GEGLU_TANH,  CAT, 0, MOE_TYPE_Q6_K, F32, ROUTE_RANDOM, 0, 0},
};
const int moe_n_cases = (int)(sizeof moe_cases / sizeof moe_cases[0]);

static int is_block(moe_type t) { return moe_type_block_size(t) > 1; }

double moe_case_tolerance(const moe_case *c) {
    if (is_block(c->wtype)) return 3e-2; /* 8-bit activation quantization in the backends */
    if (c->wtype == BF16 || c->act_type == BF16) return 1e-2;
    if (c->wtype == F16 || c->act_type == F16) return 5e-3;
    return 1e-4;
}

/* ---- buffers in the context's memory space ---- */

typedef struct { void *p; size_t n; int dev; } buf;

static int buf_alloc(buf *b, size_t n, int dev) {
    b->n = n;
    b->dev = dev;
#ifdef MOE_WITH_CUDA
    if (dev) return cudaMalloc(&b->p, n ? n : 1) == cudaSuccess ? 0 : -1;
#endif
    b->p = malloc(n ? n : 1);
    return b->p ? 0 : -1;
}

static void buf_free(buf *b) {
    if (!b->p) return;
#ifdef MOE_WITH_CUDA
    if (b->dev) { cudaFree(b->p); b->p = NULL; return; }
#endif
    free(b->p);
    b->p = NULL;
}

static int buf_put(buf *b, size_t off, const void *src, size_t n) {
#ifdef MOE_WITH_CUDA
    if (b->dev) return cudaMemcpy((char *)b->p + off, src, n, cudaMemcpyHostToDevice) == cudaSuccess ? 0 : -1;
#endif
    memcpy((char *)b->p + off, src, n);
    return 0;
}

static int buf_get(const buf *b, size_t off, void *dst, size_t n) {
#ifdef MOE_WITH_CUDA
    if (b->dev) {
        if (cudaDeviceSynchronize() != cudaSuccess) return -1;
        return cudaMemcpy(dst, (const char *)b->p + off, n, cudaMemcpyDeviceToHost) == cudaSuccess ? 0 : -1;
    }
#endif
    memcpy(dst, (const char *)b->p + off, n);
    return 0;
}

/* ---- data ---- */

static void store(moe_type t, void *p, int64_t i, float v) {
    if (t == F16) ((uint16_t *)p)[i] = moe__f32_to_f16(v);
    else if (t == BF16) ((uint16_t *)p)[i] = moe__f32_to_bf16(v);
    else ((float *)p)[i] = v;
}

static float load(moe_type t, const void *p, int64_t i) {
    if (t == F16) return moe__f16_to_f32(((const uint16_t *)p)[i]);
    if (t == BF16) return moe__bf16_to_f32(((const uint16_t *)p)[i]);
    return ((const float *)p)[i];
}

/* A weight tensor W[E, N, C] of type t from f32 values w (layout [E][N][C]);
 * transposed stores [E][C][N]. Returns the host bytes (malloc) and fills tn. */
static void *make_weight(const float *w, int64_t E, int64_t N, int64_t C, moe_type t, int transposed,
                         moe_tensor *tn, size_t *bytes) {
    memset(tn, 0, sizeof *tn);
    tn->type = t;
    if (is_block(t)) {
        int64_t rb = moe_type_row_bytes(t, C);
        *bytes = (size_t)(E * N * rb);
        char *p = malloc(*bytes);
        for (int64_t r = 0; r < E * N; r++)
            if (moe_quantize_row(t, w + r * C, p + r * rb, C) != MOE_OK) { free(p); return NULL; }
        return p;
    }
    size_t es = t == F32 ? 4 : 2;
    *bytes = (size_t)(E * N * C) * es;
    void *p = malloc(*bytes);
    for (int64_t e = 0; e < E; e++)
        for (int64_t n = 0; n < N; n++)
            for (int64_t c = 0; c < C; c++) {
                int64_t src = (e * N + n) * C + c;
                int64_t dst = transposed ? (e * C + c) * N + n : src;
                store(t, p, dst, w[src]);
            }
    if (transposed) {
        tn->stride_n = 1;
        tn->stride_c = N;
        tn->stride_e = N * C;
    }
    return p;
}

/* Fused gate_up [E, 2I, D] rows from gate and up [E, I, D] per layout. */
static float *fuse(const float *g, const float *u, int64_t E, int64_t I, int64_t D, moe_gate_up_layout l) {
    float *f = malloc(sizeof(float) * (size_t)(E * 2 * I * D));
    for (int64_t e = 0; e < E; e++)
        for (int64_t i = 0; i < I; i++) {
            int64_t rg = l == ILV ? 2 * i : i, ru = l == ILV ? 2 * i + 1 : I + i;
            memcpy(f + (e * 2 * I + rg) * D, g + (e * I + i) * D, sizeof(float) * (size_t)D);
            memcpy(f + (e * 2 * I + ru) * D, u + (e * I + i) * D, sizeof(float) * (size_t)D);
        }
    return f;
}

static void make_routing(const moe_case *c, moe_rng *r, int32_t *ids, float *w) {
    int64_t T = c->T, E = c->E, K = c->K;
    int32_t *perm = malloc(sizeof(int32_t) * (size_t)E);
    for (int64_t t = 0; t < T; t++) {
        int64_t pool = c->routing == ROUTE_SKIP_LAST && E > K ? E - 1 : E;
        for (int64_t e = 0; e < E; e++) perm[e] = (int32_t)e;
        for (int64_t k = 0; k < K; k++) { /* partial Fisher-Yates */
            int64_t j = k + (int64_t)(moe_rng_u64(r) % (uint64_t)(pool - k));
            int32_t tmp = perm[k]; perm[k] = perm[j]; perm[j] = tmp;
        }
        for (int64_t k = 0; k < K; k++) {
            int32_t id = perm[k];
            if (c->routing == ROUTE_ALL_SAME) id = (int32_t)k;
            if (c->routing == ROUTE_DUPLICATE && k == 1) id = ids[t * K];
            ids[t * K + k] = id;
            w[t * K + k] = (float)moe_rng_uniform(r);
        }
        if (t % 5 == 3) w[t * K + K - 1] = 0.0f; /* a zero weight still multiplies NaN to NaN */
    }
    free(perm);
}

typedef struct {
    void *host[8];
    size_t bytes[8];
    buf dev[8];
    int n;
} tensors;

/* Registers host data for tensor slot; on a device context also uploads it. */
static int place(tensors *ts, moe_tensor *tn, void *host, size_t bytes, int dev) {
    int i = ts->n++;
    ts->host[i] = host;
    ts->bytes[i] = bytes;
    tn->data = host;
    tn->mem = MOE_MEM_HOST;
    if (dev) {
        if (buf_alloc(&ts->dev[i], bytes, 1) || buf_put(&ts->dev[i], 0, host, bytes)) return -1;
        tn->data = ts->dev[i].p;
        tn->mem = MOE_MEM_DEVICE;
    }
    return 0;
}

static void tensors_free(tensors *ts) {
    for (int i = 0; i < ts->n; i++) {
        free(ts->host[i]);
        buf_free(&ts->dev[i]);
    }
}

/* Points the tensors of a copy of desc at their host copies (for the reference). */
static void to_host(moe_layer_desc *d, const tensors *ts, moe_tensor **order, int n) {
    (void)d;
    for (int i = 0; i < n; i++) {
        order[i]->data = ts->host[i];
        order[i]->mem = MOE_MEM_HOST;
    }
}

#define GUARD 256
#define GUARD_BYTE 0xA5

moe_case_result moe_case_run(const moe_case *c, moe_ctx *ctx, const char *backend, unsigned long long seed,
                             double *err_out, char *msg, size_t n) {
    return moe_case_run_down(c, c->wtype, ctx, backend, seed, err_out, msg, n);
}

/* The last reference output, by what makes it: the case's fields, the down
 * type and the seed (the data are drawn from them alone). Tests that run one
 * case on several paths (the GGUF GEMM test: five a case) compute the host
 * reference once. */
static struct {
    moe_case c;
    moe_type down;
    unsigned long long seed;
    size_t bytes;
    void *out;
} ref_cache;

static int same_case(const moe_case *a, const moe_case *b) {
    return a->T == b->T && a->E == b->E && a->D == b->D && a->I == b->I && a->K == b->K && a->act == b->act &&
           a->layout == b->layout && a->bias == b->bias && a->wtype == b->wtype && a->act_type == b->act_type &&
           a->routing == b->routing && a->transposed == b->transposed && a->nan_input == b->nan_input;
}

moe_case_result moe_case_run_down(const moe_case *c, moe_type down_type, moe_ctx *ctx, const char *backend,
                                  unsigned long long seed, double *err_out, char *msg, size_t n) {
    moe_rng r;
    moe_rng_seed(&r, seed);
    int dev = moe_ctx_device(ctx) == MOE_DEVICE_CUDA;
    int64_t T = c->T, E = c->E, D = c->D, I = c->I, K = c->K;
    int gated = moe_act_is_gated(c->act);
    moe_case_result res = MOE_CASE_FAIL;
    size_t asz = c->act_type == F32 ? 4 : 2;
    float *gw = malloc(sizeof(float) * (size_t)(E * I * D)), *uw = malloc(sizeof(float) * (size_t)(E * I * D));
    float *dw = malloc(sizeof(float) * (size_t)(E * D * I));
    for (int64_t i = 0; i < E * I * D; i++) gw[i] = (float)(moe_rng_normal(&r) / sqrt((double)D));
    for (int64_t i = 0; i < E * I * D; i++) uw[i] = (float)(moe_rng_normal(&r) / sqrt((double)D));
    for (int64_t i = 0; i < E * D * I; i++) dw[i] = (float)(moe_rng_normal(&r) / sqrt((double)I));
    moe_layer_desc d = moe_layer_desc_default();
    d.E = E; d.D = D; d.I = I; d.K = K;
    d.act = c->act;
    d.layout = c->layout;
    d.act_type = c->act_type;
    d.backend = backend;
    tensors ts = {0};
    moe_tensor *order[8];
    int no = 0;
    size_t bytes;
    void *h;
#define PLACE(field, hostptr, nbytes)                                                                   \
    do {                                                                                                \
        if (!(hostptr) || place(&ts, &d.field, hostptr, nbytes, dev)) { snprintf(msg, n, "setup of " #field " failed"); goto done; } \
        order[no++] = &d.field;                                                                          \
    } while (0)
    if (c->layout == SEP) {
        if (gated) {
            h = make_weight(gw, E, I, D, c->wtype, c->transposed, &d.gate, &bytes);
            PLACE(gate, h, bytes);
        }
        h = make_weight(uw, E, I, D, c->wtype, c->transposed, &d.up, &bytes);
        PLACE(up, h, bytes);
    } else {
        float *f = fuse(gw, uw, E, I, D, c->layout);
        h = make_weight(f, E, 2 * I, D, c->wtype, c->transposed, &d.gate_up, &bytes);
        free(f);
        PLACE(gate_up, h, bytes);
    }
    h = make_weight(dw, E, D, I, down_type, c->transposed, &d.down, &bytes);
    PLACE(down, h, bytes);
    if (c->bias) {
        moe_type bt = c->act_type; /* biases in the activation type, as models ship them */
        size_t bs = bt == F32 ? 4 : 2;
        float *bg = malloc(sizeof(float) * (size_t)(E * 2 * I)), *bd = malloc(sizeof(float) * (size_t)(E * D));
        for (int64_t i = 0; i < E * 2 * I; i++) bg[i] = (float)(0.5 * moe_rng_normal(&r));
        for (int64_t i = 0; i < E * D; i++) bd[i] = (float)(0.5 * moe_rng_normal(&r));
        if (c->layout == SEP) {
            if (gated) {
                void *p = malloc(bs * (size_t)(E * I));
                for (int64_t i = 0; i < E * I; i++) store(bt, p, i, bg[i]);
                d.gate_bias.type = bt;
                PLACE(gate_bias, p, bs * (size_t)(E * I));
            }
            void *p = malloc(bs * (size_t)(E * I));
            for (int64_t i = 0; i < E * I; i++) store(bt, p, i, bg[E * I + i]);
            d.up_bias.type = bt;
            PLACE(up_bias, p, bs * (size_t)(E * I));
        } else {
            void *p = malloc(bs * (size_t)(E * 2 * I));
            for (int64_t i = 0; i < E * 2 * I; i++) store(bt, p, i, bg[i]);
            d.gate_up_bias.type = bt;
            PLACE(gate_up_bias, p, bs * (size_t)(E * 2 * I));
        }
        void *p = malloc(bs * (size_t)(E * D));
        for (int64_t i = 0; i < E * D; i++) store(bt, p, i, bd[i]);
        d.down_bias.type = bt;
        PLACE(down_bias, p, bs * (size_t)(E * D));
        free(bg);
        free(bd);
    }
#undef PLACE
    {
        void *x = malloc(asz * (size_t)(T * D));
        int32_t *ids = malloc(sizeof(int32_t) * (size_t)(T * K));
        float *w = malloc(sizeof(float) * (size_t)(T * K));
        void *ref = malloc(asz * (size_t)(T * D)), *got = malloc(asz * (size_t)(T * D)),
             *got2 = malloc(asz * (size_t)(T * D));
        unsigned char *guard = malloc((size_t)(2 * GUARD) + asz * (size_t)(T * D));
        buf bx = {0}, bids = {0}, bw = {0}, bout = {0}, bws = {0};
        moe_layer *L = NULL, *R = NULL;
        moe_ctx *rctx = NULL;
        for (int64_t i = 0; i < T * D; i++) store(c->act_type, x, i, (float)moe_rng_normal(&r));
        if (c->nan_input) store(c->act_type, x, 0, NAN);
        make_routing(c, &r, ids, w);

        moe_status s = moe_layer_create(ctx, &d, &L);
        if (s == MOE_ERR_BACKEND_UNAVAILABLE || s == MOE_ERR_UNSUPPORTED) {
            snprintf(msg, n, "%s", moe_ctx_last_error(ctx));
            res = MOE_CASE_SKIP;
            goto fwd_done;
        }
        if (s) { snprintf(msg, n, "moe_layer_create: %s: %s", moe_status_name(s), moe_ctx_last_error(ctx)); goto fwd_done; }
        size_t ws = 0;
        if ((s = moe_layer_workspace_size(L, T, &ws))) { snprintf(msg, n, "workspace_size: %s", moe_layer_last_error(L)); goto fwd_done; }
        size_t ob = asz * (size_t)(T * D);
        if (buf_alloc(&bx, asz * (size_t)(T * D), dev) || buf_alloc(&bids, sizeof(int32_t) * (size_t)(T * K), dev) ||
            buf_alloc(&bw, sizeof(float) * (size_t)(T * K), dev) || buf_alloc(&bout, ob + 2 * GUARD, dev) ||
            buf_alloc(&bws, ws, dev)) { snprintf(msg, n, "allocation failed"); goto fwd_done; }
        buf_put(&bx, 0, x, asz * (size_t)(T * D));
        buf_put(&bids, 0, ids, sizeof(int32_t) * (size_t)(T * K));
        buf_put(&bw, 0, w, sizeof(float) * (size_t)(T * K));
        for (int pass = 0; pass < 2; pass++) {
            memset(guard, GUARD_BYTE, (size_t)(2 * GUARD) + ob);
            memset(guard + GUARD, 0xFF, ob); /* poison: NaN in every act type */
            buf_put(&bout, 0, guard, (size_t)(2 * GUARD) + ob);
            s = moe_layer_forward(L, T, bx.p, bids.p, bw.p, (char *)bout.p + GUARD, bws.p, ws);
            if (s) { snprintf(msg, n, "moe_layer_forward: %s: %s", moe_status_name(s), moe_layer_last_error(L)); goto fwd_done; }
            if (buf_get(&bout, 0, guard, (size_t)(2 * GUARD) + ob)) { snprintf(msg, n, "device error after forward"); goto fwd_done; }
            for (size_t i = 0; i < GUARD; i++)
                if (guard[i] != GUARD_BYTE || guard[GUARD + ob + i] != GUARD_BYTE) {
                    snprintf(msg, n, "guard byte %s the output overwritten", guard[i] != GUARD_BYTE ? "before" : "after");
                    goto fwd_done;
                }
            memcpy(pass ? got2 : got, guard + GUARD, ob);
        }
        if (memcmp(got, got2, asz * (size_t)(T * D))) { snprintf(msg, n, "two runs differ (not deterministic)"); goto fwd_done; }

        /* the reference on the host copies of the same weights (or, for the
         * same case, down type and seed as the last time, that output) */
        const size_t ob_ref = asz * (size_t)(T * D);
        if (ref_cache.out && ref_cache.bytes == ob_ref && ref_cache.down == down_type && ref_cache.seed == seed &&
            same_case(&ref_cache.c, c)) {
            memcpy(ref, ref_cache.out, ob_ref);
            goto compare;
        }
        moe_ctx_params rp = moe_ctx_default_params();
        if ((s = moe_ctx_create(&rp, &rctx))) { snprintf(msg, n, "reference ctx failed"); goto fwd_done; }
        moe_layer_desc rd = d;
        rd.backend = "ref";
        {
            moe_tensor *rorder[8];
            for (int i = 0; i < no; i++) rorder[i] = (moe_tensor *)((char *)&rd + ((char *)order[i] - (char *)&d));
            to_host(&rd, &ts, rorder, no);
        }
        const char *saved = getenv("MOE_BACKEND");
        char saved_copy[128] = "";
        if (saved) { snprintf(saved_copy, sizeof saved_copy, "%s", saved); unsetenv("MOE_BACKEND"); }
        s = moe_layer_create(rctx, &rd, &R);
        if (saved) setenv("MOE_BACKEND", saved_copy, 1);
        if (s) { snprintf(msg, n, "reference layer: %s", moe_ctx_last_error(rctx)); goto fwd_done; }
        size_t rws;
        moe_layer_workspace_size(R, T, &rws);
        void *rw = malloc(rws);
        s = moe_layer_forward(R, T, x, ids, w, ref, rw, rws);
        free(rw);
        if (s) { snprintf(msg, n, "reference forward: %s", moe_layer_last_error(R)); goto fwd_done; }
        free(ref_cache.out);
        ref_cache.out = malloc(ob_ref);
        if (ref_cache.out) {
            memcpy(ref_cache.out, ref, ob_ref);
            ref_cache.c = *c;
            ref_cache.down = down_type;
            ref_cache.seed = seed;
            ref_cache.bytes = ob_ref;
        }
    compare:;

        double num = 0, den = 0;
        for (int64_t i = 0; i < T * D; i++) {
            float a = load(c->act_type, got, i), b = load(c->act_type, ref, i);
            if (isnan(a) != isnan(b) || (isinf(b) && a != b) || (isinf(a) && !isinf(b))) {
                snprintf(msg, n, "out[%lld][%lld] = %g but reference %g (NaN/Inf must agree)", (long long)(i / D),
                         (long long)(i % D), (double)a, (double)b);
                goto fwd_done;
            }
            if (isnan(b) || isinf(b)) continue;
            num += ((double)a - b) * ((double)a - b);
            den += (double)b * b;
        }
        if (c->nan_input) {
            for (int64_t j = 0; j < D; j++)
                if (!isnan(load(c->act_type, ref, j))) { snprintf(msg, n, "NaN input did not propagate in the reference"); goto fwd_done; }
        }
        double err = den > 0 ? sqrt(num / den) : sqrt(num);
        if (err_out) *err_out = err;
        double tol = moe_case_tolerance(c);
        if (!(err <= tol)) {
            snprintf(msg, n, "normalised L2 error %.3g > limit %.3g", err, tol);
            goto fwd_done;
        }
        snprintf(msg, n, "err %.2e", err);
        res = MOE_CASE_PASS;
    fwd_done:
        moe_layer_free(L);
        moe_layer_free(R);
        moe_ctx_free(rctx);
        buf_free(&bx); buf_free(&bids); buf_free(&bw); buf_free(&bout); buf_free(&bws);
        free(x); free(ids); free(w); free(ref); free(got); free(got2); free(guard);
    }
done:
    tensors_free(&ts);
    free(gw); free(uw); free(dw);
    return res;
}

void moe_cases_run_all(moe_ctx *ctx, const char *backend, int *passed, int *skipped) {
    *passed = *skipped = 0;
    char first_fail[1200] = "";
    int failed = 0;
    for (int i = 0; i < moe_n_cases; i++) {
        char msg[1024];
        unsigned long long seed = moe_test_seed() + (unsigned long long)i * 7919u;
        moe_case_result r = moe_case_run(&moe_cases[i], ctx, backend, seed, NULL, msg, sizeof msg);
        if (r == MOE_CASE_PASS) (*passed)++;
        else if (r == MOE_CASE_SKIP) (*skipped)++;
        else {
            if (!failed) snprintf(first_fail, sizeof first_fail, "case %s: %s", moe_cases[i].name, msg);
            failed++;
            printf("     case %s FAILED: %s\n", moe_cases[i].name, msg);
        }
        if (getenv("MOE_TEST_VERBOSE")) printf("     case %-26s %s: %s\n", moe_cases[i].name,
                                               r == MOE_CASE_PASS ? "pass" : r == MOE_CASE_SKIP ? "skip" : "FAIL", msg);
    }
    if (failed) moe_test_fail(__FILE__, __LINE__, "%d of %d cases failed; first: %s", failed, moe_n_cases, first_fail);
}
