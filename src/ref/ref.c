/*
 * Reference forward (backend "ref"): for each token t and slot k, with
 * e = topk_ids[t][k],
 *     g = gate_e x_t + bg_e,  u = up_e x_t + bu_e,  h = act(g, u),
 *     out_t += w[t][k] * (down_e h + bd_e)
 * every weight dequantised to f32 exactly as GGUF defines it, every sum in
 * double, out rounded once to act_type at the end. Reads the layer's resolved
 * gate/up views, so every layout goes through the same lines.
 */
#include "ref.h"

#include "half.h"
#include "quant.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

double moe__ref_act(moe_act act, double g, double u, double alpha, double limit) {
    switch (act) {
    case MOE_ACT_SWIGLU: return g / (1.0 + exp(-g)) * u;
    case MOE_ACT_GEGLU_TANH: return 0.5 * g * (1.0 + tanh(0.7978845608028654 * (g + 0.044715 * g * g * g))) * u;
    case MOE_ACT_GEGLU_ERF: return 0.5 * g * (1.0 + erf(g * 0.7071067811865476)) * u;
    case MOE_ACT_SWIGLU_OAI:
        /* written with comparisons, not fmin/fmax, so that NaN stays NaN */
        g = g > limit ? limit : g;
        u = u > limit ? limit : (u < -limit ? -limit : u);
        return g / (1.0 + exp(-alpha * g)) * (u + 1.0);
    case MOE_ACT_SILU: return u / (1.0 + exp(-u));
    case MOE_ACT_GELU: return 0.5 * u * (1.0 + tanh(0.7978845608028654 * (u + 0.044715 * u * u * u)));
    case MOE_ACT_RELU2: return u < 0 ? 0.0 : u * u;
    }
    return NAN;
}

static double load_act(moe_type t, const void *p, int64_t i) {
    switch (t) {
    case MOE_TYPE_F16: return moe__f16_to_f32(((const uint16_t *)p)[i]);
    case MOE_TYPE_BF16: return moe__bf16_to_f32(((const uint16_t *)p)[i]);
    default: return ((const float *)p)[i];
    }
}

static void store_act(moe_type t, void *p, int64_t i, double v) {
    switch (t) {
    case MOE_TYPE_F16: ((uint16_t *)p)[i] = moe__f32_to_f16((float)v); break;
    case MOE_TYPE_BF16: ((uint16_t *)p)[i] = moe__f32_to_bf16((float)v); break;
    default: ((float *)p)[i] = (float)v; break;
    }
}

/* Row n of expert e of W[E, N, C] as f32. */
static void load_row(const moe_tensor *w, int64_t e, int64_t n, int64_t C, float *dst) {
    if (moe_type_block_size(w->type) > 1 || w->stride_c == 1) {
        moe__dequantize_row(w->type, moe__tensor_at(w, e, n, 0), dst, C);
        return;
    }
    for (int64_t c = 0; c < C; c++) moe__dequantize_row(w->type, moe__tensor_at(w, e, n, c), dst + c, 1);
}

static double bias_at(const moe_tensor *b, int64_t e, int64_t n) {
    if (!b->data) return 0.0;
    float v;
    moe__dequantize_row(b->type, moe__tensor_at(b, e, n, 0), &v, 1);
    return v;
}

/* x row (D), acc (D), g, u (I) in double; a weight row (max(D, I)) in float. */
static size_t ref_workspace(const moe_layer *L, int64_t T) {
    (void)T;
    int64_t D = L->desc.D, I = L->desc.I;
    return (size_t)(2 * D + 2 * I) * sizeof(double) + (size_t)(D > I ? D : I) * sizeof(float);
}

static moe_status ref_forward(moe_layer *L, const moe__fwd *a) {
    const moe_layer_desc *d = &L->desc;
    int64_t D = d->D, I = d->I, K = d->K;
    double *xr = (double *)a->ws, *acc = xr + D, *g = acc + D, *u = g + I;
    float *row = (float *)(u + I);
    for (int64_t t = 0; t < a->T; t++) {
        for (int64_t c = 0; c < D; c++) {
            xr[c] = load_act(d->act_type, a->x, t * D + c);
            acc[c] = 0.0;
        }
        for (int64_t k = 0; k < K; k++) {
            int64_t e = a->ids[t * K + k];
            double wk = a->w[t * K + k];
            for (int64_t i = 0; i < I; i++) {
                double sg = 0, su = 0;
                if (L->gated) {
                    load_row(&L->gate, e, i, D, row);
                    for (int64_t c = 0; c < D; c++) sg += (double)row[c] * xr[c];
                }
                load_row(&L->up, e, i, D, row);
                for (int64_t c = 0; c < D; c++) su += (double)row[c] * xr[c];
                sg += bias_at(&L->gate_bias, e, i);
                su += bias_at(&L->up_bias, e, i);
                g[i] = moe__ref_act(d->act, sg, su, d->alpha, d->limit);
            }
            for (int64_t n = 0; n < D; n++) {
                double s = 0;
                load_row(&L->down, e, n, I, row);
                for (int64_t i = 0; i < I; i++) s += (double)row[i] * g[i];
                acc[n] += wk * (s + bias_at(&L->down_bias, e, n));
            }
        }
        for (int64_t c = 0; c < D; c++) store_act(d->act_type, a->out, t * D + c, acc[c]);
    }
    return MOE_OK;
}

static int ref_probe(moe_ctx *ctx, char *why, size_t n) {
    (void)ctx; (void)why; (void)n;
    return 1;
}

static int ref_supports(const moe_layer *L, char *why, size_t n) {
    const moe_tensor *ts[] = {&L->gate, &L->up, &L->down};
    for (int i = 0; i < 3; i++) {
        if (!ts[i]->data) continue;
        if (ts[i]->mem != MOE_MEM_HOST) {
            snprintf(why, n, "weights must be in host memory");
            return 0;
        }
    }
    if ((L->gate_bias.data && L->gate_bias.mem != MOE_MEM_HOST) || (L->up_bias.data && L->up_bias.mem != MOE_MEM_HOST) ||
        (L->down_bias.data && L->down_bias.mem != MOE_MEM_HOST)) {
        snprintf(why, n, "biases must be in host memory");
        return 0;
    }
    return 1;
}

static moe_status ref_init(moe_layer *L) {
    L->impl = NULL;
    return MOE_OK;
}

static void ref_describe(const moe_layer *L, int64_t T, char *buf, size_t n) {
    snprintf(buf, n, "ref: scalar f64 reference, T = %lld, %s weights, one (token, slot) pair at a time", (long long)T,
             moe_type_name(L->down.type));
}

const moe__backend moe__backend_ref = {
    .name = "ref",
    .device = MOE_DEVICE_CPU,
    .probe = ref_probe,
    .supports = ref_supports,
    .init = ref_init,
    .fini = NULL,
    .workspace = ref_workspace,
    .forward = ref_forward,
    .describe = ref_describe,
    .ctx_fini = NULL,
};
