/*
 * moe-bench: times one MoE expert layer forward on the best (or a forced)
 * backend, checks a sample of tokens against the reference, and reports time,
 * TFLOP/s, GB/s of touched expert weights and the share of the roofline.
 *
 *   moe-bench [--preset NAME] [--tokens T] [--dtype f32|f16|bf16]
 *             [--wtype TYPE] [--backend NAME] [--threads N] [--device cpu|cuda]
 *             [--cold] [--iters N] [--seconds S] [--check N] [--seed S]
 *             [--json FILE] [--peak-tflops X] [--list]
 *   moe-bench --gguf FILE [--layer N] [...]
 *
 * Weights are seeded random (rows drawn from a pool of quantised random rows,
 * so that making a 1 GB layer takes seconds, not minutes); routing is top-k of
 * seeded random router logits. With --gguf the layer's experts and router
 * come from a GGUF model file (mapped, not copied): seeded random hidden
 * states go through the file's own router (its scoring, groups, bias and
 * scaling) to choose the experts. With --cold every timed forward uses another
 * batch of router logits and, when the layer is smaller than 256 MiB, another
 * copy of the layer, so that weights come from memory, not cache.
 */
#define _GNU_SOURCE
#include "moe.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef MOE_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

typedef struct {
    const char *name;
    int64_t D, I, E, K;
    moe_act act;
    moe_gate_up_layout layout;
    int bias;
    moe_score score;
    int renorm;
    int64_t n_group, topk_group;
    float scaling;
} preset;

static const preset presets[] = {
    {"qwen3-30b-a3b", 2048, 768, 128, 8, MOE_ACT_SWIGLU, MOE_GATE_UP_SEPARATE, 0, MOE_SCORE_SOFTMAX, 1, 0, 0, 1.0f},
    {"mixtral-8x7b", 4096, 14336, 8, 2, MOE_ACT_SWIGLU, MOE_GATE_UP_SEPARATE, 0, MOE_SCORE_SOFTMAX, 1, 0, 0, 1.0f},
    {"deepseek-v3", 7168, 2048, 256, 8, MOE_ACT_SWIGLU, MOE_GATE_UP_SEPARATE, 0, MOE_SCORE_SIGMOID, 1, 8, 4, 2.5f},
    {"gpt-oss-20b", 2880, 2880, 32, 4, MOE_ACT_SWIGLU_OAI, MOE_GATE_UP_INTERLEAVED, 1, MOE_SCORE_SOFTMAX, 1, 0, 0, 1.0f},
    {"gpt-oss-120b", 2880, 2880, 128, 4, MOE_ACT_SWIGLU_OAI, MOE_GATE_UP_INTERLEAVED, 1, MOE_SCORE_SOFTMAX, 1, 0, 0,
     1.0f},
};
#define N_PRESETS ((int)(sizeof presets / sizeof presets[0]))

static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "moe-bench: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(2);
}

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) die("out of memory allocating %zu bytes", n);
    return p;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* splitmix64 + Box-Muller, seeded: the same seed gives the same layer. */
static uint64_t rs;
static uint64_t rnd(void) {
    uint64_t z = (rs += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static double rnd_u(void) { return (double)(rnd() >> 11) * (1.0 / 9007199254740992.0); }
static double rnd_n(void) {
    double u1 = rnd_u(), u2 = rnd_u();
    return sqrt(-2.0 * log(u1 < 1e-300 ? 1e-300 : u1)) * cos(6.283185307179586 * u2);
}

static moe_type parse_type(const char *s) {
    static const moe_type all[] = {MOE_TYPE_F32,  MOE_TYPE_F16,  MOE_TYPE_BF16, MOE_TYPE_Q4_0,
                                   MOE_TYPE_Q8_0, MOE_TYPE_Q2_K, MOE_TYPE_Q3_K, MOE_TYPE_Q4_K,
                                   MOE_TYPE_Q5_K, MOE_TYPE_Q6_K, MOE_TYPE_MXFP4};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (strcasecmp(s, moe_type_name(all[i])) == 0) return all[i];
    die("unknown type '%s' (f32, f16, bf16, q4_0, q8_0, q2_K, q3_K, q4_K, q5_K, q6_K, mxfp4)", s);
    return MOE_TYPE_F32;
}

/* A weight tensor [E, N, C] of type t: every row copied from a pool of 64
 * random rows (scaled 1/sqrt(C)), picked at random per row. */
static void *make_weight(int64_t E, int64_t N, int64_t C, moe_type t, size_t *bytes) {
    int64_t rb = moe_type_row_bytes(t, C);
    if (rb < 0) die("%lld is not a multiple of the %s block size", (long long)C, moe_type_name(t));
    enum { POOL = 64 };
    char *pool = xmalloc((size_t)(POOL * rb));
    float *row = xmalloc(sizeof(float) * (size_t)C);
    for (int p = 0; p < POOL; p++) {
        for (int64_t c = 0; c < C; c++) row[c] = (float)(rnd_n() / sqrt((double)C));
        moe_status s = moe_quantize_row(t, row, pool + p * rb, C);
        if (s) die("quantising to %s: %s", moe_type_name(t), moe_ctx_last_error(NULL));
    }
    *bytes = (size_t)(E * N * rb);
    char *w = xmalloc(*bytes);
    for (int64_t r = 0; r < E * N; r++) memcpy(w + r * rb, pool + (rnd() % POOL) * rb, (size_t)rb);
    free(pool);
    free(row);
    return w;
}

/* ---- STREAM-like read probe: the CPU roofline's bandwidth ---- */

typedef struct { const uint64_t *p; size_t n; uint64_t sum; } probe_arg;

/* Integer adds, which the compiler may reorder and vectorise: the loop is
 * bound by memory, not by an add chain. */
static void *probe_worker(void *a_) {
    probe_arg *a = a_;
    uint64_t s = 0;
    for (size_t i = 0; i < a->n; i++) s += a->p[i];
    a->sum = s;
    return NULL;
}

static double probe_cpu_read_gbps(int threads) {
    size_t bytes = (size_t)1 << 30, n = bytes / sizeof(uint64_t);
    uint64_t *buf = xmalloc(bytes);
    for (size_t i = 0; i < n; i++) buf[i] = i & 7;
    double best = 0;
    uint64_t total = 0;
    for (int rep = 0; rep < 12; rep++) { /* best of 12: the machine's bandwidth is shared */
        pthread_t th[256];
        probe_arg args[256];
        int nt = threads > 256 ? 256 : threads;
        double t0 = now_s();
        for (int i = 0; i < nt; i++) {
            args[i].p = buf + n / (size_t)nt * (size_t)i;
            args[i].n = n / (size_t)nt;
            pthread_create(&th[i], NULL, probe_worker, &args[i]);
        }
        for (int i = 0; i < nt; i++) {
            pthread_join(th[i], NULL);
            total += args[i].sum;
        }
        double gbps = (double)bytes / (now_s() - t0) / 1e9;
        if (gbps > best) best = gbps;
    }
    if (total == 42) fprintf(stderr, " "); /* keeps the sums alive */
    free(buf);
    return best;
}

/* A weight or bias tensor of a description, with its [E, N, C] shape. */
typedef struct { moe_tensor *t; int64_t N, C; int is_bias; } tensor_ref;

static int desc_tensors(moe_layer_desc *d, tensor_ref *r) {
    int n = 0;
    int64_t I = d->I, D = d->D;
#define ADD(field, n_, c_, b_) if (d->field.data) r[n++] = (tensor_ref){&d->field, n_, c_, b_}
    ADD(gate, I, D, 0); ADD(up, I, D, 0); ADD(gate_up, 2 * I, D, 0); ADD(down, D, I, 0);
    ADD(gate_bias, I, 1, 1); ADD(up_bias, I, 1, 1); ADD(gate_up_bias, 2 * I, 1, 1); ADD(down_bias, D, 1, 1);
#undef ADD
    return n;
}

/* Bytes from t->data to the end of its last element (default strides when 0). */
static size_t tensor_bytes(const moe_tensor *t, int64_t E, int64_t N, int64_t C) {
    int64_t se = t->stride_e, sn = t->stride_n, sc = t->stride_c;
    if (!se && !sn && !sc) { sc = 1; sn = C; se = N * C; }
    int64_t bs = moe_type_block_size(t->type), bb = moe_type_block_bytes(t->type);
    int64_t last = (E - 1) * se + (N - 1) * sn + (C - 1) * sc + 1; /* elements */
    return (size_t)((last + bs - 1) / bs * bb);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void usage(void) {
    printf("usage: moe-bench [--preset NAME] [--tokens T] [--dtype f32|f16|bf16] [--wtype TYPE]\n"
           "                 [--backend NAME] [--threads N] [--device cpu|cuda] [--cold] [--iters N]\n"
           "                 [--seconds S] [--check N] [--seed S] [--json FILE] [--peak-tflops X]\n"
           "       moe-bench --gguf FILE [--layer N] [same options]\n"
           "presets:");
    for (int i = 0; i < N_PRESETS; i++) printf(" %s", presets[i].name);
    printf("\n");
}

static void log_cb(moe_log_level level, const char *msg, void *user) {
    (void)user;
    static const char *names[] = {"debug", "info", "warn", "error"};
    fprintf(stderr, "[libmoe %s] %s\n", names[level < 4 ? level : 3], msg);
}

static float load_act(moe_type t, const void *p, int64_t i) {
    float f;
    moe_dequantize_row(t, (const char *)p + i * (t == MOE_TYPE_F32 ? 4 : 2), &f, 1);
    return f;
}

#define CHECKS(call)                                                                        \
    do {                                                                                    \
        moe_status s_ = (call);                                                             \
        if (s_) die("%s: %s", #call, moe_status_name(s_));                                  \
    } while (0)

#ifdef MOE_WITH_CUDA
#define CUDA_OK(call)                                                                       \
    do {                                                                                    \
        cudaError_t e_ = (call);                                                            \
        if (e_ != cudaSuccess) die("%s: %s", #call, cudaGetErrorString(e_));                \
    } while (0)
#endif

int main(int argc, char **argv) {
    const char *preset_name = "qwen3-30b-a3b", *backend = NULL, *json = NULL, *device = "cpu", *gguf_path = NULL;
    int gguf_layer = -1;
    moe_type dtype = MOE_TYPE_BF16, wtype = MOE_TYPE_BF16;
    int dtype_set = 0, wtype_set = 0, threads = 0, cold = 0, iters = 0, check = 16;
    int64_t T = 64;
    double seconds = 2.0, peak_tflops = 0;
    uint64_t seed = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define ARG(name) (strcmp(a, name) == 0 && (v || (die("%s needs a value", name), 0)) && ++i)
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) { usage(); return 0; }
        else if (strcmp(a, "--list") == 0) { usage(); return 0; }
        else if (strcmp(a, "--cold") == 0) cold = 1;
        else if (ARG("--preset")) preset_name = v;
        else if (ARG("--tokens")) T = atoll(v);
        else if (ARG("--dtype")) { dtype = parse_type(v); dtype_set = 1; }
        else if (ARG("--wtype")) { wtype = parse_type(v); wtype_set = 1; }
        else if (ARG("--backend")) backend = v;
        else if (ARG("--threads")) threads = atoi(v);
        else if (ARG("--device")) device = v;
        else if (ARG("--iters")) iters = atoi(v);
        else if (ARG("--seconds")) seconds = atof(v);
        else if (ARG("--check")) check = atoi(v);
        else if (ARG("--seed")) seed = strtoull(v, NULL, 10);
        else if (ARG("--json")) json = v;
        else if (ARG("--peak-tflops")) peak_tflops = atof(v);
        else if (ARG("--gguf")) gguf_path = v;
        else if (ARG("--layer")) gguf_layer = atoi(v);
        else { usage(); die("unknown argument '%s'", a); }
#undef ARG
    }
    const preset *P = NULL;
    for (int i = 0; i < N_PRESETS; i++)
        if (strcmp(presets[i].name, preset_name) == 0) P = &presets[i];
    if (!P) { usage(); die("unknown preset '%s'", preset_name); }
    if (T < 1) die("--tokens must be >= 1");
    int cuda = strcmp(device, "cuda") == 0;
    if (!cuda && strcmp(device, "cpu") != 0) die("--device must be cpu or cuda");
#ifndef MOE_WITH_CUDA
    if (cuda) die("--device cuda: this moe-bench was built without CUDA");
#endif
    if (!dtype_set) dtype = cuda ? MOE_TYPE_BF16 : MOE_TYPE_F32;
    if (!wtype_set) wtype = MOE_TYPE_BF16;
    rs = seed;

    /* The CPU roofline's bandwidth, measured before any library thread
     * exists (a thread pool that spins would take cores from the probe). */
    double mem_gbps = 0;
    if (!cuda) {
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        mem_gbps = probe_cpu_read_gbps(threads > 0 ? threads : (ncpu > 0 ? (int)ncpu : 1));
    }

    moe_ctx_params cp = moe_ctx_default_params();
    cp.n_threads = threads;
    cp.log = log_cb;
    cp.log_level = MOE_LOG_WARN;
    cp.device = cuda ? MOE_DEVICE_CUDA : MOE_DEVICE_CPU;
    moe_ctx *ctx;
    if (moe_ctx_create(&cp, &ctx)) die("moe_ctx_create: %s", moe_ctx_last_error(NULL));
    moe_ctx_params rp = moe_ctx_default_params();
    moe_ctx *rctx; /* the reference runs on the host */
    CHECKS(moe_ctx_create(&rp, &rctx));

    /* ---- the layer: a preset with seeded random weights, or a GGUF file ---- */
    moe_layer_desc d = moe_layer_desc_default();
    moe_route_params route = moe_route_params_default();
    moe_gguf *gf = NULL;
    moe_gguf_router grouter;
    void *owned[2] = {NULL, NULL}; /* generated host weights */
    float *bgu = NULL, *bd = NULL;
    char what[320];
    double t0 = now_s();
    if (gguf_path) {
        if (moe_gguf_open(gguf_path, &gf)) die("%s", moe_gguf_last_error(NULL));
        moe_gguf_layer_params gp = moe_gguf_layer_params_default();
        gp.act_type = dtype;
        if (gguf_layer < 0) { /* the first layer that has experts */
            moe_status st = MOE_ERR_NOT_FOUND;
            for (int l = 0; l < 4096 && st; l++)
                if (!(st = moe_gguf_layer_desc(gf, l, &gp, &d, &grouter))) gguf_layer = l;
            if (st) die("%s: no MoE layer found: %s", gguf_path, moe_gguf_last_error(gf));
        } else if (moe_gguf_layer_desc(gf, gguf_layer, &gp, &d, &grouter)) {
            die("%s layer %d: %s", gguf_path, gguf_layer, moe_gguf_last_error(gf));
        }
        route = grouter.route;
        const char *arch = "?";
        size_t alen;
        moe_gguf_get_string(gf, "general.architecture", &arch, &alen);
        snprintf(what, sizeof what, "%s layer %d (%s)", gguf_path, gguf_layer, arch);
        wtype = d.down.type;
    } else {
        d.E = P->E; d.D = P->D; d.I = P->I; d.K = P->K;
        d.act = P->act;
        int g = moe_act_is_gated(P->act);
        size_t nb;
        owned[0] = make_weight(d.E, g ? 2 * d.I : d.I, d.D, wtype, &nb);
        owned[1] = make_weight(d.E, d.D, d.I, wtype, &nb);
        if (P->bias) {
            bgu = xmalloc(sizeof(float) * (size_t)(d.E * 2 * d.I));
            bd = xmalloc(sizeof(float) * (size_t)(d.E * d.D));
            for (int64_t i = 0; i < d.E * 2 * d.I; i++) bgu[i] = (float)(0.1 * rnd_n());
            for (int64_t i = 0; i < d.E * d.D; i++) bd[i] = (float)(0.1 * rnd_n());
        }
        if (g) { /* one fused gate_up tensor, in the model's layout */
            d.layout = P->layout == MOE_GATE_UP_SEPARATE ? MOE_GATE_UP_CONCAT : P->layout;
            d.gate_up.data = owned[0];
            d.gate_up.type = wtype;
            if (bgu) { d.gate_up_bias.data = bgu; d.gate_up_bias.type = MOE_TYPE_F32; }
        } else {
            d.up.data = owned[0];
            d.up.type = wtype;
            if (bgu) { d.up_bias.data = bgu; d.up_bias.type = MOE_TYPE_F32; }
        }
        d.down.data = owned[1];
        d.down.type = wtype;
        if (bd) { d.down_bias.data = bd; d.down_bias.type = MOE_TYPE_F32; }
        route.E = d.E; route.K = d.K; route.score = P->score; route.renormalize = P->renorm;
        route.n_group = P->n_group; route.topk_group = P->topk_group; route.routed_scaling = P->scaling;
        snprintf(what, sizeof what, "preset %s", P->name);
    }
    d.act_type = dtype;
    int64_t D = d.D, I = d.I, E = d.E, K = d.K;
    int gated = moe_act_is_gated(d.act);
    /* every weight and bias tensor of the description, with its [E, N, C] */
    tensor_ref refs[8];
    int n_refs = desc_tensors(&d, refs);
    size_t layer_bytes = 0, expert_bytes = 0;
    for (int i = 0; i < n_refs; i++) {
        layer_bytes += tensor_bytes(refs[i].t, E, refs[i].N, refs[i].C);
        if (!refs[i].is_bias) expert_bytes += (size_t)(refs[i].N * moe_type_row_bytes(refs[i].t->type, refs[i].C));
    }
    printf("moe-bench: libmoe %s, %s: T=%lld D=%lld I=%lld E=%lld K=%lld act=%s, x %s, weights %s, %s\n",
           moe_version(), what, (long long)T, (long long)D, (long long)I, (long long)E, (long long)K,
           moe_act_name(d.act), moe_type_name(dtype), moe_type_name(wtype), cuda ? "cuda" : "cpu");
    fprintf(stderr, "moe-bench: %s %.2f GB of weights in %.1f s\n", gguf_path ? "mapped" : "made",
            (double)layer_bytes / 1e9, now_s() - t0);
    fflush(stdout);

    /* Copies of the layer for --cold so that the set exceeds caches; on a GPU
     * the weights are uploaded. */
    int copies = 1;
    if (cold && !cuda) {
        size_t want = (size_t)256 << 20;
        copies = layer_bytes >= want ? 1 : (int)((want + layer_bytes - 1) / layer_bytes);
        if (copies > 64) copies = 64;
    }
    moe_layer **layers = xmalloc(sizeof(moe_layer *) * (size_t)copies);
    void **bufs = xmalloc(sizeof(void *) * 8 * (size_t)copies);
    memset(bufs, 0, sizeof(void *) * 8 * (size_t)copies);
    for (int c = 0; c < copies; c++) {
        moe_layer_desc dc = d;
        dc.backend = backend;
        tensor_ref rc[8];
        desc_tensors(&dc, rc);
        for (int i = 0; i < n_refs; i++) {
            size_t nb = tensor_bytes(rc[i].t, E, rc[i].N, rc[i].C);
            if (cuda) {
#ifdef MOE_WITH_CUDA
                CUDA_OK(cudaMalloc(&bufs[8 * c + i], nb));
                CUDA_OK(cudaMemcpy(bufs[8 * c + i], rc[i].t->data, nb, cudaMemcpyHostToDevice));
                rc[i].t->mem = MOE_MEM_DEVICE;
#endif
            } else if (c > 0) { /* a fresh copy of the weights */
                bufs[8 * c + i] = xmalloc(nb);
                memcpy(bufs[8 * c + i], rc[i].t->data, nb);
            }
            if (bufs[8 * c + i]) rc[i].t->data = bufs[8 * c + i];
        }
        if (moe_layer_create(ctx, &dc, &layers[c])) die("moe_layer_create: %s", moe_ctx_last_error(ctx));
    }
    moe_layer *L = layers[0];
    char desc_line[512];
    moe_layer_describe(L, T, desc_line, sizeof desc_line);
    printf("backend: %s\n  %s\n", moe_layer_backend(L), desc_line);

    /* ---- inputs: x, and routing from router logits (random, or the file's router on x) ---- */
    int n_batches = cold ? 16 : 1;
    size_t asz = dtype == MOE_TYPE_F32 ? 4 : 2;
    size_t x_bytes = asz * (size_t)(T * D);
    char *x = xmalloc(x_bytes);
    float *xf = xmalloc(sizeof(float) * (size_t)(T * D));
    for (int64_t i = 0; i < T * D; i++) xf[i] = (float)rnd_n();
    CHECKS(moe_quantize_row(dtype, xf, x, T * D));
    moe_dequantize_row(dtype, x, xf, T * D); /* the router sees the x the layer sees */
    int32_t *ids = xmalloc(sizeof(int32_t) * (size_t)(T * K * n_batches));
    float *w = xmalloc(sizeof(float) * (size_t)(T * K * n_batches));
    {
        float *logits = xmalloc(sizeof(float) * (size_t)(T * E));
        for (int b = 0; b < n_batches; b++) {
            if (gf && b == 0) {
                if (moe_gguf_router_logits(&grouter, T, xf, logits)) die("router: %s", moe_gguf_last_error(NULL));
            } else {
                for (int64_t i = 0; i < T * E; i++) logits[i] = (float)rnd_n();
            }
            if (moe_route_topk(rctx, &route, T, logits, ids + (size_t)b * (size_t)(T * K),
                               w + (size_t)b * (size_t)(T * K)))
                die("moe_route_topk: %s", moe_ctx_last_error(rctx));
        }
        free(logits);
    }
    free(xf);
    /* bytes of the experts touched by the first batch: the memory roofline */
    int64_t touched = 0;
    {
        unsigned char *hit = calloc((size_t)E, 1);
        for (int64_t i = 0; i < T * K; i++) hit[ids[i]] = 1;
        for (int64_t e = 0; e < E; e++) touched += hit[e];
        free(hit);
    }
    double bytes_moved = (double)touched * (double)expert_bytes + 2.0 * (double)x_bytes;
    double flops = (gated ? 6.0 : 4.0) * (double)T * (double)K * (double)D * (double)I;

    size_t ws_bytes = 0;
    CHECKS(moe_layer_workspace_size(L, T, &ws_bytes));
    for (int c = 1; c < copies; c++) {
        size_t b;
        CHECKS(moe_layer_workspace_size(layers[c], T, &b));
        if (b > ws_bytes) ws_bytes = b;
    }
    char *out = xmalloc(x_bytes);
    void *x_p = x, *out_p = out, *ws_p = NULL, *ids_p = ids, *w_p = w;
#ifdef MOE_WITH_CUDA
    void *flush = NULL;
    size_t flush_bytes = 0;
#endif
    if (!cuda) ws_p = xmalloc(ws_bytes);
#ifdef MOE_WITH_CUDA
    cudaEvent_t ev0, ev1;
    if (cuda) {
        CUDA_OK(cudaMalloc(&x_p, x_bytes));
        CUDA_OK(cudaMalloc(&out_p, x_bytes));
        CUDA_OK(cudaMalloc(&ws_p, ws_bytes ? ws_bytes : 1));
        CUDA_OK(cudaMalloc(&ids_p, sizeof(int32_t) * (size_t)(T * K * n_batches)));
        CUDA_OK(cudaMalloc(&w_p, sizeof(float) * (size_t)(T * K * n_batches)));
        CUDA_OK(cudaMemcpy(x_p, x, x_bytes, cudaMemcpyHostToDevice));
        CUDA_OK(cudaMemcpy(ids_p, ids, sizeof(int32_t) * (size_t)(T * K * n_batches), cudaMemcpyHostToDevice));
        CUDA_OK(cudaMemcpy(w_p, w, sizeof(float) * (size_t)(T * K * n_batches), cudaMemcpyHostToDevice));
        int l2 = 0, dev = 0;
        CUDA_OK(cudaGetDevice(&dev));
        CUDA_OK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
        flush_bytes = (size_t)l2 * 2;
        CUDA_OK(cudaMalloc(&flush, flush_bytes));
        CUDA_OK(cudaEventCreate(&ev0));
        CUDA_OK(cudaEventCreate(&ev1));
    }
#endif

    /* ---- the roofline's bandwidth, measured in this run ---- */
#ifdef MOE_WITH_CUDA
    if (cuda) {
        /* device copy: bytes read + written per second */
        size_t nb = (size_t)1 << 30;
        void *a, *b;
        CUDA_OK(cudaMalloc(&a, nb));
        CUDA_OK(cudaMalloc(&b, nb));
        CUDA_OK(cudaMemset(a, 1, nb));
        float best = 1e30f;
        for (int r = 0; r < 10; r++) {
            float ms;
            CUDA_OK(cudaEventRecord(ev0, 0));
            CUDA_OK(cudaMemcpyAsync(b, a, nb, cudaMemcpyDeviceToDevice, 0));
            CUDA_OK(cudaEventRecord(ev1, 0));
            CUDA_OK(cudaEventSynchronize(ev1));
            CUDA_OK(cudaEventElapsedTime(&ms, ev0, ev1));
            if (ms < best) best = ms;
        }
        mem_gbps = 2.0 * (double)nb / (best * 1e-3) / 1e9;
        cudaFree(a);
        cudaFree(b);
    }
#endif
    if (peak_tflops <= 0) {
        /* Measured peaks (shared/ANCHORS.md): the 2-core Zen 5 development
         * machine's int8 VNNI 1.96 TOPS, bf16 dot 0.9 TFLOP/s, f32 FMA 0.4;
         * an H100/H200's bf16 matmul about 0.78 PFLOP/s. Override with
         * --peak-tflops on other machines. */
        if (cuda) peak_tflops = 780;
        else if (moe_type_block_size(wtype) > 1) peak_tflops = 1.96;
        else if (wtype == MOE_TYPE_F32) peak_tflops = 0.4;
        else peak_tflops = 0.9;
    }
    double roofline_us = fmax(flops / (peak_tflops * 1e12), bytes_moved / (mem_gbps * 1e9)) * 1e6;

    /* ---- timing ---- */
    int max_iters = iters > 0 ? iters : 100000;
    double *times = xmalloc(sizeof(double) * (size_t)max_iters);
    int n = 0;
    double start = now_s(), last_progress = start;
    for (int warm = 0; warm < 3 + n_batches; warm++) {
        int b = warm % n_batches;
        moe_status s = moe_layer_forward(layers[warm % copies], T, x_p, (int32_t *)ids_p + (size_t)b * (size_t)(T * K),
                                         (float *)w_p + (size_t)b * (size_t)(T * K), out_p, ws_p, ws_bytes);
        if (s) die("moe_layer_forward: %s", moe_layer_last_error(layers[warm % copies]));
    }
    while (n < max_iters && (iters > 0 || now_s() - start < seconds || n < 5)) {
        int b = n % n_batches, c = n % copies;
        int32_t *ib = (int32_t *)ids_p + (size_t)b * (size_t)(T * K);
        float *wb = (float *)w_p + (size_t)b * (size_t)(T * K);
        double dt;
#ifdef MOE_WITH_CUDA
        if (cuda) {
            float ms;
            CUDA_OK(cudaMemsetAsync(flush, n & 0xff, flush_bytes, 0)); /* L2 flush */
            CUDA_OK(cudaEventRecord(ev0, 0));
            moe_status s = moe_layer_forward(layers[c], T, x_p, ib, wb, out_p, ws_p, ws_bytes);
            CUDA_OK(cudaEventRecord(ev1, 0));
            if (s) die("moe_layer_forward: %s", moe_layer_last_error(layers[c]));
            CUDA_OK(cudaEventSynchronize(ev1));
            CUDA_OK(cudaEventElapsedTime(&ms, ev0, ev1));
            dt = ms * 1e-3;
        } else
#endif
        {
            double a = now_s();
            moe_status s = moe_layer_forward(layers[c], T, x_p, ib, wb, out_p, ws_p, ws_bytes);
            dt = now_s() - a;
            if (s) die("moe_layer_forward: %s", moe_layer_last_error(layers[c]));
        }
        times[n++] = dt;
        if (now_s() - last_progress > 5.0) {
            fprintf(stderr, "moe-bench: %d forwards timed...\n", n);
            last_progress = now_s();
        }
    }
    qsort(times, (size_t)n, sizeof(double), cmp_double);
    double med = times[n / 2];

    /* ---- check a sample of tokens (batch 0) against the reference ---- */
    int n_check = check < 0 ? 0 : (check > T ? (int)T : check);
    double max_rel = 0;
    if (n_check > 0) {
        moe_status s = moe_layer_forward(L, T, x_p, ids_p, w_p, out_p, ws_p, ws_bytes);
        if (s) die("moe_layer_forward: %s", moe_layer_last_error(L));
#ifdef MOE_WITH_CUDA
        if (cuda) CUDA_OK(cudaMemcpy(out, out_p, x_bytes, cudaMemcpyDeviceToHost));
#endif
        moe_layer_desc rd = d;
        rd.backend = "ref";
        moe_layer *R;
        const char *env = getenv("MOE_BACKEND");
        if (env) unsetenv("MOE_BACKEND");
        if (moe_layer_create(rctx, &rd, &R)) die("reference layer: %s", moe_ctx_last_error(rctx));
        char *xs = xmalloc(asz * (size_t)D), *rs_out = xmalloc(asz * (size_t)D);
        size_t rws;
        CHECKS(moe_layer_workspace_size(R, 1, &rws));
        void *rw = xmalloc(rws);
        for (int j = 0; j < n_check; j++) {
            int64_t t = n_check == 1 ? 0 : (int64_t)j * (T - 1) / (n_check - 1);
            memcpy(xs, x + (size_t)t * (size_t)D * asz, asz * (size_t)D);
            CHECKS(moe_layer_forward(R, 1, xs, ids + t * K, w + t * K, rs_out, rw, rws));
            double num = 0, den = 0;
            for (int64_t c = 0; c < D; c++) {
                double a = load_act(dtype, out, t * D + c), b = load_act(dtype, rs_out, c);
                num += (a - b) * (a - b);
                den += b * b;
            }
            double rel = den > 0 ? sqrt(num / den) : sqrt(num);
            if (isnan(rel) || rel > max_rel) max_rel = isnan(rel) ? INFINITY : rel;
        }
        free(xs); free(rs_out); free(rw);
        moe_layer_free(R);
    }
    double tflops = flops / med / 1e12;
    double wgbps = (double)touched * (double)expert_bytes / med / 1e9;
    double limit = moe_type_block_size(wtype) > 1 ? 3e-2 : (dtype == MOE_TYPE_F32 && wtype == MOE_TYPE_F32 ? 1e-4 : 1e-2);
    int ok = n_check == 0 || max_rel <= limit;

    printf("\n%-22s %s\n", "backend", moe_layer_backend(L));
    printf("%-22s %d\n", "threads", moe_ctx_n_threads(ctx));
    printf("%-22s %d%s\n", "forwards timed", n, cold ? " (cold: rotating routings and layer copies)" : "");
    printf("%-22s %.1f us\n", "median per forward", med * 1e6);
    printf("%-22s %.3f TFLOP/s (%.0f GFLOP/s)\n", "compute", tflops, tflops * 1e3);
    printf("%-22s %.1f GB/s over %lld touched experts (%.1f MB)\n", "weights streamed", wgbps, (long long)touched,
           (double)touched * (double)expert_bytes / 1e6);
    printf("%-22s %.1f GB/s (%s)\n", "memory probe", mem_gbps, cuda ? "device copy, read+write" : "host read");
    printf("%-22s %.1f us = max(%.0f GFLOP / %.2f TFLOP/s, %.1f MB / %.1f GB/s)\n", "roofline", roofline_us,
           flops / 1e9, peak_tflops, bytes_moved / 1e6, mem_gbps);
    printf("%-22s %.1f%%\n", "share of roofline", 100.0 * roofline_us / (med * 1e6));
    printf("%-22s %d tokens, max relative L2 error %.2e (limit %.0e): %s\n", "check vs reference", n_check, max_rel,
           limit, ok ? "OK" : "FAILED");

    if (json) {
        FILE *f = fopen(json, "a");
        if (!f) die("cannot open %s", json);
        fprintf(f,
                "{\"preset\": \"%s\", \"T\": %lld, \"D\": %lld, \"I\": %lld, \"E\": %lld, \"K\": %lld, "
                "\"dtype\": \"%s\", \"wtype\": \"%s\", \"backend\": \"%s\", \"device\": \"%s\", \"threads\": %d, "
                "\"cold\": %s, \"iters\": %d, \"median_us\": %.3f, \"min_us\": %.3f, \"tflops\": %.5f, "
                "\"weight_gbps\": %.3f, \"touched_experts\": %lld, \"roofline_us\": %.3f, \"roofline_fraction\": %.4f, "
                "\"mem_gbps_probe\": %.3f, \"peak_tflops\": %.3f, \"max_rel_err\": %.3e, \"check_tokens\": %d, "
                "\"describe\": \"%s\", \"version\": \"%s\"}\n",
                gguf_path ? what : P->name, (long long)T, (long long)D, (long long)I, (long long)E, (long long)K, moe_type_name(dtype),
                moe_type_name(wtype), moe_layer_backend(L), cuda ? "cuda" : "cpu", moe_ctx_n_threads(ctx),
                cold ? "true" : "false", n, med * 1e6, times[0] * 1e6, tflops, wgbps, (long long)touched, roofline_us,
                roofline_us / (med * 1e6), mem_gbps, peak_tflops, max_rel, n_check, desc_line, moe_version());
        fclose(f);
    }

    for (int c = 0; c < copies; c++) moe_layer_free(layers[c]);
#ifdef MOE_WITH_CUDA
    if (cuda) {
        for (int i = 0; i < 8 * copies; i++) cudaFree(bufs[i]);
        cudaFree(x_p); cudaFree(out_p); cudaFree(ws_p); cudaFree(ids_p); cudaFree(w_p); cudaFree(flush);
    } else
#endif
    {
        for (int i = 0; i < 8 * copies; i++) free(bufs[i]);
        free(ws_p);
    }
    free(layers); free(bufs); free(times);
    free(owned[0]); free(owned[1]); free(bgu); free(bd); free(x); free(ids); free(w); free(out);
    moe_gguf_close(gf);
    moe_ctx_free(ctx);
    moe_ctx_free(rctx);
    return ok ? 0 : 1;
}
