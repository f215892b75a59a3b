/*
 * The backends "cuda-decode" (bf16/f16 weights) and "cuda-quant" (GGUF block
 * weights: Q4_0, Q8_0, Q2_K..Q6_K, MXFP4): an MoE layer forward for small
 * batches, matching src/ref/ref.c within the case table's tolerances.
 *
 * A forward is, per chunk of at most MOE_DEC_MAXP (token, slot) pairs:
 *   k_route  one block: sorts the pairs by expert (bitonic, in shared memory),
 *            lists the active experts, zeroes the phase 2 arrival counters
 *   phase 1  h[pair] = act(gate_e x + bg, up_e x + bu)          (decode_kernels.h)
 *   phase 2  y[pair] = w * (down_e h + bd); the last block of each row block
 *            writes out[t] = sum of y over the K slots in slot order
 * Launches only, asynchronous on the context's stream: no host sync, no
 * allocation (CUDA-graph capturable). No float atomics: two runs are
 * bitwise equal. On sm_90 phases 1 and 2 use programmatic dependent launch
 * (MOE_DECODE_PDL=0 turns it off): each kernel's blocks are resident
 * before the previous one ends.
 *
 * cuda-decode above a token threshold (MOE_DECODE_MAX_T, default moe__dec_max_t (decode.h):
 * T > 4, or T > 2 where E <= 4K; from T = 2 where the touched experts hold 620 MB
 * or more, moe__dec_gemm_min_t) hands the forward to the grouped GEMM backend
 * (cuda-jit, else cuda-sm90, else cuda-sm80) through a second layer state made at init, when
 * that backend takes the layer; otherwise it runs its own kernels in chunks
 * for every T. cuda-quant runs its own kernels for every T.
 *
 * Weights in host memory (MOE_MEM_HOST) are copied to the device at init and
 * freed at fini (said by describe); device weights are read in place.
 *
 * Ids out of range on the device: a pair whose id is outside [0, E) is left
 * out of the routing (never read or written out of bounds) and contributes
 * nothing; a token whose K ids are all out of range gets out = 0.
 *
 * Chosen in src/backends.c order (cuda_backends.h): cuda-decode and
 * cuda-quant come before the grouped GEMM backends.
 */
#include "cuda_backends.h"
#include "device_guard.h"
#include "decode.h"
#include "decode_stream.h"

#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* ------------------------------------------------------------------------ */
/* Routing kernel                                                            */
/* ------------------------------------------------------------------------ */

/* One block of 1024 threads. ids [TK]; writes hdr[0] = active experts,
 * act_e[j] (ascending), act_off[j..j+1] (range in sorted), sorted [valid
 * pairs] (pair indices, by expert then pair), zeroes counters [ncnt]; with no
 * valid pair at all, zeroes out (out_words 32-bit words). */
static __global__ void __launch_bounds__(1024) k_route(const int32_t *__restrict__ ids, int TK, int E,
                                                       int *__restrict__ hdr, int *__restrict__ act_e,
                                                       int *__restrict__ act_off, int *__restrict__ sorted,
                                                       unsigned *__restrict__ counters, int ncnt,
                                                       uint32_t *__restrict__ out, int64_t out_words) {
    __shared__ unsigned long long keys[MOE_DEC_MAXP];
    __shared__ int wsum[32];
    __shared__ int s_valid;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    int NP = 1;
    while (NP < TK) NP <<= 1;
    if (tid == 0) s_valid = 0;
    for (int i = tid; i < ncnt; i += 1024) counters[i] = 0;
    for (int i = tid; i < NP; i += 1024) {
        unsigned long long k = ~0ull;
        if (i < TK) {
            int e = ids[i];
            if ((unsigned)e < (unsigned)E) k = ((unsigned long long)(unsigned)e << 32) | (unsigned)i;
        }
        keys[i] = k;
    }
    __syncthreads();
    for (int k = 2; k <= NP; k <<= 1)
        for (int jj = k >> 1; jj > 0; jj >>= 1) {
            for (int i = tid; i < NP; i += 1024) {
                int ixj = i ^ jj;
                if (ixj > i) {
                    unsigned long long a = keys[i], b = keys[ixj];
                    bool up = (i & k) == 0;
                    if ((a > b) == up) {
                        keys[i] = b;
                        keys[ixj] = a;
                    }
                }
            }
            __syncthreads();
        }
    /* heads of expert runs: each thread owns 4 consecutive keys */
    int head[4], nh = 0, nv = 0;
    for (int q = 0; q < 4; q++) {
        int i = 4 * tid + q;
        unsigned long long k = i < NP ? keys[i] : ~0ull;
        int valid = k != ~0ull;
        head[q] = valid && (i == 0 || (keys[i - 1] >> 32) != (k >> 32));
        nh += head[q];
        nv += valid;
    }
    int incl = nh;
    for (int o = 1; o < 32; o <<= 1) {
        int v = __shfl_up_sync(0xffffffffu, incl, o);
        if (lane >= o) incl += v;
    }
    if (lane == 31) wsum[warp] = incl;
    if (nv) atomicAdd(&s_valid, nv);
    __syncthreads();
    if (warp == 0) {
        int v = wsum[lane];
        for (int o = 1; o < 32; o <<= 1) {
            int u = __shfl_up_sync(0xffffffffu, v, o);
            if (lane >= o) v += u;
        }
        wsum[lane] = v;
    }
    __syncthreads();
    int rank = (warp ? wsum[warp - 1] : 0) + incl - nh;
    for (int q = 0; q < 4; q++) {
        int i = 4 * tid + q;
        if (i >= NP) break;
        unsigned long long k = keys[i];
        if (k == ~0ull) break;
        sorted[i] = (int)(k & 0xffffffffu);
        if (head[q]) {
            act_e[rank] = (int)(k >> 32);
            act_off[rank] = i;
            rank++;
        }
    }
    int n_active = wsum[31];
    if (tid == 0) {
        hdr[0] = n_active;
        act_off[n_active] = s_valid;
    }
    if (n_active == 0)
        for (int64_t i = tid; i < out_words; i += 1024) out[i] = 0;
}

/* ------------------------------------------------------------------------ */
/* Layer state                                                               */
/* ------------------------------------------------------------------------ */

typedef struct dec_impl {
    int device, sm_count, cc_major, quant;
    int fmt1, fmt2;              /* formats of gate/up and of down */
    int pdl;                     /* programmatic dependent launch (sm_90, MOE_DECODE_PDL != 0) */
    int64_t max_t;               /* cuda-decode: above this T, the grouped GEMM layer ... */
    int64_t gemm_min_t;          /* ... and from this T where the touched experts are large (moe__dec_gemm_min_t) */
    int chunk_t;                 /* tokens per chunk of the own path */
    /* the weights as the kernels read them (device copies when uploaded) */
    moe_tensor gate, up, down, gate_bias, up_bias, down_bias;
    void *owned[8];              /* device copies made at init */
    int n_owned;
    size_t uploaded;
    moe_layer *gemm;             /* cuda-decode: the grouped GEMM backend's layer state, or NULL */
    int sv;                      /* the streaming kernels (decode_stream.cuh) take this layer ... */
    int64_t sv_max_t;            /* ... for T up to this, */
    int64_t sv_chunk;            /* ... in chunks of at most this many tokens (<= MOE_SV_MAXP / K) */
    int sv_smem_block, sv_smem_sm; /* dynamic shared memory one block may take; per SM */
    int sv_smem_fixed;           /* shared memory a block takes besides its dynamic part: the runtime's reserve and the
                                  * kernels' static variables (the most of any instance), each rounded up to 128 B */
    int sv_fused;                /* both phases in one cooperative launch where the grid fits: 1 but at T = 2
                                  * (sv_fused_at), 2 at every T (MOE_DECODE_FUSED=1), 0 never */
    int sv_downe;                /* MOE_SV_DOWNE: 1 expert-major down at every T, 0 token-major, -1 by T */
    int sv_dyn;                  /* MOE_SV_DYN: phase 1 split at run time: 1 by T (sv_chunk; default), 0 never, 2 always,
                                  * 3 at T = 3..8 (dense 2..8) only */
    /* measurement knobs of the planner, read once at init (README): */
    int sv_dynord;               /* MOE_SV_DYNORD: the split's blocks in tile-major order */
    int sv_d1w;                  /* MOE_SV_D1W: dense down in one wave, partial sums up to this many bytes (sv_down_one_wave) */
    int sv_d1w_ns;               /* MOE_SV_D1W_NS: ... where the ring keeps this many stages (default 2) */
    int sv_gwaves, sv_dwaves;    /* MOE_SV_GWAVES / MOE_SV_DWAVES: GGUF beyond T = 8, waves of blocks of the planned
                                  * gate/up grid and of the expert-major down grid (default 2) */
    int sv_dynw;                 /* MOE_SV_DYNW: its aligned mode weighted by the groups' pairs, a step A + pairs
                                  * (moe_sv_args.dynw; 0 unweighted) */
    int sv_nt1, sv_nt2;          /* MOE_SV_NT1 / NT2: most pairs a group of the gate/up and the expert-major down launch */
    int sv_qmma_pairs;           /* MOE_SV_QMMA_PAIRS: pairs an expert the launch averages for the int8 consumer */
    int sv_plan_model;           /* MOE_SV_PLAN_MODEL=0: the routing model before session 11 */
    double sv_plan_sd;           /* MOE_SV_PLAN_SD: standard deviations added to the plan at T <= 4 */
    int sv_plan;                 /* MOE_SV_PLAN: grids by 1 expected pair groups, 0 min(T*K, E), -1 by T */
    unsigned *sv_gbar;           /* its grid-barrier counters (device, zeroed) */
    unsigned *sv_hqcnt;          /* GGUF: phase 1's counters of h's shared blocks (moe_sv_args.hq_cnt; device, zeroed),
                                  * NULL: every phase 2 block quantises h itself (MOE_SV_HQ=0) */
    int sv_hq_all;               /* MOE_SV_HQ=2: h quantised by phase 1 at every T (sv_use_hq) */
    int sv_cst;                  /* GGUF rows back to back: bytes a bulk copy of a stage's rows may take (sv_cst_rows;
                                  * MOE_SV_CST=N bytes, 0: a copy a row, as before session 31) */
    int sv_fused_logged;         /* the first fall-back to two launches was logged */
    char sv_why[160];            /* why they do not, for describe */
    moe_layer *qp;               /* cuda-quant prefill: the grouped GEMM layer on dequantised weights, or NULL ... */
    int64_t qp_min_t;            /* ... for T above this, */
    int64_t qp_group;            /* ... dequantising this many experts at a time */
    moe_layer *qf;               /* ... or on the GGUF blocks: cuda-sm90 with GEMMs that decode them (gemm_sm90_q.cu),
                                    instead of qp where the formats allow; NULL: none */
    int64_t qf_max_t;            /* ... qf up to this T, qp above (both exist; qp_fused_max_pairs), else INT64_MAX */
    void *qp_dummy;              /* its weights' address until a forward points them at the workspace */
    char qp_why[200];            /* why there is no prefill path, for describe */
    int qg;                      /* cuda-quant: the int8 tensor-core kernels (decode_qmma.cu) replace k_dec */
    int qg_nt;                   /* MOE_QG_NT: token tiles of 8 a pass (0: by pairs an expert) */
    int qg_hq;                   /* their gate/up launch quantises h for the down launch (MOE_QG_HQ=0: a launch of
                                  * its own, k_qg_quant, as before session 30) */
    int qg_bps;                  /* their instances for 2 or 3 blocks an SM (qg_init; MOE_QG_BPS) */
    int qg_bps_env;              /* MOE_QG_BPS set: qg_bps for every format and token tile */
    int qg_lin1, qg_lin2;        /* their gate/up and down stages copied by linear chunks (moe__qg_linear;
                                  * MOE_QG_LIN=0: MXFP4's and Q6_K's row by row) */
    char qg_why[120];            /* why they do not, for describe */
} dec_impl;

static int fmt_of(moe_type t) {
    switch (t) {
    case MOE_TYPE_BF16: return MOE_DF_BF16;
    case MOE_TYPE_F16: return MOE_DF_F16;
    case MOE_TYPE_Q4_0: return MOE_DF_Q4_0;
    case MOE_TYPE_Q8_0: return MOE_DF_Q8_0;
    case MOE_TYPE_MXFP4: return MOE_DF_MXFP4;
    case MOE_TYPE_Q2_K: return MOE_DF_Q2_K;
    case MOE_TYPE_Q3_K: return MOE_DF_Q3_K;
    case MOE_TYPE_Q4_K: return MOE_DF_Q4_K;
    case MOE_TYPE_Q5_K: return MOE_DF_Q5_K;
    case MOE_TYPE_Q6_K: return MOE_DF_Q6_K;
    default: return -1;
    }
}

static int64_t bytes_of(const moe_tensor *t, int64_t elems) {
    return elems / moe_type_block_size(t->type) * moe_type_block_bytes(t->type);
}

/* Bytes of one expert's weights as stored: gate (if any), up and down. */
static double expert_bytes(const moe_layer *L) {
    const moe_layer_desc *d = &L->desc;
    return (double)bytes_of(&L->up, d->D) * (double)d->I * (L->gated ? 2.0 : 1.0) +
           (double)bytes_of(&L->down, d->I) * (double)d->D;
}


static int dec_probe(moe_ctx *ctx, char *why, size_t n) {
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
        snprintf(why, n, "no CUDA device (%s)", e != cudaSuccess ? cudaGetErrorString(e) : "count 0");
        cudaGetLastError();
        return 0;
    }
    if (ctx->p.cuda_device < 0 || ctx->p.cuda_device >= count) {
        snprintf(why, n, "cuda_device = %d but %d devices", ctx->p.cuda_device, count);
        return 0;
    }
    int major = 0;
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, ctx->p.cuda_device);
    if (major < 8) {
        snprintf(why, n, "needs compute capability 8.0 or later (mma.sync bf16), device has %d.x", major);
        return 0;
    }
    return 1;
}

/* One weight tensor: format, alignment of data and strides for the format's loads. */
static int weight_ok(const moe_tensor *t, const char *what, int quant, char *why, size_t n) {
    int f = fmt_of(t->type);
    if (f < 0 || (quant ? f <= MOE_DF_F16 : f > MOE_DF_F16)) {
        snprintf(why, n, "%s type %s: %s", what, moe_type_name(t->type),
                 quant ? "cuda-quant takes Q4_0, Q8_0, Q2_K..Q6_K and MXFP4" : "cuda-decode takes bf16 or f16");
        return 0;
    }
    if (t->stride_c != 1) {
        snprintf(why, n, "%s has stride_c = %lld: the decode kernels need rows contiguous along C", what,
                 (long long)t->stride_c);
        return 0;
    }
    int64_t al = moe__dec_align(f);
    int64_t se = bytes_of(t, t->stride_e), sn = bytes_of(t, t->stride_n);
    if (((uintptr_t)t->data % (uintptr_t)al) || se % al || sn % al) {
        snprintf(why, n, "%s: data and row/expert strides must be %lld-byte aligned for %s", what, (long long)al,
                 moe_type_name(t->type));
        return 0;
    }
    return 1;
}

static int supports_common(const moe_layer *L, int quant, char *why, size_t n) {
    const moe_layer_desc *d = &L->desc;
    if (L->gated && !weight_ok(&L->gate, "gate", quant, why, n)) return 0;
    if (!weight_ok(&L->up, "up", quant, why, n) || !weight_ok(&L->down, "down", quant, why, n)) return 0;
    if (L->gated && L->gate.type != L->up.type) {
        snprintf(why, n, "gate (%s) and up (%s) must have one type", moe_type_name(L->gate.type),
                 moe_type_name(L->up.type));
        return 0;
    }
    if (!quant && L->up.type != L->down.type) {
        snprintf(why, n, "gate/up (%s) and down (%s) must have one type", moe_type_name(L->up.type),
                 moe_type_name(L->down.type));
        return 0;
    }
    if (d->D % 8 || d->I % 8) {
        snprintf(why, n, "D = %lld, I = %lld: both must be multiples of 8 (16-byte activation loads)",
                 (long long)d->D, (long long)d->I);
        return 0;
    }
    return 1;
}

static int supports_decode(const moe_layer *L, char *why, size_t n) { return supports_common(L, 0, why, n); }
static int supports_quant(const moe_layer *L, char *why, size_t n) { return supports_common(L, 1, why, n); }

/* Extent in bytes of tensor t of shape [E, N, C] from its data pointer. */
static size_t extent(const moe_tensor *t, int64_t E, int64_t N, int64_t C) {
    int64_t last = (E - 1) * t->stride_e + (N - 1) * t->stride_n + (C - 1) * t->stride_c;
    int64_t bs = moe_type_block_size(t->type), bb = moe_type_block_bytes(t->type);
    return (size_t)((last / bs + 1) * bb);
}

/* Copies a host tensor (the desc's own, of shape [E, N, C]) to the device,
 * keeping its address modulo 256, and moves the views that point into it. */
static moe_status upload(moe_layer *L, dec_impl *im, const moe_tensor *own, int64_t N, int64_t C,
                         moe_tensor *v0, const moe_tensor *s0, moe_tensor *v1, const moe_tensor *s1) {
    if (!own->data || own->mem != MOE_MEM_HOST) return MOE_OK;
    size_t bytes = extent(own, L->desc.E, N, C), mis = (uintptr_t)own->data & 255;
    char *p = NULL;
    cudaError_t e = cudaMalloc((void **)&p, bytes + mis);
    if (e == cudaSuccess) {
        im->owned[im->n_owned++] = p;
        e = cudaMemcpy(p + mis, own->data, bytes, cudaMemcpyHostToDevice);
    }
    if (e != cudaSuccess)
        return moe__layer_error(L, e == cudaErrorMemoryAllocation ? MOE_ERR_OUT_OF_MEMORY : MOE_ERR_CUDA,
                                "uploading %zu bytes of weights: %s", bytes, cudaGetErrorString(e));
    im->uploaded += bytes;
    const moe_tensor *src[2] = {s0, s1};
    moe_tensor *dst[2] = {v0, v1};
    for (int i = 0; i < 2; i++) {
        if (!dst[i] || !src[i]->data) continue;
        *dst[i] = *src[i];
        dst[i]->data = p + mis + ((const char *)src[i]->data - (const char *)own->data);
        dst[i]->mem = MOE_MEM_DEVICE;
    }
    return MOE_OK;
}

static void dec_fini(moe_layer *L) {
    dec_impl *im = (dec_impl *)L->impl;
    if (!im) return;
    moe_cuda_dev_guard g;
    int entered = moe_cuda_dev_enter(im->device, &g) == cudaSuccess;
    for (int i = 0; i < im->n_owned; i++) cudaFree(im->owned[i]);
    if (im->sv_gbar) cudaFree(im->sv_gbar);
    if (im->sv_hqcnt) cudaFree(im->sv_hqcnt);
    if (im->qf) {
        im->qf->backend->fini(im->qf);
        free(im->qf);
    }
    if (im->qp) {
        im->qp->backend->fini(im->qp);
        free(im->qp);
    }
    if (im->qp_dummy) cudaFree(im->qp_dummy);
    if (im->gemm) {
        im->gemm->backend->fini(im->gemm);
        free(im->gemm);
    }
    if (entered) moe_cuda_dev_leave(&g);
    free(im);
    L->impl = NULL;
}

/* cuda-decode: the grouped GEMM backend's state for this layer, or NULL. */
static moe_layer *make_gemm_layer(moe_layer *L, dec_impl *im) {
    /* cuda-jit first: its kernels are the sm90 ones specialised to the layer, at
     * least as fast on every preset (bench/jit/README.md, A/B rounds) */
    const moe__backend *cands[] = {&moe__backend_cuda_jit, &moe__backend_cuda_sm90, &moe__backend_cuda_sm80};
    for (int i = 0; i < 3; i++) {
        const moe__backend *b = cands[i];
        moe_layer *G = (moe_layer *)calloc(1, sizeof *G);
        if (!G) return NULL;
        *G = *L;
        G->impl = NULL;
        G->backend = b;
        G->err[0] = 0;
        G->gate = im->gate; G->up = im->up; G->down = im->down;
        G->gate_bias = im->gate_bias; G->up_bias = im->up_bias; G->down_bias = im->down_bias;
        char why[512];
        if (b->probe(L->ctx, why, sizeof why) && b->supports(G, why, sizeof why) && b->init(G) == MOE_OK) {
            moe__log(L->ctx, MOE_LOG_INFO, "cuda-decode: T > %lld runs on %s", (long long)im->max_t, b->name);
            return G;
        }
        moe__log(L->ctx, MOE_LOG_DEBUG, "cuda-decode: %s not used for large T: %s", b->name, G->err[0] ? G->err : why);
        free(G);
    }
    return NULL;
}

/* cuda-quant's prefill path. Above qp_pairs() pairs per expert (T * K / E)
 * a forward runs cuda-sm90's grouped GEMMs on the GGUF blocks themselves where
 * they can decode the formats (every GGUF type; gemm_sm90_q.cu,
 * qp_init_fused; up to qp_fused_max_pairs, where dequantising takes over), or
 * dequantises the blocks of the experts it uses into the workspace as bf16/f16
 * rows (dequant.cu) and runs a grouped GEMM backend (cuda-jit, else cuda-sm90,
 * else cuda-sm80) on them: the mma kernels decode
 * every weight again for each 32 tokens and stay at 18-55 TFLOP/s whatever T
 * is. Crossover measured on an H200 (bench/decode/README.md, quantised
 * prefill; qwen3, gpt-oss-20b, mixtral at T = 32..4096): Q8_0 from ~8 pairs
 * per expert, Q4_K and MXFP4 between 16 and 32 (the cheaper 4-bit rows keep
 * the decode kernels ahead longer); the other types are taken as the 4-bit
 * ones. MOE_QUANT_PREFILL_T overrides the threshold in tokens (negative:
 * never). The experts are dequantised in groups whose bf16 weights fit in
 * MOE_QUANT_PREFILL_MB of workspace (default 2048; one group when all fit),
 * each group's GEMMs running before the next group overwrites them. */
#define QP_SCRATCH_MB 2048
static int64_t qp_pairs(int fmt) { return fmt == MOE_DF_Q8_0 ? 8 : 16; }
/* With the int8 kernels (decode_qmma.cu), experts of 10 MB or more stay on
 * them up to 32 pairs an expert, smaller ones up to 16 (H200, bench/decode/s16
 * run 6: mixtral Q8_0 T = 64 / 128 (16 / 32 pairs) 885 / 1537 us against 2270
 * on the prefill path, at T = 256 (64 pairs) 2483 against 2334; gpt-oss-20b
 * Q8_0 T = 128 (16) 721 against 1304; qwen3 Q8_0 T = 256 (16) 900 against 970). */
static int64_t qp_pairs_qg(int fmt, double eb, int qg) { return !qg ? qp_pairs(fmt) : eb >= 10e6 ? 32 : 16; }
/* Against the GEMMs on the GGUF blocks (qp_init_fused) the int8 kernels keep
 * far fewer pairs: 14 an expert for experts of 10 MB or more, 4 below. H200,
 * bench/decode/s22 runs 2 and 3, decode kernels / GGUF GEMMs in us: qwen3 Q4_K
 * T = 64 / 80 / 128 (4 / 5 / 8 pairs) 260 / 302, 345 / 304, 438 / 305, Q8_0
 * 288 / 299, 331 / 301, 385 / 304; deepseek-v3 Q4_K T = 256 / 512 / 768 (8 /
 * 16 / 24) 3216 / 5078, 5346 / 4812, 8545 / 4874, Q8_0 3756 / 5136, 5580 /
 * 5149 (crossing near 14); mixtral Q4_K T = 32 / 64 / 128 (8 / 16 / 32) 382 /
 * 635, 625 / 628, 1087 / 650, Q8_0 T = 64 693 / 676 (near 16). The GEMMs'
 * time hardly moves below 256 tokens a tile: each weight is decoded once.
 * MXFP4 and gpt-oss's Q8_0 take the same values (bench/decode/s23 runs 1, 4:
 * gpt-oss-20b crosses near 14 pairs, gpt-oss-120b near 10-12.5, where the
 * decode kernels run up to ~10% slower than the GEMMs would). Q5_K and Q6_K
 * decode slower in the GEMMs and hand over later (bench/decode/s24 run 6,
 * decode kernels / GGUF GEMMs in us): qwen3 T = 64 / 128 (4 / 8 pairs) Q5_K
 * 299 / 396, 466 / 407, Q6_K 333 / 524, 539 / 533, gate/up Q4_K with down Q6_K
 * 274 / 390, 481 / 392; mixtral T = 64 / 128 (16 / 32) Q5_K 710 / 873, 1269 /
 * 876, Q6_K 870 / 1167, 1502 / 1170, Q4_K + Q6_K 716 / 806, 1275 / 819;
 * deepseek-v3 T = 512 / 1024 (16 / 32) Q6_K 7328 / 8882, 14685 / 9028, Q4_K +
 * Q6_K 6197 / 6097, 12302 / 6233; run 8: deepseek-v3 Q5_K T = 512 / 768 (16 /
 * 24) 6144 / 6632, 9659 / 6678 (crossing near 17, mixtral's near 21: 18).
 * Q4_0 decodes faster in the GEMMs than Q4_K and hands over earlier, later on
 * larger experts (bench/decode/s25 run 2, decode kernels / GGUF GEMMs in us,
 * pairs an expert in brackets): qwen3 (2.6 MB experts) T = 32 / 64 (2 / 4)
 * 179 / 258, 309 / 285 (crossing near 3.5); gpt-oss-20b (14 MB) T = 64 / 96 (8
 * / 12) 367 / 398, 451 / 398 (near 9.5); deepseek-v3 (25 MB) T = 256 / 512 (8
 * / 16) 3794 / 4391, 6024 / 4431 (near 10); mixtral (99 MB) T = 32 / 64 (8 /
 * 16) 446 / 577, 619 / 582 (near 14). */
static int64_t qp_pairs_fused(int fmt1, int fmt2, double eb, int qg) {
    /* Q2_K and Q3_K (no int8 kernels: the mma decode kernels below this), s25
     * run 4, decode kernels / GGUF GEMMs in us: qwen3 (1.5 / 2 MB experts) Q2_K
     * T = 32 / 64 (2 / 4 pairs) 248 / 325, 393 / 358 (crossing near 3.3), Q3_K
     * T = 64 / 128 469 / 576, 683 / 577 (near 6.5); mixtral (58 / 76 MB) Q3_K
     * T = 32 / 64 (8 / 16) 1202 / 1420, 2456 / 1420 (near 9.4); run 5: mixtral
     * Q2_K T = 16 / 24 (4 / 6) 594 / 792, 854 / 733 (near 5.2); deepseek-v3
     * (14 / 19 MB) Q2_K T = 128 / 256 (4 / 8) 4347 / 5390, 8605 / 5533 (near
     * 5), Q3_K 5048 / 8639, 10056 / 8783. Run 6, the default layer on those
     * values: the decode kernels do not grow linearly in between: mixtral Q3_K
     * T = 36 (9 pairs) 2071 us against 1202 at T = 32 (run 4) and 1417 on the
     * GEMMs at T = 40; deepseek-v3 Q3_K T = 192 / 224 (6 / 7) 8249 / 9301 against
     * ~8700 on the GEMMs, Q2_K T = 160 (5) 5923 against 5450 at T = 192. So Q2_K
     * 5 / 4 / 3 and Q3_K 8 / 6 (experts from 50 MB / from 8 MB / under). */
    if (fmt1 == MOE_DF_Q2_K) return eb >= 50e6 ? 5 : eb >= 8e6 ? 4 : 3;
    if (fmt1 == MOE_DF_Q3_K) return eb >= 50e6 ? 8 : 6;
    if (!qg) return qp_pairs(fmt1);
    if (fmt1 == MOE_DF_Q4_0) return eb >= 50e6 ? 14 : eb >= 10e6 ? 10 : 3;
    const int big = eb >= 10e6;
    if (fmt1 == MOE_DF_Q6_K) return big ? 24 : 8;
    if (fmt1 == MOE_DF_Q5_K) return big ? 18 : 6;
    if (fmt2 == MOE_DF_Q6_K) return big ? 18 : 6;
    return big ? 14 : 4;
}
/* Pairs an expert above which the dequantising path beats the GEMMs on the
 * GGUF blocks (both then exist; qp_init), INT64_MAX: never. The GEMMs decode
 * every weight again for each m-tile of 256 tokens, so their extra time over
 * bf16 grows with T, while dequantising costs the experts' bytes once a
 * forward. H200, bench/decode/s24 run 3 (GGUF GEMMs / dequantising, x bf16;
 * pairs an expert in brackets): qwen3 (experts of 3-4 MB) Q6_K T = 4096 (256)
 * 1.86 / 1.85, 8192 (512) 1.82 / 1.51; Q4_K with down Q6_K 1.62 / 1.73, 1.56 /
 * 1.43; Q5_K 8192 1.47 / 1.48; Q4_K 8192 1.29 / 1.40. Mixtral (93-144 MB)
 * Q6_K 2048 (512) 1.53 / 1.56, 4096 1.65 / 1.36; Q4_K with Q6_K 4096 (1024)
 * 1.34 / 1.32, 8192 1.36 / 1.14; Q4_K 4096 1.23 / 1.26, 8192 (2048) 1.25 /
 * 1.05; Q5_K 4096 1.32 / 1.37, 8192 1.42 / 1.18. Deepseek-v3 (25-36 MB: its
 * dequantising runs in groups of experts) keeps the GGUF GEMMs ahead to the
 * 256 pairs measured (Q6_K 1.49 / 1.90). Run 5: Q8_0 qwen3 T = 8192 (512)
 * 1.34 / 1.56, 16384 (1024) 1.35 / 1.29; mixtral 4096 (1024) 1.19 / 1.35, 8192
 * 1.16 / 1.12; gpt-oss-20b (26 MB) 8192 (1024) 1.21 / 1.34, 16384 1.23 /
 * 1.20; MXFP4 gpt-oss-20b (13 MB) 8192 1.27 / 1.32, 16384 (2048) 1.30 / 1.15;
 * gpt-oss-120b ahead to 512 pairs for both. Q6_K decoded in 299 SASS
 * instructions a k-block against Q4_K's 224 and Q8_0's 205 (gemm_sm90_q.cu;
 * since session 25's k-loop by four, 285 and 203).
 * Q4_0 (s25 run 2; GGUF GEMMs / dequantising, x bf16): qwen3 (2.6 MB) T =
 * 8192 (512) 1.27 / 1.40, 16384 (1024) 1.28 / 1.21; gpt-oss-20b (14 MB) 8192
 * (1024) 1.18 / 1.27, 16384 (2048) 1.24 / 1.16; mixtral (99 MB) 4096 (1024)
 * 1.10 / 1.27, 8192 (2048) 1.27 / 1.14; deepseek-v3 (25 MB) GGUF GEMMs ahead to
 * the 256 pairs measured. So Q8_0's values, the size bound halved (Q4_0's
 * bytes for the same weights). Q2_K and Q3_K (s25 run 4; experts of 1.5 / 2
 * MB on qwen3, 14 / 19 on deepseek-v3, 58 / 76 on mixtral, so the size bound
 * at 8 MB): Q2_K qwen3 T = 4096 (256) 1.51 / 1.69, 8192 (512) 1.46 / 1.41
 * (crossing near 440), mixtral 4096 (1024) 1.26 / 1.30, 8192 1.36 / 1.14 (near
 * 1150), deepseek-v3 ahead to 256; Q3_K decodes slowest (1.6-2.1x bf16): qwen3
 * 2048 (128) 1.94 / 2.33, 4096 2.09 / 1.93 (near 190), mixtral 512 (128) 1.93 /
 * 2.46, 1024 2.10 / 1.98 (near 225), deepseek-v3 ahead at 256 (1.56 / 1.90);
 * gate/up Q3_K with down Q4_K (Q3_K_M) qwen3 near 220, mixtral near 425.
 * Session 36 (bench/decode/s36 runs 4-5, H200), after the GGUF GEMMs took the
 * dynamic order of units and the bf16 GEMMs behind dequantising had taken it
 * in sessions 33-34 (GGUF GEMMs / dequantising, us; pairs in brackets):
 * qwen3 Q6_K T = 3072 (192) 944 / 1099, 3584 (224) 969 / 1118, 4096 (256)
 * 1291 / 1211: the GGUF GEMMs' time steps up where the average expert passes
 * 256 rows (a tail tile each for half of them), so 256 -> 240; with Q4_K
 * gate/up 4096 1106 / 1131 (256 kept). gpt-oss-20b MXFP4 T = 4096 (512) 2069
 * / 2171, 5120 (640) 2569 / 2482, 8192 (1024) 3805 / 3238; gpt-oss-120b 16384
 * (512) 8151 / 9538, 20480 (640) 10434 / 10715, 24576 (768) 12030 / 11960:
 * crossings near 580 and 740, 1536 -> 640 below 20 MB (20b T = 5120 1.035x
 * the faster path). The other bounds held: run 4's rule was within 1% of
 * the faster path at 33 of 37 points, two of the others those above, and
 * mixtral Q6_K T = 4096 1.046, gpt-oss-20b MXFP4 16384 1.012, within the
 * 5-10% that one path took from one layer object to another there.
 * Session 39 (the GGUF GEMMs' weight loads by helper warps: MXFP4 0.71-0.80 of
 * their time before; bench/decode/s39 run 12, H100, one round): gpt-oss-20b
 * MXFP4 T = 8192 (1024) 3089 / 3556, 16384 (2048) 6187 / 5663, 24576 (3072)
 * 9004 / 8097; gpt-oss-120b 20480 (640) 8376 / 12619, 32768 (1024) 13414 /
 * 17010 (us, GGUF GEMMs / dequantising): MXFP4 640 -> 1536 below 20 MB too
 * (the crossing near 1600 on gpt-oss-20b). Q8_0 on gpt-oss-20b held at 1536
 * (16384: 6073 / 6078). */
static int64_t qp_fused_max_pairs(int fmt1, int fmt2, double eb) {
    const int big = eb >= 20e6;
    if (fmt1 == MOE_DF_Q6_K || fmt2 == MOE_DF_Q6_K)
        return !big ? (fmt1 == MOE_DF_Q6_K ? 240 : 256) : fmt1 == MOE_DF_Q6_K ? 512 : 1024;
    if (fmt1 == MOE_DF_Q2_K) return eb >= 8e6 ? 1024 : 384;
    if (fmt1 == MOE_DF_Q3_K) return eb < 8e6 ? 192 : fmt2 == MOE_DF_Q3_K ? 256 : 384;
    if (fmt1 == MOE_DF_Q4_K || fmt1 == MOE_DF_Q5_K) return big ? 1024 : fmt1 == MOE_DF_Q5_K ? 512 : 768;
    if (fmt1 == MOE_DF_Q8_0) return big ? 1536 : 768;
    if (fmt1 == MOE_DF_Q4_0) return eb >= 10e6 ? 1536 : 768;
    if (fmt1 == MOE_DF_MXFP4) return 1536;
    return INT64_MAX;
}

/* bytes of the dequantised gate, up and down of ne experts */
static void qp_sizes(const moe_layer *L, int64_t ne, size_t sz[3]) {
    const moe_layer_desc *d = &L->desc;
    size_t m = (size_t)(ne * d->I * d->D) * 2;
    sz[0] = L->gated ? (m + 255) & ~(size_t)255 : 0;
    sz[1] = sz[2] = (m + 255) & ~(size_t)255;
}

/* qp: a grouped GEMM layer of backend b on bf16/f16 weights at qp_dummy
 * (pointed at the workspace per forward, or replaced by the GGUF blocks); NULL
 * and why when b cannot take the layer */
static moe_layer *qp_layer(moe_layer *L, dec_impl *im, const moe__backend *b, char *why, size_t n) {
    const moe_layer_desc *d = &L->desc;
    moe_layer *G = (moe_layer *)calloc(1, sizeof *G);
    if (!G) {
        snprintf(why, n, "out of memory");
        return NULL;
    }
    *G = *L;
    G->impl = NULL;
    G->backend = b;
    G->err[0] = 0;
    /* contiguous [E, I, D] gate and up, [E, D, I] down in the forward's workspace */
    moe_tensor w = {im->qp_dummy, d->act_type, MOE_MEM_DEVICE, d->I * d->D, d->D, 1};
    G->gate = L->gated ? w : L->gate;
    G->up = w;
    w.stride_n = d->I;
    G->down = w;
    G->gate_bias = im->gate_bias; G->up_bias = im->up_bias; G->down_bias = im->down_bias;
    if (b->probe(L->ctx, why, n) && b->supports(G, why, n) && b->init(G) == MOE_OK) return G;
    if (G->err[0]) snprintf(why, n, "%s", G->err);
    free(G);
    return NULL;
}

/* The prefill GEMMs on the GGUF blocks themselves (cuda-sm90 with quantised B,
 * gemm_sm90_q.cu): GGUF weights (every type) whose rows TMA can address; else 0 and
 * why (the dequantising path then). MOE_QUANT_PREFILL_FUSED=0 turns it off, =1
 * keeps it at every T (no hand-over to dequantising, qp_fused_max_pairs). */
static int qp_init_fused(moe_layer *L, dec_impl *im, char *why, size_t n) {
    const moe_layer_desc *d = &L->desc;
    const char *ev = getenv("MOE_QUANT_PREFILL_FUSED");
    if (ev && *ev == '0') {
        snprintf(why, n, "MOE_QUANT_PREFILL_FUSED=0");
        return 0;
    }
    if (!moe__cuda_quant_box(im->fmt1) || !moe__cuda_quant_box(im->fmt2)) {
        snprintf(why, n, "the GEMMs decode Q4_0, Q8_0, Q2_K..Q6_K and MXFP4 only (weights %s / %s)",
                 moe_type_name(L->up.type), moe_type_name(L->down.type));
        return 0;
    }
    moe_layer *G = qp_layer(L, im, &moe__backend_cuda_sm90, why, n);
    if (!G) return 0;
    const moe_tensor *t[3] = {L->gated ? &im->gate : NULL, &im->up, &im->down};
    moe__cuda_qrows rows[3];
    for (int i = 0; i < 3; i++) {
        rows[i].data = t[i] ? t[i]->data : NULL;
        rows[i].se = t[i] ? bytes_of(t[i], t[i]->stride_e) : 0;
        rows[i].sn = t[i] ? bytes_of(t[i], t[i]->stride_n) : 0;
        rows[i].row_bytes = t[i] ? bytes_of(t[i], i < 2 ? d->D : d->I) : 0;
    }
    if (moe__cuda_sm90_quant(G, im->fmt1, im->fmt2, rows) != MOE_OK) {
        snprintf(why, n, "%s", G->err);
        G->backend->fini(G);
        free(G);
        return 0;
    }
    im->qf = G;
    return 1;
}

/* The dequantising prefill (im->qp, im->qp_group): 1, or 0 and why in qp_why */
static int qp_init_dequant(moe_layer *L, dec_impl *im) {
    const moe_layer_desc *d = &L->desc;
    size_t sz[3];
    qp_sizes(L, 1, sz);
    const char *mb = getenv("MOE_QUANT_PREFILL_MB");
    long long budget = mb && *mb ? atoll(mb) : QP_SCRATCH_MB;
    const size_t per = sz[0] + sz[1] + sz[2];
    int64_t group = budget > 0 ? (int64_t)(((size_t)budget << 20) / per) : 0;
    if (group < 1) {
        snprintf(im->qp_why, sizeof im->qp_why,
                 "one expert's dequantised weights take %.1f MB of workspace, over MOE_QUANT_PREFILL_MB = %lld",
                 per / 1048576.0, budget);
        return 0;
    }
    if (group > d->E) group = d->E;
    const moe__backend *cands[] = {&moe__backend_cuda_jit, &moe__backend_cuda_sm90, &moe__backend_cuda_sm80};
    char whys[3][200];
    for (int i = 0; i < 3; i++) {
        moe_layer *G = qp_layer(L, im, cands[i], whys[i], sizeof whys[i]);
        if (G) {
            im->qp = G;
            im->qp_group = group;
            return 1;
        }
    }
    snprintf(im->qp_why, sizeof im->qp_why, "no grouped GEMM backend: cuda-jit: %.50s; cuda-sm90: %.50s; cuda-sm80: %.50s",
             whys[0], whys[1], whys[2]);
    return 0;
}

static void qp_init(moe_layer *L, dec_impl *im) {
    const moe_layer_desc *d = &L->desc;
    im->qp_min_t = INT64_MAX;
    im->qf_max_t = INT64_MAX;
    if (d->act_type != MOE_TYPE_BF16 && d->act_type != MOE_TYPE_F16) {
        snprintf(im->qp_why, sizeof im->qp_why, "x is %s; the grouped GEMMs take bf16 or f16",
                 moe_type_name(d->act_type));
        return;
    }
    /* the threshold: MOE_QUANT_PREFILL_T, else the hand-over of the path the
     * layer gets (qp_pairs_fused / qp_pairs_qg, in tokens) */
    const char *mt = getenv("MOE_QUANT_PREFILL_T");
    const int has_t = mt && *mt;
    const int64_t env_t = has_t ? strtoll(mt, NULL, 10) : 0;
    if (env_t < 0) {
        snprintf(im->qp_why, sizeof im->qp_why, "MOE_QUANT_PREFILL_T=%s", mt);
        return;
    }
    if (cudaMalloc(&im->qp_dummy, 256) != cudaSuccess) {
        cudaGetLastError();
        snprintf(im->qp_why, sizeof im->qp_why, "cudaMalloc of 256 bytes failed");
        return;
    }
    char fwhy[200];
    if (qp_init_fused(L, im, fwhy, sizeof fwhy)) {
        im->qp_min_t = has_t ? env_t : qp_pairs_fused(im->fmt1, im->fmt2, expert_bytes(L), im->qg) * d->E / d->K;
        moe__log(L->ctx, MOE_LOG_INFO, "cuda-quant: T > %lld runs cuda-sm90's GEMMs on the GGUF blocks (%s / %s)",
                 (long long)im->qp_min_t, moe_type_name(L->up.type), moe_type_name(L->down.type));
        /* and above qp_fused_max_pairs the dequantising path, where it is faster
         * (MOE_QUANT_PREFILL_FUSED=1: the GEMMs on the GGUF blocks at every T) */
        const char *ev = getenv("MOE_QUANT_PREFILL_FUSED");
        const int64_t mp = qp_fused_max_pairs(im->fmt1, im->fmt2, expert_bytes(L));
        if (!(ev && *ev == '1') && mp < INT64_MAX && qp_init_dequant(L, im)) {
            im->qf_max_t = mp * d->E / d->K;
            if (im->qf_max_t < im->qp_min_t) im->qf_max_t = im->qp_min_t;
            moe__log(L->ctx, MOE_LOG_INFO,
                     "cuda-quant: T > %lld dequantises the experts in use (%lld at a time) and runs %s instead",
                     (long long)im->qf_max_t, (long long)im->qp_group, im->qp->backend->name);
        }
        return;
    }
    moe__log(L->ctx, MOE_LOG_INFO, "cuda-quant: prefill GEMMs on the GGUF blocks: %s; dequantising instead", fwhy);
    const int64_t min_t = has_t ? env_t : qp_pairs_qg(im->fmt1, expert_bytes(L), im->qg) * d->E / d->K;
    if (qp_init_dequant(L, im)) {
        im->qp_min_t = min_t;
        moe__log(L->ctx, MOE_LOG_INFO, "cuda-quant: T > %lld dequantises the experts in use (%lld at a time) and runs %s",
                 (long long)min_t, (long long)im->qp_group, im->qp->backend->name);
    }
}

static void sv_init(moe_layer *L, dec_impl *im);
static void set_weight(moe_dec_args *a, int which, const moe_tensor *t);

/* The int8 tensor-core kernels (decode_qmma.cu) take cuda-quant's forwards
 * between the streaming kernels and the prefill path where both formats have
 * them and the device has the shared memory; MOE_QUANT_I8=0 keeps k_dec. */
static void qg_init(moe_layer *L, dec_impl *im) {
    const char *env = getenv("MOE_QUANT_I8");
    const char *nt = getenv("MOE_QG_NT");
    const char *hqe = getenv("MOE_QG_HQ");
    im->qg_hq = !(hqe && hqe[0] == '0');
    im->qg_nt = nt && (atoi(nt) == 1 || atoi(nt) == 2 || atoi(nt) == 4) ? atoi(nt) : 0;
    if (env && env[0] == '0') {
        snprintf(im->qg_why, sizeof im->qg_why, "MOE_QUANT_I8=0");
        return;
    }
    if (!moe__qg_fmt_ok(im->fmt1) || !moe__qg_fmt_ok(im->fmt2)) {
        snprintf(im->qg_why, sizeof im->qg_why, "weights %s/%s: they take Q8_0, Q4_0, Q4_K, Q5_K, Q6_K and MXFP4",
                 moe_type_name(L->up.type), moe_type_name(L->down.type));
        return;
    }
    if (im->cc_major < 8) {
        snprintf(im->qg_why, sizeof im->qg_why, "sm_%d0: they need sm_80 (int8 mma.sync)", im->cc_major);
        return;
    }
    {
        const moe_tensor *ts[3] = {L->gated ? &L->gate : &L->up, &L->up, &L->down};
        for (int i = 0; i < 3; i++) {
            const int64_t sn = bytes_of(ts[i], ts[i]->stride_n);
            if (!moe__qg_row_stride_ok(sn)) {
                snprintf(im->qg_why, sizeof im->qg_why, "row stride of %lld bytes: they take rows below 128 KB",
                         (long long)sn);
                return;
            }
        }
    }
    cudaError_t e = moe__qg_prepare(im->fmt1);
    if (e == cudaSuccess && im->fmt2 != im->fmt1) e = moe__qg_prepare(im->fmt2);
    if (e != cudaSuccess) {
        cudaGetLastError();
        snprintf(im->qg_why, sizeof im->qg_why, "shared memory of the device: %s", cudaGetErrorString(e));
        return;
    }
    /* three blocks an SM (rings of 3 stages) where D or I <= 3072, else two
     * (rings of 4): H200, bench/decode/s16 run 7: gpt-oss-20b (D = 2880) Q8_0
     * T = 16 / 32 / 64 303 / 357 / 460 us against 375 / 431 / 533, MXFP4
     * 0.88-0.99x; mixtral (D = 4096, I = 14336) 1.00-1.05x slower. I joined the
     * rule in session 19 (bench/decode/s19 run 18): deepseek-v3 (D = 7168, I =
     * 2048) Q4_K / Q8_0 at T = 32-128 0.914-0.942x the time at three, while
     * mixtral stays mixed (Q4_K T = 8 0.945, T = 16-64 1.00-1.09x; Q8_0 T = 32
     * 0.930, T = 8-16 1.08x). MOE_QG_BPS=2/3 overrides. */
    const char *bps = getenv("MOE_QG_BPS");
    im->qg_bps_env = bps && (bps[0] == '2' || bps[0] == '3');
    im->qg_bps = im->qg_bps_env ? bps[0] - '0' : L->desc.D <= 3072 || L->desc.I <= 3072 ? 3 : 2;
    {
        const char *lin = getenv("MOE_QG_LIN");
        const int knob = !(lin && lin[0] == '0');
        moe_dec_args w1, w2;
        memset(&w1, 0, sizeof w1);
        memset(&w2, 0, sizeof w2);
        set_weight(&w1, 0, L->gated ? &im->gate : &im->up);
        if (L->gated) set_weight(&w1, 1, &im->up);
        set_weight(&w2, 0, &im->down);
        im->qg_lin1 = moe__qg_linear(im->fmt1, knob, &w1, L->gated);
        im->qg_lin2 = moe__qg_linear(im->fmt2, knob, &w2, 0);
    }
    im->qg = 1;
}

static moe_status dec_init_common(moe_layer *L, int quant) {
    dec_impl *im = (dec_impl *)calloc(1, sizeof *im);
    if (!im) return moe__layer_error(L, MOE_ERR_OUT_OF_MEMORY, "out of memory");
    const moe_layer_desc *d = &L->desc;
    im->device = L->ctx->p.cuda_device;
    im->quant = quant;
    im->fmt1 = fmt_of(L->up.type);
    im->fmt2 = fmt_of(L->down.type);
    im->gate = L->gate; im->up = L->up; im->down = L->down;
    im->gate_bias = L->gate_bias; im->up_bias = L->up_bias; im->down_bias = L->down_bias;
    L->impl = im;
    moe_cuda_dev_guard g;
    cudaError_t e = moe_cuda_dev_enter(im->device, &g);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&im->sm_count, cudaDevAttrMultiProcessorCount, im->device);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&im->cc_major, cudaDevAttrComputeCapabilityMajor, im->device);
    if (e != cudaSuccess) {
        moe_status s = moe__layer_error(L, MOE_ERR_CUDA, "device %d: %s", im->device, cudaGetErrorString(e));
        dec_fini(L);
        return s;
    }
    moe_status s = MOE_OK;
    int64_t D = d->D, I = d->I;
    if (d->layout == MOE_GATE_UP_SEPARATE) {
        if (L->gated) s = upload(L, im, &d->gate, I, D, &im->gate, &L->gate, NULL, NULL);
        if (!s) s = upload(L, im, &d->up, I, D, &im->up, &L->up, NULL, NULL);
        if (!s && L->gated) s = upload(L, im, &d->gate_bias, I, 1, &im->gate_bias, &L->gate_bias, NULL, NULL);
        if (!s) s = upload(L, im, &d->up_bias, I, 1, &im->up_bias, &L->up_bias, NULL, NULL);
    } else {
        s = upload(L, im, &d->gate_up, 2 * I, D, &im->gate, &L->gate, &im->up, &L->up);
        if (!s) s = upload(L, im, &d->gate_up_bias, 2 * I, 1, &im->gate_bias, &L->gate_bias, &im->up_bias, &L->up_bias);
    }
    if (!s) s = upload(L, im, &d->down, D, I, &im->down, &L->down, NULL, NULL);
    if (!s) s = upload(L, im, &d->down_bias, D, 1, &im->down_bias, &L->down_bias, NULL, NULL);
    if (s) {
        moe_cuda_dev_leave(&g);
        dec_fini(L);
        return s;
    }
    const char *env = getenv("MOE_DECODE_PDL");
    im->pdl = im->cc_major >= 9 && !(env && env[0] == '0');
    im->chunk_t = (int)(MOE_DEC_MAXP / d->K);
    im->max_t = INT64_MAX;
    im->gemm_min_t = INT64_MAX;
    if (!quant) {
        const char *mt = getenv("MOE_DECODE_MAX_T");
        im->max_t = mt && *mt ? strtoll(mt, NULL, 10) : moe__dec_max_t(d->E, d->K);
        if (im->max_t < 0) im->max_t = INT64_MAX; /* negative: never hand over */
        /* MOE_DECODE_MAX_T sets the hand-over alone */
        im->gemm_min_t = mt && *mt ? INT64_MAX : moe__dec_gemm_min_t(d->E, d->K, expert_bytes(L), im->max_t);
        if (im->max_t != INT64_MAX) im->gemm = make_gemm_layer(L, im);
    }
    if (quant) qg_init(L, im); /* before qp_init and sv_init: their thresholds depend on it */
    if (quant) qp_init(L, im);
    sv_init(L, im);
    const char *sv_env = getenv("MOE_DECODE_STREAM");
    if (!im->sv && sv_env && sv_env[0] == '1')
        moe__log(L->ctx, MOE_LOG_WARN, "%s: MOE_DECODE_STREAM=1 but the streaming kernels cannot run this layer: %s",
                 L->backend->name, im->sv_why);
    moe_cuda_dev_leave(&g);
    return MOE_OK;
}

/* Shared-memory bytes a stage of rows may take (several rows when they are
 * short): dense rows (twice this, sv_plan), and GGUF rows, whose stages are
 * larger so that each lane takes several units of a row per stage and the
 * per-stage work (barriers, lane sums, partial sums) is spread over more units. */
#define SV_STAGE_TARGET (16 * 1024)
#define SV_STAGE_GGUF (40 * 1024)

/* Can the streaming kernels read tensor t ([E, N, C], a view)? Their bulk copies
 * start at the 16-byte boundary below a row and end at the one above it. */
static int sv_weight_ok(const moe_tensor *t, int64_t E, int64_t N, int64_t C, int dense, int last_in_alloc,
                        const void *alloc_start) {
    /* GGUF rows may start anywhere: the copy starts at the 16-byte boundary below,
     * which must not precede the allocation (the up view of a fused gate_up
     * tensor starts one row in) */
    if (((uintptr_t)t->data & 15) && (dense || ((uintptr_t)alloc_start & 15))) return 0;
    int64_t se = bytes_of(t, t->stride_e), sn = bytes_of(t, t->stride_n);
    if (dense && ((se | sn) & 15)) return 0;
    if (!last_in_alloc) return 1;
    size_t end = (uintptr_t)t->data + extent(t, E, N, C);
    (void)se;
    return (end & 15) == 0;
}

static moe_status dec_init(moe_layer *L) { return dec_init_common(L, 0); }
static moe_status quant_init(moe_layer *L) { return dec_init_common(L, 1); }

/* ------------------------------------------------------------------------ */
/* Work split and workspace                                                  */
/* ------------------------------------------------------------------------ */

/* Slices of C per row group (KS; RW = 8 / KS row groups of 16 rows per
 * block) for a phase of N rows, n_chunks chunks of C and up to n_exp active
 * experts: the finest split whose grid still fits in one wave of the SMs
 * (every block streams its rows once, no tail wave), else the coarsest. */
static int pick_ks(int n_chunks, int64_t N, int64_t n_exp, int slots) {
    for (int ks = 8; ks >= 1; ks >>= 1) {
        if (ks > 1 && n_chunks < ks) continue;
        if (moe__cdiv(N, 16 * (8 / ks)) * n_exp <= slots) return ks;
    }
    return 1;
}

/* Token tiles of 8 per weight pass, from the expected pairs per active expert. */
static int pick_nt(int64_t TK, int64_t E) {
    int64_t act = TK < E ? TK : E;
    return TK > 6 * act ? 4 : 1;
}

/* The blocks an SM of format fmt's int8 kernels at nt token tiles a pass:
 * the layer's rule (qg_init) but where session 19 measured otherwise (H200,
 * bench/decode/s19; MOE_QG_BPS overrides all):
 * - MXFP4 3 at 1-2 tiles, 2 at 4, whatever D (run 14, after its decode
 *   change: mixtral T = 16 / 32 0.938 / 0.982x the time at 3 than at 2, T =
 *   64 / 128 1.05x slower at 3; gpt-oss-20b T = 128 (4 tiles) 0.900x at 2,
 *   T = 16-64 1.05-1.13x slower at 2; qwen3 1.15-1.19x slower at 2). The
 *   4-tile kernels at 3 blocks an SM do without the preset accumulator
 *   (their 168 registers), which MXFP4's two mma a fragment feel most;
 * - Q4_K 2 at 2-4 tiles (run 19: deepseek-v3 T = 256-1024 1.04-1.10x slower
 *   at 3 while T = 64-128, 1 tile, is 0.90x; qwen3 T = 128 even, T = 256
 *   0.939x at 2: run 15);
 * - Q8_0 3 at 2 tiles on every layer (run 21: mixtral T = 24 / 32 / 48
 *   0.935 / 0.922 / 0.874x, where the layer's rule gives 2; at 1 and 4 tiles
 *   mixtral keeps 2: T = 8-16 1.08x, T = 64 1.03x slower at 3, run 18;
 *   deepseek-v3 0.84-0.95x at 3 at every tile count, run 19). */
static int qg_launch_bps(const dec_impl *im, int fmt, int nt) {
    if (!im->qg_bps_env) {
        if (fmt == MOE_DF_MXFP4) return nt >= 4 ? 2 : 3;
        if (fmt == MOE_DF_Q4_K && nt >= 2) return 2;
        if (fmt == MOE_DF_Q8_0 && nt == 2) return 3;
    }
    return moe__qg_bps(fmt, im->qg_bps);
}

/* Token tiles of 8 a pass of the int8 kernels: 1 where experts average up
 * to 4 pairs, 2 up to 12, else 4 (an expert with more takes several passes);
 * MOE_QG_NT overrides. */
static int qg_pick_nt(const dec_impl *im, int64_t TK, int64_t E) {
    if (im->qg_nt) return im->qg_nt;
    const int64_t act = TK < E ? TK : E;
    return TK > 12 * act ? 4 : TK > 4 * act ? 2 : 1;
}

typedef struct {
    size_t hdr, act_e, act_off, sorted, counters, h, y, total;
    size_t xq, xd, xs, hq, hd, hs; /* the int8 kernels: x and h as int8 blocks of 32, scales, sums */
    int64_t TK, maxA;
    int ncnt;
} dws;

static size_t al256(size_t v) { return (v + 255) & ~(size_t)255; }

static void plan_split(const moe_layer *L, const dec_impl *im, int64_t Tn, int *ks1, int *ks2) {
    const moe_layer_desc *d = &L->desc;
    int64_t TK = Tn * d->K, maxA = TK < d->E ? TK : d->E;
    int nch1 = (int)moe__cdiv(d->D, moe__dec_chunk_cols(im->fmt1)), nch2 = (int)moe__cdiv(d->I, moe__dec_chunk_cols(im->fmt2));
    *ks1 = pick_ks(nch1, d->I, maxA, im->sm_count * moe__dec_min_blocks(im->fmt1));
    *ks2 = pick_ks(nch2, d->D, maxA, im->sm_count * moe__dec_min_blocks(im->fmt2));
}

static dws dws_plan(const moe_layer *L, const dec_impl *im, int64_t Tc) {
    dws w;
    const moe_layer_desc *d = &L->desc;
    w.TK = Tc * d->K;
    w.maxA = w.TK < d->E ? w.TK : d->E;
    w.ncnt = (int)moe__cdiv(d->D, 16); /* row blocks of phase 2 at most (RW >= 1) */
    size_t o = 0;
    w.hdr = o; o = al256(o + 16);
    w.act_e = o; o = al256(o + sizeof(int) * (size_t)w.maxA);
    w.act_off = o; o = al256(o + sizeof(int) * (size_t)(w.maxA + 1));
    w.sorted = o; o = al256(o + sizeof(int) * (size_t)w.TK);
    w.counters = o; o = al256(o + sizeof(unsigned) * (size_t)w.ncnt);
    /* h: bf16 for the mma kernels, f32 for the int8 kernels where a launch of its own quantises it
     * (MOE_QG_HQ=0); none where their gate/up epilogue does (it writes hq alone) */
    w.h = o; o = al256(o + (im->qg ? (im->qg_hq ? 0 : 4) : 2) * (size_t)(w.TK * d->I));
    w.y = o; o = al256(o + 4 * (size_t)(w.TK * d->D));
    w.xq = w.xd = w.xs = w.hq = w.hd = w.hs = 0;
    if (im->qg) {
        w.xq = o; o = al256(o + (size_t)(Tc * d->D));
        w.xd = o; o = al256(o + 4 * (size_t)(Tc * (d->D / 32)));
        w.xs = o; o = al256(o + 4 * (size_t)(Tc * (d->D / 32)));
        w.hq = o; o = al256(o + (size_t)(w.TK * d->I));
        w.hd = o; o = al256(o + 4 * (size_t)(w.TK * (d->I / 32)));
        w.hs = o; o = al256(o + 4 * (size_t)(w.TK * (d->I / 32)));
    }
    w.total = o;
    return w;
}

static int use_gemm(const dec_impl *im, int64_t T) { return im->gemm && (T > im->max_t || T >= im->gemm_min_t); }
static int use_qp(const dec_impl *im, int64_t T) { return (im->qp || im->qf) && T > im->qp_min_t; }
/* ... on the GGUF blocks (else dequantising) */
static int use_qf(const dec_impl *im, int64_t T) { return use_qp(im, T) && im->qf && T <= im->qf_max_t; }
static int use_sv(const dec_impl *im, int64_t T) { return im->sv && T <= im->sv_max_t; }

/* Expert-major down (MOE_SV_DOWN_E) or token-major; MOE_SV_DOWNE=0/1 forces
 * one. Measured on an H200 (bench/decode/README.md, session 4): expert-major
 * is faster at T = 1 (GGUF 5-15%, dense 1-8% except qwen3, -2%), for dense
 * rows at T >= 8, and for GGUF blocks from T = 8 once T*K >= E or the rows a
 * token-major down would read again come to 300 MB (session 27,
 * moe__sv_down_expert_gguf); between, the token-major down with its single
 * cooperative launch wins (GGUF Q8_0 T = 2: 56 vs 73 us). */
static int sv_down_expert(const moe_layer *L, const dec_impl *im, int64_t Tn) {
    if (im->sv_downe >= 0) return im->sv_downe;
    /* T = 1 on dense rows of I <= 1024: token-major, whose block sums the
     * token's slots itself (no y rows, no counter, no second pass through L2):
     * qwen3 (I = 768) 30.3 against 31.2 us, as session 4 had it (-2%); from
     * I = 2048 (deepseek-v3, gpt-oss, mixtral) expert-major stays 0-1.6%
     * ahead (bench/decode/s26 run 3; the limit lies between those) */
    if (Tn == 1 && !im->quant) return L->desc.I > 1024;
    if (!im->quant) return 1;
    const moe_layer_desc *d = &L->desc;
    return moe__sv_down_expert_gguf(Tn, d->K, d->E, (double)bytes_of(&L->down, d->I) * (double)d->D);
}

/* GGUF: does phase 1 quantise h for phase 2 (moe_sv_args.hq) at Tn tokens?
 * Against every down block quantising the f32 rows it stages (MOE_SV_HQ=0),
 * H200, bench/decode/s30 run 2, the default layer, three rounds of 2
 * routings, Q8_0 / Q4_K / Q6_K / MXFP4: T = 2 0.92-0.98 (qwen3 Q8_0 1.00), T
 * = 3-4 0.95-0.99, T = 8-16 0.98-1.01. At T = 1 each down block stages the
 * token's K slots of I and phase 1's blocks of 32 shared by two jobs cost
 * their tail a round trip to L2 and back: mixtral (K I = 28672) 0.96-0.98,
 * deepseek-v3 (16384) 0.99-1.00, gpt-oss (11520) 1.00-1.02, qwen3 (6144)
 * 1.05-1.06; so T = 1 only from K I = 16384. */
static int sv_use_hq(const moe_layer *L, const dec_impl *im, int64_t Tn) {
    if (!im->quant || !im->sv_hqcnt) return 0;
    return im->sv_hq_all || Tn >= 2 || L->desc.K * L->desc.I >= 16384;
}

/* Workspace of one streaming chunk of Tn tokens: h [Tn*K, I] (mma type, f32
 * for GGUF), for GGUF where phase 1 quantises h (im->sv_hqcnt) its blocks
 * [Tn*K, I] int8 and their 16-byte records [Tn*K, I / 32] (moe_sv_args.hq),
 * then for the expert-major down y [Tn*K, D] f32 and one counter per (token,
 * row tile) (at most D row tiles). */
static size_t sv_ws_layout(const moe_layer *L, const dec_impl *im, int64_t Tn, size_t *y_off, size_t *cnt_off,
                           size_t *hq_off) {
    const moe_layer_desc *d = &L->desc;
    size_t o = al256((size_t)(Tn * d->K * d->I) * (im->quant ? 4 : 2));
    *hq_off = 0;
    if (sv_use_hq(L, im, Tn)) {
        *hq_off = o;
        o = al256(o + (size_t)(Tn * d->K * d->I) + (size_t)(Tn * d->K * (d->I / 32)) * 16);
    }
    *y_off = *cnt_off = 0;
    if (sv_down_expert(L, im, Tn)) {
        *y_off = o;
        o = al256(o + (size_t)(Tn * d->K * d->D) * 4);
        *cnt_off = o;
        o = al256(o + sizeof(unsigned) * (size_t)(Tn * d->D));
    }
    return o;
}

/* The largest chunk's layout, or the last (shorter) chunk's when its down
 * phase differs and needs more (y where the long chunks have none). */
static size_t sv_workspace(const moe_layer *L, const dec_impl *im, int64_t T) {
    const int64_t chunk = im->sv_chunk, rem = T % chunk;
    size_t yo, co, ho;
    size_t n = sv_ws_layout(L, im, T < chunk ? T : chunk, &yo, &co, &ho);
    if (T > chunk && rem) {
        const size_t r = sv_ws_layout(L, im, rem, &yo, &co, &ho);
        if (r > n) n = r;
    }
    return n;
}

static size_t dec_workspace(const moe_layer *L, int64_t T) {
    const dec_impl *im = (const dec_impl *)L->impl;
    if (use_gemm(im, T)) return im->gemm->backend->workspace(im->gemm, T);
    if (use_qf(im, T)) return im->qf->backend->workspace(im->qf, T);
    if (use_qp(im, T)) {
        size_t sz[3];
        qp_sizes(L, im->qp_group, sz);
        return al256((size_t)L->desc.E) + sz[0] + sz[1] + sz[2] + im->qp->backend->workspace(im->qp, T);
    }
    if (use_sv(im, T)) return sv_workspace(L, im, T);
    int64_t Tc = T < im->chunk_t ? T : im->chunk_t;
    return dws_plan(L, im, Tc).total;
}

/* ------------------------------------------------------------------------ */
/* Forward                                                                   */
/* ------------------------------------------------------------------------ */

static cudaError_t launch_phase(int fmt, int ph, int nt, const moe_dec_args *a, dim3 grid, cudaStream_t s) {
    if (fmt <= MOE_DF_F16) return moe__dec_launch_dense(fmt, ph, nt, a, grid, s);
    if (fmt <= MOE_DF_MXFP4) return moe__dec_launch_qlegacy(fmt, ph, nt, a, grid, s);
    return moe__dec_launch_qk(fmt, ph, nt, a, grid, s);
}

static void set_weight(moe_dec_args *a, int which, const moe_tensor *t) {
    int64_t se = bytes_of(t, t->stride_e), sn = bytes_of(t, t->stride_n);
    if (which == 0) { a->w0 = (const uint8_t *)t->data; a->w0_se = se; a->w0_sn = sn; }
    else { a->w1 = (const uint8_t *)t->data; a->w1_se = se; a->w1_sn = sn; }
}

static void set_bias(moe_dec_args *a, int which, const moe_tensor *t) {
    if (which == 0) { a->b0 = t->data; a->b0_type = t->type; a->b0_se = t->stride_e; a->b0_sn = t->stride_n; }
    else { a->b1 = t->data; a->b1_type = t->type; a->b1_se = t->stride_e; a->b1_sn = t->stride_n; }
}

static int xmode_of(moe_type act, int fmt) {
    moe_type mt = fmt == MOE_DF_F16 ? MOE_TYPE_F16 : MOE_TYPE_BF16;
    if (act == mt) return 0;
    if (act == MOE_TYPE_F32) return 1;
    return act == MOE_TYPE_F16 ? 2 : 3;
}

/* The launch's format, phase and rows suit the int8 tensor-core consumer
 * (sv_qmma_stage): 32-element blocks of int8 or nibbles, groups of 8 tokens,
 * 64 units a row or more (sv_plan). */
static int sv_qmma_fmt(const moe_sv_args *a) {
    return sv_fmt_has_qmma(a->fmt) && a->NT == 8 && a->phase != MOE_DEC_DOWN && a->C >= 64 * 32;
}

/* The dense expert-major down launch in one wave of blocks of whole row
 * tiles: each touched expert's N rows in nt = slots / g tiles, g the experts
 * a forward touches (mean + 1.5 standard deviations) or the expected groups
 * where more, so that the blocks rarely spill into a second wave. The 16 KB
 * cap on a block's partial sums (sv_plan_rb) otherwise holds passes of 4
 * tokens to 128 rows a block: two to four waves of short blocks, each paying
 * its routing, the ring's first fill and its combine (H200, bench/decode/s32
 * run 7, ncu: qwen3 T = 4 / 8's down launch 39.7 -> 36.2 / 73.1 -> 67.7 us).
 * Taken where the partial sums stay within im->sv_d1w bytes (MOE_SV_D1W, 0:
 * never) and the ring keeps im->sv_d1w_ns stages (MOE_SV_D1W_NS, default 2:
 * gpt-oss's column-chunk stages of 24.7 KB fit 2 at the larger blocks; run 8,
 * against 3: gpt-oss-20b T = 3 / 4 / 5 0.91 / 0.95 / 0.98, gpt-oss-120b T =
 * 3 / 4 0.96 / 0.95, T = 6 even, but gpt-oss-20b T = 8 1.04, where the layer
 * does not stream). Dense only: a dense block's time follows its bytes, while
 * a GGUF block's grows with its group's pairs (dp4a), and the blocks that
 * spill past one wave even that out: the same plan on GGUF layers (run 10,
 * H200, its expert-major down at T = 8) ran mixtral Q4_K / Q8_0 / MXFP4
 * 1.06 and gpt-oss-20b Q8_0 1.02-1.03 slower. */
static void sv_down_one_wave(const dec_impl *im, moe_sv_args *a, int64_t parts, int stage, int per, int ns_max) {
    if (im->sv_d1w <= 0) return;
    const int64_t slots = (int64_t)im->sm_count * a->bps;
    int64_t g = moe__sv_plan_cols(a->T, a->K, a->E, a->NT, 0, 1.5);
    const int64_t gg = moe__sv_plan_cols(a->T, a->K, a->E, a->NT, 1, 0.0);
    if (gg > g) g = gg;
    const int64_t nt = slots / (g > 0 ? g : 1);
    if (nt < 1) return;
    const int64_t R = moe__cdiv(moe__cdiv(a->N, nt), a->SRS) * a->SRS;
    if (R <= a->R || 4 * parts * R > im->sv_d1w) return;
    moe_sv_args b = *a;
    b.R = (int)R;
    b.NS = 0; /* the bytes besides the ring */
    const int ns = (per - moe__sv_smem_bytes(&b)) / stage;
    if (ns < im->sv_d1w_ns) return;
    b.NS = ns > ns_max ? ns_max : ns;
    *a = b;
}

/* Rows per stage, rows per block and ring depth of one streaming launch over
 * ncols block columns (active experts or tokens): about one wave of blocks at
 * two (else one) per SM. Returns the blocks per SM planned for (2 or 1), 0
 * when its shared memory does not fit. */
static int sv_plan_rb(const dec_impl *im, moe_sv_args *a, int64_t ncols) {
    a->pitch = ((a->row_bytes + 15) & ~15) + (a->dense ? 0 : 16);
    /* tuning knobs for measurements (bench/decode): stage bytes, blocks per SM, ring depth */
    static int stage_target = -1, gguf_target = SV_STAGE_GGUF, bps_max = 2, ns_max = 6, smem_cap = 1 << 30,
               psum = 16384, psum1 = -1;
    if (stage_target < 0) {
        const char *v;
        if ((v = getenv("MOE_SV_PSUM")) && atoi(v) > 0) psum = atoi(v);
        psum1 = (v = getenv("MOE_SV_PSUM1")) && atoi(v) > 0 ? atoi(v) : psum;
        if ((v = getenv("MOE_SV_SMEM")) && atoi(v) > 0) smem_cap = atoi(v);
        stage_target = (v = getenv("MOE_SV_STAGE")) && atoi(v) > 0 ? atoi(v) : SV_STAGE_TARGET;
        if (v && atoi(v) > 0) gguf_target = stage_target;
        if ((v = getenv("MOE_SV_BPS")) && atoi(v) > 0) bps_max = atoi(v);
        if ((v = getenv("MOE_SV_NS")) && atoi(v) > 1) ns_max = atoi(v);
    }
    int srs = 1;
    if (a->dense) {
        /* 8 rows per stage (the N side of one mma), rows cut in NC chunks of KC
         * columns (a multiple of 128: 8 warps x 16) to fit the stage */
        int st = stage_target > SV_STAGE_TARGET ? stage_target : 2 * SV_STAGE_TARGET;
        if (getenv("MOE_SV_STAGE")) st = stage_target;
        srs = 8;
        a->NC = (int)moe__cdiv((int64_t)8 * 2 * a->C, st);
        if (a->NC < 1) a->NC = 1;
        a->KC = (int)moe__cdiv(moe__cdiv(a->C, a->NC), 128) * 128;
        a->NC = (int)moe__cdiv(a->C, a->KC);
        a->KCb = 2 * a->KC;
        a->pitch = a->KCb + 16; /* rows 16 B apart modulo 128: ldmatrix without bank conflicts */
    } else {
        while (srs < 32 && 2 * srs * a->pitch <= gguf_target) srs *= 2;
        /* Below 8 rows a stage, each row's units go to P = 8 / srs warps; where
         * that leaves many lanes idle in a warp's last pass (gpt-oss Q8_0, 90
         * units a row: 45 per warp on 64 lanes, 70%) and whole rows keep them
         * busier (90 on 96, 94%), take 8 rows a stage, up to twice the stage
         * target (H200, gpt-oss-20b Q8_0 T=1: 46.6 -> 42.2 us; bench/decode/s5) */
        if (srs < 8 && 8 * a->pitch <= 2 * gguf_target) {
            const int units = a->C / 32, parts = 8 / srs, per = (units + parts - 1) / parts;
            const double busy = (double)per / (32 * ((per + 31) / 32)), whole = (double)units / (32 * ((units + 31) / 32));
            if (busy < 0.85 && whole > busy + 0.1) srs = 8;
        }
        a->KC = a->C;
        a->KCb = a->row_bytes;
        a->NC = 1;
    }
    if (!a->dense) { /* no more rows per stage than a block gets (else too few blocks) */
        int64_t rt = moe__cdiv((int64_t)a->N * ncols, (int64_t)im->sm_count * bps_max);
        while (srs > 1 && srs > rt) srs >>= 1;
        /* stages beyond 8 rows only where rounding a block's rows up to
         * whole stages adds at most 1/8: more leaves SMs idle (qwen3 Q4_K T=2,
         * 47 rows a block taken as 64: 192 blocks for 264 places, 6% slower
         * than 8-row stages; bench/decode/s6 run 2). Requiring two stages a
         * block instead cost the short down rows their lanes (run 3). */
        while (srs > 8 && moe__cdiv(rt, srs) * srs > rt + rt / 8) srs >>= 1;
        /* the int8 consumer's partial sums grow with the rows a stage (16 KB
         * at 32, which shortens the ring): at most MOE_SV_QMMA_SRS (16) rows a
         * stage where it runs (qwen3 MXFP4 T = 128, 32-row stages: 1.13x
         * slower than dp4a, 16: 0.98; bench/decode/s7 run 8) */
        static int qsrs = -1;
        if (qsrs < 0) {
            const char *v = getenv("MOE_SV_QMMA_SRS");
            qsrs = v && atoi(v) > 0 ? atoi(v) : 16;
        }
        if (a->qmma && sv_qmma_fmt(a) && srs > qsrs) srs = qsrs;
    }
    a->SRS = srs;
    /* the int8 tensor-core consumer (a->qmma, proposed by sv_plan_nt) needs
     * 16-row tiles, half of them at least (8 rows a stage); sv_qmma_fmt asks
     * for 8 units a warp a tile so that the stage's barrier and cross-warp
     * sum pay off */
    if (!(sv_qmma_fmt(a) && srs >= 8)) a->qmma = 0;
    const int stage = srs * a->pitch;
    /* GGUF beyond T = 8: the expert-major down launch's blocks take half the rows, two waves of them, so that
     * the block scheduler evens out groups of unequal pairs (s31 run 6: qwen3 T = 16-32 0.95-0.97, with the
     * gate/up grid's own halving, sv_chunk, 0.89-0.95; MOE_SV_DWAVES=N: N waves, 1 as before session 31) */
    const int waves = !a->dense && a->T > 8 && a->phase == MOE_SV_DOWN_E && im->sv_dwaves > 1 ? im->sv_dwaves : 1;
    for (int bps = bps_max; bps >= 1; bps--) {
        int64_t R = moe__cdiv(moe__cdiv((int64_t)a->N * ncols, (int64_t)im->sm_count * bps), waves);
        /* the per-(row, part, token) partial sums stay under 16 KB: more blocks instead */
        const int64_t parts = (a->phase == MOE_DEC_DOWN ? a->K : (a->phase == MOE_DEC_GATE_UP ? 2 : 1) * a->NT) *
                              (a->dense ? 8 : srs >= 8 ? 1 : 8 / srs);
        const int64_t rcap = (a->phase == MOE_DEC_DOWN || a->phase == MOE_SV_DOWN_E ? psum : psum1) / (4 * parts);
        if (R > rcap) R = rcap;
        R = moe__cdiv(R, srs) * srs;
        int64_t rmax = moe__cdiv(a->N, srs) * srs;
        a->R = (int)(R < rmax ? R : rmax);
        a->NS = 0;
        /* besides the runtime's reserve and the static variables (was 1024 +
         * 64 B: the static variables take 128, so a plan within 64 B of the
         * budget fitted one block an SM where it planned two) */
        int per = ((im->sv_smem_sm / bps) & ~127) - im->sv_smem_fixed;
        if (per > im->sv_smem_block) per = im->sv_smem_block;
        if (per > smem_cap) per = smem_cap;
        int budget = per - moe__sv_smem_bytes(a);
        int ns = budget / stage;
        if (ns >= 2) {
            a->NS = ns > ns_max ? ns_max : ns;
            a->bps = bps;
            if (a->dense && a->phase == MOE_SV_DOWN_E) sv_down_one_wave(im, a, parts, stage, per, ns_max);
            return bps;
        }
    }
    return 0;
}

/* A positive integer knob from the environment, else def. */
static int sv_env_int(const char *name, int def) {
    const char *v = getenv(name);
    return v && atoi(v) > 0 ? atoi(v) : def;
}

/* The plan, with the activation records of the format (moe_sv_args.rb).
 * MXFP4's biased dot (decode_stream.cuh sv_row_dot32, passes of one token)
 * reads 8-byte records, 4 bytes more an activation block and row than the
 * scale alone: taken where passes of one token are the rule (the token-major
 * down; else at most one pair an expert on average: mixtral T = 8, two, ran
 * 1.009-1.020x with them, s29 runs 3-5) and the plan stays the same (blocks an
 * SM, rows a block and a stage, ring depth). Where they do not fit, the plan
 * changes: deepseek-v3 T = 8 and 16 went from two blocks an SM of 2 stages to
 * one of 5 and ran 1.13-1.15x slower (run 2). */
static int sv_plan(const dec_impl *im, moe_sv_args *a, int64_t ncols) {
    static int mx_rb = -1; /* MOE_SV_MXFP4_RB=4: never the larger records (a test and measurement knob) */
    if (mx_rb < 0) mx_rb = sv_env_int("MOE_SV_MXFP4_RB", 8);
    a->rb = a->dense ? 0 : moe__sv_rec_bytes(a->fmt);
    const int bps = sv_plan_rb(im, a, ncols);
    const int single = a->phase == MOE_DEC_DOWN || a->NT == 1 || (int64_t)a->T * a->K <= a->E;
    if (bps && !a->dense && a->fmt == MOE_DF_MXFP4 && mx_rb == 8 && single) {
        moe_sv_args b = *a;
        b.rb = 8;
        if (sv_plan_rb(im, &b, ncols) == bps && b.R == a->R && b.SRS == a->SRS && b.NS == a->NS) *a = b;
    }
    return bps;
}

/* Expert columns of one launch's plan (decode.h moe__sv_plan_cols), with
 * the layer's planning knobs (MOE_SV_PLAN_SD; MOE_SV_PLAN_MODEL=0: T K
 * draws of one expert each, n_e ~ Binomial(T K, 1 / E), as before session 11). */
static int64_t sv_plan_cols(const dec_impl *im, int64_t T, int64_t K, int64_t E, int NT, int by_groups) {
    return im->sv_plan_model ? moe__sv_plan_cols(T, K, E, NT, by_groups, im->sv_plan_sd)
                             : moe__sv_plan_cols(T * K, 1, E, NT, by_groups, im->sv_plan_sd);
}

/* The int8 tensor-core consumer (sv_qmma_stage) for passes of at least this
 * many tokens, where a launch's experts average 6 pairs or more: it takes 8
 * tokens whatever a group holds, and its per-warp partial sums (up to 16 KB
 * of shared memory) shorten the ring of every block of the launch, so at 4
 * pairs an expert (deepseek-v3 T = 128) it cost 4-24% while at 8 it gained
 * 10-17% (qwen3 Q8_0 T = 128, gpt-oss-20b and mixtral Q8_0 / MXFP4 at 8-16
 * pairs an expert; passes from 4 tokens better than from 6: run 6). Q8_0 and
 * Q4_0 only since session 13 (decode_stream.h sv_fmt_has_qmma: MXFP4's dp4a
 * consumer became the faster one).
 * MOE_SV_QMMA = the least tokens of a pass (0: never). */
static int sv_qmma_min(void) {
    static int v = -1;
    if (v < 0) {
        const char *e = getenv("MOE_SV_QMMA");
        v = e && *e ? atoi(e) : 4;
        if (v < 0) v = 0;
    }
    return v;
}

static int sv_plan_nt(const dec_impl *im, moe_sv_args *a, int64_t T, int64_t K, int64_t E, int nt_want, int by_groups) {
    const int64_t TK = T * K;
    static const int nts[3] = {8, 4, 1};
    if (im->sv_plan >= 0) by_groups = im->sv_plan;
    for (int i = 0; i < 3; i++) {
        if (nts[i] > nt_want) continue;
        moe_sv_args c = *a;
        c.NT = nts[i];
        c.qmma = TK >= im->sv_qmma_pairs * E ? sv_qmma_min() : 0; /* sv_plan keeps it where the rows allow */
        if (sv_plan(im, &c, sv_plan_cols(im, T, K, E, c.NT, by_groups))) {
            *a = c;
            return 1;
        }
    }
    return 0;
}

/* Rows a bulk copy of a launch's GGUF stages (moe_sv_args.cst): where rows
 * lie back to back in memory (gate and up each; not gpt-oss's interleaved
 * rows), the stage's rows halved until a copy is at most im->sv_cst bytes;
 * else 1 (a copy a row) */
static int sv_cst_rows(const dec_impl *im, const moe_sv_args *a) {
    if (im->sv_cst <= 0 || a->dense || a->NC != 1 || a->w0_sn != a->row_bytes ||
        (a->phase == MOE_DEC_GATE_UP && a->w1_sn != a->row_bytes))
        return 1;
    int cr = a->SRS;
    while (cr > 1 && (int64_t)cr * a->row_bytes > im->sv_cst) cr >>= 1;
    return cr;
}

/* Both phases of a chunk of Tn tokens as one cooperative launch (where its
 * grid fits at once)? GGUF layers by default (MOE_DECODE_FUSED=0 never, 1 at
 * every T), but not at T = 2: H200, bench/decode/s30 runs 4-5, two launches
 * against one, the default layer: T = 2 gpt-oss 0.91-0.97, qwen3 0.91-0.97,
 * mixtral and deepseek-v3 1.00 (they do not fit at once); T = 1 0.99-1.01;
 * T = 3 qwen3 1.09-1.14, gpt-oss-120b 1.03 (the run-time split's rows, from
 * T = 3, run better in one launch); T = 4-6 0.98-1.04. */
static int sv_fused_at(const dec_impl *im, int64_t Tn) { return im->sv_fused == 2 || (im->sv_fused == 1 && Tn != 2); }

/* The two launches of one chunk of Tn tokens (Tn * K <= MOE_SV_MAXP); with
 * plan_only, only checks that both fit, and gives the two launches' plans
 * in plan1 and plan2 when not NULL (for describe). */
static cudaError_t sv_chunk(const moe_layer *L, dec_impl *im, int64_t Tn, const int32_t *ids, const float *wts,
                            const void *x, void *out, void *hbuf, cudaStream_t s, int plan_only,
                            moe_sv_args *plan1, moe_sv_args *plan2) {
    const moe_layer_desc *d = &L->desc;
    const int64_t TK = Tn * d->K;
    moe_sv_args a;
    memset(&a, 0, sizeof a);
    a.dense = !im->quant;
    a.act = d->act;
    a.alpha = d->alpha;
    a.limit = d->limit;
    a.ids = ids;
    a.w = wts;
    a.T = (int)Tn; a.K = (int)d->K; a.E = (int)d->E;

    moe_sv_args a1 = a;
    a1.fmt = im->fmt1;
    const moe_tensor *g0 = L->gated ? &im->gate : &im->up;
    a1.phase = L->gated ? MOE_DEC_GATE_UP : MOE_DEC_UP;
    a1.w0 = (const uint8_t *)g0->data; a1.w0_se = bytes_of(g0, g0->stride_e); a1.w0_sn = bytes_of(g0, g0->stride_n);
    a1.w1 = (const uint8_t *)im->up.data; a1.w1_se = bytes_of(&im->up, im->up.stride_e); a1.w1_sn = bytes_of(&im->up, im->up.stride_n);
    const moe_tensor *bb0 = L->gated ? &im->gate_bias : &im->up_bias;
    if (bb0->data) { a1.b0 = bb0->data; a1.b0_type = bb0->type; a1.b0_se = bb0->stride_e; a1.b0_sn = bb0->stride_n; }
    if (L->gated && im->up_bias.data) {
        a1.b1 = im->up_bias.data; a1.b1_type = im->up_bias.type; a1.b1_se = im->up_bias.stride_e; a1.b1_sn = im->up_bias.stride_n;
    }
    a1.row_bytes = (int)bytes_of(&im->up, d->D);
    a1.N = (int)d->I; a1.C = (int)d->D;
    a1.x = x; a1.x_type = d->act_type;
    a1.hout = hbuf;

    const int emaj = sv_down_expert(L, im, Tn);
    size_t y_off, cnt_off, hq_off;
    sv_ws_layout(L, im, Tn, &y_off, &cnt_off, &hq_off);
    moe_sv_args a2 = a;
    a2.fmt = im->fmt2;
    a2.phase = emaj ? MOE_SV_DOWN_E : MOE_DEC_DOWN;
    a2.w0 = (const uint8_t *)im->down.data; a2.w0_se = bytes_of(&im->down, im->down.stride_e);
    a2.w0_sn = bytes_of(&im->down, im->down.stride_n);
    if (im->down_bias.data) {
        a2.b0 = im->down_bias.data; a2.b0_type = im->down_bias.type; a2.b0_se = im->down_bias.stride_e;
        a2.b0_sn = im->down_bias.stride_n;
    }
    a2.row_bytes = (int)bytes_of(&im->down, d->I);
    a2.N = (int)d->D; a2.C = (int)d->I;
    a2.h = hbuf;
    a2.out = out; a2.out_type = d->act_type;
    a2.pdl = im->pdl;
    if (hbuf && sv_use_hq(L, im, Tn)) { /* h quantised once, by phase 1 (decode_stream.cuh sv_hq_quantise) */
        a1.hq = a2.hq = (uint8_t *)hbuf + hq_off;
        a1.hq_rec = a2.hq_rec = TK * d->I;
        a1.hq_cnt = im->sv_hqcnt;
    }
    if (emaj) {
        a2.y = hbuf ? (float *)((char *)hbuf + y_off) : NULL;
        a2.cnt = hbuf ? (unsigned *)((char *)hbuf + cnt_off) : NULL;
    }

    /* Pairs per block (expert-major launches): an expert's pairs go in groups
     * of NT, one block (per row tile) each, so a busy expert takes several
     * blocks instead of passes over its rows. NT = 8 where experts average
     * more than 2 pairs, else 4 (1 at T = 1); the largest of 8 / 4 / 1 up to
     * that which fits in shared memory. */
    const int nt_want = Tn == 1 ? 1 : TK > 2 * d->E ? 8 : 4;
    /* grids sized by the expected pair groups from T = 5 (GGUF T = 8-16: 1.1-1.5x
     * faster than min(T*K, E) columns); at T <= 4 the distinct experts' mean
     * plus half a standard deviation, at most min(T*K, E), which keeps the GGUF
     * single cooperative launch within one wave (T = 2-4: up to 1.3x) and
     * measured faster for dense rows too (qwen3 T = 2: 55 vs 69 us); session
     * 11 added the half deviation (min(T*K, E) before: mixtral / gpt-oss
     * T = 3-4 5-18% slower) and the router model (decode.h moe__sv_plan_cols) */
    if (!sv_plan_nt(im, &a1, Tn, d->K, d->E, nt_want < im->sv_nt1 ? nt_want : im->sv_nt1, Tn > 4))
        return cudaErrorInvalidConfiguration;
    /* Phase 1 split at run time (sv_route_dyn): every block routes all pairs
     * itself (2 T K <= MOE_SV_LIST: the pairs and the groups fit its list)
     * and the blocks of one wave share the rows of the groups the ids make,
     * so that the grid no longer depends on how many experts a forward
     * touches; the planned R bounds a job. Measured on an H200 over 6
     * routings a point (bench/decode/s11): 2-26% faster at T = 3-8 on
     * mixtral, gpt-oss-20b and deepseek-v3 (dense from T = 2: gpt-oss-20b 10%,
     * qwen3 T = 3-4 6-7%), but a few % slower where the planned grid fits
     * anyway (GGUF T = 2, qwen3 GGUF T = 2 up to 13%) and at T = 16, where the
     * planned grid is several waves of capped R (mixtral, deepseek-v3 3-9%):
     * by default T = 3..8, and T = 2 for dense rows. Session 31 weighted the
     * GGUF split by the groups' pairs (moe__sv_split_range_w: dp4a's work
     * grows with them, the bytes do not; run 4: mixtral Q4_K T = 4-6 0.89-0.90,
     * gpt-oss-20b MXFP4 T = 3-8 0.93-0.95 against the even split) and took it
     * to T = 16 where T K <= 96 on layers of K >= 4 whose experts average a
     * pair or more (T K >= E): against the planned grid in two waves (H100,
     * runs 8-9) gpt-oss-20b T = 9-16 0.92-0.99, but gpt-oss-120b 1.00-1.06,
     * deepseek-v3 0.99-1.06 and qwen3 0.98-1.04, where the pairs spread over
     * more experts. MOE_SV_DYN = 0 never, 2 at every T, 3 T = 3..8 only (the
     * rule before session 31). */
    const int win = Tn >= (a1.dense ? 2 : 3) &&
                    (Tn <= 8 || (im->sv_dyn == 1 && !a1.dense && Tn <= 16 && d->K >= 4 && TK <= 96 && TK >= d->E));
    if ((im->sv_dyn == 2 || ((im->sv_dyn == 1 || im->sv_dyn == 3) && win)) && 2 * TK <= MOE_SV_LIST &&
        d->E < (1 << 19) && (int64_t)a1.NS * a1.SRS * a1.pitch >= MOE_SV_ROUTE_SCRATCH(d->E)) /* in the ring */
        a1.dyn = im->sv_dynord ? 2 : 1;
    if (a1.dyn == 1 && !a1.dense) a1.dynw = im->sv_dynw; /* not with MOE_SV_DYNORD's tile-major order (unweighted) */
    /* GGUF gate/up grids planned beyond T = 8 (not split at run time): blocks of half the rows, two waves of
     * them, the block scheduler evening out groups of unequal pairs (s31 run 6, with the down launch's:
     * qwen3 T = 16-32 0.89-0.95, gpt-oss-120b T = 24-32 0.90-0.93; where the split takes the rows, its R caps
     * a job and halving it cost 1-5%). MOE_SV_GWAVES=N: N waves, 1 as before session 31. */
    if (!a1.dyn && !a1.dense && Tn > 8 && im->sv_gwaves > 1) {
        const int64_t R = moe__cdiv(moe__cdiv(a1.R, im->sv_gwaves), a1.SRS) * a1.SRS;
        a1.R = (int)(R < a1.SRS ? a1.SRS : R);
    }
    if (emaj) {
        if (!sv_plan_nt(im, &a2, Tn, d->K, d->E, nt_want < im->sv_nt2 ? nt_want : im->sv_nt2, 1))
            return cudaErrorInvalidConfiguration;
        a1.cnt = a2.cnt;
        a1.ncnt = (int)(Tn * moe__cdiv(a2.N, a2.R));
    } else {
        a2.NT = 1;
        if (!sv_plan(im, &a2, Tn)) return cudaErrorInvalidConfiguration;
    }
    /* GGUF stages whose rows lie back to back as one bulk copy each: a copy a
     * row capped qwen3's short rows (432-1152 B) at ~2.5 copies a ns over the
     * GPU, whatever their bytes (bench/decode/s31 run 1: the down launch of T
     * = 16 at 20-22% of the DRAM peak) */
    a1.cst = sv_cst_rows(im, &a1);
    a2.cst = sv_cst_rows(im, &a2);
    if (plan_only) {
        if (plan1) *plan1 = a1;
        if (plan2) *plan2 = a2;
        return cudaSuccess;
    }
    /* not while a CUDA graph is being captured: the two launches are the form
     * tested under capture (cooperative launches as graph nodes are not relied on) */
    cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    const int fused = sv_fused_at(im, Tn);
    if (fused && cudaStreamIsCapturing(s, &cap) != cudaSuccess) {
        cudaGetLastError();
        cap = cudaStreamCaptureStatusActive;
    }
    if (fused && cap == cudaStreamCaptureStatusNone && !emaj && a1.NT <= 4) {
        /* one launch: a block per phase 1 item and per phase 2 item, all resident */
        /* the planned grid (a run-time split takes whatever grid it gets) */
        const int64_t n1 = TK * moe__cdiv(a1.N, a1.R), n2 = Tn * moe__cdiv(a2.N, a2.R);
        const int64_t grid = n1 > n2 ? n1 : n2;
        moe_sv_args f1 = a1, f2 = a2;
        f1.NS = f2.NS = 0;
        const int s1 = a1.SRS * a1.pitch, s2 = a2.SRS * a2.pitch, slot = s1 > s2 ? s1 : s2;
        int per = ((im->sv_smem_sm / 2) & ~127) - im->sv_smem_fixed;
        if (per > im->sv_smem_block) per = im->sv_smem_block;
        int ns = (per - moe__sv_fused_smem_bytes(&f1, &f2)) / slot;
        if (f1.rb != moe__sv_rec_bytes(f1.fmt) || f2.rb != moe__sv_rec_bytes(f2.fmt)) {
            /* MXFP4's biased records (sv_plan) only where they leave the ring as deep
             * (MOE_SV_MXFP4_FUSED_RB=1: wherever it keeps 2 stages; a measurement knob) */
            static int keep8 = -1;
            if (keep8 < 0) keep8 = sv_env_int("MOE_SV_MXFP4_FUSED_RB", 0) == 1;
            f1.rb = moe__sv_rec_bytes(f1.fmt);
            f2.rb = moe__sv_rec_bytes(f2.fmt);
            const int ns4 = (per - moe__sv_fused_smem_bytes(&f1, &f2)) / slot;
            if ((ns4 > 6 ? 6 : ns4) > (ns > 6 ? 6 : ns) && !(keep8 && ns >= 2)) {
                a1.rb = f1.rb;
                a2.rb = f2.rb;
                ns = ns4;
            } else {
                f1.rb = a1.rb;
                f2.rb = a2.rb;
            }
        }
        const int fixed = moe__sv_fused_smem_bytes(&f1, &f2);
        if (ns > 6) ns = 6;
        cudaError_t e = cudaErrorCooperativeLaunchTooLarge;
        int resident = -1;
        if (ns >= 2 && grid <= 2 * (int64_t)im->sm_count && (!f1.dyn || (int64_t)ns * slot >= MOE_SV_ROUTE_SCRATCH(d->E))) {
            f1.NS = f2.NS = ns;
            e = moe__sv_fused_launch(im->fmt1, &f1, &f2, im->sv_gbar, (int)grid, s, &resident);
            if (e == cudaSuccess) return e;
            cudaGetLastError();
        }
        if (!im->sv_fused_logged) {
            im->sv_fused_logged = 1;
            moe__log(L->ctx, MOE_LOG_INFO,
                     "%s: T = %lld runs as two launches: the single launch (%lld blocks, %d resident at once, "
                     "%d B of shared memory, ring of %d): %s",
                     L->backend->name, (long long)Tn, (long long)grid, resident, fixed + (ns > 0 ? ns : 0) * slot, ns,
                     cudaGetErrorString(e));
        }
    }
    dim3 g1(a1.dyn ? (unsigned)(im->sm_count * a1.bps) : (unsigned)TK, a1.dyn ? 1u : (unsigned)moe__cdiv(a1.N, a1.R)), g2((unsigned)(emaj ? TK : Tn), (unsigned)moe__cdiv(a2.N, a2.R));
    cudaError_t e = moe__sv_launch(im->fmt1, &a1, g1, s);
    if (e == cudaSuccess) e = moe__sv_launch(im->fmt2, &a2, g2, s);
    return e;
}


static void sv_init(moe_layer *L, dec_impl *im) {
    const moe_layer_desc *d = &L->desc;
    const int dense = !im->quant;
    const char *env = getenv("MOE_DECODE_STREAM");
    im->sv = 0;
    if (env && env[0] == '0') {
        snprintf(im->sv_why, sizeof im->sv_why, "off (MOE_DECODE_STREAM=0)");
        return;
    }
    if (im->cc_major < 9) {
        snprintf(im->sv_why, sizeof im->sv_why, "needs sm_90 (bulk copies), device is sm_%d0", im->cc_major);
        return;
    }
    const char *cs = getenv("MOE_SV_CST");
    im->sv_cst = cs && *cs ? atoi(cs) : 1 << 30;
    int fused = d->layout != MOE_GATE_UP_SEPARATE;
    const void *up_alloc = fused && L->gated ? im->gate.data : im->up.data;
    int ok = sv_weight_ok(&im->up, d->E, d->I, d->D, dense, 1, up_alloc) &&
             sv_weight_ok(&im->down, d->E, d->D, d->I, dense, 1, im->down.data) &&
             (!L->gated || sv_weight_ok(&im->gate, d->E, d->I, d->D, dense, !fused, im->gate.data));
    if (!ok) {
        snprintf(im->sv_why, sizeof im->sv_why, "weights not 16-byte aligned (start, end or row strides)");
        return;
    }
    if (d->K > MOE_SV_LIST) {
        snprintf(im->sv_why, sizeof im->sv_why, "K = %lld: at most %d slots a token", (long long)d->K, MOE_SV_LIST);
        return;
    }
    if (dense && (d->D % 16 || d->I % 16)) {
        snprintf(im->sv_why, sizeof im->sv_why, "D = %lld, I = %lld: need multiples of 16 (mma k steps)",
                 (long long)d->D, (long long)d->I);
        return;
    }
    int st = 0, rsv = 0;
    cudaError_t e = moe__sv_prepare(&im->sv_smem_block, &st);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&im->sv_smem_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, im->device);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&rsv, cudaDevAttrReservedSharedMemoryPerBlock, im->device);
    im->sv_smem_fixed = ((rsv + 127) & ~127) + ((st + 127) & ~127);
    if (e != cudaSuccess) {
        cudaGetLastError();
        snprintf(im->sv_why, sizeof im->sv_why, "kernels not usable on this device (%s)", cudaGetErrorString(e));
        return;
    }
    const char *de = getenv("MOE_SV_DOWNE");
    im->sv_downe = de && *de ? de[0] != '0' : -1;
    const char *dy = getenv("MOE_SV_DYN");
    im->sv_dyn = dy && *dy ? atoi(dy) : 1;
    im->sv_dynord = getenv("MOE_SV_DYNORD") != NULL;
    im->sv_gwaves = sv_env_int("MOE_SV_GWAVES", 2);
    im->sv_dwaves = sv_env_int("MOE_SV_DWAVES", 2);
    {
        const char *v = getenv("MOE_SV_D1W");
        im->sv_d1w = v && *v ? atoi(v) : 65536;
    }
    im->sv_d1w_ns = sv_env_int("MOE_SV_D1W_NS", 2);
    const char *dw = getenv("MOE_SV_DYNW");
    im->sv_dynw = dw && *dw ? atoi(dw) : 2;
    im->sv_nt1 = sv_env_int("MOE_SV_NT1", 8);
    im->sv_nt2 = sv_env_int("MOE_SV_NT2", 8);
    im->sv_qmma_pairs = sv_env_int("MOE_SV_QMMA_PAIRS", 6);
    const char *pm = getenv("MOE_SV_PLAN_MODEL");
    im->sv_plan_model = !(pm && *pm == '0');
    const char *ps = getenv("MOE_SV_PLAN_SD"); /* negative: min(T K, E) */
    im->sv_plan_sd = ps && *ps ? atof(ps) : MOE_SV_PLAN_SD;
    const char *pl = getenv("MOE_SV_PLAN");
    im->sv_plan = pl && *pl ? pl[0] != '0' : -1;
    const char *mt = getenv("MOE_DECODE_STREAM_MAX_T");
    int64_t lim = MOE_SV_MAXP / d->K;
    /* measured (bench/decode/README.md, H200): dense, faster than the mma kernels at
     * T = 1 (within a few % either way at T = 2..16; session 4). GGUF blocks (session
     * 6, all five presets at T = 1..64): the streaming kernels' time grows with the
     * pairs per expert (a dp4a pass per token), the mma kernels' much less; Q4_K
     * (cheap to decode for the mma kernels) crosses at 2-4 pairs an expert (mixtral
     * T = 8: 0.76 of the mma kernels' time, T = 16: 1.19; qwen3 T = 32: 0.80), Q8_0
     * and MXFP4 past 8 (gpt-oss-20b T = 64: 0.78-0.85, mixtral Q8_0 T = 32: 0.90).
     * So up to 2 (Q4_K, Q5_K) or 8 (the others) pairs an expert; the other types
     * unmeasured, taken as Q8_0. Session 7, with up to 1024 pairs a chunk (was
     * 256): qwen3 Q8_0 T = 64 / 128 1.95x / 1.97x faster than the mma kernels,
     * deepseek-v3 Q8_0 2.37x / 1.68x, Q4_K T = 64 1.42x but T = 128 (4 pairs an
     * expert) 1.18x slower; qwen3 Q4_K T = 64 1.08x slower (bench/decode/s7).
     * Session 12's decoders moved Q4_K to 4, session 13's measurement Q5_K to 8
     * (moe__dec_stream_pairs); with the int8 kernels, moe__dec_stream_pairs_qg and
     * moe__dec_stream_max_t (session 27: Q8_0 and Q4_K on large experts). */
    /* dense: T = 1-2, and T = 3 where rows of I are long (I >= 2048): on gpt-oss
     * (I = 2880) the streaming kernels beat the mma kernels by 2-6% at T = 2-3 on an
     * H200 and 2-10% on an H100 (bench/decode/s10 runs 25-26; deepseek-v3 and
     * mixtral, the other long rows, are handed to the grouped GEMM there,
     * moe__dec_gemm_min_t). On qwen3 (I = 768) the mma kernels won at T = 2-3 by
     * 7-11% then; since sessions 11-26 the streaming kernels take T = 2 (53.0
     * against 55.6 us) but not 3 (80.8 against 76.8; bench/decode/s27 run 4).
     * Session 32's down plan in one wave (sv_down_one_wave) took qwen3 T = 3-4
     * to 72.5 / 89.2 us against the mma kernels' 78.2 / 96.7 on an H200 (s32
     * run 5; T = 5 even, T = 6 4% behind) and 95.4 / 117.0 against 98.1 / 122.8
     * on an H100 (run 4): rows of I < 2048 stream to T = 4. Session 35 (s35 run 6,
     * H200): the streaming kernels lead the grouped GEMM on gpt-oss at T = 4-6 and
     * qwen3 at T = 5 (moe__dec_max_t, now 6 where E > 4K): dense rows stream up to
     * T = 6, the hand-over to the GEMM (the mma kernels run dense layers only where
     * the streaming kernels cannot, or with MOE_DECODE_STREAM=0) */
    int64_t def = dense ? 6 : moe__dec_stream_max_t(im->fmt1, expert_bytes(L), im->qg, d->E, d->K);
    if (def < 1) def = 1;
    /* both launches must fit in shared memory: chunks of the largest T that does */
    if (sv_chunk(L, im, 1, NULL, NULL, NULL, NULL, NULL, 0, 1, NULL, NULL) != cudaSuccess) {
        snprintf(im->sv_why, sizeof im->sv_why, "rows or activations too large for shared memory");
        return;
    }
    im->sv_chunk = lim < 1 ? 1 : lim;
    while (im->sv_chunk > 1 && sv_chunk(L, im, im->sv_chunk, NULL, NULL, NULL, NULL, NULL, 0, 1, NULL, NULL) != cudaSuccess)
        im->sv_chunk--;
    /* T beyond one chunk runs chunk after chunk (each reads the experts it
     * touches again): deepseek-v3 Q8_0 T = 192 / 256 as two chunks 1.27x / 1.21x
     * faster than the mma kernels (H200, bench/decode/s7 run 3) */
    im->sv_max_t = mt && *mt ? strtoll(mt, NULL, 10) : (env && env[0] == '1' ? INT64_MAX : def);
    /* one cooperative launch: 1-2 us faster at T = 1 for GGUF blocks, 1-3 us slower
     * for dense rows (its ring is shallower) on an H200; for GGUF not at T = 2
     * (sv_fused_at); MOE_DECODE_FUSED=0/1 overrides (never / at every T) */
    const char *fe = getenv("MOE_DECODE_FUSED");
    im->sv_fused = im->fmt1 != im->fmt2 ? 0 : fe && *fe ? (fe[0] != '0' ? 2 : 0) : !dense;
    if (im->sv_fused) {
        if (cudaMalloc((void **)&im->sv_gbar, 2 * sizeof(unsigned)) != cudaSuccess ||
            cudaMemset(im->sv_gbar, 0, 2 * sizeof(unsigned)) != cudaSuccess) {
            cudaGetLastError();
            im->sv_fused = 0;
        }
    }
    /* GGUF: phase 1 quantises h once (MOE_SV_HQ=0: every phase 2 block quantises the f32 rows it stages, as
     * before session 30); its counters for the blocks of 32 rows that two jobs share, zeroed once here */
    const char *hq = getenv("MOE_SV_HQ");
    im->sv_hq_all = hq && hq[0] == '2';
    if (!dense && !(hq && hq[0] == '0')) {
        const size_t bytes = sizeof(unsigned) * (size_t)MOE_SV_MAXP * (size_t)(d->I / 32);
        if (cudaMalloc((void **)&im->sv_hqcnt, bytes) != cudaSuccess || cudaMemset(im->sv_hqcnt, 0, bytes) != cudaSuccess) {
            cudaGetLastError();
            if (im->sv_hqcnt) cudaFree(im->sv_hqcnt);
            im->sv_hqcnt = NULL;
        }
    }
    im->sv = 1;
}

static moe_status sv_forward(moe_layer *L, dec_impl *im, const moe__fwd *fa) {
    const moe_layer_desc *d = &L->desc;
    const size_t asz = moe__act_size(d->act_type);
    cudaStream_t s = (cudaStream_t)L->ctx->p.cuda_stream;
    moe_status st = MOE_OK;
    moe_cuda_dev_guard g;
    if (moe_cuda_dev_enter(im->device, &g) != cudaSuccess)
        return moe__layer_error(L, MOE_ERR_CUDA, "cudaSetDevice(%d) failed", im->device);
    const int64_t chunk = im->sv_chunk;
    for (int64_t t0 = 0; t0 < fa->T; t0 += chunk) {
        int64_t Tn = fa->T - t0 < chunk ? fa->T - t0 : chunk;
        MOE_CUDA_CK(sv_chunk(L, im, Tn, fa->ids + t0 * d->K, fa->w + t0 * d->K,
                             (const char *)fa->x + (size_t)(t0 * d->D) * asz, (char *)fa->out + (size_t)(t0 * d->D) * asz,
                             fa->ws, s, 0, NULL, NULL));
    }
out:
    moe_cuda_dev_leave(&g);
    return st;
}

/* The prefill path (qp_init): used[] flags, then the grouped GEMM layer's
 * forward, which calls qp_prep before each group of experts: their gate, up
 * and down dequantised into the workspace (where the layer's weights point). */
typedef struct {
    moe_layer *L;
    dec_impl *im;
    const unsigned char *used;
    char *wg, *wu, *wd;
    cudaStream_t s;
    int failed;                  /* qp_prep set the layer's error */
} qp_ctx;

static moe_status qp_prep(void *pctx, int64_t e0, int64_t ne) {
    qp_ctx *c = (qp_ctx *)pctx;
    moe_layer *L = c->L;
    dec_impl *im = c->im;
    const moe_layer_desc *d = &L->desc;
    const int f16 = d->act_type == MOE_TYPE_F16, I = (int)d->I, D = (int)d->D;
    const moe_tensor *ws[3] = {L->gated ? &im->gate : NULL, &im->up, &im->down};
    char *dst[3] = {c->wg, c->wu, c->wd};
    for (int i = 0; i < 3; i++) {
        if (!ws[i]) continue;
        const int64_t se = bytes_of(ws[i], ws[i]->stride_e), sn = bytes_of(ws[i], ws[i]->stride_n);
        cudaError_t e = moe__dec_dequant(i < 2 ? im->fmt1 : im->fmt2, f16, (const uint8_t *)ws[i]->data + e0 * se, se,
                                         sn, (int)ne, i < 2 ? I : D, i < 2 ? D : I, c->used + e0, dst[i], im->sm_count,
                                         c->s);
        if (e != cudaSuccess) {
            c->failed = 1;
            return moe__layer_error(L, MOE_ERR_CUDA, "dequantising experts %lld..%lld: %s", (long long)e0,
                                    (long long)(e0 + ne - 1), cudaGetErrorString(e));
        }
    }
    return MOE_OK;
}

static moe_status qp_forward(moe_layer *L, dec_impl *im, const moe__fwd *fa) {
    const moe_layer_desc *d = &L->desc;
    if (use_qf(im, fa->T)) { /* the GEMMs decode the GGUF blocks: no used[] flags, no dequantised copy */
        moe_status st = moe__cuda_forward_grouped(im->qf, fa, d->E, NULL, NULL);
        if (st) moe__layer_error(L, st, "%s (cuda-quant prefill on the GGUF blocks): %s", im->qf->backend->name, im->qf->err);
        return st;
    }
    moe_layer *G = im->qp;
    size_t sz[3];
    qp_sizes(L, im->qp_group, sz);
    char *ws = (char *)fa->ws;
    qp_ctx c;
    c.L = L;
    c.im = im;
    c.s = (cudaStream_t)L->ctx->p.cuda_stream;
    c.failed = 0;
    unsigned char *used = (unsigned char *)ws;
    c.used = used;
    c.wg = ws + al256((size_t)d->E);
    c.wu = c.wg + sz[0];
    c.wd = c.wu + sz[1];
    moe_status st = MOE_OK;
    moe_cuda_dev_guard g;
    if (moe_cuda_dev_enter(im->device, &g) != cudaSuccess)
        return moe__layer_error(L, MOE_ERR_CUDA, "cudaSetDevice(%d) failed", im->device);
    {
        MOE_CUDA_CK(moe__dec_mark_used(fa->ids, (int)(fa->T * d->K), (int)d->E, used, c.s));
        if (L->gated) G->gate.data = c.wg;
        G->up.data = c.wu;
        G->down.data = c.wd;
        st = moe__cuda_rebind_weights(G);
        if (!st) {
            moe__fwd ga = *fa;
            ga.ws = c.wd + sz[2];
            ga.ws_size = fa->ws_size - (size_t)(c.wd + sz[2] - ws);
            st = moe__cuda_forward_grouped(G, &ga, im->qp_group, qp_prep, &c);
        }
        if (st && !c.failed) moe__layer_error(L, st, "%s (cuda-quant prefill): %s", G->backend->name, G->err);
    }
out:
    moe_cuda_dev_leave(&g);
    return st;
}

static moe_status dec_forward(moe_layer *L, const moe__fwd *fa) {
    dec_impl *im = (dec_impl *)L->impl;
    const moe_layer_desc *d = &L->desc;
    if (use_qp(im, fa->T)) return qp_forward(L, im, fa);
    if (use_gemm(im, fa->T)) {
        moe_status s = im->gemm->backend->forward(im->gemm, fa);
        if (s) moe__layer_error(L, s, "%s (through cuda-decode): %s", im->gemm->backend->name, im->gemm->err);
        return s;
    }
    const int64_t T = fa->T, K = d->K, D = d->D, I = d->I, E = d->E;
    const size_t asz = moe__act_size(d->act_type);
    if (((uintptr_t)fa->x | (uintptr_t)fa->out) & 15)
        return moe__layer_error(L, MOE_ERR_INVALID_ARGUMENT, "x and out must be 16-byte aligned for %s",
                                L->backend->name);
    if (((uintptr_t)fa->ws) & 15)
        return moe__layer_error(L, MOE_ERR_INVALID_ARGUMENT, "workspace must be 16-byte aligned");
    if (use_sv(im, T)) return sv_forward(L, im, fa);
    cudaStream_t s = (cudaStream_t)L->ctx->p.cuda_stream;
    moe_status st = MOE_OK;
    moe_cuda_dev_guard g;
    if (moe_cuda_dev_enter(im->device, &g) != cudaSuccess)
        return moe__layer_error(L, MOE_ERR_CUDA, "cudaSetDevice(%d) failed", im->device);
    {
        const int ph1 = L->gated ? MOE_DEC_GATE_UP : MOE_DEC_UP;
        const int cw1 = moe__dec_chunk_cols(im->fmt1), cw2 = moe__dec_chunk_cols(im->fmt2);
        const int nch1 = (int)moe__cdiv(D, cw1), nch2 = (int)moe__cdiv(I, cw2);
        for (int64_t t0 = 0; t0 < T; t0 += im->chunk_t) {
            int64_t Tn = T - t0 < im->chunk_t ? T - t0 : im->chunk_t;
            dws w = dws_plan(L, im, Tn);
            int ks1, ks2;
            plan_split(L, im, Tn, &ks1, &ks2);
            char *ws = (char *)fa->ws;
            int *hdr = (int *)(ws + w.hdr), *act_e = (int *)(ws + w.act_e), *act_off = (int *)(ws + w.act_off);
            int *sorted = (int *)(ws + w.sorted);
            unsigned *cnt = (unsigned *)(ws + w.counters);
            const int32_t *ids = fa->ids + t0 * K;
            const float *wts = fa->w + t0 * K;
            const char *x = (const char *)fa->x + (size_t)(t0 * D) * asz;
            char *out = (char *)fa->out + (size_t)(t0 * D) * asz;
            k_route<<<1, 1024, 0, s>>>(ids, (int)w.TK, (int)E, hdr, act_e, act_off, sorted, cnt, w.ncnt,
                                       (uint32_t *)out, (int64_t)((size_t)(Tn * D) * asz / 4));
            MOE_CUDA_CK(cudaGetLastError());
            int nt = pick_nt(w.TK, E);

            moe_dec_args a;
            memset(&a, 0, sizeof a);
            a.act = d->act;
            a.alpha = d->alpha;
            a.limit = d->limit;
            a.T = (int)Tn; a.K = (int)K; a.E = (int)E;
            a.n_active = hdr; a.act_e = act_e; a.act_off = act_off; a.sorted = sorted;
            a.h = ws + w.h;
            a.y = (float *)(ws + w.y);
            a.w = wts; a.ids = ids; a.out = out; a.out_type = d->act_type;
            a.counters = cnt;
            a.pdl = im->pdl;

            /* phase 1 */
            moe_dec_args a1 = a;
            if (L->gated) {
                set_weight(&a1, 0, &im->gate);
                set_weight(&a1, 1, &im->up);
                if (im->gate_bias.data) set_bias(&a1, 0, &im->gate_bias);
                if (im->up_bias.data) set_bias(&a1, 1, &im->up_bias);
            } else {
                set_weight(&a1, 0, &im->up);
                if (im->up_bias.data) set_bias(&a1, 0, &im->up_bias);
            }
            a1.row_bytes = bytes_of(&im->up, D);
            a1.N = (int)I; a1.C = (int)D; a1.n_chunks = nch1; a1.KS = ks1; a1.RW = 8 / ks1;
            a1.xb = x; a1.ldb = D; a1.xmode = xmode_of(d->act_type, im->fmt1);
            moe_dec_args a2 = a;
            set_weight(&a2, 0, &im->down);
            if (im->down_bias.data) set_bias(&a2, 0, &im->down_bias);
            a2.row_bytes = bytes_of(&im->down, I);
            a2.N = (int)D; a2.C = (int)I; a2.n_chunks = nch2; a2.KS = ks2; a2.RW = 8 / ks2;
            a2.xb = ws + w.h; a2.ldb = I; a2.xmode = 0;
            if (im->qg) {
                /* x -> int8 blocks, phase 1 (h f32), h -> int8 blocks, phase 2 */
                const int nq = qg_pick_nt(im, w.TK, E), ux = (int)(D / 32), uh = (int)(I / 32);
                float *xd = (float *)(ws + w.xd), *xs = (float *)(ws + w.xs);
                float *hd = (float *)(ws + w.hd), *hs = (float *)(ws + w.hs);
                MOE_CUDA_CK(moe__qg_quant(x, d->act_type, (int)Tn, (int)D, (int8_t *)(ws + w.xq), xd, xs, ux, im->fmt1,
                                          im->pdl, s));
                a1.xb = ws + w.xq;
                a1.qg_lin = im->qg_lin1;
                a2.qg_lin = im->qg_lin2;
                if (im->qg_hq) { /* h quantised in the gate/up launch's epilogue (its blocks hold whole blocks of 32) */
                    a1.hq = (int8_t *)(ws + w.hq);
                    a1.hqd = hd;
                    a1.hqs = hs;
                    a1.hq_ldx = uh;
                    a1.hq_nib = im->fmt2 == MOE_DF_MXFP4;
                }
                dim3 q1((unsigned)moe__cdiv(I, moe__qg_rows(im->fmt1) / (L->gated ? 2 : 1)), (unsigned)w.maxA);
                MOE_CUDA_CK(moe__qg_launch(im->fmt1, ph1, nq, qg_launch_bps(im, im->fmt1, nq), &a1, xd, xs, ux, q1, s));
                if (!im->qg_hq)
                    MOE_CUDA_CK(moe__qg_quant(ws + w.h, MOE_TYPE_F32, (int)w.TK, (int)I, (int8_t *)(ws + w.hq), hd, hs,
                                              uh, im->fmt2, im->pdl, s));
                a2.xb = ws + w.hq;
                dim3 q2((unsigned)moe__cdiv(D, moe__qg_rows(im->fmt2)), (unsigned)w.maxA);
                MOE_CUDA_CK(
                    moe__qg_launch(im->fmt2, MOE_DEC_DOWN, nq, qg_launch_bps(im, im->fmt2, nq), &a2, hd, hs, uh, q2, s));
                continue;
            }
            dim3 g1((unsigned)moe__cdiv(I, 16 * a1.RW), (unsigned)w.maxA);
            MOE_CUDA_CK(launch_phase(im->fmt1, ph1, nt, &a1, g1, s));

            /* phase 2 */
            dim3 g2((unsigned)moe__cdiv(D, 16 * a2.RW), (unsigned)w.maxA);
            MOE_CUDA_CK(launch_phase(im->fmt2, MOE_DEC_DOWN, nt, &a2, g2, s));
        }
    }
out:
    moe_cuda_dev_leave(&g);
    return st;
}

static void dec_describe(const moe_layer *L, int64_t T, char *buf, size_t n) {
    const dec_impl *im = (const dec_impl *)L->impl;
    const moe_layer_desc *d = &L->desc;
    if (use_gemm(im, T)) {
        char inner[768];
        im->gemm->backend->describe(im->gemm, T, inner, sizeof inner);
        if (T > im->max_t)
            snprintf(buf, n, "%s: T = %lld > %lld, handed to %s: %s", L->backend->name, (long long)T,
                     (long long)im->max_t, im->gemm->backend->name, inner);
        else
            snprintf(buf, n, "%s: T = %lld >= %lld (the experts it touches hold %.0f MB or more), handed to %s: %s",
                     L->backend->name, (long long)T, (long long)im->gemm_min_t, MOE_DEC_GEMM_MIN_BYTES / 1e6,
                     im->gemm->backend->name, inner);
        return;
    }
    char up[96] = "";
    if (im->uploaded) snprintf(up, sizeof up, ", %.1f MB of host weights copied to the device at init", im->uploaded / 1e6);
    if (use_qf(im, T)) {
        char inner[1024];
        im->qf->backend->describe(im->qf, T, inner, sizeof inner);
        snprintf(buf, n, "%s: T = %lld > %lld (prefill): %s's GEMMs on the GGUF blocks (%s/%s), no dequantised copy: %s%s",
                 L->backend->name, (long long)T, (long long)im->qp_min_t, im->qf->backend->name,
                 moe_type_name(L->up.type), moe_type_name(L->down.type), inner, up);
        return;
    }
    if (use_qp(im, T)) {
        char inner[768];
        size_t sz[3];
        qp_sizes(L, im->qp_group, sz);
        im->qp->backend->describe(im->qp, T, inner, sizeof inner);
        snprintf(buf, n,
                 "%s: T = %lld > %lld (prefill): the GGUF blocks (%s/%s) of the experts in use dequantised to %s in the "
                 "workspace, %lld experts (%.1f MB) at a time, each group's GEMMs before the next; %s: %s%s",
                 L->backend->name, (long long)T, (long long)im->qp_min_t, moe_type_name(L->up.type),
                 moe_type_name(L->down.type), moe_type_name(d->act_type), (long long)im->qp_group,
                 (sz[0] + sz[1] + sz[2]) / 1e6, im->qp->backend->name, inner, up);
        return;
    }
    if (use_sv(im, T)) {
        int64_t Tn = T < im->sv_chunk ? T : im->sv_chunk;
        snprintf(buf, n,
                 "%s: T = %lld%s, weights %s/%s (%s), x %s, device %d (sm_%d0, %d SMs): streaming kernels "
                 "(bulk copies of whole rows into a shared-memory ring, 1 producer + 8 consumer warps): "
                 "gate/up %s per (expert, group of up to 8 pairs, row tile) with routing read in place, then %s, "
                 "%s; %s; deterministic%s%s",
                 L->backend->name, (long long)T, T > Tn ? " (in chunks of tokens)" : "", moe_type_name(L->up.type),
                 moe_type_name(L->down.type), moe_act_name(d->act), moe_type_name(d->act_type), im->device,
                 im->cc_major, im->sm_count, L->gated ? "fused" : "up only",
                 sv_down_expert(L, im, Tn) ? "down per (expert, pair group, row tile) into f32 rows, the last block of "
                                          "each row tile summing the slots in order into out"
                                        : "down + weighted slot-order sum per (token, row tile)",
                 sv_fused_at(im, Tn) && !sv_down_expert(L, im, Tn) ? "both phases in one cooperative launch when every block fits at once (a grid-wide "
                                "barrier; the down rows stream in meanwhile), else two launches"
                              : "two launches (programmatic dependent launch)",
                 im->quant ? "activations quantised to 8-bit blocks of 32 in shared memory, dp4a dot products "
                             "(int8 mma.sync m16n8k32 for groups of 8 tokens on Q8_0/Q4_0 rows of 2048+ "
                             "elements where experts average 6+ pairs)"
                           : "mma.sync tensor-core dot products",
                 up, im->quant ? ", no repacking (GGUF blocks read in place)" : "");
        /* this T's plan: the gate/up launch's pair groups and consumer */
        moe_sv_args p1, p2;
        if (n > strlen(buf) + 80 &&
            sv_chunk(L, (dec_impl *)im, Tn, NULL, NULL, NULL, NULL, NULL, 0, 1, &p1, &p2) == cudaSuccess)
        {
            char how[96];
            if (p1.qmma) snprintf(how, sizeof how, "int8 mma for passes of %d+ tokens, dp4a below", p1.qmma);
            else snprintf(how, sizeof how, "%s", im->quant ? "dp4a" : "mma.sync");
            snprintf(buf + strlen(buf), n - strlen(buf), "; at this T gate/up takes pairs in groups of %d, %s%s", p1.NT,
                     how, sv_use_hq(L, im, Tn) ? ", h quantised once by the gate/up launch" : "");
            /* the planner's choices for both launches, as the forward makes them */
            const moe_sv_args *pp[2] = {&p1, &p2};
            for (int i = 0; i < 2 && n > strlen(buf) + 120; i++) {
                const moe_sv_args *q = pp[i];
                char cst[40] = "";
                if (q->cst >= q->SRS && q->cst > 1) snprintf(cst, sizeof cst, " (one copy)");
                else if (q->cst > 1) snprintf(cst, sizeof cst, " (%d rows a copy)", q->cst);
                snprintf(buf + strlen(buf), n - strlen(buf),
                         "; %s plan: %s%d rows a %s, %d a stage%s%s, ring of %d stages of %d B, %d block%s an SM%s",
                         i ? "down" : "gate/up",
                         q->phase == MOE_DEC_DOWN ? "per token, "
                         : q->dyn ? (q->dynw ? "the groups' rows split at run time over one wave of blocks, by their pairs, "
                                             : "the groups' rows split at run time over one wave of blocks, ")
                                  : "",
                         q->R, q->dyn ? "job at most" : "block", q->SRS,
                         q->NC > 1 ? " (in column chunks)" : "", cst, q->NS,
                         q->SRS * q->pitch, q->bps,
                         q->bps == 1 ? "" : "s",
                         q->fmt == MOE_DF_MXFP4 && q->rb == 8 ? ", MXFP4's biased dot for passes of one token" : "");
                /* what the device fits of that instance with this shared memory */
                moe_cuda_dev_guard g;
                if (moe_cuda_dev_enter(im->device, &g) == cudaSuccess) {
                    const int fit = moe__sv_blocks_per_sm(i ? im->fmt2 : im->fmt1, q);
                    if (fit >= 0 && fit < q->bps)
                        snprintf(buf + strlen(buf), n - strlen(buf), " (but %d fit%s)", fit, fit == 1 ? "s" : "");
                    moe_cuda_dev_leave(&g);
                }
                if (i && q->phase == MOE_SV_DOWN_E)
                    snprintf(buf + strlen(buf), n - strlen(buf), ", pairs in groups of %d", q->NT);
            }
        }
        return;
    }
    int64_t Tc = T < im->chunk_t ? T : im->chunk_t;
    int64_t TK = Tc * d->K;
    snprintf(buf, n, "%s: T = %lld%s, weights %s/%s (%s), x %s, device %d (sm_%d0, %d SMs): route (1 block, bitonic), ",
             L->backend->name, (long long)T, T > im->chunk_t ? " (in chunks of tokens)" : "", moe_type_name(L->up.type),
             moe_type_name(L->down.type), moe_act_name(d->act), moe_type_name(d->act_type), im->device, im->cc_major,
             im->sm_count);
    const size_t o = strlen(buf);
    const char *launch = im->pdl ? "programmatic dependent launch" : "plain launches";
    if (o + 1 >= n) return;
    if (im->qg)
        snprintf(buf + o, n - o,
                 "x quantised to int8 blocks of 32, gate/up (%s, row tiles of %d) and down (row tiles of %d) int8 "
                 "tensor-core kernels (mma.sync m16n8k32, 4 warps, weight rows and activation blocks through a "
                 "cp.async ring, %d and %d blocks an SM, stages copied %s and %s), h quantised %s, %d token tiles "
                 "of 8 per pass, %s, deterministic slot-order combine%s, no repacking (GGUF blocks read in place)",
                 L->gated ? "fused" : "up only", moe__qg_rows(im->fmt1) / (L->gated ? 2 : 1), moe__qg_rows(im->fmt2),
                 qg_launch_bps(im, im->fmt1, qg_pick_nt(im, TK, d->E)),
                 qg_launch_bps(im, im->fmt2, qg_pick_nt(im, TK, d->E)),
                 im->qg_lin1 ? "by linear 16-byte chunks" : "row by row",
                 im->qg_lin2 ? "by linear 16-byte chunks" : "row by row",
                 im->qg_hq ? "in the gate/up launch's epilogue" : "between them by a launch of its own",
                 qg_pick_nt(im, TK, d->E), launch, up);
    else
        snprintf(buf + o, n - o,
                 "gate/up (%s) and down kernels with weights decoded to %s in registers + mma.sync m16n8k16, "
                 "%d token tiles of 8 per pass, %s, deterministic slot-order combine%s%s",
                 L->gated ? "fused" : "up only", im->fmt1 == MOE_DF_F16 ? "f16" : "bf16", pick_nt(TK, d->E), launch, up,
                 im->quant ? ", no repacking (GGUF blocks read in place)" : "");
    if (im->sv_why[0] && n > strlen(buf) + 40)
        snprintf(buf + strlen(buf), n - strlen(buf), "; streaming kernels: %s", im->sv_why);
    if (im->quant && !im->qg && im->qg_why[0] && n > strlen(buf) + 40)
        snprintf(buf + strlen(buf), n - strlen(buf), "; no int8 kernels: %s", im->qg_why);
    if (im->quant && im->qf && im->qp && n > strlen(buf) + 120)
        snprintf(buf + strlen(buf), n - strlen(buf),
                 "; prefill path for T > %lld: GGUF blocks decoded in the GEMMs of %s up to T = %lld, above that "
                 "dequantised, then %s",
                 (long long)im->qp_min_t, im->qf->backend->name, (long long)im->qf_max_t, im->qp->backend->name);
    else if (im->quant && im->qf && n > strlen(buf) + 80)
        snprintf(buf + strlen(buf), n - strlen(buf), "; prefill path for T > %lld: GGUF blocks decoded in the GEMMs of %s",
                 (long long)im->qp_min_t, im->qf->backend->name);
    else if (im->quant && im->qp && n > strlen(buf) + 40)
        snprintf(buf + strlen(buf), n - strlen(buf), "; prefill path (dequantise, then %s) for T > %lld",
                 im->qp->backend->name, (long long)im->qp_min_t);
    else if (im->quant && n > strlen(buf) + 40)
        snprintf(buf + strlen(buf), n - strlen(buf), "; no prefill path: %s", im->qp_why);
}

extern "C" {
const moe__backend moe__backend_cuda_decode = {
    "cuda-decode", MOE_DEVICE_CUDA, dec_probe, supports_decode, dec_init, dec_fini, dec_workspace, dec_forward,
    dec_describe, NULL,
};
const moe__backend moe__backend_cuda_quant = {
    "cuda-quant", MOE_DEVICE_CUDA, dec_probe, supports_quant, quant_init, dec_fini, dec_workspace, dec_forward,
    dec_describe, NULL,
};
}
