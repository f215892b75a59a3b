/*
 * Weight decoders for integer (dp4a) dot products against activations
 * quantised to int8 per 32 elements (ggml's Q8_1 rounding). Called by the
 * decode kernel of src/cuda/decode_stream.cuh on rows staged in shared
 * memory; host and device code (tests/test_qdot.cu checks them on the host
 * against src/quant, bit for bit).
 *
 * A unit is 32 consecutive elements of a row: q[32] as int8 (packed four to
 * an int32, element 4i in the lowest byte) and a scale and min per half, so
 * that element j is sc[j/16] * q[j] - mn[j/16], equal to moe_dequantize_row
 * when evaluated without fused multiply-add (__fmul_rn, then __fsub_rn).
 *
 * Alignment contract: `row` (the first byte of the row's first block) is
 * aligned to 16 for Q4_K/Q5_K, 4 for Q2_K, 2 for Q4_0/Q8_0/Q3_K/Q6_K and 1
 * for MXFP4. Loads of 2 and 16 bytes stay inside the unit's block and are
 * no wider than that alignment; the formats whose blocks are not 4-aligned
 * (Q4_0, Q8_0, MXFP4, Q3_K, Q6_K) read their 32-byte or 16-byte fields as the
 * aligned 4-byte words that hold them (a funnel shift each): such a word may
 * reach up to 3 bytes before or after the block, never past the aligned
 * words holding the row. On the device the row sits in a shared-memory
 * stage, where that is always in bounds; one word load replaces two to four
 * byte loads, and the loads of 32 lanes at a 17- or 34-byte stride conflict
 * less as words than as bytes.
 */
#ifndef MOE_CUDA_QDOT_CUH
#define MOE_CUDA_QDOT_CUH

#include "blocks.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#define MOE__QFN static __host__ __device__ __forceinline__
#else
#define MOE__QFN static inline
#endif
#ifdef __CUDA_ARCH__
#define MOE__QUNROLL _Pragma("unroll")
#else
#define MOE__QUNROLL
#endif

/* Host builds may define MOE_QDOT_LOAD_HOOK(p, n) to see every load (the
 * test checks alignment and bounds with it); it is never used on the device. */
#ifndef MOE_QDOT_LOAD_HOOK
#define MOE_QDOT_LOAD_HOOK(p, n) ((void)0)
#endif

typedef struct moe_qunit {
    int32_t q[8]; /* elements 4i..4i+3 as int8, element 4i in the lowest byte */
    float sc[2];  /* per half of 16 */
    float mn[2];
} moe_qunit;

/* ---- loads, conversions and the byte instructions, with host versions ---- */

MOE__QFN uint32_t moe__qld16(const uint8_t *p) {
#ifdef __CUDA_ARCH__
    return *(const uint16_t *)p;
#else
    MOE_QDOT_LOAD_HOOK(p, 2);
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
#endif
}

MOE__QFN uint32_t moe__qld32(const uint8_t *p) {
#ifdef __CUDA_ARCH__
    return *(const uint32_t *)p;
#else
    MOE_QDOT_LOAD_HOOK(p, 4);
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
#endif
}

MOE__QFN void moe__qld128(const uint8_t *p, uint32_t w[4]) {
#ifdef __CUDA_ARCH__
    const uint4 v = *(const uint4 *)p;
    w[0] = v.x; w[1] = v.y; w[2] = v.z; w[3] = v.w;
#else
    MOE_QDOT_LOAD_HOOK(p, 16);
    memcpy(w, p, 16);
#endif
}

MOE__QFN float moe__qu2f(uint32_t u) {
#ifdef __CUDA_ARCH__
    return __uint_as_float(u);
#else
    float f;
    memcpy(&f, &u, 4);
    return f;
#endif
}

MOE__QFN uint32_t moe__qf2u(float f) {
#ifdef __CUDA_ARCH__
    return __float_as_uint(f);
#else
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
#endif
}

/* fp16 bits -> f32, exact (subnormals, Inf, NaN payload as moe__f16_to_f32). */
MOE__QFN float moe__qh2f(uint32_t h) {
#ifdef __CUDA_ARCH__
    return __half2float(__ushort_as_half((unsigned short)h));
#else
    const uint32_t e = (h & 0x7fffu) << 13;
    /* Rebias by multiplying with 2^112: exact, and it normalises subnormals. */
    uint32_t u = moe__qf2u(moe__qu2f(e) * moe__qu2f(0x77800000u));
    if ((h & 0x7c00u) == 0x7c00u) u = e | 0x7f800000u;
    return moe__qu2f(u | (h & 0x8000u) << 16);
#endif
}

/* __byte_perm: byte n of the result is byte (s >> 4n) & 7 of y:x. */
MOE__QFN uint32_t moe__byte_perm(uint32_t x, uint32_t y, uint32_t s) {
#ifdef __CUDA_ARCH__
    return __byte_perm(x, y, s);
#else
    const uint64_t t = (uint64_t)y << 32 | x;
    uint32_t r = 0;
    for (int n = 0; n < 4; n++) r |= (uint32_t)(t >> (8 * ((s >> (4 * n)) & 7)) & 0xffu) << (8 * n);
    return r;
#endif
}

/* Rotate right by n & 31 (one SHF.R.W on the device). */
MOE__QFN uint32_t moe__qrotr(uint32_t x, int n) {
#ifdef __CUDA_ARCH__
    return __funnelshift_r(x, x, (unsigned)n);
#else
    n &= 31;
    return n ? x >> n | x << (32 - n) : x;
#endif
}

/* The low 32 bits of hi:lo >> n for n in [0, 32] (n = 32 gives hi; one
 * SHF.R.U32 on the device, __funnelshift_rc). */
MOE__QFN uint32_t moe__qshf(uint32_t lo, uint32_t hi, int n) {
#ifdef __CUDA_ARCH__
    return __funnelshift_rc(lo, hi, (unsigned)n);
#else
    return n >= 32 ? hi : n ? lo >> n | hi << (32 - n) : lo;
#endif
}

/* NW words from a, which is 4-aligned. */
#define MOE__QWORDS_A(a, w, NW)                                                                    \
    do {                                                                                           \
        MOE__QUNROLL                                                                               \
        for (int moe__i = 0; moe__i < (NW); moe__i++) (w)[moe__i] = moe__qld32((a) + 4 * moe__i);   \
    } while (0)

/* n words of bytes p, p + 1, ... (p at any alignment) out of the aligned
 * words holding them: n loads when p is 4-aligned, else n + 1, and n funnel
 * shifts. */
MOE__QFN void moe__qldu(const uint8_t *p, uint32_t *w, int n) {
    const uint8_t *a = p - ((uintptr_t)p & 3);
    const int sh = 8 * (int)((uintptr_t)p & 3);
    uint32_t lo = moe__qld32(a);
    MOE__QUNROLL
    for (int i = 0; i < n; i++) {
        const uint32_t hi = i + 1 < n || sh ? moe__qld32(a + 4 * (i + 1)) : 0u;
        w[i] = moe__qshf(lo, hi, sh);
        lo = hi;
    }
}

/* Each byte replaced by its bit 7 copied into all eight bits (prmt.b32's
 * sign-replicate mode, which __byte_perm does not expose). */
MOE__QFN uint32_t moe__qsignx4(uint32_t x) {
#ifdef __CUDA_ARCH__
    uint32_t r;
    asm("prmt.b32 %0, %1, %1, 0xBA98;" : "=r"(r) : "r"(x));
    return r;
#else
    return ((x >> 7) & 0x01010101u) * 0xFFu;
#endif
}

/* (a & m) | (~b & ~m): one LOP3 (the compiler makes two of it when m is a
 * constant, not seeing that ~m is one too). */
MOE__QFN uint32_t moe__qmerge_not(uint32_t m, uint32_t a, uint32_t b) {
#ifdef __CUDA_ARCH__
    uint32_t r;
    asm("lop3.b32 %0, %1, %2, %3, 0xD1;" : "=r"(r) : "r"(a), "r"(m), "r"(b));
    return r;
#else
    return (a & m) | (~b & ~m);
#endif
}

/* Byte i of x as an int8, or as a uint8 where us. */
MOE__QFN int moe__qbyte(uint32_t x, int i, int us) {
    const int v = (int)((x >> (8 * i)) & 0xffu);
    return us ? v : (v ^ 0x80) - 0x80;
}

/* __dp4a: c + the sum of the four signed byte products of a and b. */
MOE__QFN int moe__dp4a(int a, int b, int c) {
#ifdef __CUDA_ARCH__
    return __dp4a(a, b, c);
#else
    for (int i = 0; i < 4; i++) c += moe__qbyte((uint32_t)a, i, 0) * moe__qbyte((uint32_t)b, i, 0);
    return c;
#endif
}

/* __dp4a with a's bytes unsigned: c + the sum of the four products of a's
 * unsigned and b's signed bytes (dp4a.u32.s32). */
MOE__QFN int moe__dp4a_us(uint32_t a, int b, int c) {
#ifdef __CUDA_ARCH__
    int r;
    asm("dp4a.u32.s32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
    return r;
#else
    for (int i = 0; i < 4; i++) c += moe__qbyte(a, i, 1) * moe__qbyte((uint32_t)b, i, 0);
    return c;
#endif
}

/* Per byte: x - 8 (x in [0, 15]) and x - 32 (x in [0, 63]) as int8, without
 * borrows between bytes: x + 120 (or 96) stays below 256, and flipping bit 7
 * then gives x - 8 (or x - 32) modulo 256. */
MOE__QFN uint32_t moe__qsub8x4(uint32_t x) { return (x + 0x78787878u) ^ 0x80808080u; }
MOE__QFN uint32_t moe__qsub32x4(uint32_t x) { return (x + 0x60606060u) ^ 0x80808080u; }

/* ---- the 32-element formats: unit u is block u ----
 * Each decoder has an _aw form taking the aligned word holding the unit's
 * first byte (a = p - (p & 3)) and that byte's offset in bits (sh = 8 (p &
 * 3)). A loop over units L apart, where L times the unit's bytes is a
 * multiple of 4 (L even), keeps sh and steps a (sv_row_dot): the byte form
 * recomputes both from u at every unit. */

/* Q4_0: q = nibble - 8, sc = d. The 18 bytes of a 2-aligned unit lie in 5
 * aligned words: d in the first (low or high half), qs from byte 2 or 4.
 * Per unit: 5 word loads, 4 funnel shifts, the nibble arithmetic. */
MOE__QFN void moe__qunit_q4_0_aw(const uint8_t *a, int sh, moe_qunit *w) {
    uint32_t v[5];
    MOE__QWORDS_A(a, v, 5);
    const float d = moe__qh2f((v[0] >> sh) & 0xffffu);
    MOE__QUNROLL
    for (int i = 0; i < 4; i++) {
        const uint32_t q = moe__qshf(v[i], v[i + 1], 16 + sh);
        w->q[i] = (int32_t)moe__qsub8x4(q & 0x0F0F0F0Fu);
        w->q[i + 4] = (int32_t)moe__qsub8x4((q >> 4) & 0x0F0F0F0Fu);
    }
    w->sc[0] = w->sc[1] = d;
    w->mn[0] = w->mn[1] = 0.f;
}
MOE__QFN void moe_qunit_q4_0(const uint8_t *row, int u, moe_qunit *w) {
    const uint8_t *p = row + 18 * u;
    moe__qunit_q4_0_aw(p - ((uintptr_t)p & 3), 8 * (int)((uintptr_t)p & 3) /* 0 or 16 */, w);
}

/* Q8_0: q as stored, sc = d. As Q4_0: 34 bytes in 9 aligned words. Per
 * unit: 9 word loads, 8 funnel shifts. */
MOE__QFN void moe__qunit_q8_0_aw(const uint8_t *a, int sh, moe_qunit *w) {
    uint32_t v[9];
    MOE__QWORDS_A(a, v, 9);
    const float d = moe__qh2f((v[0] >> sh) & 0xffffu);
    MOE__QUNROLL
    for (int i = 0; i < 8; i++) w->q[i] = (int32_t)moe__qshf(v[i], v[i + 1], 16 + sh);
    w->sc[0] = w->sc[1] = d;
    w->mn[0] = w->mn[1] = 0.f;
}
MOE__QFN void moe_qunit_q8_0(const uint8_t *row, int u, moe_qunit *w) {
    const uint8_t *p = row + 34 * u;
    moe__qunit_q8_0_aw(p - ((uintptr_t)p & 3), 8 * (int)((uintptr_t)p & 3) /* 0 or 16 */, w);
}

/* MXFP4: the 16 doubled e2m1 values of blocks.h as int8, four to a word
 * (MOE_MXFP4_KVALUES; tests/test_qdot.cu checks every code). MXFP4 units are
 * decoded in nibble order (below): q = kvalue, sc = 2^(e-128); a 17-byte unit
 * at any alignment lies in 5 aligned words, e in the first, qs from byte 1 to
 * 4 of it. */
#define MOE__MXFP4_K0 0x03020100u /* codes 0-3:   0  1  2  3 */
#define MOE__MXFP4_K1 0x0C080604u /* codes 4-7:   4  6  8 12 */
#define MOE__MXFP4_K2 0xFDFEFF00u /* codes 8-11:  0 -1 -2 -3 */
#define MOE__MXFP4_K3 0xF4F8FAFCu /* codes 12-15: -4 -6 -8 -12 */
/* The same values plus 64 as uint8 (moe__mxfp4_wb_aw): the positive codes'
 * by prmt with the code (B), the negative codes' by prmt with its complement
 * ~c = 15 - c, whose bits 0-2 count the magnitudes down (R). */
#define MOE__MXFP4_B0 0x43424140u /* codes 0-3:    64 + 0 1 2 3 */
#define MOE__MXFP4_B1 0x4C484644u /* codes 4-7:    64 + 4 6 8 12 */
#define MOE__MXFP4_R0 0x3C3A3834u /* codes 15-12:  64 - 12 8 6 4 */
#define MOE__MXFP4_R1 0x403F3E3Du /* codes 11-8:   64 - 3 2 1 0 */
#define MOE__MXFP4_BIAS 64

/* ---- MXFP4 in nibble order ----
 * A unit's dot product is a sum, so its elements may be taken in any order
 * that the weights and the activations share. MXFP4 decodes cheapest in the
 * order of its nibbles: position 2j of the unit is element j (the low nibble
 * of byte j of qs), position 2j + 1 element j + 16 (the high nibble). The
 * streaming kernels stage MXFP4 activations in that order (moe_qx_nib_order)
 * and decode with moe_qunit_mxfp4_nib: no byte moves to restore element
 * order, and the codes' table indices and selectors are made once per word
 * of 8 codes instead of once per 4 (about 44 instructions of lookups a
 * unit instead of 68; tests/test_qdot.cu checks both against blocks.h). */

/* prmt.b32 in its default mode (one PRMT): byte n of the result is byte
 * (s >> 4n) & 7 of y:x, or, where bit 3 of that selector nibble is set, that
 * byte's sign replicated (0x00 or 0xFF). __byte_perm masks the selector's
 * nibbles to 3 bits first; the MXFP4 lookups use the sign mode
 * (moe__mxfp4_dotn_aw, moe__mxfp4_wb_aw) or clear bit 3 themselves (moe__mxfp4_nib8_t). */
MOE__QFN uint32_t moe__qprmt(uint32_t x, uint32_t y, uint32_t s) {
#ifdef __CUDA_ARCH__
    uint32_t r;
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(x), "r"(y), "r"(s));
    return r;
#else
    uint32_t r = 0;
    for (int n = 0; n < 4; n++) {
        const uint32_t c = (s >> (4 * n)) & 15u;
        uint32_t b = (uint32_t)((((uint64_t)y << 32 | x) >> (8 * (c & 7))) & 0xffu);
        if (c & 8) b = (b & 0x80u) ? 0xffu : 0u;
        r |= b << (8 * n);
    }
    return r;
#endif
}

/* Three constants of the lookup held in registers: a PRMT takes one table
 * word as an immediate and the other from a register, and a loop that
 * decodes units re-made each such register (an IMAD.U32 from a uniform
 * register) at every use, 16 instructions a unit. Made once outside the
 * loop by moe__mxfp4_tab_make, whose shuffles ptxas cannot fold into
 * constants (a move through inline asm it does), they stay. The device
 * version shuffles: every lane of the warp must call it. */
typedef struct moe__mxfp4_tab {
    uint32_t k0, k2; /* MOE__MXFP4_K0, MOE__MXFP4_K2 */
    uint32_t sb;     /* 0x32103210: the selectors' byte numbers */
    uint32_t b0, r0; /* MOE__MXFP4_B0, MOE__MXFP4_R0 (moe__mxfp4_wb_aw) */
    uint32_t m1;     /* 0xffffffff: ~c as an IMAD, c m1 + m1 (moe__mxfp4_wb_aw) */
} moe__mxfp4_tab;
#define MOE__MXFP4_TAB_INIT {MOE__MXFP4_K0, MOE__MXFP4_K2, 0x32103210u, MOE__MXFP4_B0, MOE__MXFP4_R0, 0xffffffffu}
MOE__QFN moe__mxfp4_tab moe__mxfp4_tab_make(void) {
    moe__mxfp4_tab t = MOE__MXFP4_TAB_INIT;
#ifdef __CUDA_ARCH__
    t.k0 = __shfl_sync(0xffffffffu, t.k0, 0);
    t.k2 = __shfl_sync(0xffffffffu, t.k2, 0);
    t.sb = __shfl_sync(0xffffffffu, t.sb, 0);
    t.b0 = __shfl_sync(0xffffffffu, t.b0, 0);
    t.r0 = __shfl_sync(0xffffffffu, t.r0, 0);
    t.m1 = __shfl_sync(0xffffffffu, t.m1, 0);
#endif
    return t;
}

/* The values of the 8 codes of a word of qs in nibble order: *a those of its
 * bytes 0 and 1 (low nibble, high nibble, low, high), *b those of bytes 2, 3.
 * The table index is a code's bits 0-2; the selector of output byte n is n,
 * plus 4 (the negative half) where the code's bit 3 is set. */
MOE__QFN void moe__mxfp4_nib8_t(uint32_t v, const moe__mxfp4_tab *t, uint32_t *a, uint32_t *b) {
    const uint32_t m = v & 0x77777777u;
    const uint32_t s = ((v >> 1) & 0x44444444u) | t->sb;
    *a = moe__qprmt(moe__qprmt(t->k0, MOE__MXFP4_K1, m), moe__qprmt(t->k2, MOE__MXFP4_K3, m), s);
    const uint32_t mh = m >> 16, sh = s >> 16;
    *b = moe__qprmt(moe__qprmt(t->k0, MOE__MXFP4_K1, mh), moe__qprmt(t->k2, MOE__MXFP4_K3, mh), sh);
}

/* MXFP4 unit u in nibble order: q[2i], q[2i + 1] hold positions 8i..8i + 7
 * (the codes of word i of qs), sc = 2^(e-128). */
MOE__QFN void moe__qunit_mxfp4_nib_aw(const uint8_t *a, int sh, const moe__mxfp4_tab *t, moe_qunit *w) {
    uint32_t v[5];
    MOE__QWORDS_A(a, v, 5);
    const float d = moe__qu2f(moe__e8m0_half_bits((uint8_t)(v[0] >> sh)));
    MOE__QUNROLL
    for (int i = 0; i < 4; i++) {
        uint32_t a, b;
        moe__mxfp4_nib8_t(moe__qshf(v[i], v[i + 1], 8 + sh), t, &a, &b);
        w->q[2 * i] = (int32_t)a;
        w->q[2 * i + 1] = (int32_t)b;
    }
    w->sc[0] = w->sc[1] = d;
    w->mn[0] = w->mn[1] = 0.f;
}
MOE__QFN void moe_qunit_mxfp4_nib(const uint8_t *row, int u, moe_qunit *w) {
    const moe__mxfp4_tab t = MOE__MXFP4_TAB_INIT;
    const uint8_t *p = row + 17 * u;
    moe__qunit_mxfp4_nib_aw(p - ((uintptr_t)p & 3), 8 * (int)((uintptr_t)p & 3), &t, w);
}

/* MXFP4's scale 2^(e-128) (moe__e8m0_half_bits, subnormal for e < 2) for e
 * in [0, 255]: the larger of (e - 1) << 23 (negative for e = 0) and 0x200000
 * << (e & 1), 4 instructions (an IMAD, an AND, a shift, a max) against 7 for
 * the select. */
MOE__QFN float moe__e8m0_half_f(uint32_t e) {
    const int nrm = (int)(e * 0x800000u) - 0x800000, sub = 0x200000 << (e & 1u);
    return moe__qu2f((uint32_t)(nrm > sub ? nrm : sub));
}

/* One MXFP4 unit (the _aw form's a and sh) against n tokens' activation
 * pieces in nibble order (token j: xq[8 j .. 8 j + 7], scale xd[j]): acc[j] +=
 * xd (sc S) with S the integer dot, bit for bit moe_qunit_dot_kind(MOE_QDOT_S)
 * of moe__qunit_mxfp4_nib_aw's unit. For passes of few tokens the signed
 * values are not made: prmt with the raw codes gives the magnitudes of the
 * positive codes and 0 for the negative ones (bit 3 of a selector nibble, the
 * code's sign, replicates the sign of the table byte, and the table's bytes
 * are positive), and with that bit flipped the negative codes' magnitudes;
 * S = dp4a(positive) - dp4a(negative). Per word of 8 codes 7 ALU instructions
 * (4 PRMT, an XOR, 2 shifts) and 4 n dp4a, against 11 and 2 n for the table
 * halves and the select (moe__mxfp4_nib8_t): fewer on the ALU pipe, which is
 * what these loops wait on; n is a constant where the kernel calls it. */
MOE__QFN void moe__mxfp4_dotn_aw(const uint8_t *a, int sh, const moe__mxfp4_tab *t, int n, const int32_t *xq,
                                 const float *xd, float *acc) {
    uint32_t v[5], pw[8], nw[8];
    MOE__QWORDS_A(a, v, 5);
    const float d = moe__qu2f(moe__e8m0_half_bits((uint8_t)(v[0] >> sh)));
    MOE__QUNROLL
    for (int i = 0; i < 4; i++) {
        const uint32_t c = moe__qshf(v[i], v[i + 1], 8 + sh), cx = c ^ 0x88888888u;
        pw[2 * i] = moe__qprmt(t->k0, MOE__MXFP4_K1, c);
        nw[2 * i] = moe__qprmt(t->k0, MOE__MXFP4_K1, cx);
        pw[2 * i + 1] = moe__qprmt(t->k0, MOE__MXFP4_K1, c >> 16);
        nw[2 * i + 1] = moe__qprmt(t->k0, MOE__MXFP4_K1, cx >> 16);
    }
    MOE__QUNROLL
    for (int j = 0; j < n; j++) {
        int sp = 0, sn = 0;
        MOE__QUNROLL
        for (int i = 0; i < 8; i++) {
            sp = moe__dp4a_us(pw[i], xq[8 * j + i], sp);
            sn = moe__dp4a_us(nw[i], xq[8 * j + i], sn);
        }
        acc[j] += xd[j] * (d * (float)(sp - sn));
    }
}

/* a b + c (an IMAD, on the FMA pipe, where b is not a constant ptxas sees) */
MOE__QFN uint32_t moe__qmad(uint32_t a, uint32_t b, uint32_t c) { return a * b + c; }

/* One MXFP4 unit (the _aw form's a and sh) as 32 biased values, 64 + v as
 * unsigned bytes in nibble order (w[i]: the codes of word i / 2 of qs, low
 * half then high), and its scale *d = 2^(e-128). Each value is made by two
 * prmt in the sign mode (bit 3 of a selector nibble replicates the sign of
 * the table byte, and every table byte is below 128): with the code c, table
 * B gives the positive codes' 64 + v and 0 for the negative ones; with ~c
 * (bit 3 flipped, bits 0-2 counted down), table R the negative codes' 64 + v
 * and 0 for the positive ones; their sum has no carries (one of the two is
 * 0). Per word of 8 codes: 4 PRMT, 2 adds, the high half's shift and two
 * complements as IMADs (the unit loops wait on the ALU pipe: session 29),
 * against 11 ALU instructions for the signed table halves and their select
 * (moe__mxfp4_nib8_t). Against a token's activations (nibble order), dp4a
 * from -64 times their sum gives the integer dot (moe__mxfp4_dotb). */
MOE__QFN void moe__mxfp4_wb_aw(const uint8_t *a, int sh, const moe__mxfp4_tab *t, uint32_t w[8], float *d) {
    uint32_t v[5];
    MOE__QWORDS_A(a, v, 5);
    *d = moe__e8m0_half_f(moe__qprmt(v[0], 0u, 0x4440u | (uint32_t)sh >> 3)); /* byte sh / 8: e */
    MOE__QUNROLL
    for (int i = 0; i < 4; i++) {
        const uint32_t c = moe__qshf(v[i], v[i + 1], 8 + sh), ch = c >> 16;
        const uint32_t nc = moe__qmad(c, t->m1, t->m1), nch = moe__qmad(ch, t->m1, t->m1); /* ~c, ~ch */
        w[2 * i] = moe__qprmt(t->b0, MOE__MXFP4_B1, c) + moe__qprmt(t->r0, MOE__MXFP4_R1, nc);
        w[2 * i + 1] = moe__qprmt(t->b0, MOE__MXFP4_B1, ch) + moe__qprmt(t->r0, MOE__MXFP4_R1, nch);
    }
}

/* acc += xd (d S): S the integer dot of moe__mxfp4_wb_aw's biased values w
 * and a token's activations xq (nibble order), from xc = -64 times their sum;
 * bit for bit moe_qunit_dot_kind(MOE_QDOT_S) of moe__qunit_mxfp4_nib_aw's
 * unit. Two chains of 4 dp4a, not one of 8, for the dp4a latency (session 29
 * runs 3-4: single tokens within 1% either way; passes of 2-4 tokens 1-2%
 * slower than the positive and negative codes apart with either). */
MOE__QFN float moe__mxfp4_dotb(const uint32_t w[8], float d, const int32_t *xq, float xd, int32_t xc, float acc) {
    int s0 = xc, s1 = 0;
    MOE__QUNROLL
    for (int i = 0; i < 4; i++) {
        s0 = moe__dp4a_us(w[2 * i], xq[2 * i], s0);
        s1 = moe__dp4a_us(w[2 * i + 1], xq[2 * i + 1], s1);
    }
    return acc + xd * (d * (float)(s0 + s1));
}

/* Activation block q (element order, moe_qx_quantize32) to nibble order in
 * place: word i of the result holds elements 2i, 2i + 16, 2i + 1, 2i + 17
 * (bytes 2(i & 1), 2(i & 1) + 1 of words i / 2 and 4 + i / 2). The half sums
 * of moe_qx_quantize32 no longer match halves of the result: only for the
 * formats whose dot does not read them (MXFP4). */
MOE__QFN void moe_qx_nib_order(int32_t q[8]) {
    int32_t p[8];
    MOE__QUNROLL
    for (int i = 0; i < 8; i++)
        p[i] = (int32_t)moe__byte_perm((uint32_t)q[i >> 1], (uint32_t)q[4 + (i >> 1)], (i & 1) ? 0x7362u : 0x5140u);
    MOE__QUNROLL
    for (int i = 0; i < 8; i++) q[i] = p[i];
}

/* ---- the K-quants: unit u is 32-element piece k = u % 8 of block u / 8
 * (moe_qunit_*_bk take the block and k apart, so that a caller whose k does
 * not change over a loop lets the compiler hoist what depends on k alone).
 * In the 2-bit layouts (Q2_K, Q3_K, Q6_K) piece k = 4h + s is field s of
 * bytes 32h .. 32h + 31 (blocks.h). ---- */

/* Q2_K: q = 2-bit value, sc = d * scale, mn = dmin * min (sub-blocks 2k,
 * 2k + 1). Per unit: 10 u32/u16 loads, ~43 ALU (2 per word, the rest scales). */
MOE__QFN void moe_qunit_q2_k_bk(const uint8_t *row, int blk, int k, moe_qunit *w) {
    const uint8_t *p = row + 84 * blk;
    const int sh = 2 * (k & 3);
    const uint32_t dd = moe__qld32(p + 80); /* d | dmin << 16 */
    const uint32_t s = moe__qld16(p + 2 * k);
    const float d = moe__qh2f(dd & 0xffffu), dmin = moe__qh2f(dd >> 16);
    const uint8_t *qs = p + 16 + 32 * (k >> 2);
    MOE__QUNROLL
    for (int i = 0; i < 8; i++) w->q[i] = (int32_t)((moe__qld32(qs + 4 * i) >> sh) & 0x03030303u);
    w->sc[0] = d * (float)(s & 0xF);
    w->mn[0] = dmin * (float)((s >> 4) & 0xF);
    w->sc[1] = d * (float)((s >> 8) & 0xF);
    w->mn[1] = dmin * (float)(s >> 12);
}
MOE__QFN void moe_qunit_q2_k(const uint8_t *row, int u, moe_qunit *w) { moe_qunit_q2_k_bk(row, u >> 3, u & 7, w); }

/* Q3_K: q = low 2 bits - (hmask bit clear ? 4 : 0), in [-4, 3]; sc = d *
 * (6-bit scale - 32). Per unit: 18 word loads (hmask and the qs piece, 32
 * bytes each at a 2-aligned offset, from the aligned words that hold them)
 * and 3 u16 loads; per word two funnel shifts that also move the fields
 * into place (qs's two bits of piece k to bits 0-1, hmask's bit k to bit 0),
 * an AND, a multiply by 0xFF (the bytes whose bit is set to 0xFF) and a
 * LOP3 (session 28: ~20 instructions a unit fewer). Where the pieces lie
 * depends on k and bp modulo 4 only (moe__q3k_at, as moe__q6k_at). */
typedef struct moe__q3k_at {
    int oq, oh, offq, offh;
} moe__q3k_at;
MOE__QFN moe__q3k_at moe__q3k_at_make(const uint8_t *bp, int k) {
    const int pq = 32 + 32 * (k >> 2);
    const int mq = (int)(((uintptr_t)bp + pq) & 3), mh = (int)((uintptr_t)bp & 3);
    moe__q3k_at a;
    a.offq = 8 * mq + 2 * (k & 3); /* 0 .. 22 */
    a.offh = 8 * mh + k;           /* 0 .. 23 */
    a.oq = pq - mq;
    a.oh = -mh;
    return a;
}
MOE__QFN void moe__qunit_q3_k_at(const uint8_t *bp, int k, const moe__q3k_at *a, moe_qunit *w) {
    uint32_t hm[9], qs[9];
    MOE__QWORDS_A(bp + a->oh, hm, 9);
    MOE__QWORDS_A(bp + a->oq, qs, 9);
    MOE__QUNROLL
    for (int i = 0; i < 8; i++) {
        /* 0xFF in the bytes whose hmask bit k is set */
        const uint32_t set = (moe__qshf(hm[i], hm[i + 1], a->offh) & 0x01010101u) * 0xFFu;
        /* the low two bits, and 0xFC where the bit is clear: lo - 4 as int8 */
        w->q[i] = (int32_t)moe__qmerge_not(0x03030303u, moe__qshf(qs[i], qs[i + 1], a->offq), set);
    }
    /* Sub-blocks 2k, 2k+1: low nibbles in scales[2k % 8 + {0, 1}] (>> 4 for
     * k >= 4), top two bits in scales[8 + 2(k % 2) + {0, 1}] >> 2(k / 2). */
    const uint32_t sa = moe__qld16(bp + 96 + ((2 * k) & 7)) >> (4 * (k >> 2));
    const uint32_t sb = moe__qld16(bp + 104 + 2 * (k & 1)) >> (2 * (k >> 1));
    const float d = moe__qh2f(moe__qld16(bp + 108));
    w->sc[0] = d * (float)((int)((sa & 0xF) | (sb & 3) << 4) - 32);
    w->sc[1] = d * (float)((int)(((sa >> 8) & 0xF) | ((sb >> 8) & 3) << 4) - 32);
    w->mn[0] = w->mn[1] = 0.f;
}
MOE__QFN void moe_qunit_q3_k_bk(const uint8_t *row, int blk, int k, moe_qunit *w) {
    const uint8_t *p = row + 110 * blk;
    const moe__q3k_at a = moe__q3k_at_make(p, k);
    moe__qunit_q3_k_at(p, k, &a, w);
}
MOE__QFN void moe_qunit_q3_k(const uint8_t *row, int u, moe_qunit *w) { moe_qunit_q3_k_bk(row, u >> 3, u & 7, w); }

/* Q4_K / Q5_K: the 6-bit scale and min of sub-block k from the first 16
 * bytes of the block (h[0] = d | dmin << 16, h[1..3] = scales[0..11]), as
 * moe__q4k_scale_min. */
MOE__QFN void moe__q4k_unit_scales(const uint32_t h[4], int k, moe_qunit *w) {
    /* one form for every k, its shifts and masks depending on k alone (made
     * once where k is a loop constant, as in the streaming kernels): k < 4:
     * sc = byte k of scales & 63, m = byte 4 + k & 63; k >= 4: the low (sc)
     * or high (m) nibble of byte 8 + k - 4 and the top two bits of bytes k - 4
     * (sc) and k (m). 4 shifts and 4 LOP3 (session 28; ~14 before) */
    const int a = 8 * (k & 3), lo = k < 4, b = lo ? a : a + 2;
    const uint32_t m1 = lo ? 0u : 0xFu, m2 = lo ? 63u : 0x30u;
    const uint32_t sc = ((h[3] >> a) & m1) | ((h[1] >> b) & m2);
    const uint32_t m = ((h[3] >> (a + 4)) & m1) | ((h[2] >> b) & m2);
    const float d = moe__qh2f(h[0] & 0xffffu), dmin = moe__qh2f(h[0] >> 16);
    w->sc[0] = w->sc[1] = d * (float)sc;
    w->mn[0] = w->mn[1] = dmin * (float)m;
}

/* Q4_K: q = nibble k % 2 of qs[32(k / 2) + l]. Per unit: 3 x 16-byte loads,
 * ~51 ALU (2 per word, the rest scales).
 * The _u form, for the kernel's dot with unsigned weight bytes
 * (moe_qunit_dot_kind_uq): the nibble left where it is, the high one as 16
 * times its value, and the scale of an odd k divided by 16 to match. One AND
 * a word instead of a shift and an AND (the ALU pipe, at half the FMA pipe's
 * rate, is what these decoders wait on); sc q and the dot are the same
 * numbers exactly (powers of two), so the kernel's output does not change by
 * a bit. */
MOE__QFN void moe__qunit_q4_k_bk_z(const uint8_t *row, int blk, int k, int uq, moe_qunit *w) {
    const uint8_t *p = row + 144 * blk;
    const int sh = uq ? 0 : 4 * (k & 1);
    const uint32_t mask = uq && (k & 1) ? 0xF0F0F0F0u : 0x0F0F0F0Fu;
    uint32_t h[4], q[8];
    moe__qld128(p, h);
    moe__qld128(p + 16 + 32 * (k >> 1), q);
    moe__qld128(p + 32 + 32 * (k >> 1), q + 4);
    MOE__QUNROLL
    for (int i = 0; i < 8; i++) w->q[i] = (int32_t)((q[i] >> sh) & mask);
    moe__q4k_unit_scales(h, k, w);
    if (uq) w->sc[0] = w->sc[1] = w->sc[0] * ((k & 1) ? 0.0625f : 1.f);
}
MOE__QFN void moe_qunit_q4_k_bk(const uint8_t *row, int blk, int k, moe_qunit *w) { moe__qunit_q4_k_bk_z(row, blk, k, 0, w); }
MOE__QFN void moe_qunit_q4_k(const uint8_t *row, int u, moe_qunit *w) { moe_qunit_q4_k_bk(row, u >> 3, u & 7, w); }
MOE__QFN void moe_qunit_q4_k_bk_u(const uint8_t *row, int blk, int k, moe_qunit *w) { moe__qunit_q4_k_bk_z(row, blk, k, 1, w); }
MOE__QFN void moe_qunit_q4_k_u(const uint8_t *row, int u, moe_qunit *w) { moe_qunit_q4_k_bk_u(row, u >> 3, u & 7, w); }

/* Q5_K: as Q4_K plus bit k of qh[l] as bit 4 (a rotation brings bit k of
 * each byte to bit 4 of the same byte). Per unit: 5 x 16-byte loads, ~68 ALU
 * (4 per word). */
MOE__QFN void moe_qunit_q5_k_bk(const uint8_t *row, int blk, int k, moe_qunit *w) {
    const uint8_t *p = row + 176 * blk;
    const int sh = 4 * (k & 1);
    uint32_t h[4], qh[8], q[8];
    moe__qld128(p, h);
    moe__qld128(p + 16, qh);
    moe__qld128(p + 32, qh + 4);
    moe__qld128(p + 48 + 32 * (k >> 1), q);
    moe__qld128(p + 64 + 32 * (k >> 1), q + 4);
    MOE__QUNROLL
    for (int i = 0; i < 8; i++)
        w->q[i] = (int32_t)(((q[i] >> sh) & 0x0F0F0F0Fu) | (moe__qrotr(qh[i], k - 4) & 0x10101010u));
    moe__q4k_unit_scales(h, k, w);
}
MOE__QFN void moe_qunit_q5_k(const uint8_t *row, int u, moe_qunit *w) { moe_qunit_q5_k_bk(row, u >> 3, u & 7, w); }

/* Q6_K: q = (low nibble | 2 high bits << 4) - 32, sc = d * scale (int8).
 * Per unit: 18 word loads (32 bytes of ql and of qh at 2-aligned offsets,
 * each from the aligned words that hold them) and 2 u16 loads, and per word
 * two funnel shifts and two LOP3: each funnel shift both takes the word out
 * of its aligned pair and moves the unit's field into place (the nibble
 * s >> 1 of ql to bits 0-3 of each byte; bits 2s, 2s + 1 of qh to bits 4, 5,
 * a shift by 2s - 4 taken from the aligned word before qh's first byte), so
 * no shift or rotate a word remains (session 28: 16 instructions a unit
 * fewer). */
/* Where piece k of the Q6_K block at bp lies: the aligned words' offsets
 * from bp (ol: ql's, oh: qh's, from the word before its first byte where the
 * shift is to the left) and the funnel shifts. They depend on k and on bp
 * modulo 4 only, so a loop over blocks 4-byte multiples apart makes them once
 * (decode_stream.cuh sv_row_dot_n) and each unit loads at bp + constants. */
typedef struct moe__q6k_at {
    int ol, oh, offl, offh, os;
} moe__q6k_at;
MOE__QFN moe__q6k_at moe__q6k_at_make(const uint8_t *bp, int k) {
    const int h = k >> 2, s = k & 3;
    const int pl = 64 * h + 32 * (s & 1), ph = 128 + 32 * h;
    const int ml = (int)(((uintptr_t)bp + pl) & 3), mh = (int)(((uintptr_t)bp + ph) & 3);
    const int offh = 8 * mh + 2 * s + 28; /* 28 .. 58 bits from the word before ph's */
    moe__q6k_at a;
    a.offl = 8 * ml + 4 * (s >> 1); /* 0 .. 28 */
    a.offh = offh & 31;
    a.ol = pl - ml;
    a.oh = ph - mh - 4 + 4 * (offh >> 5);
    a.os = 192 + 2 * k;
    return a;
}
MOE__QFN void moe__qunit_q6_k_at(const uint8_t *bp, const moe__q6k_at *a, int sub, moe_qunit *w) {
    uint32_t ql[9], qh[9];
    MOE__QWORDS_A(bp + a->ol, ql, 9);
    MOE__QWORDS_A(bp + a->oh, qh, 9);
    MOE__QUNROLL
    for (int i = 0; i < 8; i++) {
        const uint32_t lo = moe__qshf(ql[i], ql[i + 1], a->offl) & 0x0F0F0F0Fu;
        const uint32_t hi = moe__qshf(qh[i], qh[i + 1], a->offh) & 0x30303030u;
        w->q[i] = (int32_t)(sub ? moe__qsub32x4(lo | hi) : lo | hi);
    }
    const uint32_t sc = moe__qld16(bp + a->os);
    const float d = moe__qh2f(moe__qld16(bp + 208));
    w->sc[0] = d * (float)((int)((sc & 0xffu) ^ 0x80u) - 0x80);
    w->sc[1] = d * (float)((int)((sc >> 8) ^ 0x80u) - 0x80);
    w->mn[0] = w->mn[1] = 0.f;
}
MOE__QFN void moe__qunit_q6_k_bk_z(const uint8_t *row, int blk, int k, int sub, moe_qunit *w) {
    const uint8_t *p = row + 210 * blk;
    const moe__q6k_at a = moe__q6k_at_make(p, k);
    moe__qunit_q6_k_at(p, &a, sub, w);
}
MOE__QFN void moe_qunit_q6_k_bk(const uint8_t *row, int blk, int k, moe_qunit *w) { moe__qunit_q6_k_bk_z(row, blk, k, 1, w); }
MOE__QFN void moe_qunit_q6_k(const uint8_t *row, int u, moe_qunit *w) { moe_qunit_q6_k_bk(row, u >> 3, u & 7, w); }

/* Q6_K for passes of few tokens (moe_qunit_dot_z32): q the unsigned 6-bit
 * value (zero point 32, element = sc (q - 32)), without the two instructions
 * a word that subtract 32 in the bytes; the dot takes 32 x the activations'
 * sum off with a dp4a against bytes of -32 instead, one more dp4a a word and
 * token (outside the ALU pipe, as MXFP4's run 17 showed). The same integer
 * dot, so the same float bit for bit. */
MOE__QFN void moe_qunit_q6_k_bk_u(const uint8_t *row, int blk, int k, moe_qunit *w) { moe__qunit_q6_k_bk_z(row, blk, k, 0, w); }
MOE__QFN void moe_qunit_q6_k_u(const uint8_t *row, int u, moe_qunit *w) { moe_qunit_q6_k_bk_u(row, u >> 3, u & 7, w); }

/* ---- activations and the dot product ---- */

/* 32 floats -> int8 q (packed as moe_qunit.q), scale d and the sums of q
 * over each half, as ggml's quantize_row_q8_1_ref and moe__quantize_row_q8_32
 * (bit for bit): d = amax / 127, q = roundf(x * (1 / d)) clamped to
 * [-127, 127], q = 0 when d = 0. A block holding a NaN or an Inf gives
 * d = NaN and q = 0, as the CPU activation quantisers do. */
MOE__QFN void moe_qx_quantize32(const float *x, int32_t q[8], float *d, int s16[2]) {
    /* |x| as bits: their integer order is the float order, Inf and NaN
     * above every finite value; so one max finds amax and non-finite input. */
    uint32_t amax_bits = 0;
    MOE__QUNROLL
    for (int j = 0; j < 32; j++) {
        const uint32_t a = moe__qf2u(x[j]) & 0x7fffffffu;
        amax_bits = a > amax_bits ? a : amax_bits;
    }
    if (amax_bits >= 0x7f800000u) {
        *d = moe__qu2f(0x7fc00000u);
        MOE__QUNROLL
        for (int i = 0; i < 8; i++) q[i] = 0;
        s16[0] = s16[1] = 0;
        return;
    }
    const float dd = moe__qu2f(amax_bits) / 127.f;
    const float id = dd != 0.f ? 1.f / dd : 0.f;
    int sum[2] = {0, 0};
    MOE__QUNROLL
    for (int i = 0; i < 8; i++) {
        uint32_t packed = 0;
        MOE__QUNROLL
        for (int b = 0; b < 4; b++) {
            /* fmaxf first: NaN (0 * Inf when 1/d overflowed) -> -127 as the CPU's */
            const int v = (int)roundf(fminf(fmaxf(x[4 * i + b] * id, -127.f), 127.f));
            sum[i >> 2] += v;
            packed |= ((uint32_t)v & 0xffu) << (8 * b);
        }
        q[i] = (int32_t)packed;
    }
    *d = dd;
    s16[0] = sum[0];
    s16[1] = sum[1];
}

/* The shapes of unit a format's decoder makes, and the cheaper dot each
 * allows (the kernel skips the activation sums where there is no min):
 *   MOE_QDOT_S    sc[0] == sc[1], mn = 0       Q4_0, Q8_0, MXFP4
 *   MOE_QDOT_SS   mn = 0                       Q3_K, Q6_K
 *   MOE_QDOT_SM   sc[0] == sc[1], mn[0] == mn[1]  Q4_K, Q5_K
 *   MOE_QDOT_SSMM any                          Q2_K
 * tests/test_qdot.cu checks every unit it decodes against its format's shape. */
enum { MOE_QDOT_S, MOE_QDOT_SS, MOE_QDOT_SM, MOE_QDOT_SSMM };

/* d * (sc0 * S0 + sc1 * S1 - mn0 * s16[0] - mn1 * s16[1]) in the cheapest
 * form the shape allows (S = S0 + S1 exact in int); kind is a constant at
 * every call in device code, so the switch folds. s16 is not read for S and SS.
 * uq: the weight bytes are unsigned (moe_qunit_q4_k_bk_u). */
MOE__QFN float moe_qunit_dot_kind_uq(int kind, int uq, const moe_qunit *w, const int32_t xq[8], float d,
                                     const int *s16) {
    int s0 = 0, s1 = 0;
    MOE__QUNROLL
    for (int i = 0; i < 4; i++) {
        s0 = uq ? moe__dp4a_us((uint32_t)w->q[i], xq[i], s0) : moe__dp4a(w->q[i], xq[i], s0);
        s1 = uq ? moe__dp4a_us((uint32_t)w->q[i + 4], xq[i + 4], s1) : moe__dp4a(w->q[i + 4], xq[i + 4], s1);
    }
    switch (kind) {
    case MOE_QDOT_S: return d * (w->sc[0] * (float)(s0 + s1));
    case MOE_QDOT_SS: return d * (w->sc[0] * (float)s0 + w->sc[1] * (float)s1);
    case MOE_QDOT_SM: return d * (w->sc[0] * (float)(s0 + s1) - w->mn[0] * (float)(s16[0] + s16[1]));
    default:
        return d * (w->sc[0] * (float)s0 + w->sc[1] * (float)s1 - w->mn[0] * (float)s16[0] - w->mn[1] * (float)s16[1]);
    }
}

/* Units of unsigned bytes with zero point 32 (moe_qunit_q6_k_bk_u), shape
 * MOE_QDOT_SS: d (sc0 S0 + sc1 S1) with S = sum (q - 32) x, as moe_qunit_dot_kind
 * of the signed unit. */
MOE__QFN float moe_qunit_dot_z32(const moe_qunit *w, const int32_t xq[8], float d) {
    int s0 = 0, s1 = 0;
    MOE__QUNROLL
    for (int i = 0; i < 4; i++) {
        s0 = moe__dp4a((int)0xE0E0E0E0u, xq[i], moe__dp4a_us((uint32_t)w->q[i], xq[i], s0));
        s1 = moe__dp4a((int)0xE0E0E0E0u, xq[i + 4], moe__dp4a_us((uint32_t)w->q[i + 4], xq[i + 4], s1));
    }
    return d * (w->sc[0] * (float)s0 + w->sc[1] * (float)s1);
}

/* Units of signed weight bytes (every decoder but the _u ones). */
MOE__QFN float moe_qunit_dot_kind(int kind, const moe_qunit *w, const int32_t xq[8], float d, const int *s16) {
    return moe_qunit_dot_kind_uq(kind, 0, w, xq, d, s16);
}

/* The general form (any unit). */
MOE__QFN float moe_qunit_dot(const moe_qunit *w, const int32_t xq[8], float d, const int s16[2]) {
    return moe_qunit_dot_kind(MOE_QDOT_SSMM, w, xq, d, s16);
}

#endif
