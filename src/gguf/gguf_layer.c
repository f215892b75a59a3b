/*
 * MoE layers from GGUF model files: the metadata and tensor names of each
 * architecture (llama.cpp's conventions, src/llama-arch.cpp and
 * llama-model.cpp) mapped onto a moe_layer_desc and a router description.
 *
 * GGUF lists dimensions fastest-first, so ffn_gate_exps with ne = [D, I, E] is
 * our row-major gate[E, I, D], ffn_down_exps ne = [I, D, E] is down[E, D, I],
 * ffn_gate_inp ne = [D, E] is the router W[E, D]. A fused
 * ffn_gate_up_exps (ne = [D, 2I, E]) holds the gate rows first, then the up
 * rows (llama.cpp splits it into halves): MOE_GATE_UP_CONCAT.
 *
 * Routing, per llama.cpp's build_moe_ffn: logits = W x (+ ffn_gate_inp.bias);
 * probabilities by softmax or sigmoid (<arch>.expert_gating_func); selection
 * on probabilities + exp_probs_b.bias; weights renormalised when
 * <arch>.expert_weights_norm (or by the architecture's fixed choice), then
 * multiplied by <arch>.expert_weights_scale. Gating function 3 (softmax over
 * the chosen logits, GPT-OSS) equals softmax followed by renormalisation.
 */
#include "gguf_file.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *name;
    moe_score score;         /* when <arch>.expert_gating_func is absent or 0 */
    int renormalize;         /* when <arch>.expert_weights_norm is absent */
    moe_act act;
    const char *ff_fallback; /* key suffix for I when expert_feed_forward_length is absent */
} arch_info;

static const arch_info arches[] = {
    /* Qwen3-MoE: norm_topk_prob, llama.cpp passes norm_w = true */
    {"qwen3moe", MOE_SCORE_SOFTMAX, 1, MOE_ACT_SWIGLU, NULL},
    /* Qwen1.5/2-MoE: weights not renormalised; the shared expert is separate */
    {"qwen2moe", MOE_SCORE_SOFTMAX, 0, MOE_ACT_SWIGLU, NULL},
    /* Mixtral is stored as llama with expert_count; top-2 softmax, renormalised */
    {"llama", MOE_SCORE_SOFTMAX, 1, MOE_ACT_SWIGLU, "feed_forward_length"},
    /* DeepSeek-V2/V3: gating from the file (softmax for V2 files without it) */
    {"deepseek2", MOE_SCORE_SOFTMAX, 0, MOE_ACT_SWIGLU, NULL},
    /* GPT-OSS: softmax over the chosen logits, SWIGLU_OAI, biases everywhere */
    {"gpt-oss", MOE_SCORE_SOFTMAX, 1, MOE_ACT_SWIGLU_OAI, NULL},
};

moe_gguf_layer_params moe_gguf_layer_params_default(void) {
    moe_gguf_layer_params p;
    memset(&p, 0, sizeof p);
    p.act_type = MOE_TYPE_F32;
    return p;
}

/* ---- metadata ----------------------------------------------------------------- */

typedef struct {
    const moe_gguf *f;
    const char *arch;
    char key[256];
} meta;

static const char *akey(meta *m, const char *suffix) {
    snprintf(m->key, sizeof m->key, "%s.%s", m->arch, suffix);
    return m->key;
}

/* <arch>.suffix as a positive integer below 2^31; *present = 0 when absent and optional. */
static moe_status meta_dim(meta *m, const char *suffix, int required, int64_t *v, int *present) {
    uint32_t u;
    moe_status s = moe_gguf_get_u32(m->f, akey(m, suffix), &u);
    if (present) *present = s == MOE_OK;
    if (s == MOE_ERR_NOT_FOUND && !required) return MOE_OK;
    if (s == MOE_ERR_NOT_FOUND)
        return moe__gguf_error(m->f, s, "key '%s' is not in the file: an MoE layer of architecture %s needs it", m->key,
                               m->arch);
    if (s) return s;
    if (u > INT32_MAX)
        return moe__gguf_error(m->f, MOE_ERR_GGUF_FORMAT, "key '%s' = %u, expected below 2^31", m->key, u);
    *v = u;
    return MOE_OK;
}

/* ---- tensors ------------------------------------------------------------------- */

typedef struct {
    const char *what;   /* "D, I, E" */
    int64_t ne[4];      /* expected, fastest first; unused dims 1 */
    const char *keys;   /* where the expectation comes from */
} shape;

static int is_dense(moe_type t) { return t == MOE_TYPE_F32 || t == MOE_TYPE_F16 || t == MOE_TYPE_BF16; }

/* Finds blk.<layer>.<suffix>; checks its shape and type. *present = 0 when absent and optional. */
static moe_status get_tensor(const moe_gguf *f, int layer, const char *suffix, const shape *sh, int is_bias,
                             int optional, moe_gguf_tensor_info *info, int *present) {
    char name[160];
    snprintf(name, sizeof name, "blk.%d.%s", layer, suffix);
    *present = 0;
    if (moe_gguf_find_tensor(f, name) < 0) {
        if (optional) return MOE_OK;
        return moe__gguf_error(f, MOE_ERR_NOT_FOUND, "tensor '%s' is not in the file", name);
    }
    moe_status s = moe_gguf_get_tensor(f, name, info);
    if (s) return s;
    *present = 1;
    for (int d = 0; d < 4; d++) {
        if (info->ne[d] != sh->ne[d])
            return moe__gguf_error(f, MOE_ERR_GGUF_FORMAT,
                                   "tensor '%s' has ne = [%lld, %lld, %lld, %lld] (GGUF order, fastest first), but the "
                                   "metadata says [%s] = [%lld, %lld, %lld, %lld] (%s): ne[%d] = %lld, expected %lld",
                                   name, (long long)info->ne[0], (long long)info->ne[1], (long long)info->ne[2],
                                   (long long)info->ne[3], sh->what, (long long)sh->ne[0], (long long)sh->ne[1],
                                   (long long)sh->ne[2], (long long)sh->ne[3], sh->keys, d, (long long)info->ne[d],
                                   (long long)sh->ne[d]);
    }
    if (is_bias && !is_dense(info->type))
        return moe__gguf_error(f, MOE_ERR_UNSUPPORTED, "tensor '%s' has type %s, expected f32, f16 or bf16 for a bias",
                               name, info->type_name);
    if (moe_type_block_size(info->type) == 0)
        return moe__gguf_error(f, MOE_ERR_UNSUPPORTED,
                               "tensor '%s' has type %s, which libmoe does not compute with (f32, f16, bf16, q4_0, "
                               "q8_0, q2_K..q6_K, mxfp4)",
                               name, info->type_name);
    /* the kernels load f32 as floats and halves (f16, bf16, block scales) as 16-bit words */
    uintptr_t align = info->type == MOE_TYPE_F32 ? 4 : info->type == MOE_TYPE_MXFP4 ? 1 : 2;
    if ((uintptr_t)info->data % align)
        return moe__gguf_error(f, MOE_ERR_UNSUPPORTED,
                               "tensor '%s' of type %s: its data at file offset %llu (address %p) is not %d-byte "
                               "aligned (general.alignment = %llu)",
                               name, info->type_name, (unsigned long long)info->offset, info->data, (int)align,
                               (unsigned long long)moe_gguf_alignment(f));
    return MOE_OK;
}

static moe_tensor host_tensor(const moe_gguf_tensor_info *t) {
    moe_tensor r;
    memset(&r, 0, sizeof r);
    r.data = t->data;
    r.type = t->type;
    r.mem = MOE_MEM_HOST;
    return r; /* strides 0: contiguous, filled in by moe_layer_create */
}

static shape shape3(const char *what, int64_t a, int64_t b, int64_t c, const char *keys) {
    shape s = {what, {a, b, c, 1}, keys};
    return s;
}

static shape shape2(const char *what, int64_t a, int64_t b, const char *keys) {
    shape s = {what, {a, b, 1, 1}, keys};
    return s;
}

/* ---- the layer ------------------------------------------------------------------ */

moe_status moe_gguf_layer_desc(const moe_gguf *f, int layer, const moe_gguf_layer_params *params,
                               moe_layer_desc *desc_out, moe_gguf_router *router_out) {
    if (!f || !desc_out)
        return moe__gguf_error(f, MOE_ERR_NULL_POINTER, "moe_gguf_layer_desc: %s is NULL", !f ? "f" : "desc");
    moe_gguf_layer_params p = params ? *params : moe_gguf_layer_params_default();
    moe_status s;
    meta m = {f, NULL, ""};
    if ((s = moe_gguf_get_string(f, "general.architecture", &m.arch, NULL)))
        return s == MOE_ERR_NOT_FOUND
                   ? moe__gguf_error(f, s, "key 'general.architecture' is not in the file: cannot tell the model's "
                                           "tensor names")
                   : s;
    const arch_info *A = NULL;
    for (size_t i = 0; i < sizeof arches / sizeof arches[0]; i++)
        if (strcmp(arches[i].name, m.arch) == 0) A = &arches[i];
    if (!A) {
        char name[160];
        moe__gguf_escape(m.arch, name, sizeof name);
        return moe__gguf_error(f, MOE_ERR_UNSUPPORTED,
                               "general.architecture = '%s': MoE layers are read for qwen3moe, qwen2moe, llama "
                               "(Mixtral), deepseek2 and gpt-oss",
                               name);
    }
    if (layer < 0)
        return moe__gguf_error(f, MOE_ERR_INVALID_ARGUMENT, "layer_index = %d, expected >= 0", layer);
    int64_t n_layers = 0, n_dense = 0;
    int have_layers, have_dense;
    if ((s = meta_dim(&m, "block_count", 0, &n_layers, &have_layers))) return s;
    if (have_layers && layer >= n_layers)
        return moe__gguf_error(f, MOE_ERR_INVALID_ARGUMENT, "layer_index = %d, but %s.block_count = %lld", layer,
                               m.arch, (long long)n_layers);
    int64_t E, K, D, I = 0;
    int have_E, have_I;
    if ((s = meta_dim(&m, "expert_count", 0, &E, &have_E))) return s;
    if (!have_E)
        return moe__gguf_error(f, MOE_ERR_NOT_FOUND,
                               "key '%s.expert_count' is not in the file: this %s model has no MoE layers", m.arch,
                               m.arch);
    if ((s = meta_dim(&m, "expert_used_count", 1, &K, NULL))) return s;
    if ((s = meta_dim(&m, "embedding_length", 1, &D, NULL))) return s;
    const char *I_key = "expert_feed_forward_length";
    if ((s = meta_dim(&m, I_key, 0, &I, &have_I))) return s;
    if (!have_I && A->ff_fallback) {
        I_key = A->ff_fallback;
        if ((s = meta_dim(&m, I_key, 0, &I, &have_I))) return s;
    }
    if (E == 0)
        return moe__gguf_error(f, MOE_ERR_NOT_FOUND, "%s.expert_count = 0: this model has no MoE layers", m.arch);
    if (E < 1 || D < 1 || (have_I && I < 1))
        return moe__gguf_error(f, MOE_ERR_GGUF_FORMAT, "%s.expert_count = %lld, embedding_length = %lld, %s = %lld: "
                               "each must be > 0", m.arch, (long long)E, (long long)D, I_key, (long long)I);
    if (p.K && (p.K < 1 || p.K > E))
        return moe__gguf_error(f, MOE_ERR_INVALID_ARGUMENT, "params.K = %lld, expected 1..%s.expert_count = %lld",
                               (long long)p.K, m.arch, (long long)E);
    if (p.K) K = p.K;
    if (K < 1 || K > E)
        return moe__gguf_error(f, MOE_ERR_GGUF_FORMAT, "%s.expert_used_count = %lld, expected 1..expert_count = %lld",
                               m.arch, (long long)K, (long long)E);

    /* routing */
    moe_route_params route = moe_route_params_default();
    route.E = E;
    route.K = K;
    route.score = A->score;
    route.renormalize = A->renormalize;
    int64_t gating = 0;
    int have;
    if ((s = meta_dim(&m, "expert_gating_func", 0, &gating, &have))) return s;
    if (gating == 1) route.score = MOE_SCORE_SOFTMAX;
    else if (gating == 2) route.score = MOE_SCORE_SIGMOID;
    else if (gating == 3) route.score = MOE_SCORE_SOFTMAX;
    else if (gating != 0)
        return moe__gguf_error(f, MOE_ERR_UNSUPPORTED,
                               "%s.expert_gating_func = %lld: libmoe routes 1 (softmax), 2 (sigmoid) and 3 (softmax over "
                               "the chosen experts)", m.arch, (long long)gating);
    int norm;
    s = moe_gguf_get_bool(f, akey(&m, "expert_weights_norm"), &norm);
    if (s == MOE_OK) route.renormalize = norm;
    else if (s != MOE_ERR_NOT_FOUND) return s;
    if (gating == 3) route.renormalize = 1; /* softmax over the K chosen = softmax, then divide by the sum */
    float scale;
    s = moe_gguf_get_f32(f, akey(&m, "expert_weights_scale"), &scale);
    if (s == MOE_OK) {
        if (!isfinite(scale))
            return moe__gguf_error(f, MOE_ERR_GGUF_FORMAT, "%s.expert_weights_scale = %g, expected finite", m.arch,
                                   (double)scale);
        route.routed_scaling = scale == 0.0f ? 1.0f : scale; /* llama.cpp: 0 means "no scaling" */
    } else if (s != MOE_ERR_NOT_FOUND) {
        return s;
    }
    int64_t n_group = 0, topk_group = 0;
    if ((s = meta_dim(&m, "expert_group_count", 0, &n_group, &have))) return s;
    if (n_group > 1) {
        if ((s = meta_dim(&m, "expert_group_used_count", 1, &topk_group, NULL))) return s;
        if (E % n_group || topk_group < 1 || topk_group > n_group || K > topk_group * (E / n_group))
            return moe__gguf_error(f, MOE_ERR_GGUF_FORMAT,
                                   "%s.expert_group_count = %lld, expert_group_used_count = %lld with expert_count = %lld "
                                   "and K = %lld: expected groups dividing E, 1 <= used <= count, and K experts within "
                                   "the used groups",
                                   m.arch, (long long)n_group, (long long)topk_group, (long long)E, (long long)K);
        route.n_group = n_group;
        route.topk_group = topk_group;
    }

    /* expert tensors */
    moe_layer_desc d = moe_layer_desc_default();
    d.E = E;
    d.D = D;
    d.K = K;
    d.act = A->act;
    d.alpha = 1.702f; /* GPT-OSS's constants, fixed in llama.cpp too */
    d.limit = 7.0f;
    d.act_type = p.act_type;
    d.backend = p.backend;
    char keys[512];
    moe_gguf_tensor_info gt, ut, dt, gut, bt;
    int has_gate, has_up, has_gate_up, has_b;
    char gname[64];
    snprintf(gname, sizeof gname, "blk.%d.ffn_gate_up_exps.weight", layer);
    int fused = moe_gguf_find_tensor(f, gname) >= 0;
    if (!have_I) {
        /* no I in the metadata: take it from the gate (or gate_up) tensor, then check the rest against it */
        char probe[64];
        snprintf(probe, sizeof probe, "blk.%d.%s", layer, fused ? "ffn_gate_up_exps.weight" : "ffn_up_exps.weight");
        moe_gguf_tensor_info pt;
        if (moe_gguf_get_tensor(f, probe, &pt) == MOE_OK) I = fused ? pt.ne[1] / 2 : pt.ne[1];
        if (I < 1) I = 0;
    }
    if (I < 1 || I > INT32_MAX / 2) {
        char probe[64];
        snprintf(probe, sizeof probe, "blk.%d.ffn_down_exps.weight", layer);
        if (moe_gguf_find_tensor(f, probe) < 0) goto missing;
        return moe__gguf_error(f, MOE_ERR_GGUF_FORMAT, "no usable I: neither %s.expert_feed_forward_length nor the "
                               "shape of the layer's up tensor gives a size in 1..2^30", m.arch);
    }
    d.I = I;
    if (have_I)
        snprintf(keys, sizeof keys, "%s.embedding_length, %s, expert_count", m.arch, I_key);
    else
        snprintf(keys, sizeof keys, "%s.embedding_length, I from the up tensor, %s.expert_count", m.arch, m.arch);
    if (fused) {
        shape sh = shape3("D, 2I, E", D, 2 * I, E, keys);
        if ((s = get_tensor(f, layer, "ffn_gate_up_exps.weight", &sh, 0, 0, &gut, &has_gate_up))) return s;
        d.layout = MOE_GATE_UP_CONCAT;
        d.gate_up = host_tensor(&gut);
        shape bs = shape2("2I, E", 2 * I, E, keys);
        if ((s = get_tensor(f, layer, "ffn_gate_up_exps.bias", &bs, 1, 1, &bt, &has_b))) return s;
        if (has_b) d.gate_up_bias = host_tensor(&bt);
    } else {
        shape sh = shape3("D, I, E", D, I, E, keys);
        if ((s = get_tensor(f, layer, "ffn_up_exps.weight", &sh, 0, 1, &ut, &has_up))) return s;
        if (!has_up) goto missing;
        if ((s = get_tensor(f, layer, "ffn_gate_exps.weight", &sh, 0, 0, &gt, &has_gate))) return s;
        d.layout = MOE_GATE_UP_SEPARATE;
        d.gate = host_tensor(&gt);
        d.up = host_tensor(&ut);
        shape bs = shape2("I, E", I, E, keys);
        if ((s = get_tensor(f, layer, "ffn_gate_exps.bias", &bs, 1, 1, &bt, &has_b))) return s;
        if (has_b) d.gate_bias = host_tensor(&bt);
        if ((s = get_tensor(f, layer, "ffn_up_exps.bias", &bs, 1, 1, &bt, &has_b))) return s;
        if (has_b) d.up_bias = host_tensor(&bt);
    }
    {
        shape sh = shape3("I, D, E", I, D, E, keys);
        if ((s = get_tensor(f, layer, "ffn_down_exps.weight", &sh, 0, 0, &dt, &has_b))) return s;
        d.down = host_tensor(&dt);
        shape bs = shape2("D, E", D, E, keys);
        if ((s = get_tensor(f, layer, "ffn_down_exps.bias", &bs, 1, 1, &bt, &has_b))) return s;
        if (has_b) d.down_bias = host_tensor(&bt);
    }

    /* router */
    moe_gguf_router r;
    memset(&r, 0, sizeof r);
    {
        snprintf(keys, sizeof keys, "%s.embedding_length, expert_count", m.arch);
        shape sh = shape2("D, E", D, E, keys);
        moe_gguf_tensor_info wt;
        if ((s = get_tensor(f, layer, "ffn_gate_inp.weight", &sh, 0, 0, &wt, &has_b))) return s;
        r.weight = host_tensor(&wt);
        r.weight.stride_c = 1;
        r.weight.stride_n = D;
        r.weight.stride_e = E * D;
        shape bs = shape2("E", E, 1, keys);
        if ((s = get_tensor(f, layer, "ffn_gate_inp.bias", &bs, 1, 1, &bt, &has_b))) return s;
        if (has_b) {
            r.bias = host_tensor(&bt);
            r.bias.stride_c = 1;
            r.bias.stride_n = 1;
            r.bias.stride_e = E;
        } else {
            r.bias.type = MOE_TYPE_F32;
        }
        if ((s = get_tensor(f, layer, "exp_probs_b.bias", &bs, 1, 1, &bt, &has_b))) return s;
        if (has_b) {
            if (bt.type != MOE_TYPE_F32 || ((uintptr_t)bt.data & 3))
                return moe__gguf_error(f, MOE_ERR_UNSUPPORTED,
                                       "tensor 'blk.%d.exp_probs_b.bias' is %s%s: the selection bias must be f32 and "
                                       "4-byte aligned",
                                       layer, bt.type_name, bt.type == MOE_TYPE_F32 ? " at an unaligned address" : "");
            route.score_bias = (const float *)bt.data;
        }
        r.route = route;
        r.D = D;
    }
    *desc_out = d;
    if (router_out) *router_out = r;
    return MOE_OK;

missing: {
    char probe[64];
    snprintf(probe, sizeof probe, "blk.%d.%s", layer, fused ? "ffn_gate_up_exps.weight" : "ffn_up_exps.weight");
    if (meta_dim(&m, "leading_dense_block_count", 0, &n_dense, &have_dense) == MOE_OK && have_dense && layer < n_dense)
        return moe__gguf_error(f, MOE_ERR_NOT_FOUND,
                               "tensor '%s' is not in the file: layer %d is a dense layer (%s.leading_dense_block_count "
                               "= %lld), not an MoE layer",
                               probe, layer, m.arch, (long long)n_dense);
    return moe__gguf_error(f, MOE_ERR_NOT_FOUND, "tensor '%s' is not in the file: no MoE layer %d%s", probe, layer,
                           have_layers ? "" : " (and the file has no block_count)");
}
}

moe_status moe_layer_from_gguf(moe_ctx *ctx, const moe_gguf *f, int layer, const moe_gguf_layer_params *params,
                               moe_layer **out, moe_gguf_router *router) {
    if (out) *out = NULL;
    if (!ctx) return moe__ctx_error(NULL, MOE_ERR_NULL_POINTER, "moe_layer_from_gguf: ctx is NULL");
    if (!f || !out)
        return moe__ctx_error(ctx, MOE_ERR_NULL_POINTER, "moe_layer_from_gguf: %s is NULL", !f ? "f" : "out");
    moe_layer_desc d;
    moe_gguf_router r;
    moe_status s = moe_gguf_layer_desc(f, layer, params, &d, &r);
    if (s) return moe__ctx_error(ctx, s, "layer %d: %s", layer, f->err);
    if ((s = moe_layer_create(ctx, &d, out))) return s;
    if (router) *router = r;
    return MOE_OK;
}

moe_status moe_gguf_router_logits(const moe_gguf_router *r, int64_t T, const float *x, float *logits) {
    if (!r || (T && (!x || !logits)))
        return moe__gguf_error(NULL, MOE_ERR_NULL_POINTER, "moe_gguf_router_logits: %s is NULL",
                               !r ? "router" : !x ? "x" : "logits");
    int64_t E = r->route.E, D = r->D, te, td;
    if (T < 0 || E < 1 || D < 1)
        return moe__gguf_error(NULL, MOE_ERR_INVALID_DIM, "moe_gguf_router_logits: T = %lld, E = %lld, D = %lld",
                               (long long)T, (long long)E, (long long)D);
    if (!moe__mul_ok(T, E, &te) || !moe__mul_ok(T, D, &td))
        return moe__gguf_error(NULL, MOE_ERR_SIZE_OVERFLOW, "moe_gguf_router_logits: T = %lld is too large", (long long)T);
    if (!r->weight.data || r->weight.mem != MOE_MEM_HOST)
        return moe__gguf_error(NULL, MOE_ERR_INVALID_ARGUMENT, "moe_gguf_router_logits: the router weight is %s",
                               r->weight.data ? "not in host memory" : "absent");
    if (moe_type_row_bytes(r->weight.type, D) < 0)
        return moe__gguf_error(NULL, MOE_ERR_BLOCK_SHAPE, "moe_gguf_router_logits: D = %lld does not fit type %s",
                               (long long)D, moe_type_name(r->weight.type));
    if (T == 0) return MOE_OK;
    float *row = malloc((size_t)D * sizeof *row);
    if (!row) return moe__gguf_error(NULL, MOE_ERR_OUT_OF_MEMORY, "moe_gguf_router_logits: out of memory");
    moe_status s = MOE_OK;
    for (int64_t e = 0; e < E && !s; e++) {
        if ((s = moe_dequantize_row(r->weight.type, moe__tensor_at(&r->weight, 0, e, 0), row, D))) break;
        float b = 0;
        if (r->bias.data && (s = moe_dequantize_row(r->bias.type, moe__tensor_at(&r->bias, 0, e, 0), &b, 1))) break;
        for (int64_t t = 0; t < T; t++) {
            double acc = 0;
            const float *xt = x + t * D;
            for (int64_t c = 0; c < D; c++) acc += (double)xt[c] * row[c];
            logits[t * E + e] = (float)(acc + b);
        }
    }
    free(row);
    if (s) {
        char m[MOE__ERR_LEN];
        snprintf(m, sizeof m, "%s", moe_ctx_last_error(NULL));
        return moe__gguf_error(NULL, s, "moe_gguf_router_logits: router weight of type %s: %s",
                               moe_type_name(r->weight.type), m);
    }
    return MOE_OK;
}
