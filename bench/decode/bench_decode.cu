/*
 * Decode benchmark: one process, every preset and T, weights made on the
 * device (a pool of rows replicated by a kernel, so deepseek-v3's 22 GB take
 * milliseconds), L2 flushed before each timed forward, CUDA events, median.
 * Reports time, touched-weight GB/s and the share of the HBM read bandwidth
 * measured in the same run (a large read-only sum). moe-bench does the same
 * per (preset, T) with host-made weights; this driver exists because a lease
 * of the GPU is minutes long.
 *
 *   nvcc -O2 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Iinclude bench/decode/bench_decode.cu \
 *        build-gpu/libmoe_internal.a -lcuda -o build-gpu/bench_decode
 *   build-gpu/bench_decode [--json FILE] [--dense [--default]] [--quant] [--cross] [--only PRESET[,PRESET]] [--tokens T]
 *                          [--qtypes q4_K,q8_0,...] [--qtokens 1,2,4,8,16] [--dtokens 1,2,...] [--ctokens 4,8,...] [--no-kdec] [--no-i8]
 *                          [--reps N] [--routings N] [--probe] [--warm-code] [--place N] [--describe]
 * --quant runs qwen3-30b-a3b and gpt-oss-20b, or with --only any preset (the K-quants
 * where D and I are multiples of 256), the types of --qtypes (default Q4_K, Q6_K, Q8_0, MXFP4;
 * Q4_0, Q5_K, Q3_K, Q2_K where named), at the
 * T of --qtokens (default 1, 2, 4, 8, 16).
 * --dense runs T = 1, 2, 4, 8, 16, 32, 64 (or those of --dtokens) with the streaming
 * kernels ("stream") and the mma kernels ("kdec"); --no-kdec (dense and quant) skips
 * the mma kernels. --quant adds, for Q8_0, Q4_K, Q6_K and MXFP4, cuda-quant's int8 tensor-core
 * kernels at every T ("i8", no prefill path; --no-i8 skips them); "kdec" there is k_dec
 * (MOE_QUANT_I8=0).
 * --cross times the grouped GEMM backends (and, past 64, the decode kernels) at T = 4 .. 512 (or those
 * of --ctokens).
 * --default adds, for --dense and --quant, the layer a user gets without variables ("default":
 * streaming or mma kernels by T, the grouped GEMM above the hand-over).
 * --warm-code runs, between the L2 flush and each timed forward, a forward routed to the experts the
 * timed one does not touch (where 2 T K <= E): code, x, ids and workspace in L2, the weights not.
 * --prefill [--prefill-tokens 512,4096] [--prefill-decode] [--prefill-nodeq] times GGUF layers at
 * prefill sizes against bf16 weights: cuda-quant's prefill path forced, on the GGUF blocks
 * ("prefill-gguf") and dequantising ("prefill-dequant"; --prefill-rule adds the layer's own choice
 * between the two by T, "prefill-rule"); types Q4_K and Q8_0 (MXFP4 and Q8_0
 * on gpt-oss) by default, Q5_K, Q6_K, "q4_K/q6_K" (gate/up Q4_K, down Q6_K), Q4_0, Q2_K, Q3_K
 * and "q3_K/q4_K" where --qtypes names them.
 */
#include "moe.h"

#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <algorithm>
#include <vector>

#define CK(x)                                                                                 \
    do {                                                                                      \
        cudaError_t e_ = (x);                                                                 \
        if (e_ != cudaSuccess) {                                                              \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(1);                                                                          \
        }                                                                                     \
    } while (0)

struct preset {
    const char *name;
    int64_t D, I, E, K;
    moe_act act;
    moe_gate_up_layout layout;
    int bias;
};
static const preset presets[] = {
    {"qwen3-30b-a3b", 2048, 768, 128, 8, MOE_ACT_SWIGLU, MOE_GATE_UP_CONCAT, 0},
    {"mixtral-8x7b", 4096, 14336, 8, 2, MOE_ACT_SWIGLU, MOE_GATE_UP_CONCAT, 0},
    {"deepseek-v3", 7168, 2048, 256, 8, MOE_ACT_SWIGLU, MOE_GATE_UP_CONCAT, 0},
    {"gpt-oss-20b", 2880, 2880, 32, 4, MOE_ACT_SWIGLU_OAI, MOE_GATE_UP_INTERLEAVED, 1},
    {"gpt-oss-120b", 2880, 2880, 128, 4, MOE_ACT_SWIGLU_OAI, MOE_GATE_UP_INTERLEAVED, 1},
};

static __device__ uint32_t hash32(uint64_t x) {
    x ^= x >> 33; x *= 0xff51afd7ed558ccdull; x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ull; x ^= x >> 33;
    return (uint32_t)x;
}
/* dst rows [n_rows] of rb bytes <- pool rows [64] picked by hash */
static __global__ void k_replicate(uint8_t *dst, const uint8_t *pool, int64_t n_rows, int64_t rb, uint64_t seed) {
    int64_t words = rb / 2;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n_rows * words; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = i / words, w = i - r * words;
        uint32_t p = hash32(seed * 1000003u + (uint64_t)r) % 64;
        ((uint16_t *)dst)[i] = ((const uint16_t *)(pool + p * rb))[w];
    }
}
static __global__ void k_sum(const uint4 *p, int64_t n, unsigned *out) {
    unsigned s = 0;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        uint4 v = p[i];
        s ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (s == 0x12345678u) *out = s;
}

static float rnd_u(void) { return (float)rand() / (float)RAND_MAX; }
static float rnd_n(void) {
    float u = rnd_u() + 1e-7f, v = rnd_u();
    return sqrtf(-2 * logf(u)) * cosf(6.2831853f * v);
}

/* a device tensor [E, N, C] of type t from a pool of 64 random rows */
static void *make_weight(int64_t E, int64_t N, int64_t C, moe_type t, uint64_t seed, size_t *bytes) {
    int64_t rb = moe_type_row_bytes(t, C);
    std::vector<uint8_t> pool((size_t)(64 * rb));
    std::vector<float> row((size_t)C);
    for (int p = 0; p < 64; p++) {
        for (int64_t c = 0; c < C; c++) row[c] = rnd_n() / sqrtf((float)C);
        if (moe_quantize_row(t, row.data(), pool.data() + p * rb, C)) { fprintf(stderr, "quantize failed\n"); exit(1); }
    }
    uint8_t *dpool, *d;
    *bytes = (size_t)(E * N * rb);
    CK(cudaMalloc(&dpool, pool.size()));
    CK(cudaMalloc(&d, *bytes));
    CK(cudaMemcpy(dpool, pool.data(), pool.size(), cudaMemcpyHostToDevice));
    k_replicate<<<4096, 256>>>(d, dpool, E * N, rb, seed);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    cudaFree(dpool);
    return d;
}

static FILE *jf;
static double read_bw;
static int g_reps = 0;
static char gpu[256];
static int g_probe;
/* --warm-code: a forward routed to other experts between the L2 flush and the timed forward (where
 * 2 T K <= E), so that the kernels' code, x, the ids and the workspace are in L2 but the timed
 * experts' weights are not: how much of a forward is its code and small data coming from HBM */
static int g_warm_code;
/* --describe: the layer's describe line at every T timed (else at T = 1) */
static int g_describe;
static void *flush_buf;
static size_t flush_bytes;
static unsigned *flush_sink;
static const char *only_preset, *only_qtypes, *qtokens, *dtokens, *ctokens; /* --only PRESET; --qtypes q4_K,..., --qtokens / --dtokens / --ctokens 16,32,... */

/* whether comma-separated list `list` has item `name` */
static int in_list(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *c = list; c && *c;) {
        const char *e = strchr(c, ',');
        size_t l = e ? (size_t)(e - c) : strlen(c);
        if (l == n && !strncmp(c, name, n)) return 1;
        c = e ? e + 1 : c + l;
    }
    return 0;
}
/* --only: a preset name or a comma-separated list of them */
static int named(const char *name) { return in_list(only_preset, name); }

/* "1,2,16" -> {1, 2, 16}; NULL -> def */
static std::vector<int64_t> token_list(const char *s, std::vector<int64_t> def) {
    if (!s) return def;
    std::vector<int64_t> v;
    for (const char *c = s; *c;) {
        v.push_back(strtoll(c, (char **)&c, 10));
        if (*c == ',') c++;
        else break;
    }
    return v;
}
static int64_t only_T;
static const char *prefill_tokens; /* --prefill-tokens 512,4096: the T of --prefill (default below) */
static int prefill_decode;         /* --prefill-decode: --prefill times the decode kernels too */
static int prefill_nodeq;          /* --prefill-nodeq: --prefill without the dequantising path's rows */
static int prefill_rule;           /* --prefill-rule: --prefill with the layer's own choice between the two */

struct timing { double med, mn; };

static void bench_log(moe_log_level level, const char *msg, void *user) {
    (void)user;
    fprintf(stderr, "[libmoe %d] %s\n", (int)level, msg);
}

/* median forward time (us) of layer L at T with fresh routing; touched gets the experts used */
static timing time_fwd1(moe_layer *L, const preset &P, int64_t T, int reps, int64_t *touched, size_t off = 0) {
    int64_t K = P.K, E = P.E, D = P.D;
    std::vector<int32_t> ids((size_t)(T * K));
    std::vector<float> w((size_t)(T * K));
    std::vector<uint16_t> x((size_t)(T * D));
    std::vector<char> hit((size_t)E, 0);
    std::vector<int32_t> perm((size_t)E);
    for (int64_t t = 0; t < T; t++) {
        for (int64_t e = 0; e < E; e++) perm[e] = (int32_t)e;
        float s = 0;
        for (int64_t k = 0; k < K; k++) {
            int64_t j = k + rand() % (E - k);
            std::swap(perm[k], perm[j]);
            ids[t * K + k] = perm[k];
            hit[perm[k]] = 1;
            w[t * K + k] = rnd_u() + 0.1f;
            s += w[t * K + k];
        }
        for (int64_t k = 0; k < K; k++) w[t * K + k] /= s;
    }
    for (auto &v : x) {
        float f = rnd_n();
        uint32_t u;
        memcpy(&u, &f, 4);
        v = (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
    }
    *touched = 0;
    for (int64_t e = 0; e < E; e++) *touched += hit[e];
    std::vector<int32_t> wids;
    if (g_warm_code && 2 * T * K <= E) { /* the experts the timed forward does not touch, each token K distinct */
        std::vector<int32_t> cold;
        for (int64_t e = 0; e < E; e++)
            if (!hit[e]) cold.push_back((int32_t)e);
        for (int64_t i = 0; i < T * K; i++) wids.push_back(cold[(size_t)i % cold.size()]);
    }
    void *dx, *dout, *dids, *dw, *ws = NULL, *dwids = NULL;
    size_t wsb = 0;
    if (moe_layer_workspace_size(L, T, &wsb)) { fprintf(stderr, "ws: %s\n", moe_layer_last_error(L)); exit(1); }
    void *bx, *bout, *bids, *bw, *bws; /* the allocations; the buffers start off bytes in (--place) */
    CK(cudaMalloc(&bx, x.size() * 2 + off)); CK(cudaMalloc(&bout, x.size() * 2 + off));
    CK(cudaMalloc(&bids, ids.size() * 4 + off)); CK(cudaMalloc(&bw, w.size() * 4 + off));
    CK(cudaMalloc(&bws, (wsb ? wsb : 1) + off));
    dx = (char *)bx + off; dout = (char *)bout + off; dids = (char *)bids + off; dw = (char *)bw + off;
    ws = (char *)bws + off;
    CK(cudaMemcpy(dx, x.data(), x.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dids, ids.data(), ids.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dw, w.data(), w.size() * 4, cudaMemcpyHostToDevice));
    if (!wids.empty()) {
        CK(cudaMalloc(&dwids, wids.size() * 4));
        CK(cudaMemcpy(dwids, wids.data(), wids.size() * 4, cudaMemcpyHostToDevice));
    }
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
    std::vector<double> ts;
    if (g_reps) reps = g_reps;
    for (int r = 0; r < reps + 3; r++) {
        /* flush L2 by reading (a memset would leave dirty lines whose write-back lands in the timed forward) */
        k_sum<<<264, 512, 0, 0>>>((const uint4 *)flush_buf, (int64_t)(flush_bytes / 16), flush_sink);
        if (dwids && moe_layer_forward(L, T, dx, (int32_t *)dwids, (float *)dw, dout, ws, wsb)) {
            fprintf(stderr, "forward: %s\n", moe_layer_last_error(L));
            exit(1);
        }
        CK(cudaEventRecord(a, 0));
        moe_status s = moe_layer_forward(L, T, dx, (int32_t *)dids, (float *)dw, dout, ws, wsb);
        CK(cudaEventRecord(b, 0));
        if (s) { fprintf(stderr, "forward: %s\n", moe_layer_last_error(L)); exit(1); }
        CK(cudaEventSynchronize(b));
        float ms;
        CK(cudaEventElapsedTime(&ms, a, b));
        if (r >= 3) ts.push_back(ms * 1e3);
    }
    std::sort(ts.begin(), ts.end());
    cudaFree(bx); cudaFree(bout); cudaFree(bids); cudaFree(bw); cudaFree(bws);
    if (dwids) cudaFree(dwids);
    cudaEventDestroy(a); cudaEventDestroy(b);
    return {ts[ts.size() / 2], ts[0]};
}

/* --routings N: the mean over N routings drawn one after the other (the same
 * draws for every layer timed after the same srand) of the median forward
 * time; touched gets the mean experts used, rounded. One routing is one
 * sample of how many experts a forward touches, which decides how well a
 * launch's blocks fill the GPU. */
static int g_routings = 1;
/* --place N: each routing timed N times with the buffers (x, out, ids, weights of the routing,
 * workspace) starting r (1 MB + 4 KB) into their allocations, r = 0 .. N-1, each time printed:
 * how much a forward depends on where its small buffers fall in L2 and HBM */
static int g_place = 0;
static timing time_fwd(moe_layer *L, const preset &P, int64_t T, int reps, int64_t *touched) {
    timing sum = {0.0, 0.0};
    int64_t tsum = 0;
    if (g_place > 0) {
        const unsigned seed = (unsigned)rand();
        std::vector<double> m;
        for (int r = 0; r < g_place; r++) {
            srand(seed);
            int64_t t1 = 0;
            m.push_back(time_fwd1(L, P, T, reps, &t1, (size_t)r * ((1u << 20) + 4096)).med);
            tsum = t1;
        }
        printf("place %s T=%lld:", P.name, (long long)T);
        for (double v : m) printf(" %.1f", v);
        printf("\n");
        std::sort(m.begin(), m.end());
        *touched = tsum;
        return {m[m.size() / 2], m[0]};
    }
    for (int r = 0; r < g_routings; r++) {
        int64_t t1 = 0;
        const timing t = time_fwd1(L, P, T, reps, &t1);
        sum.med += t.med / g_routings;
        sum.mn += t.mn / g_routings;
        tsum += t1;
    }
    *touched = (tsum + g_routings / 2) / g_routings;
    return sum;
}

struct layer_set {
    void *gu, *down, *bgu, *bd;
    size_t expert_bytes;
    moe_type dt; /* down's type */
};

/* gate/up in wt, down in dt (MOE_TYPE_F32: wt) */
static layer_set make_layer_weights(const preset &P, moe_type wt, moe_type dt = MOE_TYPE_F32) {
    layer_set s;
    memset(&s, 0, sizeof s);
    size_t b1, b2;
    s.dt = dt == MOE_TYPE_F32 ? wt : dt;
    s.gu = make_weight(P.E, 2 * P.I, P.D, wt, 11, &b1);
    s.down = make_weight(P.E, P.D, P.I, s.dt, 12, &b2);
    s.expert_bytes = (b1 + b2) / (size_t)P.E;
    if (P.bias) {
        std::vector<float> bg((size_t)(P.E * 2 * P.I)), bd((size_t)(P.E * P.D));
        for (auto &v : bg) v = 0.1f * rnd_n();
        for (auto &v : bd) v = 0.1f * rnd_n();
        CK(cudaMalloc(&s.bgu, bg.size() * 4)); CK(cudaMalloc(&s.bd, bd.size() * 4));
        CK(cudaMemcpy(s.bgu, bg.data(), bg.size() * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(s.bd, bd.data(), bd.size() * 4, cudaMemcpyHostToDevice));
    }
    return s;
}

static moe_layer *make_layer(moe_ctx *ctx, const preset &P, moe_type wt, const layer_set &s, const char *backend) {
    moe_layer_desc d = moe_layer_desc_default();
    d.E = P.E; d.D = P.D; d.I = P.I; d.K = P.K;
    d.act = P.act;
    d.layout = P.layout;
    d.act_type = MOE_TYPE_BF16;
    d.gate_up.data = s.gu; d.gate_up.type = wt; d.gate_up.mem = MOE_MEM_DEVICE;
    d.down.data = s.down; d.down.type = s.dt; d.down.mem = MOE_MEM_DEVICE;
    if (s.bgu) {
        d.gate_up_bias.data = s.bgu; d.gate_up_bias.type = MOE_TYPE_F32; d.gate_up_bias.mem = MOE_MEM_DEVICE;
        d.down_bias.data = s.bd; d.down_bias.type = MOE_TYPE_F32; d.down_bias.mem = MOE_MEM_DEVICE;
    }
    d.backend = backend;
    moe_layer *L = NULL;
    if (moe_layer_create(ctx, &d, &L)) {
        printf("  (%s: %s)\n", backend, moe_ctx_last_error(ctx));
        return NULL;
    }
    return L;
}

static void report(const preset &P, moe_type wt, const char *variant, moe_layer *L, int64_t T, timing tm,
                   int64_t touched, size_t expert_bytes) {
    double bytes = (double)touched * (double)expert_bytes + 4.0 * (double)(T * P.D);
    double gbps = bytes / (tm.med * 1e-6) / 1e9;
    char desc[4096];
    moe_layer_describe(L, T, desc, sizeof desc);
    printf("%-14s %-6s %-14s T=%4lld  %9.1f us  %7.1f GB/s  %5.1f%% of read  (%lld experts, %.1f MB)\n", P.name,
           moe_type_name(wt), variant, (long long)T, tm.med, gbps, 100.0 * gbps / read_bw, (long long)touched,
           bytes / 1e6);
    if (T == 1 || g_describe) printf("    %s\n", desc);
    else if (strstr(desc, "; at this T")) printf("    %s\n", strstr(desc, "; at this T") + 2); /* the plan at this T */
    if (jf)
        fprintf(jf,
                "{\"gpu\": \"%s\", \"preset\": \"%s\", \"wtype\": \"%s\", \"variant\": \"%s\", \"backend\": \"%s\", "
                "\"T\": %lld, \"median_us\": %.2f, \"min_us\": %.2f, \"bytes\": %.0f, \"gbps\": %.1f, "
                "\"read_bw_gbps\": %.1f, \"pct_read_bw\": %.1f}\n",
                gpu, P.name, moe_type_name(wt), variant, moe_layer_backend(L), (long long)T, tm.med, tm.mn, bytes,
                gbps, read_bw, 100.0 * gbps / read_bw);
    fflush(stdout);
}

int main(int argc, char **argv) {
    int dense = 0, quant = 0, cross = 0, prefill = 0, dense_default = 0, no_kdec = 0, no_i8 = 0;
    const char *json = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
        else if (!strcmp(argv[i], "--dense")) dense = 1;
        else if (!strcmp(argv[i], "--quant")) quant = 1;
        else if (!strcmp(argv[i], "--default")) dense_default = 1;
        else if (!strcmp(argv[i], "--cross")) cross = 1;
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) only_preset = argv[++i];
        else if (!strcmp(argv[i], "--qtypes") && i + 1 < argc) only_qtypes = argv[++i];
        else if (!strcmp(argv[i], "--qtokens") && i + 1 < argc) qtokens = argv[++i];
        else if (!strcmp(argv[i], "--dtokens") && i + 1 < argc) dtokens = argv[++i];
        else if (!strcmp(argv[i], "--ctokens") && i + 1 < argc) ctokens = argv[++i];
        else if (!strcmp(argv[i], "--no-kdec")) no_kdec = 1;
        else if (!strcmp(argv[i], "--no-i8")) no_i8 = 1;
        else if (!strcmp(argv[i], "--tokens") && i + 1 < argc) only_T = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) g_reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--routings") && i + 1 < argc) g_routings = atoi(argv[++i]) > 0 ? atoi(argv[i]) : 1;
        else if (!strcmp(argv[i], "--probe")) g_probe = 1;
        else if (!strcmp(argv[i], "--warm-code")) g_warm_code = 1;
        else if (!strcmp(argv[i], "--describe")) g_describe = 1;
        else if (!strcmp(argv[i], "--place") && i + 1 < argc) g_place = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--prefill")) prefill = 1;
        else if (!strcmp(argv[i], "--prefill-decode")) prefill_decode = 1;
        else if (!strcmp(argv[i], "--prefill-nodeq")) prefill_nodeq = 1;
        else if (!strcmp(argv[i], "--prefill-rule")) prefill_rule = 1;
        else if (!strcmp(argv[i], "--prefill-tokens") && i + 1 < argc) prefill_tokens = argv[++i];
    }
    if (!dense && !quant && !cross && !prefill) dense = quant = cross = 1;
    if (json) jf = fopen(json, "a");
    srand(1);
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    snprintf(gpu, sizeof gpu, "%s", prop.name);
    flush_bytes = (size_t)prop.l2CacheSize * 4;
    CK(cudaMalloc(&flush_buf, flush_bytes));
    CK(cudaMemset(flush_buf, 3, flush_bytes));
    CK(cudaMalloc(&flush_sink, 4));
    {   /* HBM read bandwidth: read-only pass over 4 GiB */
        size_t n = (size_t)4 << 30;
        void *p;
        unsigned *o;
        CK(cudaMalloc(&p, n)); CK(cudaMalloc(&o, 4));
        CK(cudaMemset(p, 1, n));
        cudaEvent_t a, b;
        cudaEventCreate(&a); cudaEventCreate(&b);
        float best = 1e30f;
        for (int r = 0; r < 6; r++) {
            cudaEventRecord(a);
            k_sum<<<prop.multiProcessorCount * 8, 512>>>((const uint4 *)p, (int64_t)(n / 16), o);
            cudaEventRecord(b);
            CK(cudaEventSynchronize(b));
            float ms;
            cudaEventElapsedTime(&ms, a, b);
            if (r && ms < best) best = ms;
        }
        read_bw = n / (best * 1e-3) / 1e9;
        if (g_probe) { /* the floor for reading X MB in one kernel after an L2 flush */
            static const double mbs[] = {12.5, 25, 50, 75, 150, 400};
            for (double mb : mbs) {
                size_t nb = (size_t)(mb * 1e6) & ~(size_t)15;
                std::vector<float> ts;
                for (int r = 0; r < 23; r++) {
                    k_sum<<<264, 512, 0, 0>>>((const uint4 *)flush_buf, (int64_t)(flush_bytes / 16), flush_sink);
                    cudaEventRecord(a);
                    k_sum<<<prop.multiProcessorCount * 8, 512>>>((const uint4 *)p, (int64_t)(nb / 16), o);
                    cudaEventRecord(b);
                    CK(cudaEventSynchronize(b));
                    float ms;
                    cudaEventElapsedTime(&ms, a, b);
                    if (r >= 3) ts.push_back(ms * 1e3f);
                }
                std::sort(ts.begin(), ts.end());
                printf("probe: read %.1f MB in one kernel: %.1f us (%.0f GB/s)\n", mb, ts[ts.size() / 2],
                       nb / (ts[ts.size() / 2] * 1e-6) / 1e9);
            }
        }
        cudaFree(p); cudaFree(o);
        printf("GPU %s, %d SMs, L2 %d MB; HBM read %.0f GB/s\n", gpu, prop.multiProcessorCount, prop.l2CacheSize >> 20,
               read_bw);
    }
    moe_ctx_params cp = moe_ctx_default_params();
    cp.device = MOE_DEVICE_CUDA;
    cp.log = bench_log; /* the library's own lines, at the level MOE_LOG sets */
    moe_ctx *ctx;
    if (moe_ctx_create(&cp, &ctx)) { fprintf(stderr, "ctx\n"); return 1; }

    if (dense) {
        const std::vector<int64_t> Ts = token_list(dtokens, {1, 2, 4, 8, 16, 32, 64});
        for (const preset &P : presets) {
            if (only_preset && !named(P.name)) continue;
            layer_set s = make_layer_weights(P, MOE_TYPE_BF16);
            setenv("MOE_DECODE_MAX_T", "-1", 1); /* our kernels at every T */
            setenv("MOE_DECODE_STREAM", "1", 1);  /* the streaming kernels wherever they fit */
            moe_layer *L = make_layer(ctx, P, MOE_TYPE_BF16, s, "cuda-decode");
            setenv("MOE_DECODE_STREAM", "0", 1);  /* the mma kernels (k_dec) */
            moe_layer *Lk = no_kdec ? NULL : make_layer(ctx, P, MOE_TYPE_BF16, s, "cuda-decode");
            unsetenv("MOE_DECODE_STREAM");
            unsetenv("MOE_DECODE_MAX_T");
            /* what a user gets: no variables (streaming or mma kernels by T, the
             * grouped GEMM above the hand-over) */
            moe_layer *Ldef = dense_default ? make_layer(ctx, P, MOE_TYPE_BF16, s, "cuda-decode") : NULL;
            for (int64_t T : Ts) {
                if (only_T && T != only_T) continue;
                int64_t touched;
                srand(1000 + (int)T);
                timing tm = time_fwd(L, P, T, 30, &touched);
                report(P, MOE_TYPE_BF16, "stream", L, T, tm, touched, s.expert_bytes);
                if (Lk) {
                    srand(1000 + (int)T);
                    tm = time_fwd(Lk, P, T, 30, &touched);
                    report(P, MOE_TYPE_BF16, "kdec", Lk, T, tm, touched, s.expert_bytes);
                }
                if (Ldef) {
                    srand(1000 + (int)T);
                    tm = time_fwd(Ldef, P, T, 30, &touched);
                    report(P, MOE_TYPE_BF16, "default", Ldef, T, tm, touched, s.expert_bytes);
                }
            }
            moe_layer_free(Ldef);
            if (cross) { /* the crossover with the grouped GEMM backend */
                const std::vector<int64_t> Tc = token_list(ctokens, {4, 8, 16, 32, 64, 128, 256, 512});
                setenv("MOE_DECODE_MAX_T", "-1", 1);
                moe_layer *Ld = L;
                moe_layer *G = make_layer(ctx, P, MOE_TYPE_BF16, s, "cuda-sm90");
                moe_layer *J = make_layer(ctx, P, MOE_TYPE_BF16, s, "cuda-jit");
                unsetenv("MOE_DECODE_MAX_T");
                for (int64_t T : Tc) {
                    if (only_T && T != only_T) continue;
                    int64_t touched;
                    if (T > 64) {
                        srand(1000 + (int)T);
                        timing tm = time_fwd(Ld, P, T, 15, &touched);
                        report(P, MOE_TYPE_BF16, "decode", Ld, T, tm, touched, s.expert_bytes);
                    }
                    if (G) {
                        srand(1000 + (int)T);
                        timing tm = time_fwd(G, P, T, 15, &touched);
                        report(P, MOE_TYPE_BF16, "gemm-sm90", G, T, tm, touched, s.expert_bytes);
                    }
                    if (J) {
                        srand(1000 + (int)T);
                        timing tm = time_fwd(J, P, T, 15, &touched);
                        report(P, MOE_TYPE_BF16, "gemm-jit", J, T, tm, touched, s.expert_bytes);
                    }
                }
                moe_layer_free(G);
                moe_layer_free(J);
            }
            moe_layer_free(L);
            moe_layer_free(Lk);
            cudaFree(s.gu); cudaFree(s.down); cudaFree(s.bgu); cudaFree(s.bd);
        }
    }
    if (quant) {
        /* the issue's four by default; the other GGUF types where --qtypes names them */
        static const moe_type qt[] = {MOE_TYPE_Q4_K, MOE_TYPE_Q6_K, MOE_TYPE_Q8_0, MOE_TYPE_MXFP4,
                                      MOE_TYPE_Q4_0, MOE_TYPE_Q5_K, MOE_TYPE_Q3_K, MOE_TYPE_Q2_K};
        const std::vector<int64_t> Ts = token_list(qtokens, {1, 2, 4, 8, 16});
        /* qwen3-30b-a3b and gpt-oss-20b, or the preset named by --only (any of the five) */
        std::vector<const preset *> qp = {&presets[0], &presets[3]};
        if (only_preset) {
            qp.clear();
            for (const preset &P : presets)
                if (named(P.name)) qp.push_back(&P);
        }
        for (const preset *P : qp)
            for (size_t ti = 0; ti < sizeof qt / sizeof qt[0]; ti++) {
                const moe_type t = qt[ti];
                if (only_qtypes ? !in_list(only_qtypes, moe_type_name(t)) : ti >= 4) continue;
                if (moe_type_block_size(t) == 256 && (P->D % 256 || P->I % 256)) continue;
                layer_set s = make_layer_weights(*P, t);
                setenv("MOE_DECODE_STREAM", "1", 1);
                moe_layer *L = make_layer(ctx, *P, t, s, "cuda-quant");
                setenv("MOE_DECODE_STREAM", "0", 1);
                setenv("MOE_QUANT_I8", "0", 1); /* k_dec, where the int8 kernels would take the layer */
                moe_layer *Lk = no_kdec ? NULL : make_layer(ctx, *P, t, s, "cuda-quant");
                unsetenv("MOE_QUANT_I8");
                /* the int8 tensor-core kernels (decode_qmma.cu) at every T: no prefill path */
                setenv("MOE_QUANT_PREFILL_T", "-1", 1);
                moe_layer *Li = no_i8 ? NULL : make_layer(ctx, *P, t, s, "cuda-quant");
                unsetenv("MOE_QUANT_PREFILL_T");
                unsetenv("MOE_DECODE_STREAM");
                if (Li) {
                    char desc[2048];
                    moe_layer_describe(Li, 16, desc, sizeof desc);
                    if (!strstr(desc, "int8 tensor-core kernels")) {
                        moe_layer_free(Li); /* the format has none: k_dec again */
                        Li = NULL;
                    }
                }
                /* --default: the layer a user gets (streaming or mma kernels by pairs an
                 * expert, the dequantising prefill path above its threshold) */
                moe_layer *Ld = dense_default ? make_layer(ctx, *P, t, s, "cuda-quant") : NULL;
                if (L)
                    for (int64_t T : Ts) {
                        if (only_T && T != only_T) continue;
                        int64_t touched;
                        srand(2000 + (int)T);
                        timing tm = time_fwd(L, *P, T, 30, &touched);
                        report(*P, t, "stream", L, T, tm, touched, s.expert_bytes);
                        if (Lk) {
                            srand(2000 + (int)T);
                            tm = time_fwd(Lk, *P, T, 30, &touched);
                            report(*P, t, "kdec", Lk, T, tm, touched, s.expert_bytes);
                        }
                        if (Li) {
                            srand(2000 + (int)T);
                            tm = time_fwd(Li, *P, T, 30, &touched);
                            report(*P, t, "i8", Li, T, tm, touched, s.expert_bytes);
                        }
                        if (Ld) {
                            srand(2000 + (int)T);
                            tm = time_fwd(Ld, *P, T, 30, &touched);
                            report(*P, t, "default", Ld, T, tm, touched, s.expert_bytes);
                        }
                    }
                moe_layer_free(Li);
                moe_layer_free(Ld);
                moe_layer_free(Lk);
                moe_layer_free(L);
                cudaFree(s.gu); cudaFree(s.down); cudaFree(s.bgu); cudaFree(s.bd);
            }
    }
    if (prefill) {
        /* GGUF weights at prefill sizes against bf16 weights (default backends). Each GGUF
         * layer twice: cuda-quant's prefill path forced (MOE_QUANT_PREFILL_T=0: dequantise
         * the experts in use, then the grouped GEMM) and off (-1: the decode kernels). */
        /* bf16, then the GGUF types: Q4_K, Q8_0, MXFP4 by default; Q5_K, Q6_K and gate/up
         * Q4_K with down Q6_K (llama.cpp's Q4_K_M on its layers of more bits; named
         * "q4_K/q6_K"), Q4_0, Q2_K, Q3_K and gate/up Q3_K with down Q4_K (Q3_K_M's
         * mix, "q3_K/q4_K") where --qtypes names them */
        static const struct { moe_type t, dt; const char *name; } pt[] = {
            {MOE_TYPE_BF16, MOE_TYPE_BF16, "bf16"}, {MOE_TYPE_Q4_K, MOE_TYPE_Q4_K, "q4_K"},
            {MOE_TYPE_Q8_0, MOE_TYPE_Q8_0, "q8_0"}, {MOE_TYPE_MXFP4, MOE_TYPE_MXFP4, "mxfp4"},
            {MOE_TYPE_Q5_K, MOE_TYPE_Q5_K, "q5_K"}, {MOE_TYPE_Q6_K, MOE_TYPE_Q6_K, "q6_K"},
            {MOE_TYPE_Q4_K, MOE_TYPE_Q6_K, "q4_K/q6_K"}, {MOE_TYPE_Q4_0, MOE_TYPE_Q4_0, "q4_0"},
            {MOE_TYPE_Q2_K, MOE_TYPE_Q2_K, "q2_K"},        {MOE_TYPE_Q3_K, MOE_TYPE_Q3_K, "q3_K"},
            {MOE_TYPE_Q3_K, MOE_TYPE_Q4_K, "q3_K/q4_K"}};
        int64_t Ts[6] = {32, 64, 128, 256, 512, 4096};
        if (prefill_tokens) {
            const char *c = prefill_tokens;
            for (int i = 0; i < 6; i++) {
                Ts[i] = *c ? strtoll(c, (char **)&c, 10) : -1;
                if (*c == ',') c++;
            }
        }
        const preset *pp[] = {&presets[0], &presets[3], &presets[1], &presets[4], &presets[2]};
        for (const preset *P : pp) {
            if (only_preset && !named(P->name)) continue;
            double dense_us[6] = {0, 0, 0, 0, 0, 0};
            if (!only_preset && (P == &presets[2] || P == &presets[4])) continue; /* large: only when named */
            for (size_t pi = 0; pi < sizeof pt / sizeof pt[0]; pi++) {
                const moe_type t = pt[pi].t;
                const char *tname = pt[pi].name;
                /* mxfp4, q8_0 and q4_0 for gpt-oss (D = 2880 is no multiple of the K-quants' 256) */
                const bool oss = P == &presets[3] || P == &presets[4];
                if ((t == MOE_TYPE_MXFP4) != oss && t != MOE_TYPE_BF16 && t != MOE_TYPE_Q8_0 && t != MOE_TYPE_Q4_0)
                    continue;
                if (t != MOE_TYPE_BF16 && (only_qtypes ? !in_list(only_qtypes, tname) : pi >= 4)) continue;
                layer_set s = make_layer_weights(*P, t, pt[pi].dt);
                moe_layer *L[4] = {NULL, NULL, NULL, NULL};
                const char *names[4] = {"default", "prefill-dequant", "decode-kernels", "prefill-rule"};
                if (t == MOE_TYPE_BF16) {
                    L[0] = make_layer(ctx, *P, t, s, NULL);
                } else {
                    /* the prefill path forced: its GEMMs on the GGUF blocks at every T
                     * where the layer can (MOE_QUANT_PREFILL_FUSED=1; else it
                     * dequantises: the two rows are then alike),
                     * then dequantising (MOE_QUANT_PREFILL_FUSED=0), then the decode
                     * kernels (--prefill-decode) */
                    setenv("MOE_QUANT_PREFILL_T", "0", 1);
                    setenv("MOE_QUANT_PREFILL_FUSED", "1", 1);
                    L[0] = make_layer(ctx, *P, t, s, NULL);
                    names[0] = "prefill-gguf";
                    setenv("MOE_QUANT_PREFILL_FUSED", "0", 1);
                    if (!prefill_nodeq) L[1] = make_layer(ctx, *P, t, s, NULL);
                    unsetenv("MOE_QUANT_PREFILL_FUSED");
                    if (prefill_rule) L[3] = make_layer(ctx, *P, t, s, NULL); /* GGUF GEMMs or dequantising by T */
                    if (prefill_decode) {
                        setenv("MOE_QUANT_PREFILL_T", "-1", 1);
                        L[2] = make_layer(ctx, *P, t, s, NULL);
                    }
                    unsetenv("MOE_QUANT_PREFILL_T");
                }
                for (int i = 0; i < 6; i++) {
                    int64_t T = Ts[i], touched;
                    if (T <= 0 || (only_T && T != only_T)) continue;
                    for (int v = 0; v < 4; v++) {
                        if (!L[v]) continue;
                        srand(3000 + (int)T);
                        timing tm = time_fwd(L[v], *P, T, 10, &touched);
                        double tf = 6.0 * T * P->K * P->D * P->I / (tm.med * 1e-6) / 1e12;
                        if (t == MOE_TYPE_BF16) dense_us[i] = tm.med;
                        printf("prefill %-14s %-9s %-15s T=%5lld  %9.1f us  %6.1f TFLOP/s  %.2fx the bf16 time  (%s)\n",
                               P->name, tname, names[v], (long long)T, tm.med, tf, tm.med / dense_us[i],
                               moe_layer_backend(L[v]));
                        if (jf)
                            fprintf(jf,
                                    "{\"gpu\": \"%s\", \"preset\": \"%s\", \"wtype\": \"%s\", \"variant\": \"%s\", "
                                    "\"backend\": \"%s\", \"T\": %lld, \"median_us\": %.2f, \"tflops\": %.1f, "
                                    "\"ratio_to_bf16\": %.3f}\n",
                                    gpu, P->name, tname, names[v], moe_layer_backend(L[v]), (long long)T, tm.med, tf,
                                    tm.med / dense_us[i]);
                        fflush(stdout);
                    }
                }
                for (int v = 0; v < 4; v++) moe_layer_free(L[v]);
                cudaFree(s.gu); cudaFree(s.down); cudaFree(s.bgu); cudaFree(s.bd);
            }
        }
    }
    moe_ctx_free(ctx);
    if (jf) fclose(jf);
    return 0;
}
