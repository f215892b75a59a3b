/*
 * The fast CPU backend ("cpu"): what src/cpu/cpu.c (threads, grouping,
 * phases) shares with the kernel files, one per instruction set
 * (kern_scalar.c, kern_avx2.c, kern_avxvnni.c, kern_avx512.c; the SIMD ones
 * are one body, kernels.inc, built three times). Chosen once from cpuid;
 * MOE_CPU_ISA=scalar|avx2|avxvnni|avx512 forces a path the CPU runs.
 *
 * Every kernel is a "dot" micro-kernel: R weight rows x N activation rows,
 * each output the dot product of one weight row and one activation row over
 * C. The sum for one (row, activation) pair runs in the same order whatever R
 * and N are, which is what makes the forward bitwise the same for any thread
 * count and any tiling.
 */
#ifndef MOE_CPU_H
#define MOE_CPU_H

#include "core.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Weight formats a kernel reads directly. GENERIC weights are first converted
 * to f32 rows in per-thread scratch and go through the F32 kernel. */
typedef enum moe__cpu_kk {
    MOE__KK_F32 = 0,   /* w f32 rows,  x f32 */
    MOE__KK_F16,       /* w f16 rows,  x f32 */
    MOE__KK_BF16,      /* w bf16 rows, x bf16 */
    MOE__KK_Q8_0,      /* w Q8_0,      x q8 (offset 128) */
    MOE__KK_Q4_0,      /* w Q4_0,      x q8 (offset 8) */
    MOE__KK_Q4_K,      /* w Q4_K,      x q8 */
    MOE__KK_Q6_K,      /* w Q6_K,      x q8 (scale per 256; offset 32 through dxs16) */
    MOE__KK_MXFP4,     /* w MXFP4,     x q8 (offset 12: codes mapped to 0..24) */
    MOE__KK_Q2_K,      /* w Q2_K,      x q8 (scale per 256; mins through dxs16) */
    MOE__KK_Q3_K,      /* w Q3_K,      x q8 (scale per 256; offset 4 through dxs16) */
    MOE__KK_Q5_K,      /* w Q5_K,      x q8 (as Q4_K) */
    MOE__KK_COUNT
} moe__cpu_kk;

/* Activation row formats. */
typedef enum moe__cpu_xf {
    MOE__XF_F32 = 0,
    MOE__XF_BF16 = 1,
    MOE__XF_Q8 = 2,
} moe__cpu_xf;

/*
 * A q8 activation row of C elements (C a multiple of 32), CP = C rounded up
 * to 64, the tail zero:
 *   int8  q[CP]          x ~= dx[c/32] * q[c], |q| <= 127
 *   int32 corr[CP/4]     -offset * (sum of the 4 q each int32 lane covers):
 *                        the start value of a VNNI accumulator against
 *                        weights stored as unsigned (w + offset)
 *   float xs[CP/4]       dx of the 32-block each lane is in (the per-lane scale)
 *   float dx[CP/32]
 *   float dxs[CP/32]     dx * (sum of the block's q): for the mins of Q4_K, Q5_K
 *   float dxs16[CP/16]   dx * (sum of each 16 q, natural order): for the mins
 *                        of Q2_K and the offsets of Q3_K, Q6_K (16-element
 *                        sub-blocks), subtracted after the integer sums
 */
/* Orders of the 32-blocks inside a q8 row's q, corr and xs (dx and dxs stay
 * natural): NATURAL, or PERM128: in each 128 elements blocks 0, 2, 1, 3, the
 * order in which 64 bytes of Q4_K nibbles unpack without shuffles. */
#define MOE__Q8_NATURAL 0
#define MOE__Q8_PERM128 1
/* flag: one scale per 256 elements (every dx of a 256-block equal), so that
 * integer sums can run over a whole K-quant super-block */
#define MOE__Q8_SCALE256 2
static inline int64_t moe__cpu_q8_pos(int64_t c, int layout) {
    if (!(layout & MOE__Q8_PERM128)) return c;
    int64_t b = (c >> 5) & 3; /* block within its 128 */
    static const int8_t to[4] = {0, 2, 1, 3};
    return (c & ~(int64_t)127) + 32 * to[b] + (c & 31);
}
static inline int64_t moe__cpu_pad64(int64_t c) { return (c + 63) & ~(int64_t)63; }
static inline size_t moe__cpu_q8_row_bytes(int64_t C) {
    int64_t cp = moe__cpu_pad64(C);
    return (size_t)(cp + cp + cp + cp / 8 + cp / 8 + cp / 4);
}
typedef struct moe__cpu_q8 {
    const int8_t *q;
    const int32_t *corr;
    const float *xs, *dx, *dxs, *dxs16;
} moe__cpu_q8;
static inline moe__cpu_q8 moe__cpu_q8_view(const void *row, int64_t C) {
    int64_t cp = moe__cpu_pad64(C);
    const char *p = (const char *)row;
    moe__cpu_q8 v;
    v.q = (const int8_t *)p;
    v.corr = (const int32_t *)(p + cp);
    v.xs = (const float *)(p + 2 * cp);
    v.dx = (const float *)(p + 3 * cp);
    v.dxs = (const float *)(p + 3 * cp + cp / 8);
    v.dxs16 = (const float *)(p + 3 * cp + cp / 4);
    return v;
}

/* out[n * ldo + r] = dot(weight row r, activation row n) over C, r < R, n < N.
 * Weight row r starts at w + r * wstride bytes; x[n] is activation row n. */
typedef void (*moe__cpu_kern_fn)(int R, int N, const void *w, int64_t wstride, const void *const *x, int64_t C,
                                 float *out, int64_t ldo);

#define MOE__CPU_NMAX_ALL 8 /* the largest N of any kernel call on any path */

typedef struct moe__cpu_isa {
    const char *name;
    int rmax, nmax; /* the largest R and N of one kernel call */
    /* per kind: the N of the pair groups at T > nmax (0: nmax); at most
     * MOE__CPU_NMAX_ALL. bf16 on AVX-512 runs 4 x 6 tiles (kernels.inc). */
    unsigned char nmax_k[MOE__KK_COUNT];
    moe__cpu_kern_fn kern[MOE__KK_COUNT]; /* NULL: not available on this path (GENERIC is used) */
    /* Per kind, NULL where absent: the same kernel (the same bits) over the
     * library's repacked copy (cpu.c, repack): rows in groups of rmax (the
     * last group of a tensor's rows may be smaller), each group's rows
     * interleaved per 64 bytes; a call's R rows are one whole group at w, and
     * chunk k of row r is at w + (k * R + r) * 64; ws = the bytes of one row. */
    moe__cpu_kern_fn kern_il[MOE__KK_COUNT];
    /* f32 x[0, n) -> positions [c0, c0 + n) of a q8 row of C elements (see
     * above) for weights with the given offset; c0, n multiples of 32. The
     * segment that ends at C also zeroes the padding. */
    void (*quant_q8)(const float *x, int64_t c0, int64_t n, int64_t C, int offset, int layout, void *row);
    /* the q8 layout (MOE__Q8_* flags) each q8 kernel reads */
    unsigned char q8_layout[MOE__KK_COUNT];
    /* 1: the kernel runs one activation row (N = 1) against its R rows one row
     * after another (kernels.inc, KERN_ROWS1); for moe_layer_describe */
    unsigned char rows1[MOE__KK_COUNT];
    /* Optional (NULL: the scalar loops in cpu.c). h[i] = act(g[i] + bg[i],
     * u[i] + bu[i]) for i < n (g, bg, bu may be NULL when unused); returns 0
     * and writes nothing for an activation it does not vectorise. */
    int (*act)(moe_act act, const float *g, const float *u, const float *bg, const float *bu, float *h, int64_t n,
               float alpha, float limit);
    /* y[i] = bf16 of x[i] (round to nearest even, NaN kept quiet), i < n: the same bits as moe__f32_to_bf16 */
    void (*to_bf16)(const float *x, uint16_t *y, int64_t n);
} moe__cpu_isa;

/* Set by cpu.c while a thread runs the first group of activation rows
 * against a weight tile (the pass that reads the tile from memory): the
 * dense kernels then prefetch their next rows even at N >= nmax
 * (kernels.inc, pf_dist; NOTES.md session 8). */
extern _Thread_local int moe__cpu_pf_first;
/* Prefill (T > nmax): the byte range the thread reads next (its next gate/up
 * task's rows, a down task's next expert slice); the bf16 kernel prefetches
 * one line of it per step in the passes that read their own tile from L2
 * (not the first), and advances p / shrinks left (NOTES.md session 8). */
typedef struct moe__cpu_pfs {
    const char *p;
    int64_t left;
} moe__cpu_pfs;
extern _Thread_local moe__cpu_pfs moe__cpu_pf_next;

extern const moe__cpu_isa moe__cpu_isa_scalar;
extern const moe__cpu_isa moe__cpu_isa_avx2;
extern const moe__cpu_isa moe__cpu_isa_avxvnni;
extern const moe__cpu_isa moe__cpu_isa_avx512;

/* The portable q8 activation quantizer (kern_scalar.c); SIMD paths may use their own. */
void moe__cpu_quant_q8_scalar(const float *x, int64_t c0, int64_t n, int64_t C, int offset, int layout, void *row);

#ifdef __cplusplus
}
#endif

#endif
