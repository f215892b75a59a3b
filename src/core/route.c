/*
 * Router: logits [T, E] -> top-k ids and weights, on the host. Softmax or
 * sigmoid scores, an optional selection-only bias, optional grouped top-k
 * (DeepSeek-V3), renormalisation and a routed scaling factor. Scores are
 * computed in double so that ties and rounding do not depend on the order of
 * operations; ties go to the lower expert index. CUDA contexts run the same
 * algorithm on the device (src/cuda, through moe__route_cuda).
 */
#include "core.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

moe_route_params moe_route_params_default(void) {
    moe_route_params p;
    memset(&p, 0, sizeof p);
    p.score = MOE_SCORE_SOFTMAX;
    p.renormalize = 0;
    p.routed_scaling = 1.0f;
    return p;
}

/* a ranks before b: larger score, NaN last, lower index on ties. */
static int before(double a, int64_t ia, double b, int64_t ib) {
    if (isnan(a)) return isnan(b) ? ia < ib : 0;
    if (isnan(b)) return 1;
    return a > b || (a == b && ia < ib);
}

moe_status moe__route_check(moe_ctx *ctx, const moe_route_params *p, int64_t T) {
    if (p->E <= 0 || p->K <= 0 || p->E > INT32_MAX)
        return moe__ctx_error(ctx, MOE_ERR_INVALID_DIM, "route: E = %lld, K = %lld, expected 0 < K <= E < 2^31",
                              (long long)p->E, (long long)p->K);
    if (p->K > p->E)
        return moe__ctx_error(ctx, MOE_ERR_TOPK_EXCEEDS_EXPERTS, "route: K = %lld but E = %lld: expected K <= E",
                              (long long)p->K, (long long)p->E);
    if (T < 0) return moe__ctx_error(ctx, MOE_ERR_INVALID_DIM, "route: T = %lld, expected T >= 0", (long long)T);
    int64_t te;
    if (!moe__mul_ok(T, p->E, &te) || te > INT64_MAX / 8)
        return moe__ctx_error(ctx, MOE_ERR_SIZE_OVERFLOW, "route: T = %lld x E = %lld overflows", (long long)T,
                              (long long)p->E);
    if (p->score != MOE_SCORE_SOFTMAX && p->score != MOE_SCORE_SIGMOID)
        return moe__ctx_error(ctx, MOE_ERR_UNSUPPORTED, "route: score = %d, expected softmax (0) or sigmoid (1)",
                              (int)p->score);
    if (!isfinite(p->routed_scaling))
        return moe__ctx_error(ctx, MOE_ERR_NONFINITE_PARAM, "route: routed_scaling = %g, expected finite",
                              (double)p->routed_scaling);
    if (p->n_group > 1) {
        if (p->E % p->n_group)
            return moe__ctx_error(ctx, MOE_ERR_INVALID_ARGUMENT, "route: E = %lld is not a multiple of n_group = %lld",
                                  (long long)p->E, (long long)p->n_group);
        if (p->topk_group < 1 || p->topk_group > p->n_group)
            return moe__ctx_error(ctx, MOE_ERR_INVALID_ARGUMENT, "route: topk_group = %lld, expected 1..n_group = %lld",
                                  (long long)p->topk_group, (long long)p->n_group);
        if (p->K > p->topk_group * (p->E / p->n_group))
            return moe__ctx_error(ctx, MOE_ERR_INVALID_ARGUMENT,
                                  "route: K = %lld exceeds the %lld experts in topk_group = %lld groups", (long long)p->K,
                                  (long long)(p->topk_group * (p->E / p->n_group)), (long long)p->topk_group);
    } else if (p->n_group < 0) {
        return moe__ctx_error(ctx, MOE_ERR_INVALID_ARGUMENT, "route: n_group = %lld, expected >= 0", (long long)p->n_group);
    }
    return MOE_OK;
}

/* One token. score, sel: [E] scratch; gmask: [n_group] scratch. */
static void route_one(const moe_route_params *p, const float *logit, int32_t *ids, float *w, double *score,
                      double *sel, unsigned char *allowed, double *gscore) {
    int64_t E = p->E, K = p->K;
    if (p->score == MOE_SCORE_SOFTMAX) {
        double m = -INFINITY, s = 0;
        for (int64_t e = 0; e < E; e++) m = fmax(m, (double)logit[e]); /* fmax skips NaN */
        for (int64_t e = 0; e < E; e++) s += score[e] = exp((double)logit[e] - m);
        for (int64_t e = 0; e < E; e++) score[e] /= s;
    } else {
        for (int64_t e = 0; e < E; e++) score[e] = 1.0 / (1.0 + exp(-(double)logit[e]));
    }
    for (int64_t e = 0; e < E; e++) {
        sel[e] = score[e] + (p->score_bias ? (double)p->score_bias[e] : 0.0);
        allowed[e] = 1;
    }
    if (p->n_group > 1) {
        int64_t G = p->n_group, gs = E / G;
        for (int64_t g = 0; g < G; g++) {
            double b1 = NAN, b2 = NAN; /* best two in the group */
            int64_t i1 = -1, i2 = -1;
            for (int64_t e = g * gs; e < (g + 1) * gs; e++) {
                if (i1 < 0 || before(sel[e], e, b1, i1)) { b2 = b1; i2 = i1; b1 = sel[e]; i1 = e; }
                else if (i2 < 0 || before(sel[e], e, b2, i2)) { b2 = sel[e]; i2 = e; }
            }
            gscore[g] = p->score_bias && gs >= 2 ? b1 + b2 : b1;
        }
        for (int64_t e = 0; e < E; e++) allowed[e] = 0;
        for (int64_t j = 0; j < p->topk_group; j++) {
            int64_t best = -1;
            for (int64_t g = 0; g < G; g++)
                if (gscore[g] != -INFINITY && (best < 0 || before(gscore[g], g, gscore[best], best))) best = g;
            if (best < 0) break;
            for (int64_t e = best * gs; e < (best + 1) * gs; e++) allowed[e] = 1;
            gscore[best] = -INFINITY; /* taken */
        }
    }
    double sum = 0;
    for (int64_t k = 0; k < K; k++) {
        int64_t best = -1;
        for (int64_t e = 0; e < E; e++)
            if (allowed[e] && (best < 0 || before(sel[e], e, sel[best], best))) best = e;
        allowed[best] = 0;
        ids[k] = (int32_t)best;
        sum += score[best];
    }
    for (int64_t k = 0; k < K; k++) {
        double v = score[ids[k]];
        if (p->renormalize) v /= sum;
        w[k] = (float)(v * p->routed_scaling);
    }
}

/* src/backends.c: the device implementation, NULL in a build without CUDA. */
extern moe_status (*const moe__route_cuda)(moe_ctx *ctx, const moe_route_params *p, int64_t T, const float *logits,
                                           int32_t *ids, float *w);

moe_status moe_route_topk(moe_ctx *ctx, const moe_route_params *p, int64_t T, const float *logits, int32_t *ids,
                          float *w) {
    if (!ctx || !p) return moe__ctx_error(ctx, MOE_ERR_NULL_POINTER, "moe_route_topk: %s is NULL", !ctx ? "ctx" : "params");
    moe_status s = moe__route_check(ctx, p, T);
    if (s || T == 0) return s;
    if (!logits || !ids || !w)
        return moe__ctx_error(ctx, MOE_ERR_NULL_POINTER, "moe_route_topk: %s is NULL",
                              !logits ? "logits" : !ids ? "topk_ids" : "topk_weights");
    if (ctx->p.device == MOE_DEVICE_CUDA) {
        if (!moe__route_cuda)
            return moe__ctx_error(ctx, MOE_ERR_NO_DEVICE, "moe_route_topk: this library was built without CUDA");
        return moe__route_cuda(ctx, p, T, logits, ids, w);
    }
    int64_t E = p->E, G = p->n_group > 1 ? p->n_group : 1;
    double *score = malloc(sizeof(double) * (size_t)(2 * E + G));
    unsigned char *allowed = malloc((size_t)E);
    if (!score || !allowed) {
        free(score);
        free(allowed);
        return moe__ctx_error(ctx, MOE_ERR_OUT_OF_MEMORY, "moe_route_topk: out of memory for E = %lld", (long long)E);
    }
    for (int64_t t = 0; t < T; t++)
        route_one(p, logits + t * E, ids + t * p->K, w + t * p->K, score, score + E, allowed, score + 2 * E);
    free(score);
    free(allowed);
    return MOE_OK;
}
