/*
 * Host check (no GPU needed) of src/cuda/qdot.cuh, the per-format weight
 * decoders and the int8 activation side of the dp4a decode kernel, against
 * src/quant:
 *   decode  every element's sc * q - mn (f32, no fused multiply-add) equals
 *           moe_dequantize_row's value bit for bit (NaN where it is NaN), for
 *           rows made by moe_quantize_row (several lengths and kinds of data)
 *           and rows of random bytes, each placed at the weakest alignment
 *           the decoders are promised; every load is checked to be aligned,
 *           inside the row, and no wider than that alignment, except 4-byte
 *           word loads, which may cover the aligned words holding the row.
 *   dot     every unit has its format's shape (one scale, no min, ... as
 *           the kernel's cheaper dot assumes), and moe_qunit_dot_kind of that
 *           shape agrees with a float64 dot of the dequantised weights and
 *           the dequantised activations: |err| <= 1e-5 * sum of |terms|.
 *   (MXFP4 in nibble order, mxfp4n: also the streaming kernels' dots of few
 *   tokens, moe__mxfp4_dotn_aw and the biased moe__mxfp4_wb_aw + moe__mxfp4_dotb, bit for bit; Q4_K with unsigned bytes, q4_Ku: the signed decoder's dot.)
 *   qx      moe_qx_quantize32 equal to moe__quantize_row_q8_32 (the CPU's
 *           Q8_1-style activation blocks) bit for bit, and |x/d - q| <= 1/2.
 * With a GPU, the decoders also run in a kernel (rows in shared memory at
 * the same offsets) and must give the host's units bit for bit; without one
 * those lines say "skipped". The probe kernels are compiled (sm_80, sm_90a)
 * even where never launched, so `-Xptxas -v` shows their register use.
 *
 * One line per check, then "N passed, N failed, N skipped"; exit 1 on any
 * failure. MOE_TEST_SEED=n repeats a run; MOE_QDOT_PLANT=1 corrupts one
 * decoded value per row and one activation block, to see the checks fail
 * (all but those of rows whose unit 1 is zero or NaN anyway).
 */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime.h>

/* Every load of the decoders passes here on the host (qdot.cuh never
 * calls the hook in device code, hence "unused" for nvcc's device pass). */
__attribute__((unused)) static void qdot_load_hook(const uint8_t *p, int n);
#define MOE_QDOT_LOAD_HOOK(p, n) qdot_load_hook((p), (n))

#include "qdot.cuh"

#include "half.h"
#include "moe.h"
#include "quant.h"

/* ---- results ---- */

static int n_pass, n_fail, n_skip;

static void report(int ok, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("%s ", ok ? "ok  " : "FAIL");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    if (ok) n_pass++;
    else n_fail++;
}

static void skip(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("skip ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    n_skip++;
}

/* ---- the load hook: width, alignment and bounds ---- */

static const uint8_t *hook_lo, *hook_hi; /* the row's bytes */
static int hook_align;                   /* the alignment the format is promised */
static long hook_loads, hook_bad;
static char hook_msg[160];

static void qdot_load_hook(const uint8_t *p, int n) {
    hook_loads++;
    /* a word load may reach the aligned words holding the row's first and last bytes */
    const uint8_t *lo = n == 4 ? hook_lo - ((uintptr_t)hook_lo & 3) : hook_lo;
    const uint8_t *hi = n == 4 ? hook_hi + (-(uintptr_t)hook_hi & 3) : hook_hi;
    const char *why = ((uintptr_t)p & (uintptr_t)(n - 1)) ? "misaligned"
                      : n != 4 && n > hook_align       ? "wider than the row's alignment"
                      : (p < lo || p + n > hi)         ? "outside the row (words: the aligned words holding it)"
                                                       : NULL;
    if (why && !hook_bad++)
        snprintf(hook_msg, sizeof hook_msg, "%d-byte load at row + %ld: %s", n, (long)(p - hook_lo), why);
}

/* ---- random numbers (splitmix64) ---- */

static uint64_t rng_state;
static uint64_t rnd64(void) {
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static double rnd_u(void) { return (double)(rnd64() >> 11) * 0x1p-53; } /* [0, 1) */
static float rnd_gauss(void) {
    double u = rnd_u() + 0x1p-60, v = rnd_u();
    return (float)(sqrt(-2 * log(u)) * cos(6.283185307179586 * v));
}

/* ---- formats ---- */

typedef void (*unit_fn)(const uint8_t *, int, moe_qunit *);

typedef struct fmt {
    const char *name;
    moe_type type;
    int block, bytes; /* elements and bytes per block */
    int align;        /* what the kernel promises for a row's first byte */
    unit_fn fn;
    int kind;         /* the unit shape (MOE_QDOT_*) the kernel's dot assumes */
    int nib;          /* the decoder gives nibble order (position 2j = element j, 2j + 1 = j + 16) */
    int uq;           /* the decoder's weight bytes are unsigned (moe_qunit_dot_kind_uq) */
    int zp;           /* their zero point (32: moe_qunit_q6_k_u, dot moe_qunit_dot_z32), else 0 */
} fmt;

/* The kinds are written here independently of the kernel's table
 * (decode_stream.cuh sv_qdot_kind): the shape checks below fail if a
 * decoder stops making units of its kind. */
static const fmt FMTS[] = {
    {"q4_0", MOE_TYPE_Q4_0, 32, 18, 2, moe_qunit_q4_0, MOE_QDOT_S, 0, 0, 0},
    {"q8_0", MOE_TYPE_Q8_0, 32, 34, 2, moe_qunit_q8_0, MOE_QDOT_S, 0, 0, 0},
    {"mxfp4n", MOE_TYPE_MXFP4, 32, 17, 1, moe_qunit_mxfp4_nib, MOE_QDOT_S, 1, 0, 0},
    {"q2_K", MOE_TYPE_Q2_K, 256, 84, 4, moe_qunit_q2_k, MOE_QDOT_SSMM, 0, 0, 0},
    {"q3_K", MOE_TYPE_Q3_K, 256, 110, 2, moe_qunit_q3_k, MOE_QDOT_SS, 0, 0, 0},
    {"q4_K", MOE_TYPE_Q4_K, 256, 144, 16, moe_qunit_q4_k, MOE_QDOT_SM, 0, 0, 0},
    {"q4_Ku", MOE_TYPE_Q4_K, 256, 144, 16, moe_qunit_q4_k_u, MOE_QDOT_SM, 0, 1, 0},
    {"q5_K", MOE_TYPE_Q5_K, 256, 176, 16, moe_qunit_q5_k, MOE_QDOT_SM, 0, 0, 0},
    {"q6_K", MOE_TYPE_Q6_K, 256, 210, 2, moe_qunit_q6_k, MOE_QDOT_SS, 0, 0, 0},
    {"q6_Ku", MOE_TYPE_Q6_K, 256, 210, 2, moe_qunit_q6_k_u, MOE_QDOT_SS, 0, 1, 32},
};

/* Does unit w have the shape `kind` promises (bitwise: a -0 min is not 0)? */
static int same_f32(float a, float b);
static int has_shape(const moe_qunit *w, int kind) {
    const int one_sc = same_f32(w->sc[0], w->sc[1]), one_mn = same_f32(w->mn[0], w->mn[1]);
    const int no_mn = moe__f32_as_u32(w->mn[0]) == 0 && moe__f32_as_u32(w->mn[1]) == 0;
    switch (kind) {
    case MOE_QDOT_S: return one_sc && no_mn;
    case MOE_QDOT_SS: return no_mn;
    case MOE_QDOT_SM: return one_sc && one_mn;
    default: return 1;
    }
}
enum { NFMT = sizeof FMTS / sizeof FMTS[0] };

/* Byte offsets of the fp16 fields in a block (-1: none), to keep random
 * blocks finite where asked. */
static void f16_fields(moe_type t, int off[2]) {
    off[0] = off[1] = -1;
    switch (t) {
    case MOE_TYPE_Q4_0: case MOE_TYPE_Q8_0: off[0] = 0; break;
    case MOE_TYPE_Q2_K: off[0] = 80; off[1] = 82; break;
    case MOE_TYPE_Q3_K: off[0] = 108; break;
    case MOE_TYPE_Q4_K: case MOE_TYPE_Q5_K: off[0] = 0; off[1] = 2; break;
    case MOE_TYPE_Q6_K: off[0] = 208; break;
    default: break;
    }
}

/* ---- row data ---- */

enum {
    K_GAUSS, K_SPREAD, K_ZEROS, K_POSITIVE, K_NEGATIVE, K_OUTLIERS, K_EXTREME, K_NONFINITE, K_RAW, K_RAW_FINITE,
    K_MXFP4_E, NKIND
};
static const char *KIND_NAME[NKIND] = {"gauss",    "spread",    "zeros",  "positive",   "negative",   "outliers",
                                       "extreme",  "nonfinite", "raw",    "raw-finite", "mxfp4-e"};

/* Floats for the quantised kinds. */
static void fill_floats(int kind, float *x, int C) {
    const uint64_t salt = rnd64();
    for (int i = 0; i < C; i++) {
        float g = rnd_gauss();
        switch (kind) {
        case K_GAUSS: x[i] = 0.05f * g; break;
        case K_SPREAD: { /* each 32 a different magnitude, 1e-6 .. 1e4 */
            uint64_t s = (uint64_t)(i / 32) * 0x9e3779b97f4a7c15ull + salt;
            x[i] = g * powf(10.f, -6.f + 10.f * (float)((s >> 40) % 1000) / 1000.f);
            break;
        }
        case K_ZEROS: x[i] = 0.f; break;
        case K_POSITIVE: x[i] = fabsf(g) + 0.3f; break;
        case K_NEGATIVE: x[i] = -fabsf(g) - 0.3f; break;
        case K_OUTLIERS: x[i] = i % 37 == 5 ? 40.f * g : 0.01f * g; break;
        case K_EXTREME: { /* per 32: near the fp16 top, fp16-subnormal scales, overflowing scales, ints, mixed */
            int b = (i / 32) % 6;
            x[i] = b == 0 ? (float)((rnd64() & 1) ? 1 : -1) * (float)(6.5e5 + 7e5 * rnd_u())
                   : b == 1 ? 1e-5f * g
                   : b == 2 ? 1e30f * g
                   : b == 3 ? (float)((int)(rnd64() % 17) - 8)
                   : b == 4 ? (i % 2 ? 3e4f : -1e-3f) * g
                            : (i % 32 == 7 ? 1e4f : 0.f);
            break;
        }
        case K_NONFINITE:
            x[i] = 0.1f * g;
            if (i == 40) x[i] = NAN;
            if (i == 100) x[i] = INFINITY;
            if (i == 300) x[i] = -INFINITY;
            break;
        }
    }
}

/* Makes a row of type f for the kind; 0 when the kind does not apply. */
static int make_row(const fmt *f, int kind, int C, uint8_t *row, float *scratch) {
    const int nb = C / f->block;
    if (kind == K_MXFP4_E && f->type != MOE_TYPE_MXFP4) return 0;
    if (kind == K_RAW || kind == K_RAW_FINITE || kind == K_MXFP4_E) {
        for (int i = 0; i < nb * f->bytes; i++) row[i] = (uint8_t)rnd64();
        if (kind == K_RAW_FINITE) {
            int off[2];
            f16_fields(f->type, off);
            for (int b = 0; b < nb; b++)
                for (int k = 0; k < 2; k++)
                    if (off[k] >= 0 && (row[b * f->bytes + off[k] + 1] & 0x7c) == 0x7c) row[b * f->bytes + off[k] + 1] &= 0xbf;
        }
        if (kind == K_MXFP4_E) {
            static const uint8_t E[] = {0, 1, 2, 127, 254, 255};
            for (int b = 0; b < nb; b++) row[b * f->bytes] = E[b % 6];
        }
        return 1;
    }
    fill_floats(kind, scratch, C);
    return moe_quantize_row(f->type, scratch, row, C) == MOE_OK ? 1 : -1;
}

/* Activations for unit u: mostly Gaussian, some with zeros, a wide range, a
 * single spike; every 13th an all-zero block, every 29th a non-finite one. */
static void fill_acts(float *x, int u) {
    for (int j = 0; j < 32; j++) {
        float g = rnd_gauss();
        switch (u % 5) {
        case 0: case 1: x[j] = g; break;
        case 2: x[j] = j % 3 ? 0.f : 100.f * g; break;
        case 3: x[j] = g * powf(10.f, (float)(j % 7) - 3.f); break;
        case 4: x[j] = j == 9 ? 1e3f : 1e-3f * g; break;
        }
    }
    if (u % 13 == 12) memset(x, 0, 32 * sizeof *x);
    if (u % 29 == 28) x[u % 32] = (u & 32) ? NAN : INFINITY;
}

static int q_byte(const int32_t *q, int j) { return (int)(((uint32_t)q[j >> 2] >> (8 * (j & 3)) & 0xffu) ^ 0x80u) - 0x80; }
/* weight byte j of a unit of format f: signed, or unsigned for the uq decoders */
static int w_byte(const fmt *f, const int32_t *q, int j) {
    return f->uq ? (int)((uint32_t)q[j >> 2] >> (8 * (j & 3)) & 0xffu) - f->zp : q_byte(q, j);
}
/* The dot the kernel takes of a unit of format f. */
static __host__ __device__ float fmt_dot(int kind, int uq, int zp, const moe_qunit *w, const int32_t *xq, float xd,
                                         const int *s16) {
    return zp ? moe_qunit_dot_z32(w, xq, xd) : moe_qunit_dot_kind_uq(kind, uq, w, xq, xd, s16);
}
static int same_f32(float a, float b) { return (a != a && b != b) || moe__f32_as_u32(a) == moe__f32_as_u32(b); }

/* Nibble order (moe_qunit_mxfp4_nib, moe_qx_nib_order) back to element
 * order, written from the definition (position 2j = element j, 2j + 1 =
 * element j + 16), not from the library's permutation. */
static void unnib(int32_t q[8]) {
    uint8_t in[32], out[32];
    memcpy(in, q, 32);
    for (int j = 0; j < 16; j++) {
        out[j] = in[2 * j];
        out[j + 16] = in[2 * j + 1];
    }
    memcpy(q, out, 32);
}

/* ---- checks (1) and (2) for one row ---- */

typedef struct row_stats {
    long elems, bad_elems, units, bad_dots, bad_shapes, overflow_units;
    double max_rel;
    char first[200];
} row_stats;

static int plant;

/* Decodes every unit of the row at `row` (placed for the format's promised
 * alignment) and checks elements against ref and the dot product. */
static void check_row(const fmt *f, const uint8_t *row, int C, const float *ref, row_stats *st) {
    hook_lo = row;
    hook_hi = row + (size_t)(C / f->block) * f->bytes;
    hook_align = f->align;
    for (int u = 0; u < C / 32; u++) {
        moe_qunit w;
        f->fn(row, u, &w);
        const moe_qunit raw = w;
        if (f->nib) unnib(w.q);
        if (plant && u == 1) w.q[3] ^= 0x100; /* element 13 off by one */
        for (int j = 0; j < 32; j++) {
            /* the unit's value, without a fused multiply-add (-ffp-contract=off) */
            const float p = w.sc[j / 16] * (float)w_byte(f, w.q, j);
            const float y = p - w.mn[j / 16];
            st->elems++;
            if (!same_f32(y, ref[32 * u + j]) && !st->bad_elems++)
                snprintf(st->first, sizeof st->first, "element %d: sc*q-mn = %.9g (q %d sc %.9g mn %.9g), dequantised %.9g",
                         32 * u + j, y, w_byte(f, w.q, j), w.sc[j / 16], w.mn[j / 16], ref[32 * u + j]);
        }
        /* (2) the dot product with a fresh activation block */
        float x[32], xd;
        int32_t xq[8];
        int s16[2];
        fill_acts(x, u);
        moe_qx_quantize32(x, xq, &xd, s16);
        if (!has_shape(&w, f->kind) && !st->bad_shapes++ && !st->bad_elems)
            snprintf(st->first, sizeof st->first, "unit %d: sc %.9g %.9g mn %.9g %.9g, not the shape the kernel assumes",
                     u, w.sc[0], w.sc[1], w.mn[0], w.mn[1]);
        const float got = fmt_dot(f->kind, f->uq, f->zp, &w, xq, xd, s16);
        if (f->uq) { /* the kernel's output must not move by a bit: the same dot as the signed decoder's */
            moe_qunit ws;
            if (f->zp) moe_qunit_q6_k(row, u, &ws); /* the signed twins of the uq decoders */
            else moe_qunit_q4_k(row, u, &ws);
            if (!same_f32(moe_qunit_dot_kind(f->kind, &ws, xq, xd, s16), got) && !st->bad_dots++ && !st->bad_elems)
                snprintf(st->first, sizeof st->first, "unit %d: the dot of unsigned bytes differs from the signed decoder's", u);
        }
        if (f->nib) { /* as the kernel runs it: the decoder's order against activations put in it */
            int32_t xn[8];
            memcpy(xn, xq, sizeof xn);
            moe_qx_nib_order(xn);
            if (!same_f32(moe_qunit_dot_kind(f->kind, &raw, xn, xd, s16), got) && !st->bad_dots++ && !st->bad_elems)
                snprintf(st->first, sizeof st->first, "unit %d: the dot in nibble order differs from element order", u);
            /* the streaming kernels' dot (biased values from -64 times the activations' sum) */
            const moe__mxfp4_tab tab = MOE__MXFP4_TAB_INIT;
            const uint8_t *p = row + 17 * u;
            uint32_t wb[8];
            float d;
            moe__mxfp4_wb_aw(p - ((uintptr_t)p & 3), 8 * (int)((uintptr_t)p & 3), &tab, wb, &d);
            int32_t xs = 0;
            for (int k = 0; k < 32; k++) xs += q_byte(xn, k);
            const float oneb = moe__mxfp4_dotb(wb, d, xn, xd, -MOE__MXFP4_BIAS * xs, 0.f);
            if (!same_f32(oneb, got) && !st->bad_dots++ && !st->bad_elems)
                snprintf(st->first, sizeof st->first, "unit %d: the biased dot %.9g differs from %.9g", u, oneb, got);
            /* the one-token dot of the kernel (positive and negative codes apart) */
            float one = 0.f;
            moe__mxfp4_dotn_aw(p - ((uintptr_t)p & 3), 8 * (int)((uintptr_t)p & 3), &tab, 1, xn, &xd, &one);
            if (!same_f32(one, got) && !st->bad_dots++ && !st->bad_elems)
                snprintf(st->first, sizeof st->first, "unit %d: the one-token dot %.9g differs from %.9g", u, one, got);
            /* two tokens: this one and the next unit's activations */
            float x2[32], xd2[2] = {xd, 0.f}, two[2] = {0.f, 0.f};
            int32_t xq2[16];
            int s2[2];
            memcpy(xq2, xn, sizeof xn);
            fill_acts(x2, u + 1);
            moe_qx_quantize32(x2, xq2 + 8, &xd2[1], s2);
            moe_qx_nib_order(xq2 + 8);
            moe__mxfp4_dotn_aw(p - ((uintptr_t)p & 3), 8 * (int)((uintptr_t)p & 3), &tab, 2, xq2, xd2, two);
            if ((!same_f32(two[0], got) || !same_f32(two[1], moe_qunit_dot_kind(f->kind, &raw, xq2 + 8, xd2[1], s2))) &&
                !st->bad_dots++ && !st->bad_elems)
                snprintf(st->first, sizeof st->first, "unit %d: the two-token dot differs from the decoder's", u);
        }
        double want = 0, bound = 0, inter = 0;
        for (int j = 0; j < 32; j++) {
            const double xj = (double)q_byte(xq, j);
            /* the dequantised weight; where it overflowed f32 from finite sc
             * and mn (MXFP4 with e = 255), their exact float64 value */
            const double wj = isfinite(ref[32 * u + j]) || !isfinite(w.sc[j / 16]) || !isfinite(w.mn[j / 16])
                                  ? (double)ref[32 * u + j]
                                  : (double)w.sc[j / 16] * w_byte(f, w.q, j) - (double)w.mn[j / 16];
            want += wj * ((double)xd * xj);
            inter += (fabs((double)w.sc[j / 16] * w_byte(f, w.q, j)) + fabs((double)w.mn[j / 16])) * fabs(xj);
        }
        bound = inter * fabs((double)xd);
        const int may_overflow = !(inter < 1e37 && bound < 1e37);
        const double err = fabs((double)got - want);
        const int close = err <= 1e-5 * bound + 1e-42;
        int ok;
        if (!isfinite(want)) ok = !isfinite(got);
        else if (may_overflow) { ok = !isfinite(got) || close; st->overflow_units++; }
        else {
            ok = isfinite(got) && close;
            if (bound > 0 && err / bound > st->max_rel) st->max_rel = err / bound;
        }
        st->units++;
        if (!ok && !st->bad_dots++ && !st->bad_elems)
            snprintf(st->first, sizeof st->first, "unit %d: dot %.9g, float64 %.9g, |err| %.3g > 1e-5 * %.3g", u, got,
                     want, err, bound);
    }
}

/* Copies the row to offset `off` of a 64-aligned buffer holding exactly that
 * many bytes after it (so any overrun also shows under ASan). */
static uint8_t *place(const uint8_t *row, size_t n, int off, void **mem) {
    *mem = aligned_alloc(64, (off + n + 63) / 64 * 64);
    memcpy((uint8_t *)*mem + off, row, n);
    return (uint8_t *)*mem + off;
}

/* The weakest placement for a promise of `align`: aligned to it, not to twice it. */
static int weak_offset(int align) { return align == 1 ? 3 : align; }

static void check_format_rows(const fmt *f) {
    static const int CS[] = {256, 768, 2048, 2880};
    for (int kind = 0; kind < NKIND; kind++)
        for (int ci = 0; ci < 4; ci++) {
            const int C = CS[ci];
            if (C % f->block) continue;
            if (kind != K_GAUSS && C != 768) continue; /* the other kinds at one length */
            const size_t nbytes = (size_t)(C / f->block) * f->bytes;
            uint8_t *row = (uint8_t *)malloc(nbytes);
            float *scratch = (float *)malloc(sizeof(float) * C), *ref = (float *)malloc(sizeof(float) * C);
            const int made = make_row(f, kind, C, row, scratch);
            if (made) {
                row_stats st;
                memset(&st, 0, sizeof st);
                long loads0 = hook_loads;
                hook_bad = 0;
                int ok_q = made > 0 && moe_dequantize_row(f->type, row, ref, C) == MOE_OK;
                if (ok_q) {
                    const int offs[2] = {0, weak_offset(f->align)};
                    for (int o = 0; o < 2; o++) {
                        void *mem;
                        uint8_t *r = place(row, nbytes, offs[o], &mem);
                        check_row(f, r, C, ref, &st);
                        free(mem);
                    }
                }
                report(ok_q && !st.bad_elems && !hook_bad,
                       "%-5s C=%-4d %-10s decode: %ld elements at row offsets 0 and %d, %ld bit-exact; %ld loads, %ld bad%s%s%s",
                       f->name, C, KIND_NAME[kind], st.elems, weak_offset(f->align), st.elems - st.bad_elems,
                       hook_loads - loads0, hook_bad, hook_bad ? " (" : "", hook_bad ? hook_msg : "",
                       hook_bad ? ")" : "");
                if (st.bad_elems) printf("     first: %s\n", st.first);
                if (!ok_q) printf("     moe_quantize_row / moe_dequantize_row failed\n");
                report(ok_q && !st.bad_dots && !st.bad_shapes,
                       "%-5s C=%-4d %-10s dot: %ld units, %ld bad, %ld of another shape, max |err|/sum|terms| %.2e%s",
                       f->name, C, KIND_NAME[kind], st.units, st.bad_dots, st.bad_shapes, st.max_rel,
                       st.overflow_units ? " (some units overflow f32: non-finite accepted)" : "");
                if ((st.bad_dots || st.bad_shapes) && !st.bad_elems) printf("     first: %s\n", st.first);
            }
            free(row);
            free(scratch);
            free(ref);
        }
}

/* ---- check (3): activations ---- */

static void check_qx(void) {
    enum { NB = 4096 };
    float *x = (float *)malloc(sizeof(float) * 32 * NB);
    for (int b = 0; b < NB; b++) fill_acts(x + 32 * b, b);
    /* special blocks: exact ties (d = 1), huge, tiny (1/d overflows), one value, all equal, signed zeros */
    for (int j = 0; j < 32; j++) {
        x[32 * 0 + j] = j == 0 ? 127.f : (float)(j - 16) + 0.5f;
        x[32 * 1 + j] = 1e38f * (j % 2 ? 1 : -1) * (float)j / 31.f;
        x[32 * 2 + j] = 1e-38f * (float)(j % 5) - 2e-38f;
        x[32 * 3 + j] = j == 17 ? -3.f : 0.f;
        x[32 * 4 + j] = 0.25f;
        x[32 * 5 + j] = j % 2 ? -0.f : 0.f;
        x[32 * 6 + j] = j == 3 ? -INFINITY : 1.f;
    }
    moe_block_q8_32 *lib = (moe_block_q8_32 *)malloc(sizeof(moe_block_q8_32) * NB);
    moe__quantize_row_q8_32(x, lib, 32 * NB);
    long bad = 0, bad_bound = 0, nonfinite = 0;
    double worst = 0;
    char first[200] = "";
    for (int b = 0; b < NB; b++) {
        int32_t q[8];
        float d;
        int s16[2];
        moe_qx_quantize32(x + 32 * b, q, &d, s16);
        if (plant && b == 0) q[0] ^= 1;
        int ok = same_f32(d, lib[b].d), s[2] = {0, 0};
        for (int j = 0; j < 32; j++) {
            ok &= q_byte(q, j) == lib[b].qs[j];
            s[j / 16] += lib[b].qs[j];
        }
        ok &= s[0] == s16[0] && s[1] == s16[1];
        if (!ok && !bad++)
            snprintf(first, sizeof first, "block %d: d %.9g (library %.9g), s16 %d %d (library %d %d)", b, d, lib[b].d,
                     s16[0], s16[1], s[0], s[1]);
        nonfinite += d != d;
        /* the rounding bound, where 1/d is finite */
        if (d == d && d > 0 && isfinite(1.f / d))
            for (int j = 0; j < 32; j++) {
                double e = fabs((double)x[32 * b + j] / d - q_byte(q, j));
                if (e > worst) worst = e;
                if (e > 0.5 + 1e-4) bad_bound++;
            }
    }
    report(!bad, "qx    %d blocks: q, d and sums equal moe__quantize_row_q8_32 bit for bit (%ld non-finite blocks -> d NaN)", NB,
           nonfinite);
    if (bad) printf("     %ld differ; first: %s\n", bad, first);
    report(!bad_bound, "qx    %d blocks: max |x/d - q| = %.6f (<= 0.5 + 1e-4)", NB, worst);
    /* moe_qx_nib_order against the definition of nibble order */
    long bad_nib = 0;
    for (int b = 0; b < NB; b++) {
        int32_t q[8], n[8];
        float d;
        int s16[2];
        moe_qx_quantize32(x + 32 * b, q, &d, s16);
        memcpy(n, q, sizeof n);
        moe_qx_nib_order(n);
        if (plant && b == 0) n[1] ^= 1;
        unnib(n);
        bad_nib += memcmp(n, q, sizeof n) != 0;
    }
    report(!bad_nib, "qx    %d blocks: moe_qx_nib_order puts element j at 2j and j + 16 at 2j + 1 (%ld differ)", NB, bad_nib);
    free(lib);
    free(x);
}

static void check_h2f(void) {
    long bad = 0;
    for (uint32_t h = 0; h < 65536; h++) bad += moe__f32_as_u32(moe__qh2f(h)) != moe__f32_as_u32(moe__f16_to_f32((uint16_t)h));
    report(!bad, "fp16  all 65536 values convert as moe__f16_to_f32, bit for bit (%ld differ)", bad);
}

static void check_mxfp4_table(void) {
    /* every code quadruple, through both lookups of the kernels, against
     * blocks.h: the table halves and select (moe__mxfp4_nib8_t, 4 codes in each
     * half of a word), and the biased values of the streaming kernels
     * (moe__mxfp4_wb_aw: B with the codes plus R with their complement, prmt's
     * sign mode); and the scale of every e (moe__e8m0_half_f) */
    long bad = 0, bad_b = 0, bad_e = 0;
    const moe__mxfp4_tab t = MOE__MXFP4_TAB_INIT;
    for (uint32_t c = 0; c < 65536; c++) {
        uint32_t a, b;
        moe__mxfp4_nib8_t(c | c << 16, &t, &a, &b);
        const uint32_t wb = moe__qprmt(t.b0, MOE__MXFP4_B1, c) + moe__qprmt(t.r0, MOE__MXFP4_R1, moe__qmad(c, t.m1, t.m1));
        for (int n = 0; n < 4; n++) {
            const int want = moe__mxfp4_kvalue((int)(c >> (4 * n)) & 15);
            bad += (int)(int8_t)(a >> (8 * n)) != want || (int)(int8_t)(b >> (8 * n)) != want;
            bad_b += (int)((wb >> (8 * n)) & 0xffu) - MOE__MXFP4_BIAS != want;
        }
    }
    for (uint32_t e = 0; e < 256; e++) bad_e += moe__f32_as_u32(moe__e8m0_half_f(e)) != moe__e8m0_half_bits((uint8_t)e);
    report(!bad, "mxfp4 the lookup of all 65536 code quadruples equals moe__mxfp4_kvalue (%ld differ)", bad);
    report(!bad_b, "mxfp4 the biased values of all 65536 code quadruples, less 64, equal it (%ld differ)", bad_b);
    report(!bad_e, "mxfp4 the scale of all 256 e equals moe__e8m0_half_bits (%ld differ)", bad_e);
}

/* ---- the same decoders on a GPU ---- */

#define PROBE_SMEM 4096

#define QDOT_PROBE(name)                                                                                       \
    __global__ void probe_##name(const uint8_t *g, int nbytes, int off, int nunits, int kind, const int32_t *xq, \
                                 const float *xd, const int *s16, moe_qunit *units, float *dots) {             \
        __shared__ __align__(16) uint8_t sm[PROBE_SMEM + 16];                                                  \
        for (int i = threadIdx.x; i < nbytes; i += blockDim.x) sm[off + i] = g[i];                             \
        __syncthreads();                                                                                       \
        for (int u = threadIdx.x; u < nunits; u += blockDim.x) {                                               \
            moe_qunit w;                                                                                       \
            moe_qunit_##name(sm + off, u, &w);                                                                 \
            units[u] = w;                                                                                      \
            dots[u] = fmt_dot(kind & 255, (kind >> 8) & 1, kind >> 9 ? 32 : 0, &w, xq + 8 * u, xd[u], s16 + 2 * u); \
        }                                                                                                      \
    }
QDOT_PROBE(q4_0)
QDOT_PROBE(q8_0)
QDOT_PROBE(mxfp4_nib)
QDOT_PROBE(q2_k)
QDOT_PROBE(q3_k)
QDOT_PROBE(q4_k)
QDOT_PROBE(q4_k_u)
QDOT_PROBE(q5_k)
QDOT_PROBE(q6_k)
QDOT_PROBE(q6_k_u)

__global__ void probe_qx(const float *x, int nb, int32_t *q, float *d, int *s16) {
    for (int b = blockIdx.x * blockDim.x + threadIdx.x; b < nb; b += gridDim.x * blockDim.x)
        moe_qx_quantize32(x + 32 * b, q + 8 * b, d + b, s16 + 2 * b);
}

typedef void (*probe_fn)(const uint8_t *, int, int, int, int, const int32_t *, const float *, const int *,
                         moe_qunit *, float *);
static const probe_fn PROBES[NFMT] = {probe_q4_0, probe_q8_0, probe_mxfp4_nib, probe_q2_k,
                                      probe_q3_k, probe_q4_k, probe_q4_k_u, probe_q5_k, probe_q6_k,
                                      probe_q6_k_u};

static int gpu_ok(cudaError_t e, const char *what) {
    if (e == cudaSuccess) return 1;
    report(0, "gpu   %s: %s", what, cudaGetErrorString(e));
    return 0;
}

static void check_gpu(void) {
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        cudaGetLastError();
        for (int i = 0; i < NFMT; i++) skip("gpu   %-5s decode and dot on the device: no GPU", FMTS[i].name);
        skip("gpu   qx on the device: no GPU");
        return;
    }
    for (int fi = 0; fi < NFMT; fi++) {
        const fmt *f = &FMTS[fi];
        const int kinds[2] = {K_GAUSS, K_RAW_FINITE};
        for (int ki = 0; ki < 2; ki++) {
            const int C = f->block == 32 ? 2880 : 2048, nu = C / 32;
            const size_t nbytes = (size_t)(C / f->block) * f->bytes;
            const int off = weak_offset(f->align);
            uint8_t *row = (uint8_t *)malloc(nbytes);
            float *scratch = (float *)malloc(sizeof(float) * C);
            make_row(f, kinds[ki], C, row, scratch);
            int32_t *xq = (int32_t *)malloc(sizeof(int32_t) * 8 * nu);
            float *xd = (float *)malloc(sizeof(float) * nu), *dots = (float *)malloc(sizeof(float) * nu);
            int *s16 = (int *)malloc(sizeof(int) * 2 * nu);
            moe_qunit *units = (moe_qunit *)malloc(sizeof(moe_qunit) * nu);
            for (int u = 0; u < nu; u++) {
                float x[32];
                fill_acts(x, u);
                moe_qx_quantize32(x, xq + 8 * u, xd + u, s16 + 2 * u);
            }
            uint8_t *g_row;
            int32_t *g_xq;
            float *g_xd, *g_dots;
            int *g_s16;
            moe_qunit *g_units;
            int ok = gpu_ok(cudaMalloc(&g_row, nbytes), "cudaMalloc") && gpu_ok(cudaMalloc(&g_xq, 32 * nu), "cudaMalloc") &&
                     gpu_ok(cudaMalloc(&g_xd, 4 * nu), "cudaMalloc") && gpu_ok(cudaMalloc(&g_dots, 4 * nu), "cudaMalloc") &&
                     gpu_ok(cudaMalloc(&g_s16, 8 * nu), "cudaMalloc") &&
                     gpu_ok(cudaMalloc(&g_units, sizeof(moe_qunit) * nu), "cudaMalloc");
            if (!ok) return;
            cudaMemcpy(g_row, row, nbytes, cudaMemcpyHostToDevice);
            cudaMemcpy(g_xq, xq, 32 * nu, cudaMemcpyHostToDevice);
            cudaMemcpy(g_xd, xd, 4 * nu, cudaMemcpyHostToDevice);
            cudaMemcpy(g_s16, s16, 8 * nu, cudaMemcpyHostToDevice);
            PROBES[fi]<<<1, 128>>>(g_row, (int)nbytes, off, nu, f->kind | f->uq << 8 | (f->zp != 0) << 9, g_xq, g_xd, g_s16,
                                   g_units, g_dots);
            if (!gpu_ok(cudaGetLastError(), "launch") || !gpu_ok(cudaDeviceSynchronize(), "kernel")) return;
            moe_qunit *dev = (moe_qunit *)malloc(sizeof(moe_qunit) * nu);
            float *ddots = (float *)malloc(sizeof(float) * nu);
            cudaMemcpy(dev, g_units, sizeof(moe_qunit) * nu, cudaMemcpyDeviceToHost);
            cudaMemcpy(ddots, g_dots, 4 * nu, cudaMemcpyDeviceToHost);
            long bad_units = 0, bad_dots = 0;
            double worst = 0;
            hook_lo = row;
            hook_hi = row + nbytes;
            hook_align = f->align;
            for (int u = 0; u < nu; u++) {
                moe_qunit w;
                f->fn(row, u, &w);
                int same = !memcmp(w.q, dev[u].q, sizeof w.q);
                for (int h = 0; h < 2; h++) same &= same_f32(w.sc[h], dev[u].sc[h]) && same_f32(w.mn[h], dev[u].mn[h]);
                bad_units += !same;
                const float host = fmt_dot(f->kind, f->uq, f->zp, &w, xq + 8 * u, xd[u], s16 + 2 * u);
                double bound = 0;
                for (int j = 0; j < 32; j++)
                    bound += (fabs((double)w.sc[j / 16] * w_byte(f, w.q, j)) + fabs((double)w.mn[j / 16])) *
                             fabs((double)q_byte(xq + 8 * u, j) * xd[u]);
                const double err = fabs((double)ddots[u] - host);
                if (isfinite(host) != isfinite(ddots[u]) || (isfinite(host) && err > 2e-5 * bound + 1e-42)) bad_dots++;
                else if (bound > 0 && isfinite(host) && err / bound > worst) worst = err / bound;
            }
            report(!bad_units && !bad_dots,
                   "gpu   %-5s C=%d %-10s row at shared offset %d: %d units as on the host bit for bit (%ld differ), "
                   "dots within 2e-5 of the host's (%ld not; max %.2e)",
                   f->name, C, KIND_NAME[kinds[ki]], off, nu, bad_units, bad_dots, worst);
            cudaFree(g_row); cudaFree(g_xq); cudaFree(g_xd); cudaFree(g_dots); cudaFree(g_s16); cudaFree(g_units);
            free(row); free(scratch); free(xq); free(xd); free(dots); free(s16); free(units); free(dev); free(ddots);
        }
    }
    /* activations */
    enum { NB = 2048 };
    float *x = (float *)malloc(sizeof(float) * 32 * NB), *d = (float *)malloc(4 * NB), *dd = (float *)malloc(4 * NB);
    int32_t *q = (int32_t *)malloc(32 * NB), *dq = (int32_t *)malloc(32 * NB);
    int *s = (int *)malloc(8 * NB), *ds = (int *)malloc(8 * NB);
    for (int b = 0; b < NB; b++) fill_acts(x + 32 * b, b);
    for (int j = 0; j < 32; j++) x[j] = j == 0 ? 127.f : (float)(j - 16) + 0.5f; /* ties */
    float *gx, *gd;
    int32_t *gq;
    int *gs;
    if (!gpu_ok(cudaMalloc(&gx, 128 * NB), "cudaMalloc") || !gpu_ok(cudaMalloc(&gd, 4 * NB), "cudaMalloc") ||
        !gpu_ok(cudaMalloc(&gq, 32 * NB), "cudaMalloc") || !gpu_ok(cudaMalloc(&gs, 8 * NB), "cudaMalloc"))
        return;
    cudaMemcpy(gx, x, 128 * NB, cudaMemcpyHostToDevice);
    probe_qx<<<16, 128>>>(gx, NB, gq, gd, gs);
    if (!gpu_ok(cudaGetLastError(), "launch") || !gpu_ok(cudaDeviceSynchronize(), "kernel")) return;
    cudaMemcpy(dd, gd, 4 * NB, cudaMemcpyDeviceToHost);
    cudaMemcpy(dq, gq, 32 * NB, cudaMemcpyDeviceToHost);
    cudaMemcpy(ds, gs, 8 * NB, cudaMemcpyDeviceToHost);
    long bad = 0;
    for (int b = 0; b < NB; b++) {
        moe_qx_quantize32(x + 32 * b, q + 8 * b, d + b, s + 2 * b);
        bad += !same_f32(d[b], dd[b]) || memcmp(q + 8 * b, dq + 8 * b, 32) || s[2 * b] != ds[2 * b] ||
               s[2 * b + 1] != ds[2 * b + 1];
    }
    report(!bad, "gpu   qx    %d blocks quantised on the device as on the host, bit for bit (%ld differ)", NB, bad);
    cudaFree(gx); cudaFree(gd); cudaFree(gq); cudaFree(gs);
    free(x); free(d); free(dd); free(q); free(dq); free(s); free(ds);
}

int main(void) {
    const char *e = getenv("MOE_TEST_SEED");
    const uint64_t seed = e && *e ? strtoull(e, NULL, 0) : (uint64_t)time(NULL) ^ ((uint64_t)clock() << 32);
    rng_state = seed;
    plant = getenv("MOE_QDOT_PLANT") && atoi(getenv("MOE_QDOT_PLANT"));
    printf("moe-qdot-test: src/cuda/qdot.cuh against src/quant (seed %llu%s)\n", (unsigned long long)seed,
           plant ? ", MOE_QDOT_PLANT: failures expected" : "");
    check_h2f();
    check_mxfp4_table();
    for (int i = 0; i < NFMT; i++) check_format_rows(&FMTS[i]);
    check_qx();
    check_gpu();
    printf("%d passed, %d failed, %d skipped\n", n_pass, n_fail, n_skip);
    return n_fail ? 1 : 0;
}
