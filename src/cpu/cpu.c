/*
 * The fast CPU backend ("cpu"): a thread pool per context, tokens grouped by
 * expert, and one forward in four phases; a phase starts when every task of
 * the previous one is finished (counted, so a descheduled thread is not waited for):
 *   0. each token's x converted once into the format the gate/up kernels read
 *      (f32, bf16, or q8 with per-32 scales), and its f32 accumulator zeroed;
 *   1. tasks (expert, 64 rows of I): gate and up for every (token, slot) pair
 *      routed to the expert, the activation, and h quantised/converted into
 *      the down kernels' format; the 64-row weight tile stays in L1/L2 while
 *      all the pairs stream past it, so each expert's weights are read once;
 *   2. tasks (rows [d0, d1) of D): for every active expert in ascending order
 *      and its pairs in (token, slot) order, y = down h, acc[t] += w * (y + bd);
 *   3. acc rounded into out (f16/bf16 outputs; f32 accumulates in place).
 * Every output element is owned by one task and every sum runs in an order
 * fixed by the data alone (src/cpu/cpu.h), so results are bitwise the same
 * for any thread count. Kernels: src/cpu/kernels.inc per instruction set,
 * chosen once from cpuid (MOE_CPU_ISA=scalar|avx2|avxvnni|avx512 forces one the CPU runs).
 * BF16 weights are read from a copy made at layer creation, each kernel
 * call's rows interleaved into one stream (repack below; MOE_CPU_REPACK=0:
 * in place). Matches the reference backend (src/ref/ref.c) within the case table's
 * tolerances; checked by tests/test_cpu.c.
 */
#include "cpu.h"

#include "half.h"
#include "quant.h"

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#define TILE_I_MAX 256 /* rows of I per gate/up task: 64, or 256 when h is quantised with per-256 scales or
                          * at decode (see itile) */
#define TILE_D_MAX 1024 /* rows of D per down task (decode: D / threads, see tile_d) */
#define TILE_D_GENERIC 64
#define NMAX_ALL MOE__CPU_NMAX_ALL /* the largest N of any kernel call (cpu.h) */
/* 1 while this thread runs the first group of activation rows against a
 * weight tile: the dense kernels then prefetch ahead (cpu.h, kernels.inc) */
_Thread_local int moe__cpu_pf_first;
/* the weights this thread reads next (its next gate/up task, a down task's
 * next expert), prefetched a line per step by the bf16 kernel in the passes
 * after the first (cpu.h) */
_Thread_local moe__cpu_pfs moe__cpu_pf_next;

extern const moe__backend moe__backend_cpu;

/* ------------------------------------------------------------------------ */
/* Instruction set                                                           */
/* ------------------------------------------------------------------------ */

/* Which of the paths (scalar, avx2, avxvnni, avx512: isa_by_level's order)
 * this CPU runs, bit i for path i. They are not a ladder: a CPU with the
 * AVX-512 set may lack AVX-VNNI, the VEX form of VPDPBUSD that kern_avxvnni.c
 * is built with (AMD Zen 4 has AVX512_VNNI but not AVX_VNNI), and forcing
 * that path there ended the process on SIGILL. */
static unsigned isa_mask_cpu(void) {
    static int mask = -1;
    if (mask >= 0) return (unsigned)mask;
    unsigned m = 1u;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (avx2) m |= 2u;
    if (avx2 && __builtin_cpu_supports("avxvnni")) m |= 4u;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bf16") && avx2)
        m |= 8u;
#endif
    mask = (int)m;
    return m;
}

static const moe__cpu_isa *const isa_by_level[4] = {&moe__cpu_isa_scalar, &moe__cpu_isa_avx2, &moe__cpu_isa_avxvnni,
                                                    &moe__cpu_isa_avx512};

/* The path for a new layer: the best the CPU has, or MOE_CPU_ISA if the CPU
 * runs it. A forced path the CPU lacks is an error (the caller asked for it). */
static moe_status choose_isa(moe_layer *L, const moe__cpu_isa **out) {
    const unsigned mask = isa_mask_cpu();
    int have = 0;
    for (int i = 0; i < 4; i++)
        if (mask & (1u << i)) have = i;
    const char *env = getenv("MOE_CPU_ISA");
    int want = have;
    if (env && *env) {
        int i;
        for (i = 0; i < 4; i++)
            if (strcmp(env, isa_by_level[i]->name) == 0) break;
        if (i == 4)
            return moe__layer_error(L, MOE_ERR_INVALID_ARGUMENT,
                                    "MOE_CPU_ISA=%s, expected scalar, avx2, avxvnni or avx512", env);
        if (!(mask & (1u << i))) {
            char list[64] = "";
            for (int j = 0; j < 4; j++)
                if (mask & (1u << j))
                    snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", list[0] ? ", " : "",
                             isa_by_level[j]->name);
            return moe__layer_error(L, MOE_ERR_BACKEND_UNAVAILABLE, "MOE_CPU_ISA=%s but this CPU supports only %s",
                                    env, list);
        }
        want = i;
    }
    *out = isa_by_level[want];
    return MOE_OK;
}

/* ------------------------------------------------------------------------ */
/* Thread pool                                                               */
/* ------------------------------------------------------------------------ */

typedef void (*job_fn)(void *arg, int tid);

typedef struct pool pool;
typedef struct { pool *p; int tid; } worker_arg;

struct pool {
    int n; /* threads, the caller included */
    pthread_t *th;
    worker_arg *wa;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    atomic_uint gen;
    atomic_uint entered; /* workers that joined the current job, | JOB_CLOSED once it is finished */
    atomic_uint exited;
    atomic_int stop;
    job_fn fn;
    void *arg;
};

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

#define SPIN_JOB 20000   /* pauses a worker spins for the next job before sleeping */
#define SPIN_BARRIER 2000

/* A job is open to the workers from its start until the caller has finished
 * it: a worker that wakes after that (descheduled on a busy machine) skips
 * it, so the caller never waits for a thread that has not started. */
#define JOB_CLOSED 0x80000000u

static void *worker_main(void *v) {
    worker_arg *wa = (worker_arg *)v;
    pool *p = wa->p;
    unsigned seen = 0;
    for (;;) {
        unsigned g;
        int spins = 0;
        while ((g = atomic_load(&p->gen)) == seen) {
            if (atomic_load(&p->stop)) return NULL;
            if (++spins < SPIN_JOB) {
                cpu_relax();
                continue;
            }
            pthread_mutex_lock(&p->mu);
            while (atomic_load(&p->gen) == seen && !atomic_load(&p->stop)) pthread_cond_wait(&p->cv, &p->mu);
            pthread_mutex_unlock(&p->mu);
            spins = 0;
        }
        seen = g;
        if (atomic_load(&p->stop)) return NULL;
        if (!(atomic_fetch_add(&p->entered, 1) & JOB_CLOSED)) {
            p->fn(p->arg, wa->tid);
            atomic_fetch_add(&p->exited, 1);
        }
    }
}

static void pool_free(void *state) {
    pool *p = (pool *)state;
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->stop, 1);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->n; i++) pthread_join(p->th[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p->th);
    free(p->wa);
    free(p);
}

static pool *pool_create(int n) {
    pool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->n = n;
    p->th = calloc((size_t)n, sizeof *p->th);
    p->wa = calloc((size_t)n, sizeof *p->wa);
    if (!p->th || !p->wa) {
        free(p->th);
        free(p->wa);
        free(p);
        return NULL;
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    for (int i = 1; i < n; i++) {
        p->wa[i].p = p;
        p->wa[i].tid = i;
        if (pthread_create(&p->th[i], NULL, worker_main, &p->wa[i])) {
            p->n = i; /* join the ones started */
            pool_free(p);
            return NULL;
        }
    }
    return p;
}

static void pool_run(pool *p, job_fn fn, void *arg) {
    if (p->n == 1) {
        fn(arg, 0);
        return;
    }
    p->fn = fn;
    p->arg = arg;
    atomic_store(&p->exited, 0);
    atomic_store(&p->entered, 0); /* publishes fn, arg to a worker that joins */
    pthread_mutex_lock(&p->mu);
    atomic_fetch_add(&p->gen, 1);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    fn(arg, 0);
    /* every task is done: close the job and wait only for the workers inside it */
    unsigned in = atomic_fetch_or(&p->entered, JOB_CLOSED) & ~JOB_CLOSED;
    int spins = 0;
    while (atomic_load(&p->exited) != in) {
        if (++spins < SPIN_BARRIER) cpu_relax();
        else sched_yield();
    }
}

/* Waits until n tasks of a phase are finished (by whichever threads took
 * them): a phase boundary that does not need every thread to arrive. */
static void phase_wait(atomic_int *done, int64_t n) {
    int spins = 0;
    while (atomic_load(done) < n) {
        if (++spins < SPIN_BARRIER) cpu_relax();
        else sched_yield();
    }
}

/* ------------------------------------------------------------------------ */
/* Layer                                                                     */
/* ------------------------------------------------------------------------ */

typedef struct proj {
    const moe_tensor *t;
    moe__cpu_kk kk;   /* the kernel; F32 over converted rows when generic */
    int generic;      /* rows converted to f32 in scratch first */
    int64_t C;        /* reduced dimension */
    int64_t N;        /* rows per expert */
    int64_t row_bytes, e_bytes; /* direct kernels: bytes between rows / experts of t */
    /* the repacked copy (isa->kern_il's layout, see repack) or NULL: rows
     * rp_row bytes apart (groups of rmax rows start at multiples of rmax),
     * experts rp_e bytes apart */
    const char *rp;
    int64_t rp_row, rp_e;
} proj;

typedef struct impl {
    const moe__cpu_isa *isa;
    pool *pool;
    proj gate, up, down;
    moe__cpu_xf xf_in, xf_h;
    int off_in, off_h;    /* q8 offsets */
    int lay_in, lay_h;    /* q8 block orders (MOE__Q8_*) */
    int64_t tile_i;       /* rows of I per gate/up task */
    size_t sx, sh;        /* bytes of one x / h row in its format */
    float *bg, *bu, *bd;  /* biases as f32 [E][I], [E][I], [E][D], or NULL */
    void *rp_mem;         /* the repacked copies of gate/up/down (one block), or NULL */
    size_t rp_bytes;      /* bytes of the copies */
    int rp_huge;          /* MADV_HUGEPAGE was accepted for it */
    int rp_off;           /* MOE_CPU_REPACK=0 */
} impl;

static const char *kk_name(moe__cpu_kk k) {
    static const char *const n[] = {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_K", "q6_K", "mxfp4", "q2_K", "q3_K", "q5_K"};
    return (unsigned)k < MOE__KK_COUNT ? n[k] : "?";
}

static void proj_setup(const moe__cpu_isa *isa, proj *p, const moe_tensor *t, int64_t N, int64_t C, int *offset) {
    p->t = t;
    p->N = N;
    p->C = C;
    p->generic = 0;
    *offset = 0;
    int contiguous = t->stride_c == 1 && C % 64 == 0;
    switch (t->type) {
    case MOE_TYPE_F32: p->kk = MOE__KK_F32; p->generic = !contiguous; break;
    case MOE_TYPE_F16: p->kk = MOE__KK_F16; p->generic = !contiguous; break;
    case MOE_TYPE_BF16: p->kk = MOE__KK_BF16; p->generic = !contiguous; break;
    case MOE_TYPE_Q8_0: p->kk = MOE__KK_Q8_0; *offset = 128; break;
    case MOE_TYPE_Q4_0: p->kk = MOE__KK_Q4_0; *offset = 8; break;
    case MOE_TYPE_Q4_K: p->kk = MOE__KK_Q4_K; break;
    case MOE_TYPE_MXFP4: p->kk = MOE__KK_MXFP4; *offset = 12; break;
    case MOE_TYPE_Q2_K: p->kk = MOE__KK_Q2_K; break;
    case MOE_TYPE_Q3_K: p->kk = MOE__KK_Q3_K; break;
    case MOE_TYPE_Q5_K: p->kk = MOE__KK_Q5_K; break;
    case MOE_TYPE_Q6_K: p->kk = MOE__KK_Q6_K; break;
    default: p->kk = MOE__KK_F32; p->generic = 1; break;
    }
    if (!p->generic && !isa->kern[p->kk]) p->generic = 1;
    if (p->generic) {
        p->kk = MOE__KK_F32;
        *offset = 0;
    }
    int64_t bs = moe_type_block_size(t->type), bb = moe_type_block_bytes(t->type);
    p->row_bytes = t->stride_n / bs * bb;
    p->e_bytes = t->stride_e / bs * bb;
}

static moe__cpu_xf xf_of(const proj *p) {
    return p->kk == MOE__KK_BF16 ? MOE__XF_BF16 : p->kk >= MOE__KK_Q8_0 ? MOE__XF_Q8 : MOE__XF_F32;
}

static size_t xf_row_bytes(moe__cpu_xf f, int64_t C) {
    size_t b = f == MOE__XF_Q8 ? moe__cpu_q8_row_bytes(C) : (size_t)moe__cpu_pad64(C) * (f == MOE__XF_BF16 ? 2 : 4);
    return (b + 63) & ~(size_t)63;
}

static void make_proj_generic(proj *p) {
    p->generic = 1;
    p->kk = MOE__KK_F32;
}

/* A bias tensor [E, N] as f32, or NULL when absent. */
static float *bias_f32(const moe_tensor *b, int64_t E, int64_t N, int *oom) {
    if (!b->data) return NULL;
    float *f = malloc(sizeof(float) * (size_t)(E * N));
    if (!f) {
        *oom = 1;
        return NULL;
    }
    for (int64_t e = 0; e < E; e++)
        for (int64_t n = 0; n < N; n++) moe__dequantize_row(b->type, moe__tensor_at(b, e, n, 0), f + e * N + n, 1);
    return f;
}

/* ---- the repacked copy ----
 * A bf16 kernel call reads R rows, in the caller's layout R streams ws bytes
 * apart (at D = 2048 each row one 4 KB page, which the hardware prefetchers
 * do not run across): slow from memory (the first pass over a tile) and from
 * L2 (the later passes; NOTES.md sessions 8-9). The copy puts each group of
 * rmax rows (the rows of one call; task and call row offsets are multiples of
 * rmax) interleaved per 64 bytes, so a call reads one ascending stream: qwen3
 * bf16 T=512 -19..-20% per forward, T=1 -2..-8%. It is 2 MB aligned and asks
 * for transparent huge pages (MADV_HUGEPAGE; with THP off it is 4 KB pages
 * and still one stream). Same element values, same sums: the same bits as
 * the caller's layout. It doubles the memory of the weights it copies;
 * MOE_CPU_REPACK=0 turns it off. */
static int repack_on(void) {
    const char *e = getenv("MOE_CPU_REPACK");
    return !(e && strcmp(e, "0") == 0);
}

static int proj_repackable(const moe__cpu_isa *isa, const proj *p) {
    return p->t && p->t->data && !p->generic && isa->kern_il[p->kk] && p->t->stride_c == 1;
}

/* Expert e of p's tensor into p's copy: rows in groups of R (the last group
 * of the expert may be smaller), chunk k of row r of a group of G rows at
 * (k * G + r) * 64 from the group's start (which is where its first row
 * would start in a compact copy). */
static void repack_expert(const proj *p, int R, int64_t e) {
    int64_t rb = p->rp_row, nk = moe_type_row_bytes(p->t->type, p->C) / 64;
    for (int64_t g0 = 0; g0 < p->N; g0 += R) {
        int64_t G = p->N - g0 < R ? p->N - g0 : R;
        char *d = (char *)p->rp + e * p->rp_e + g0 * rb;
        for (int64_t r = 0; r < G; r++) {
            const char *s = (const char *)p->t->data + e * p->e_bytes + (g0 + r) * p->row_bytes;
            for (int64_t k = 0; k < nk; k++) memcpy(d + (k * G + r) * 64, s + k * 64, 64);
        }
    }
}

typedef struct repack_job {
    proj *ps[3];
    int np, R;
    int64_t E;
    atomic_int next;
} repack_job;

static void repack_job_fn(void *arg, int tid) {
    (void)tid;
    repack_job *rj = (repack_job *)arg;
    for (;;) {
        int64_t k = atomic_fetch_add(&rj->next, 1);
        if (k >= rj->np * rj->E) break;
        repack_expert(rj->ps[k / rj->E], rj->R, k % rj->E);
    }
}

/* Makes the copies of the repackable projections (bf16 direct, on a path with
 * kern_il), in one block; threads of the pool share the work. MOE_OK, or
 * MOE_ERR_OUT_OF_MEMORY with the message set (nothing is kept then). */
static moe_status repack(moe_layer *L, impl *im) {
    im->rp_off = !repack_on();
    if (im->rp_off) return MOE_OK;
    proj *ps[3] = {L->gated ? &im->gate : NULL, &im->up, &im->down};
    repack_job rj;
    memset(&rj, 0, sizeof rj);
    const size_t huge = (size_t)2 << 20; /* x86-64 huge page */
    size_t off[3], total = 0;
    for (int i = 0; i < 3; i++) {
        proj *p = ps[i];
        if (!p || !proj_repackable(im->isa, p)) continue;
        int64_t rb = moe_type_row_bytes(p->t->type, p->C), eb, all;
        if (!moe__mul_ok(rb, p->N, &eb) || !moe__mul_ok(eb, L->desc.E, &all) ||
            (uint64_t)all > (uint64_t)(SIZE_MAX / 2) - total)
            return moe__layer_error(L, MOE_ERR_OUT_OF_MEMORY,
                                    "cpu: the repacked copy of the bf16 weights (E %lld x %lld rows of %lld bytes) "
                                    "overflows size_t; MOE_CPU_REPACK=0 reads the caller's weights in place",
                                    (long long)L->desc.E, (long long)p->N, (long long)rb);
        p->rp_row = rb;
        p->rp_e = eb;
        off[rj.np] = total;
        total += (size_t)all;
        rj.ps[rj.np++] = p;
    }
    if (!rj.np) return MOE_OK;
    size_t bytes = (total + huge - 1) & ~(huge - 1);
    void *mem = NULL;
    if (posix_memalign(&mem, huge, bytes) != 0 || !mem)
        return moe__layer_error(L, MOE_ERR_OUT_OF_MEMORY,
                                "cpu: out of memory for the repacked copy of the bf16 weights (%.1f MB); "
                                "MOE_CPU_REPACK=0 reads the caller's weights in place",
                                (double)bytes / 1e6);
    im->rp_mem = mem;
    im->rp_bytes = total;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    /* before the first touch; fails harmlessly where THP is not built in, and
     * with THP "never" (or no free huge pages) the copy is 4 KB pages: the
     * interleaving is what matters (+1% from 2 MB pages, NOTES.md session 9) */
    im->rp_huge = madvise(mem, bytes, MADV_HUGEPAGE) == 0;
#endif
    for (int i = 0; i < rj.np; i++) rj.ps[i]->rp = (const char *)mem + off[i];
    rj.R = im->isa->rmax;
    rj.E = L->desc.E;
    atomic_init(&rj.next, 0);
    pool_run(im->pool, repack_job_fn, &rj);
    return MOE_OK;
}

static void cpu_fini(moe_layer *L) {
    impl *im = (impl *)L->impl;
    if (!im) return;
    free(im->bg);
    free(im->bu);
    free(im->bd);
    free(im->rp_mem);
    free(im);
    L->impl = NULL;
}

static moe_status cpu_init(moe_layer *L) {
    const moe__cpu_isa *isa = NULL;
    moe_status s = choose_isa(L, &isa);
    if (s) return s;
    impl *im = calloc(1, sizeof *im);
    if (!im) return moe__layer_error(L, MOE_ERR_OUT_OF_MEMORY, "cpu: out of memory");
    L->impl = im;
    im->isa = isa;
    int64_t E = L->desc.E, D = L->desc.D, I = L->desc.I;
    int og = 0, ou = 0;
    if (L->gated) proj_setup(isa, &im->gate, &L->gate, I, D, &og);
    proj_setup(isa, &im->up, &L->up, I, D, &ou);
    proj_setup(isa, &im->down, &L->down, D, I, &im->off_h);
    if (L->gated && (xf_of(&im->gate) != xf_of(&im->up) || og != ou ||
                     (xf_of(&im->up) == MOE__XF_Q8 && im->gate.kk != im->up.kk))) {
        /* gate and up must read one x format: fall back to converted rows */
        make_proj_generic(&im->gate);
        make_proj_generic(&im->up);
        og = ou = 0;
    }
    im->off_in = ou;
    im->xf_in = xf_of(&im->up);
    im->xf_h = xf_of(&im->down);
    im->lay_in = im->xf_in == MOE__XF_Q8 ? isa->q8_layout[im->up.kk] : MOE__Q8_NATURAL;
    im->lay_h = im->xf_h == MOE__XF_Q8 ? isa->q8_layout[im->down.kk] : MOE__Q8_NATURAL;
    im->tile_i = im->lay_h & MOE__Q8_SCALE256 ? 256 : 64;
    im->sx = xf_row_bytes(im->xf_in, D);
    im->sh = xf_row_bytes(im->xf_h, I);
    int oom = 0;
    im->bg = bias_f32(&L->gate_bias, E, I, &oom);
    im->bu = bias_f32(&L->up_bias, E, I, &oom);
    im->bd = bias_f32(&L->down_bias, E, D, &oom);
    if (oom) {
        cpu_fini(L);
        return moe__layer_error(L, MOE_ERR_OUT_OF_MEMORY, "cpu: out of memory for the biases");
    }
    moe_ctx *ctx = L->ctx;
    int slot = moe__backend_slot(&moe__backend_cpu);
    if (slot < 0 || slot >= MOE__MAX_BACKENDS) {
        cpu_fini(L);
        return moe__layer_error(L, MOE_ERR_INTERNAL, "cpu: backend not registered");
    }
    if (!ctx->backend_state[slot]) {
        ctx->backend_state[slot] = pool_create(ctx->n_threads);
        if (!ctx->backend_state[slot]) {
            cpu_fini(L);
            return moe__layer_error(L, MOE_ERR_OUT_OF_MEMORY, "cpu: could not start %d threads", ctx->n_threads);
        }
    }
    im->pool = (pool *)ctx->backend_state[slot];
    s = repack(L, im);
    if (s) cpu_fini(L);
    return s;
}

/* ------------------------------------------------------------------------ */
/* Workspace                                                                 */
/* ------------------------------------------------------------------------ */

static size_t al64(size_t n) { return (n + 63) & ~(size_t)63; }

/* Rows of D per down task. Decode (every expert's pairs in one pass of the
 * kernels, T <= nmax): one task per thread, so that a thread reads each
 * expert's slice as one long run (qwen3 T=1 cold, 2 threads, same process:
 * q4_K 543 -> 510 us with 1024 rows instead of 256, q8_0 1013 -> 992 us);
 * otherwise 4 per thread, which balances better. */
static int64_t tile_d(const impl *im, int64_t D, int64_t T, int nthreads) {
    int64_t want = D / ((T <= im->isa->nmax ? 1 : 4) * (int64_t)nthreads);
    int64_t td = (want + 15) & ~(int64_t)15;
    if (td < 16) td = 16;
    int64_t mx = im->down.generic ? TILE_D_GENERIC : TILE_D_MAX;
    return td > mx ? mx : td;
}

/* Rows of I per gate/up task. Decode with direct kernels (T <= nmax: every
 * expert's pairs in one pass, so the weight tile is not reused from L2):
 * TILE_I_MAX, so that a thread streams each of gate and up as 256-row runs
 * (q8_0: 557 KB) and the software prefetch (which runs only within a task's
 * rows) loses its lead at fewer task starts. q8_0 qwen3 T=1 cold, 2 threads,
 * moe-bench: 64 rows 949/913/968 us, 256 rows 854/878/872 us (gate/up phase
 * -10%). Otherwise im->tile_i (64 for per-32 h scales: tiles stay in L2). */
static int64_t itile(const impl *im, int64_t T) {
    return T <= im->isa->nmax && !im->up.generic && !im->gate.generic ? TILE_I_MAX : im->tile_i;
}

/* Per-thread scratch: an f32 row, and the converted weight rows of the generic path. */
static size_t thread_scratch(const moe_layer *L) {
    const impl *im = (const impl *)L->impl;
    int64_t D = L->desc.D, I = L->desc.I;
    int64_t Dp = moe__cpu_pad64(D), Ip = moe__cpu_pad64(I);
    size_t b = al64((size_t)(Dp > Ip ? Dp : Ip) * 4);
    if (im->up.generic) b += al64((size_t)(2 * im->tile_i * Dp) * 4);
    if (im->down.generic) b += al64((size_t)(TILE_D_GENERIC * Ip) * 4);
    return b;
}

typedef struct wslayout {
    size_t off, pairs, active, xa, hq, acc, scratch, total, per_thread;
} wslayout;

static wslayout ws_layout(const moe_layer *L, int64_t T) {
    const impl *im = (const impl *)L->impl;
    int64_t E = L->desc.E, K = L->desc.K, D = L->desc.D;
    wslayout w;
    size_t o = 0;
    w.off = o; o += al64((size_t)(E + 1) * 4);
    w.pairs = o; o += al64((size_t)(T * K) * 4);
    w.active = o; o += al64((size_t)E * 4);
    w.xa = o; o += al64((size_t)T * im->sx);
    w.hq = o; o += al64((size_t)(T * K) * im->sh);
    w.acc = o; o += L->desc.act_type == MOE_TYPE_F32 ? 0 : al64((size_t)(T * D) * 4);
    w.per_thread = thread_scratch(L);
    w.scratch = o; o += w.per_thread * (size_t)L->ctx->n_threads;
    w.total = o + 64; /* the caller's pointer may be unaligned */
    return w;
}

static size_t cpu_workspace(const moe_layer *L, int64_t T) { return ws_layout(L, T).total; }

/* ------------------------------------------------------------------------ */
/* Forward                                                                   */
/* ------------------------------------------------------------------------ */

typedef struct job {
    moe_layer *L;
    const impl *im;
    const moe__fwd *a;
    int64_t T, D, I, K;
    const int32_t *off, *pairs, *active;
    int nact;
    char *xa, *hq, *scratch;
    float *acc;
    size_t per_thread;
    int64_t td, ti, n_dtiles, n_itiles;
    atomic_int next[4]; /* the next task of each phase */
    atomic_int done[4]; /* tasks of each phase finished */
} job;

static float act_apply(moe_act act, float g, float u, float alpha, float limit) {
    switch (act) {
    case MOE_ACT_SWIGLU: return g / (1.0f + expf(-g)) * u;
    case MOE_ACT_GEGLU_TANH: return 0.5f * g * (1.0f + tanhf(0.7978845608f * (g + 0.044715f * g * g * g))) * u;
    case MOE_ACT_GEGLU_ERF: return 0.5f * g * (1.0f + erff(g * 0.70710678f)) * u;
    case MOE_ACT_SWIGLU_OAI:
        g = g > limit ? limit : g;
        u = u > limit ? limit : (u < -limit ? -limit : u);
        return g / (1.0f + expf(-alpha * g)) * (u + 1.0f);
    case MOE_ACT_SILU: return u / (1.0f + expf(-u));
    case MOE_ACT_GELU: return 0.5f * u * (1.0f + tanhf(0.7978845608f * (u + 0.044715f * u * u * u)));
    case MOE_ACT_RELU2: return u < 0 ? 0.0f : u * u;
    }
    return NAN;
}

static float load_act(moe_type t, const void *p, int64_t i) {
    switch (t) {
    case MOE_TYPE_F16: return moe__f16_to_f32(((const uint16_t *)p)[i]);
    case MOE_TYPE_BF16: return moe__bf16_to_f32(((const uint16_t *)p)[i]);
    default: return ((const float *)p)[i];
    }
}

/* f32 v[0, n) -> positions [c0, c0 + n) of a row in format f of C elements;
 * the segment ending at C zeroes the padding. */
static void put_row(const impl *im, moe__cpu_xf f, int offset, int layout, const float *v, int64_t c0, int64_t n,
                    int64_t C, void *row) {
    int64_t cp = moe__cpu_pad64(C);
    if (f == MOE__XF_Q8) {
        im->isa->quant_q8(v, c0, n, C, offset, layout, row);
    } else if (f == MOE__XF_BF16) {
        uint16_t *r = (uint16_t *)row;
        if (im->isa->to_bf16) im->isa->to_bf16(v, r + c0, n);
        else
            for (int64_t i = 0; i < n; i++) r[c0 + i] = moe__f32_to_bf16(v[i]);
        if (c0 + n == C)
            for (int64_t i = C; i < cp; i++) r[i] = 0;
    } else {
        float *r = (float *)row;
        memcpy(r + c0, v, (size_t)n * 4);
        if (c0 + n == C)
            for (int64_t i = C; i < cp; i++) r[i] = 0.0f;
    }
}

/* Rows [n0, n0 + nr) of expert e of t ([E, N, C], any type and strides) as f32
 * rows of length cp (zero padded) at dst. */
static void convert_rows(const moe_tensor *t, int64_t e, int64_t n0, int64_t nr, int64_t C, int64_t cp, float *dst) {
    for (int64_t r = 0; r < nr; r++) {
        float *d = dst + r * cp;
        if (t->stride_c == 1 || moe_type_block_size(t->type) > 1) {
            moe__dequantize_row(t->type, moe__tensor_at(t, e, n0 + r, 0), d, C);
        } else {
            for (int64_t c = 0; c < C; c++) moe__dequantize_row(t->type, moe__tensor_at(t, e, n0 + r, c), d + c, 1);
        }
        for (int64_t c = C; c < cp; c++) d[c] = 0.0f;
    }
}

/* The rows the kernels read (n0 a multiple of rmax where p has a copy): the
 * repacked copy where p has one, at every T (decode too: bf16 T=1 cold
 * -2..-8% on AVX-512, -36% on the 256-bit paths; NOTES.md session 9), else
 * the caller's weights. */
static inline const char *proj_rows(const proj *p, int64_t e, int64_t n0) {
    if (p->rp) return p->rp + e * p->rp_e + n0 * p->rp_row;
    return (const char *)p->t->data + e * p->e_bytes + n0 * p->row_bytes;
}
static inline int64_t proj_rs(const proj *p) { return p->rp ? p->rp_row : p->row_bytes; }
static inline moe__cpu_kern_fn proj_kern(const moe__cpu_isa *isa, const proj *p) {
    return p->rp ? isa->kern_il[p->kk] : isa->kern[p->kk];
}

static void phase_tokens(job *j, int tid) {
    const impl *im = j->im;
    const moe_layer_desc *d = &j->L->desc;
    float *tmp = (float *)(j->scratch + (size_t)tid * j->per_thread);
    for (;;) {
        int64_t t0 = (int64_t)atomic_fetch_add(&j->next[0], 1) * 8;
        if (t0 >= j->T) break;
        int64_t t1 = t0 + 8 < j->T ? t0 + 8 : j->T;
        for (int64_t t = t0; t < t1; t++) {
            const float *v = (const float *)j->a->x + t * j->D;
            if (d->act_type != MOE_TYPE_F32) {
                for (int64_t c = 0; c < j->D; c++) tmp[c] = load_act(d->act_type, j->a->x, t * j->D + c);
                v = tmp;
            }
            put_row(im, im->xf_in, im->off_in, im->lay_in, v, 0, j->D, j->D, j->xa + (size_t)t * im->sx);
            memset(j->acc + t * j->D, 0, (size_t)j->D * 4);
        }
        atomic_fetch_add(&j->done[0], 1);
    }
}

/* Activation rows per kernel call: nmax at decode (T <= nmax: as before),
 * otherwise the kind's own nmax_k (bf16 on AVX-512: 6). Every (row,
 * activation) sum runs in the same order whatever N is, so this changes no
 * bits; it only changes how often each weight vector is reloaded. */
static int pair_group(const moe__cpu_isa *isa, int kk, int64_t T) {
    return T > isa->nmax && isa->nmax_k[kk] ? isa->nmax_k[kk] : isa->nmax;
}

static void gate_up_task(job *j, int tid, int64_t e, int64_t i0, int64_t i1, int64_t en, int64_t n0, int64_t n1) {
    const impl *im = j->im;
    const moe_layer *L = j->L;
    const moe__cpu_isa *isa = im->isa;
    int gated = L->gated;
    int64_t D = j->D, I = j->I, K = j->K;
    char *scr = j->scratch + (size_t)tid * j->per_thread;
    float *hrow = (float *)scr;
    int64_t Dp = moe__cpu_pad64(D);
    const char *wg = NULL, *wu;
    int64_t gs = 0, us, C = D;
    if (im->up.generic) {
        float *cg = (float *)(scr + al64((size_t)(Dp > moe__cpu_pad64(I) ? Dp : moe__cpu_pad64(I)) * 4));
        float *cu = cg + im->tile_i * Dp;
        if (gated) convert_rows(&L->gate, e, i0, i1 - i0, D, Dp, cg);
        convert_rows(&L->up, e, i0, i1 - i0, D, Dp, cu);
        wg = (const char *)cg;
        wu = (const char *)cu;
        gs = us = Dp * 4;
        C = Dp;
    } else {
        if (gated) {
            wg = proj_rows(&im->gate, e, i0);
            gs = proj_rs(&im->gate);
        }
        wu = proj_rows(&im->up, e, i0);
        us = proj_rs(&im->up);
    }
    moe__cpu_kern_fn kg = gated ? proj_kern(isa, &im->gate) : NULL, ku = proj_kern(isa, &im->up);
    const float *bg = im->bg ? im->bg + e * I : NULL, *bu = im->bu ? im->bu + e * I : NULL;
    const moe_layer_desc *d = &L->desc;
    int R = isa->rmax, NB = pair_group(isa, im->up.kk, j->T);
    if (gated && pair_group(isa, im->gate.kk, j->T) < NB) NB = pair_group(isa, im->gate.kk, j->T);
    float g[NMAX_ALL * TILE_I_MAX], u[NMAX_ALL * TILE_I_MAX];
    int64_t p1 = j->off[e + 1];
    const char *nx1 = NULL;
    int64_t nl1 = 0;
    moe__cpu_pf_next.left = 0;
    if (en >= 0 && !im->up.generic) {
        if (gated) {
            moe__cpu_pf_next.p = proj_rows(&im->gate, en, n0);
            moe__cpu_pf_next.left = (n1 - n0) * gs;
            nx1 = proj_rows(&im->up, en, n0);
            nl1 = (n1 - n0) * us;
        } else {
            moe__cpu_pf_next.p = proj_rows(&im->up, en, n0);
            moe__cpu_pf_next.left = (n1 - n0) * us;
        }
    }
    for (int64_t pb = j->off[e]; pb < p1; pb += NB) {
        int nb = (int)(p1 - pb < NB ? p1 - pb : NB);
        const void *xp[NMAX_ALL];
        for (int n = 0; n < nb; n++) xp[n] = j->xa + (size_t)(j->pairs[pb + n] / K) * im->sx;
        moe__cpu_pf_first = pb == j->off[e] && j->T > isa->nmax;
        for (int64_t r = i0; r < i1; r += R) {
            int rr = (int)(i1 - r < R ? i1 - r : R);
            if (gated) kg(rr, nb, wg + (r - i0) * gs, gs, xp, C, g + (r - i0), TILE_I_MAX);
            ku(rr, nb, wu + (r - i0) * us, us, xp, C, u + (r - i0), TILE_I_MAX);
            if (moe__cpu_pf_next.left <= 0 && nl1) {
                moe__cpu_pf_next.p = nx1;
                moe__cpu_pf_next.left = nl1;
                nl1 = 0;
            }
        }
        for (int n = 0; n < nb; n++) {
            if (!isa->act || !isa->act(d->act, gated ? g + n * TILE_I_MAX : NULL, u + n * TILE_I_MAX,
                                       gated && bg ? bg + i0 : NULL, bu ? bu + i0 : NULL, hrow, i1 - i0, d->alpha,
                                       d->limit))
                for (int64_t i = i0; i < i1; i++) {
                    float gv = gated ? g[n * TILE_I_MAX + (i - i0)] + (bg ? bg[i] : 0.0f) : 0.0f;
                    float uv = u[n * TILE_I_MAX + (i - i0)] + (bu ? bu[i] : 0.0f);
                    hrow[i - i0] = act_apply(d->act, gv, uv, d->alpha, d->limit);
                }
            put_row(im, im->xf_h, im->off_h, im->lay_h, hrow, i0, i1 - i0, I, j->hq + (size_t)(pb + n) * im->sh);
        }
    }
    moe__cpu_pf_first = 0;
    moe__cpu_pf_next.left = 0;
}

static void down_task(job *j, int tid, int64_t d0, int64_t d1) {
    const impl *im = j->im;
    const moe_layer *L = j->L;
    const moe__cpu_isa *isa = im->isa;
    int64_t D = j->D, I = j->I, K = j->K;
    int64_t Ip = moe__cpu_pad64(I), Dp = moe__cpu_pad64(D);
    char *scr = j->scratch + (size_t)tid * j->per_thread;
    float *cd = (float *)(scr + al64((size_t)(Dp > Ip ? Dp : Ip) * 4) +
                          (im->up.generic ? al64((size_t)(2 * im->tile_i * Dp) * 4) : 0));
    moe__cpu_kern_fn kd = proj_kern(isa, &im->down);
    int R = isa->rmax, NB = pair_group(isa, im->down.kk, j->T);
    float y[NMAX_ALL * TILE_D_MAX];
    const float *w = j->a->w;
    for (int ai = 0; ai < j->nact; ai++) {
        int64_t e = j->active[ai];
        const char *wd;
        int64_t ds, C = I;
        if (im->down.generic) {
            convert_rows(&L->down, e, d0, d1 - d0, I, Ip, cd);
            wd = (const char *)cd;
            ds = Ip * 4;
            C = Ip;
        } else {
            wd = proj_rows(&im->down, e, d0);
            ds = proj_rs(&im->down);
        }
        const float *bd = im->bd ? im->bd + e * D : NULL;
        int64_t p1 = j->off[e + 1];
        moe__cpu_pf_next.left = 0;
        if (ai + 1 < j->nact && !im->down.generic && j->T > isa->nmax) {
            moe__cpu_pf_next.p = proj_rows(&im->down, j->active[ai + 1], d0);
            moe__cpu_pf_next.left = (d1 - d0) * ds;
        }
        for (int64_t pb = j->off[e]; pb < p1; pb += NB) {
            int nb = (int)(p1 - pb < NB ? p1 - pb : NB);
            const void *hp[NMAX_ALL];
            for (int n = 0; n < nb; n++) hp[n] = j->hq + (size_t)(pb + n) * im->sh;
            moe__cpu_pf_first = pb == j->off[e] && j->T > isa->nmax;
            for (int64_t r = d0; r < d1; r += R) {
                int rr = (int)(d1 - r < R ? d1 - r : R);
                kd(rr, nb, wd + (r - d0) * ds, ds, hp, C, y + (r - d0), TILE_D_MAX);
            }
            for (int n = 0; n < nb; n++) {
                int64_t p = j->pairs[pb + n];
                float wt = w[p];
                float *o = j->acc + (p / K) * D;
                const float *yn = y + n * TILE_D_MAX - d0;
                if (bd)
                    for (int64_t dd = d0; dd < d1; dd++) o[dd] += wt * (yn[dd] + bd[dd]);
                else
                    for (int64_t dd = d0; dd < d1; dd++) o[dd] += wt * yn[dd];
            }
        }
    }
    moe__cpu_pf_first = 0;
    moe__cpu_pf_next.left = 0;
}

static void phase_out(job *j, int tid) {
    (void)tid;
    moe_type at = j->L->desc.act_type;
    for (;;) {
        int64_t t0 = (int64_t)atomic_fetch_add(&j->next[3], 1) * 8;
        if (t0 >= j->T) break;
        int64_t t1 = t0 + 8 < j->T ? t0 + 8 : j->T;
        uint16_t *o = (uint16_t *)j->a->out;
        for (int64_t i = t0 * j->D; i < t1 * j->D; i++)
            o[i] = at == MOE_TYPE_BF16 ? moe__f32_to_bf16(j->acc[i]) : moe__f32_to_f16(j->acc[i]);
        atomic_fetch_add(&j->done[3], 1);
    }
}

static void forward_job(void *arg, int tid) {
    job *j = (job *)arg;
    phase_tokens(j, tid);
    phase_wait(&j->done[0], moe__cdiv(j->T, 8));
    int64_t ntask = (int64_t)j->nact * j->n_itiles;
    /* prefill: a thread claims its next task when it starts one (and then
     * runs it), so that its weights can be prefetched meanwhile */
    int ahead = j->T > j->im->isa->nmax;
    int64_t k = atomic_fetch_add(&j->next[1], 1);
    while (k < ntask) {
        int64_t kn = ahead ? atomic_fetch_add(&j->next[1], 1) : ntask;
        int64_t e = j->active[k / j->n_itiles], it = k % j->n_itiles;
        int64_t ti = j->ti, i0 = it * ti, i1 = i0 + ti < j->I ? i0 + ti : j->I;
        int64_t en = -1, n0 = 0, n1 = 0;
        if (kn < ntask) {
            en = j->active[kn / j->n_itiles];
            n0 = (kn % j->n_itiles) * ti;
            n1 = n0 + ti < j->I ? n0 + ti : j->I;
        }
        gate_up_task(j, tid, e, i0, i1, en, n0, n1);
        atomic_fetch_add(&j->done[1], 1);
        k = ahead ? kn : atomic_fetch_add(&j->next[1], 1);
    }
    phase_wait(&j->done[1], ntask);
    for (;;) {
        int64_t k = atomic_fetch_add(&j->next[2], 1);
        if (k >= j->n_dtiles) break;
        int64_t d0 = k * j->td, d1 = d0 + j->td < j->D ? d0 + j->td : j->D;
        down_task(j, tid, d0, d1);
        atomic_fetch_add(&j->done[2], 1);
    }
    if (j->L->desc.act_type != MOE_TYPE_F32) {
        phase_wait(&j->done[2], j->n_dtiles);
        phase_out(j, tid);
    }
}

static moe_status cpu_forward(moe_layer *L, const moe__fwd *a) {
    impl *im = (impl *)L->impl;
    int64_t T = a->T, E = L->desc.E, K = L->desc.K;
    wslayout wl = ws_layout(L, T);
    char *base = (char *)(((uintptr_t)a->ws + 63) & ~(uintptr_t)63);
    int32_t *off = (int32_t *)(base + wl.off), *pairs = (int32_t *)(base + wl.pairs),
            *active = (int32_t *)(base + wl.active);
    /* group the (token, slot) pairs by expert, in (token, slot) order */
    memset(off, 0, (size_t)(E + 1) * 4);
    for (int64_t p = 0; p < T * K; p++) off[a->ids[p] + 1]++;
    int nact = 0;
    for (int64_t e = 0; e < E; e++) {
        if (off[e + 1]) active[nact++] = (int32_t)e;
        off[e + 1] += off[e];
    }
    for (int64_t p = 0; p < T * K; p++) pairs[off[a->ids[p]]++] = (int32_t)p; /* off[e] becomes e's end */
    for (int64_t e = E; e > 0; e--) off[e] = off[e - 1];
    off[0] = 0;
    job j;
    memset(&j, 0, sizeof j);
    j.L = L;
    j.im = im;
    j.a = a;
    j.T = T;
    j.D = L->desc.D;
    j.I = L->desc.I;
    j.K = K;
    j.off = off;
    j.pairs = pairs;
    j.active = active;
    j.nact = nact;
    j.xa = base + wl.xa;
    j.hq = base + wl.hq;
    j.acc = L->desc.act_type == MOE_TYPE_F32 ? (float *)a->out : (float *)(base + wl.acc);
    j.scratch = base + wl.scratch;
    j.per_thread = wl.per_thread;
    j.td = tile_d(im, j.D, T, im->pool->n);
    j.n_dtiles = moe__cdiv(j.D, j.td);
    j.ti = itile(im, T);
    j.n_itiles = moe__cdiv(j.I, j.ti);
    for (int i = 0; i < 4; i++) {
        atomic_init(&j.next[i], 0);
        atomic_init(&j.done[i], 0);
    }
    pool_run(im->pool, forward_job, &j);
    return MOE_OK;
}

/* ------------------------------------------------------------------------ */
/* Backend object                                                            */
/* ------------------------------------------------------------------------ */

static int cpu_probe(moe_ctx *ctx, char *why, size_t n) {
    (void)ctx; (void)why; (void)n;
    return 1;
}

static int cpu_supports(const moe_layer *L, char *why, size_t n) {
    const moe_tensor *ts[] = {&L->gate, &L->up, &L->down, &L->gate_bias, &L->up_bias, &L->down_bias};
    for (int i = 0; i < 6; i++)
        if (ts[i]->data && ts[i]->mem != MOE_MEM_HOST) {
            snprintf(why, n, "weights and biases must be in host memory");
            return 0;
        }
    return 1;
}

static void proj_describe(const proj *p, char *buf, size_t n) {
    if (p->rp)
        snprintf(buf, n, "%s repacked", kk_name(p->kk));
    else if (p->generic)
        snprintf(buf, n, "%s%s->f32 rows converted per tile", moe_type_name(p->t->type),
                 p->t->stride_c != 1 ? " (strided)" : "");
    else
        snprintf(buf, n, "%s in place", kk_name(p->kk));
}

static void xf_describe(moe__cpu_xf f, int lay, char *buf, size_t n) {
    if (f != MOE__XF_Q8) snprintf(buf, n, "%s", f == MOE__XF_BF16 ? "bf16" : "f32");
    else snprintf(buf, n, "q8 (scale per %d%s)", lay & MOE__Q8_SCALE256 ? 256 : 32,
                  lay & MOE__Q8_PERM128 ? ", blocks 0,2,1,3" : "");
}

static void cpu_describe(const moe_layer *L, int64_t T, char *buf, size_t n) {
    const impl *im = (const impl *)L->impl;
    char g[96] = "-", u[96], d[96];
    if (L->gated) proj_describe(&im->gate, g, sizeof g);
    proj_describe(&im->up, u, sizeof u);
    proj_describe(&im->down, d, sizeof d);
    char xin[48], xh[48];
    xf_describe(im->xf_in, im->lay_in, xin, sizeof xin);
    xf_describe(im->xf_h, im->lay_h, xh, sizeof xh);
    const unsigned char *r1 = im->isa->rows1;
    int rows1 = (L->gated && r1[im->gate.kk] && !im->gate.rp) || (r1[im->up.kk] && !im->up.rp) ||
                (r1[im->down.kk] && !im->down.rp);
    int nu = im->up.generic ? im->isa->nmax : pair_group(im->isa, im->up.kk, T);
    int nd = im->down.generic ? im->isa->nmax : pair_group(im->isa, im->down.kk, T);
    if (L->gated && !im->gate.generic && pair_group(im->isa, im->gate.kk, T) < nu) nu = pair_group(im->isa, im->gate.kk, T);
    char rp[160];
    if (im->rp_mem)
        snprintf(rp, sizeof rp,
                 "repacked: a library copy, rows in groups of %d interleaved per 64 B, %.0f MB more memory%s "
                 "(MOE_CPU_REPACK=0: in place)",
                 im->isa->rmax, (double)im->rp_bytes / 1e6, im->rp_huge ? ", 2 MB pages asked for" : "");
    else
        snprintf(rp, sizeof rp, "weights not repacked%s", im->rp_off ? " (MOE_CPU_REPACK=0)" : "");
    char tiles[32];
    if (nu == nd)
        snprintf(tiles, sizeof tiles, "%dx%d", im->isa->rmax, nu);
    else
        snprintf(tiles, sizeof tiles, "%dx%d gate/up, %dx%d down", im->isa->rmax, nu, im->isa->rmax, nd);
    snprintf(buf, n,
             "cpu/%s: %d threads, T = %lld; gate %s, up %s, down %s; x as %s, h as %s; dot tiles %s%s; "
             "tasks: expert x %d rows of I, then %lld rows of D over all experts; %s",
             im->isa->name, im->pool->n, (long long)T, g, u, d, xin, xh, tiles,
             rows1 ? " (one activation row: f32/f16/bf16/q8_0 rows one after another)" : "",
             (int)itile(im, T), (long long)tile_d(im, L->desc.D, T, im->pool->n), rp);
}

const moe__backend moe__backend_cpu = {
    .name = "cpu",
    .device = MOE_DEVICE_CPU,
    .probe = cpu_probe,
    .supports = cpu_supports,
    .init = cpu_init,
    .fini = cpu_fini,
    .workspace = cpu_workspace,
    .forward = cpu_forward,
    .describe = cpu_describe,
    .ctx_fini = pool_free,
};
