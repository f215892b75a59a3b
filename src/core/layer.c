/*
 * Layers: the checks every description goes through, the resolution of the
 * gate/up layouts into plain [E, I, D] views, the choice of backend, and the
 * per-forward argument checks. Backends see only layers and forwards that
 * passed here.
 */
#include "core.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const moe_tensor absent_tensor = {NULL, MOE_TYPE_F32, MOE_MEM_HOST, 0, 0, 0};

moe_layer_desc moe_layer_desc_default(void) {
    moe_layer_desc d;
    memset(&d, 0, sizeof d);
    d.act = MOE_ACT_SWIGLU;
    d.alpha = 1.702f;
    d.limit = 7.0f;
    d.layout = MOE_GATE_UP_SEPARATE;
    d.gate = d.up = d.gate_up = d.down = absent_tensor;
    d.gate_bias = d.up_bias = d.gate_up_bias = d.down_bias = absent_tensor;
    d.act_type = MOE_TYPE_F32;
    return d;
}

static const char *layout_name(moe_gate_up_layout l) {
    switch (l) {
    case MOE_GATE_UP_SEPARATE: return "separate";
    case MOE_GATE_UP_CONCAT: return "concat";
    case MOE_GATE_UP_INTERLEAVED: return "interleaved";
    }
    return "unknown";
}

static int is_dense(moe_type t) { return t == MOE_TYPE_F32 || t == MOE_TYPE_F16 || t == MOE_TYPE_BF16; }

/* Checks one weight tensor [E, N, C] (bias: C = 1) and fills default strides. */
static moe_status check_tensor(moe_ctx *ctx, const char *what, moe_tensor *t, int64_t E, int64_t N, int64_t C,
                               int is_bias, const char *cdim) {
    if (moe_type_block_size(t->type) == 0)
        return moe__ctx_error(ctx, MOE_ERR_UNSUPPORTED, "desc.%s.type = %d is not a moe_type", what, (int)t->type);
    if (is_bias && !is_dense(t->type))
        return moe__ctx_error(ctx, MOE_ERR_UNSUPPORTED, "desc.%s.type = %s, expected f32, f16 or bf16 for a bias",
                              what, moe_type_name(t->type));
    if (t->mem != MOE_MEM_HOST && t->mem != MOE_MEM_DEVICE)
        return moe__ctx_error(ctx, MOE_ERR_INVALID_ARGUMENT, "desc.%s.mem = %d, expected MOE_MEM_HOST or MOE_MEM_DEVICE",
                              what, (int)t->mem);
    if (t->mem == MOE_MEM_DEVICE && ctx->p.device != MOE_DEVICE_CUDA)
        return moe__ctx_error(ctx, MOE_ERR_MEMORY_SPACE,
                              "desc.%s is in device memory but the context is a CPU context", what);
    int64_t bs = moe_type_block_size(t->type);
    if (C % bs)
        return moe__ctx_error(ctx, MOE_ERR_BLOCK_SHAPE, "%s = %lld is not a multiple of %lld, required by %s (desc.%s)",
                              cdim, (long long)C, (long long)bs, moe_type_name(t->type), what);
    if (t->stride_e == 0 && t->stride_n == 0 && t->stride_c == 0) {
        t->stride_c = 1;
        t->stride_n = C;
        if (!moe__mul_ok(N, C, &t->stride_e))
            return moe__ctx_error(ctx, MOE_ERR_SIZE_OVERFLOW, "desc.%s: %lld x %lld elements overflow", what,
                                  (long long)N, (long long)C);
    }
    if (t->stride_e < 0 || t->stride_n < 0 || t->stride_c < 0)
        return moe__ctx_error(ctx, MOE_ERR_INVALID_ARGUMENT, "desc.%s strides (%lld, %lld, %lld) must be >= 0", what,
                              (long long)t->stride_e, (long long)t->stride_n, (long long)t->stride_c);
    if (bs > 1 && (t->stride_c != 1 || t->stride_n % bs || t->stride_e % bs))
        return moe__ctx_error(ctx, MOE_ERR_INVALID_ARGUMENT,
                              "desc.%s: %s blocks need stride_c = 1 and stride_n, stride_e multiples of %lld, got "
                              "(%lld, %lld, %lld)",
                              what, moe_type_name(t->type), (long long)bs, (long long)t->stride_e,
                              (long long)t->stride_n, (long long)t->stride_c);
    int64_t a, b, c, last;
    if (!moe__mul_ok(E - 1, t->stride_e, &a) || !moe__mul_ok(N - 1, t->stride_n, &b) ||
        !moe__mul_ok(C - 1, t->stride_c, &c) || __builtin_add_overflow(a, b, &last) ||
        __builtin_add_overflow(last, c, &last) || last > INT64_MAX / 8)
        return moe__ctx_error(ctx, MOE_ERR_SIZE_OVERFLOW, "desc.%s: the last element's offset overflows", what);
    return MOE_OK;
}

/* A view of rows [n0, n0 + step*N) of t, every step-th row. */
static moe_tensor row_view(const moe_tensor *t, int64_t n0, int64_t step) {
    moe_tensor v = *t;
    if (v.data) {
        int64_t off = n0 * t->stride_n;
        v.data = (const char *)t->data + off / moe_type_block_size(t->type) * moe_type_block_bytes(t->type);
    }
    v.stride_n = t->stride_n * step;
    return v;
}

static moe_status check_desc(moe_ctx *ctx, moe_layer *L) {
    moe_layer_desc *d = &L->desc;
    if (d->E <= 0 || d->D <= 0 || d->I <= 0 || d->K <= 0)
        return moe__ctx_error(ctx, MOE_ERR_INVALID_DIM, "E = %lld, D = %lld, I = %lld, K = %lld: each must be > 0",
                              (long long)d->E, (long long)d->D, (long long)d->I, (long long)d->K);
    if (d->K > d->E)
        return moe__ctx_error(ctx, MOE_ERR_TOPK_EXCEEDS_EXPERTS, "K = %lld but E = %lld: expected K <= E",
                              (long long)d->K, (long long)d->E);
    if (d->E > INT32_MAX || d->K > INT32_MAX || d->D > INT32_MAX || d->I > INT32_MAX / 2)
        return moe__ctx_error(ctx, MOE_ERR_SIZE_OVERFLOW,
                              "E = %lld, D = %lld, I = %lld, K = %lld: E, K, D must be < 2^31 and I < 2^30",
                              (long long)d->E, (long long)d->D, (long long)d->I, (long long)d->K);
    if ((unsigned)d->act > MOE_ACT_RELU2)
        return moe__ctx_error(ctx, MOE_ERR_UNSUPPORTED, "act = %d is not a moe_act (0..%d)", (int)d->act, MOE_ACT_RELU2);
    if ((unsigned)d->layout > MOE_GATE_UP_INTERLEAVED)
        return moe__ctx_error(ctx, MOE_ERR_UNSUPPORTED, "layout = %d is not a moe_gate_up_layout (0..2)", (int)d->layout);
    if (d->act == MOE_ACT_SWIGLU_OAI) {
        if (!isfinite(d->alpha) || !isfinite(d->limit))
            return moe__ctx_error(ctx, MOE_ERR_NONFINITE_PARAM, "swiglu_oai: alpha = %g, limit = %g, both must be finite",
                                  (double)d->alpha, (double)d->limit);
        if (!(d->limit > 0))
            return moe__ctx_error(ctx, MOE_ERR_INVALID_ARGUMENT, "swiglu_oai: limit = %g, expected > 0", (double)d->limit);
    }
    if (!is_dense(d->act_type))
        return moe__ctx_error(ctx, MOE_ERR_UNSUPPORTED, "act_type = %s (%d), expected f32, f16 or bf16",
                              moe_type_name(d->act_type), (int)d->act_type);
    L->gated = moe_act_is_gated(d->act);
    if (d->layout != MOE_GATE_UP_SEPARATE && !L->gated)
        return moe__ctx_error(ctx, MOE_ERR_UNSUPPORTED, "layout %s needs a gated activation, but act = %s",
                              layout_name(d->layout), moe_act_name(d->act));
    int64_t E = d->E, D = d->D, I = d->I;
    moe_status s;
#define REQUIRE(field)                                                                                            \
    if (!d->field.data)                                                                                           \
        return moe__ctx_error(ctx, MOE_ERR_NULL_POINTER, "desc." #field ".data is NULL, required by layout %s with " \
                              "activation %s", layout_name(d->layout), moe_act_name(d->act));
    if (d->layout == MOE_GATE_UP_SEPARATE) {
        if (L->gated) {
            REQUIRE(gate);
            if ((s = check_tensor(ctx, "gate", &d->gate, E, I, D, 0, "D"))) return s;
        }
        REQUIRE(up);
        if ((s = check_tensor(ctx, "up", &d->up, E, I, D, 0, "D"))) return s;
        if (d->gate_bias.data && !L->gated)
            return moe__ctx_error(ctx, MOE_ERR_INVALID_ARGUMENT, "desc.gate_bias given but act = %s has no gate",
                                  moe_act_name(d->act));
        if (d->gate_bias.data && (s = check_tensor(ctx, "gate_bias", &d->gate_bias, E, I, 1, 1, "1"))) return s;
        if (d->up_bias.data && (s = check_tensor(ctx, "up_bias", &d->up_bias, E, I, 1, 1, "1"))) return s;
        if (d->gate_up_bias.data)
            return moe__ctx_error(ctx, MOE_ERR_INVALID_ARGUMENT,
                                  "desc.gate_up_bias given with layout separate: use gate_bias and up_bias");
        L->gate = L->gated ? d->gate : absent_tensor;
        L->up = d->up;
        L->gate_bias = d->gate_bias.data ? d->gate_bias : absent_tensor;
        L->up_bias = d->up_bias.data ? d->up_bias : absent_tensor;
    } else {
        REQUIRE(gate_up);
        if ((s = check_tensor(ctx, "gate_up", &d->gate_up, E, 2 * I, D, 0, "D"))) return s;
        if (d->gate_bias.data || d->up_bias.data)
            return moe__ctx_error(ctx, MOE_ERR_INVALID_ARGUMENT,
                                  "desc.gate_bias/up_bias given with layout %s: use gate_up_bias [E, 2I]",
                                  layout_name(d->layout));
        if (d->gate_up_bias.data && (s = check_tensor(ctx, "gate_up_bias", &d->gate_up_bias, E, 2 * I, 1, 1, "1")))
            return s;
        int inter = d->layout == MOE_GATE_UP_INTERLEAVED;
        L->gate = row_view(&d->gate_up, 0, inter ? 2 : 1);
        L->up = row_view(&d->gate_up, inter ? 1 : I, inter ? 2 : 1);
        if (d->gate_up_bias.data) {
            L->gate_bias = row_view(&d->gate_up_bias, 0, inter ? 2 : 1);
            L->up_bias = row_view(&d->gate_up_bias, inter ? 1 : I, inter ? 2 : 1);
        } else {
            L->gate_bias = L->up_bias = absent_tensor;
        }
    }
    REQUIRE(down);
#undef REQUIRE
    if ((s = check_tensor(ctx, "down", &d->down, E, D, I, 0, "I"))) return s;
    if (d->down_bias.data && (s = check_tensor(ctx, "down_bias", &d->down_bias, E, D, 1, 1, "1"))) return s;
    L->down = d->down;
    L->down_bias = d->down_bias.data ? d->down_bias : absent_tensor;
    return MOE_OK;
}

/* The registry layer creation chooses from (tests may replace it). */
static const moe__backend *const *registry_list;
static int registry_n;

void moe__registry_override(const moe__backend *const *list, int n) {
    registry_list = list;
    registry_n = list ? n : 0;
}

static const moe__backend *const *registry(int *n) {
    if (registry_list) {
        *n = registry_n;
        return registry_list;
    }
    *n = moe__n_backends;
    return moe__backends;
}

/* Tries backend b for L: 1 if it can run the layer, else 0 with the reason in why. */
static int backend_fits(moe_ctx *ctx, const moe__backend *b, const moe_layer *L, char *why, size_t n) {
    if (b->device != ctx->p.device) {
        snprintf(why, n, "runs on %s, the context is a %s context", b->device == MOE_DEVICE_CUDA ? "CUDA" : "the CPU",
                 ctx->p.device == MOE_DEVICE_CUDA ? "CUDA" : "CPU");
        return 0;
    }
    if (!b->probe(ctx, why, n)) return 0;
    return b->supports(L, why, n);
}

static void append(char *dst, size_t cap, const char *fmt, ...) {
    size_t len = strlen(dst);
    if (len + 1 >= cap) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst + len, cap - len, fmt, ap);
    va_end(ap);
}

/*
 * The chain: a forced backend (MOE_BACKEND, then desc.backend) runs every T;
 * otherwise the first backend of the registry that can run the layer, and if
 * that one is a small-batch backend, the first full backend after it for
 * larger T. Sets *primary and *large (NULL when one backend runs every T).
 */
static moe_status choose_backends(moe_ctx *ctx, const moe_layer *L, const moe__backend **primary,
                                  const moe__backend **large) {
    char why[512];
    int n;
    const moe__backend *const *list = registry(&n);
    *primary = *large = NULL;
    const char *env = getenv("MOE_BACKEND");
    const char *name = env && *env ? env : (L->desc.backend && *L->desc.backend ? L->desc.backend : NULL);
    const char *origin = env && *env ? "MOE_BACKEND" : "desc.backend";
    if (name && strcmp(name, "auto") != 0) {
        const moe__backend *b = NULL;
        for (int i = 0; i < n; i++)
            if (strcmp(list[i]->name, name) == 0) b = list[i];
        if (!b) {
            char have[256] = "";
            for (int i = 0; i < n; i++) append(have, sizeof have, "%s%s", i ? ", " : "", list[i]->name);
            moe__log(ctx, MOE_LOG_WARN, "%s=%s: no such backend in this build (have: %s); choosing automatically",
                     origin, name, have);
        } else if (!backend_fits(ctx, b, L, why, sizeof why)) {
            return moe__ctx_error(ctx, MOE_ERR_BACKEND_UNAVAILABLE, "%s=%s cannot run this layer: %s", origin, name,
                                  why);
        } else {
            *primary = b;
            moe__log(ctx, MOE_LOG_INFO, "backend %s (forced by %s)", b->name, origin);
            return MOE_OK;
        }
    }
    char passed[1536] = "";
    for (int i = 0; i < n; i++) {
        const moe__backend *b = list[i];
        if (b->device != ctx->p.device) continue;
        if (!backend_fits(ctx, b, L, why, sizeof why)) {
            append(passed, sizeof passed, "%s: %s; ", b->name, why);
            continue;
        }
        if (b->max_tokens && !*primary) {
            *primary = b; /* small-batch: keep looking for the backend of larger T */
            continue;
        }
        if (*primary) *large = b;
        else *primary = b;
        break;
    }
    if (!*primary)
        return moe__ctx_error(ctx, MOE_ERR_BACKEND_UNAVAILABLE, "no backend can run this layer: %s", passed);
    if (*large)
        moe__log(ctx, MOE_LOG_INFO, "%susing %s for T <= %lld and %s above", passed, (*primary)->name,
                 (long long)(*primary)->max_tokens(L), (*large)->name);
    else
        moe__log(ctx, MOE_LOG_INFO, "%susing %s", passed, (*primary)->name);
    return MOE_OK;
}

/* Makes a layer of desc (already checked into L's views) on backend b. */
static moe_status init_on(moe_ctx *ctx, moe_layer *L, const moe__backend *b) {
    L->backend = b;
    moe_status s = b->init(L);
    if (s) moe__ctx_error(ctx, s, "backend %s: %s", b->name, L->err);
    return s;
}

moe_status moe_layer_create(moe_ctx *ctx, const moe_layer_desc *desc, moe_layer **out) {
    if (out) *out = NULL;
    if (!ctx) return moe__ctx_error(NULL, MOE_ERR_NULL_POINTER, "moe_layer_create: ctx is NULL");
    if (!desc || !out)
        return moe__ctx_error(ctx, MOE_ERR_NULL_POINTER, "moe_layer_create: %s is NULL", !desc ? "desc" : "out");
    moe_layer *L = calloc(1, sizeof *L);
    if (!L) return moe__ctx_error(ctx, MOE_ERR_OUT_OF_MEMORY, "moe_layer_create: out of memory");
    L->ctx = ctx;
    L->desc = *desc;
    const moe__backend *primary = NULL, *large = NULL;
    moe_status s = check_desc(ctx, L);
    if (!s) s = choose_backends(ctx, L, &primary, &large);
    if (!s && large) {
        moe_layer *N = malloc(sizeof *N);
        if (!N) s = moe__ctx_error(ctx, MOE_ERR_OUT_OF_MEMORY, "moe_layer_create: out of memory");
        else {
            *N = *L;
            if ((s = init_on(ctx, N, large))) free(N);
            else L->next = N;
        }
    }
    if (!s && (s = init_on(ctx, L, primary))) {
        moe_layer_free(L->next);
        L->next = NULL;
    }
    if (s) {
        free(L);
        return s;
    }
    L->desc.backend = NULL; /* the caller's string is not kept */
    if (L->next) L->next->desc.backend = NULL;
    *out = L;
    return MOE_OK;
}

/* The part of L that runs a forward of T tokens. */
static moe_layer *part_for(const moe_layer *L, int64_t T) {
    if (L->next && T > L->backend->max_tokens(L)) return L->next;
    return (moe_layer *)L;
}

void moe_layer_free(moe_layer *L) {
    if (!L) return;
    moe_layer_free(L->next);
    if (L->backend && L->backend->fini) L->backend->fini(L);
    free(L);
}

const char *moe_layer_backend(const moe_layer *L) { return L && L->backend ? L->backend->name : ""; }

moe_status moe_layer_workspace_size(const moe_layer *L, int64_t T, size_t *bytes) {
    if (!L || !bytes)
        return moe__layer_error((moe_layer *)L, MOE_ERR_NULL_POINTER, "moe_layer_workspace_size: %s is NULL",
                                !L ? "layer" : "bytes");
    *bytes = 0;
    int64_t tk;
    if (T < 0) return moe__layer_error((moe_layer *)L, MOE_ERR_INVALID_DIM, "T = %lld, expected T >= 0", (long long)T);
    if (!moe__mul_ok(T, L->desc.K, &tk) || !moe__mul_ok(T, L->desc.D, &tk) || T > INT32_MAX)
        return moe__layer_error((moe_layer *)L, MOE_ERR_SIZE_OVERFLOW, "T = %lld is too large", (long long)T);
    const moe_layer *P = part_for(L, T);
    *bytes = T ? P->backend->workspace(P, T) : 0;
    return MOE_OK;
}

moe_status moe__check_ids_host(moe_layer *L, int64_t T, const int32_t *ids) {
    int64_t K = L->desc.K, E = L->desc.E;
    for (int64_t i = 0; i < T * K; i++)
        if (ids[i] < 0 || ids[i] >= E)
            return moe__layer_error(L, MOE_ERR_EXPERT_ID_OUT_OF_RANGE, "topk_ids[%lld][%lld] = %d but E = %lld",
                                    (long long)(i / K), (long long)(i % K), ids[i], (long long)E);
    return MOE_OK;
}

moe_status moe_layer_forward(moe_layer *L, int64_t T, const void *x, const int32_t *topk_ids,
                             const float *topk_weights, void *out, void *workspace, size_t workspace_size) {
    if (!L) return moe__layer_error(NULL, MOE_ERR_NULL_POINTER, "moe_layer_forward: layer is NULL");
    size_t need;
    moe_status s = moe_layer_workspace_size(L, T, &need);
    if (s) return s;
    if (T == 0) return MOE_OK;
    const char *null_arg = !x ? "x" : !topk_ids ? "topk_ids" : !topk_weights ? "topk_weights" : !out ? "out" : NULL;
    if (null_arg) return moe__layer_error(L, MOE_ERR_NULL_POINTER, "moe_layer_forward: %s is NULL (T = %lld)", null_arg,
                                          (long long)T);
    if (workspace_size < need)
        return moe__layer_error(L, MOE_ERR_WORKSPACE_TOO_SMALL,
                                "workspace_size = %zu but T = %lld needs %zu bytes (moe_layer_workspace_size)",
                                workspace_size, (long long)T, need);
    if (need && !workspace)
        return moe__layer_error(L, MOE_ERR_NULL_POINTER, "workspace is NULL but T = %lld needs %zu bytes",
                                (long long)T, need);
    if (L->ctx->p.device == MOE_DEVICE_CPU && (s = moe__check_ids_host(L, T, topk_ids))) return s;
    moe__fwd a = {T, x, topk_ids, topk_weights, out, workspace, workspace_size};
    moe_layer *P = part_for(L, T);
    s = P->backend->forward(P, &a);
    if (s && P != L) memcpy(L->err, P->err, sizeof L->err);
    return s;
}

moe_status moe_layer_describe(const moe_layer *L, int64_t T, char *buf, size_t n) {
    if (!L || !buf)
        return moe__layer_error((moe_layer *)L, MOE_ERR_NULL_POINTER, "moe_layer_describe: %s is NULL",
                                !L ? "layer" : "buf");
    if (n == 0) return MOE_ERR_INVALID_ARGUMENT;
    if (T < 0) return moe__layer_error((moe_layer *)L, MOE_ERR_INVALID_DIM, "T = %lld, expected T >= 0", (long long)T);
    buf[0] = 0;
    const moe_layer *P = part_for(L, T);
    P->backend->describe(P, T, buf, n);
    return MOE_OK;
}
