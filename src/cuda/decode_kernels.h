/*
 * The decode expert kernel (see decode.h) and the weight formats it reads.
 * Included by decode_dense.cu, qmm_legacy.cu and qmm_k.cu, which instantiate
 * it for their formats, and by bench/decode/test_formats.cu, which checks the
 * format decoders on the host against src/quant (they are __host__ __device__).
 *
 * A warp owns 16 rows of a weight (gate and up: 16 rows of each) and a slice
 * of the reduced dimension C, cut in chunks of CW columns. In a chunk, lane
 * (g = lane/4, t = lane%4) decodes rows g and g+8 at the columns the format
 * gives lane t (xcol: S steps of 8 contiguous columns) into bf16/f16 pairs,
 * which are the A fragments of mma.m16n8k16 up to a permutation of k; the B
 * fragment of token g is its 8 activations at the same columns (one 16-byte
 * load). Each format chooses the columns of lane t so that its bytes are
 * contiguous (Q4_K: the 32 qs bytes of sub-blocks 2t and 2t+1).
 *
 * Must match src/ref/ref.c: weights dequantised as GGUF defines them (f32,
 * then rounded to the mma type), f32 accumulation, h rounded to the mma type.
 */
#ifndef MOE_CUDA_DECODE_KERNELS_H
#define MOE_CUDA_DECODE_KERNELS_H

#include "blocks.h"
#include "decode.h"
#include "half.h"
#include "moe.h"
#include "qdot.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>

#define DQ static __host__ __device__ __forceinline__

/* ---- loads: __ldg on the device, memcpy on the host ---- */
DQ uint32_t dq_ld8(const uint8_t *p) {
#ifdef __CUDA_ARCH__
    return __ldg(p);
#else
    return *p;
#endif
}
DQ uint32_t dq_ld16(const uint8_t *p) {
#ifdef __CUDA_ARCH__
    return __ldg((const unsigned short *)p);
#else
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
#endif
}
DQ uint32_t dq_ld32(const uint8_t *p) {
#ifdef __CUDA_ARCH__
    return __ldg((const unsigned int *)p);
#else
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
#endif
}
DQ uint4 dq_ld128(const uint8_t *p) {
#ifdef __CUDA_ARCH__
    return __ldg((const uint4 *)p);
#else
    uint4 v;
    memcpy(&v, p, 16);
    return v;
#endif
}
DQ float dq_h2f(uint32_t h) { return moe__qh2f(h); }
DQ float dq_u2f(uint32_t u) { return moe__qu2f(u); }
/* A small integer (|n| < 2^22) as float: exact, without the quarter-rate I2F
 * (1.5 * 2^23 + n has n in its low mantissa bits). */
DQ float dq_i2f(int n) {
#ifdef __CUDA_ARCH__
    return __int_as_float(0x4B400000 + n) - 12582912.0f;
#else
    return (float)n;
#endif
}
DQ uint32_t dq_byte(uint32_t w, int k) { return (w >> (8 * k)) & 0xffu; }
DQ uint32_t dq_comp(const uint4 &v, int i) { return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w; }
/* byte i of an array of 32-bit words, i a compile-time constant after unrolling */
#define DQ_B(arr, i) dq_byte((arr)[(i) >> 2], (i) & 3)

/* ------------------------------------------------------------------------ */
/* Formats: CW columns per chunk, S steps of 8 columns per lane, a Raw      */
/* (the lane's bytes of one row), a Dec (its scales as floats), load, prep, */
/* dq (8 floats of step s) and xcol (first column of step s in the chunk).  */
/* ------------------------------------------------------------------------ */

/* bf16 / f16: lane t holds columns [16t, 16t+16) of a 64-column chunk. */
struct FmtDense {
    enum { MINB = 2, CW = 64, S = 2, QUANT = 0 };
    struct Raw { uint4 v[2]; };
    struct Dec { int unused; };
    DQ void load(Raw &r, const uint8_t *row, int64_t chunk, int t, int C, bool ok) {
#pragma unroll
        for (int i = 0; i < 2; i++) {
            int64_t col = chunk * 64 + 16 * t + 8 * i;
            r.v[i] = ok && col < C ? dq_ld128(row + col * 2) : make_uint4(0, 0, 0, 0);
        }
    }
    DQ void prep(const Raw &, int, Dec &) {}
    DQ int xcol(int t, int s) { return 16 * t + 8 * s; }
};

/* Q4_0: a chunk is 8 blocks of 32; lane t holds blocks 2t and 2t+1 (columns [64t, 64t+64)). */
struct FmtQ4_0 {
    enum { MINB = 2, CW = 256, S = 8, QUANT = 1 };
    struct Raw { uint32_t d[2]; uint32_t q[2][4]; };
    struct Dec { float d[2]; };
    DQ void load(Raw &r, const uint8_t *row, int64_t chunk, int t, int C, bool ok) {
#pragma unroll
        for (int bb = 0; bb < 2; bb++) {
            int64_t b = chunk * 8 + 2 * t + bb;
            if (ok && b * 32 < C) {
                const uint8_t *p = row + b * 18;
                r.d[bb] = dq_ld16(p);
#pragma unroll
                for (int i = 0; i < 4; i++) r.q[bb][i] = dq_ld16(p + 2 + 4 * i) | dq_ld16(p + 4 + 4 * i) << 16;
            } else {
                r.d[bb] = 0;
#pragma unroll
                for (int i = 0; i < 4; i++) r.q[bb][i] = 0;
            }
        }
    }
    DQ void prep(const Raw &r, int, Dec &dc) {
        dc.d[0] = dq_h2f(r.d[0]);
        dc.d[1] = dq_h2f(r.d[1]);
    }
    /* step s: block s/4, elements 8(s%4).. : low nibbles of qs[0..16) then high */
    DQ void dq(const Raw &r, const Dec &dc, int, int s, float f[8]) {
        int bb = s >> 2, ss = s & 3, w0 = (ss & 1) * 2, sh = (ss >> 1) * 4;
#pragma unroll
        for (int j = 0; j < 8; j++) {
            int n = (int)((DQ_B(r.q[bb] + w0, j) >> sh) & 0xF);
            f[j] = dc.d[bb] * dq_i2f(n - 8);
        }
    }
    DQ int xcol(int t, int s) { return 64 * t + 8 * s; }
};

/* Q8_0: as Q4_0, 34-byte blocks of int8. */
struct FmtQ8_0 {
    enum { MINB = 1, CW = 256, S = 8, QUANT = 1 };
    struct Raw { uint32_t d[2]; uint32_t q[2][8]; };
    struct Dec { float d[2]; };
    DQ void load(Raw &r, const uint8_t *row, int64_t chunk, int t, int C, bool ok) {
#pragma unroll
        for (int bb = 0; bb < 2; bb++) {
            int64_t b = chunk * 8 + 2 * t + bb;
            if (ok && b * 32 < C) {
                const uint8_t *p = row + b * 34;
                r.d[bb] = dq_ld16(p);
#pragma unroll
                for (int i = 0; i < 8; i++) r.q[bb][i] = dq_ld16(p + 2 + 4 * i) | dq_ld16(p + 4 + 4 * i) << 16;
            } else {
                r.d[bb] = 0;
#pragma unroll
                for (int i = 0; i < 8; i++) r.q[bb][i] = 0;
            }
        }
    }
    DQ void prep(const Raw &r, int, Dec &dc) {
        dc.d[0] = dq_h2f(r.d[0]);
        dc.d[1] = dq_h2f(r.d[1]);
    }
    DQ void dq(const Raw &r, const Dec &dc, int, int s, float f[8]) {
        int bb = s >> 2, w0 = (s & 3) * 2;
#pragma unroll
        for (int j = 0; j < 8; j++) f[j] = dc.d[bb] * dq_i2f((int8_t)DQ_B(r.q[bb] + w0, j));
    }
    DQ int xcol(int t, int s) { return 64 * t + 8 * s; }
};

/* MXFP4: as Q4_0, 17-byte blocks (byte loads), values 2^(e-128) * kvalue. */
struct FmtMXFP4 {
    enum { MINB = 2, CW = 256, S = 8, QUANT = 1 };
    struct Raw { uint32_t e[2]; uint32_t q[2][4]; };
    struct Dec { float d[2]; };
    DQ void load(Raw &r, const uint8_t *row, int64_t chunk, int t, int C, bool ok) {
#pragma unroll
        for (int bb = 0; bb < 2; bb++) {
            int64_t b = chunk * 8 + 2 * t + bb;
            if (ok && b * 32 < C) {
                const uint8_t *p = row + b * 17;
                r.e[bb] = dq_ld8(p);
#pragma unroll
                for (int i = 0; i < 4; i++)
                    r.q[bb][i] = dq_ld8(p + 1 + 4 * i) | dq_ld8(p + 2 + 4 * i) << 8 | dq_ld8(p + 3 + 4 * i) << 16 |
                                 dq_ld8(p + 4 + 4 * i) << 24;
            } else {
                r.e[bb] = 0x100; /* no block: value 0 */
#pragma unroll
                for (int i = 0; i < 4; i++) r.q[bb][i] = 0;
            }
        }
    }
    DQ void prep(const Raw &r, int, Dec &dc) {
#pragma unroll
        for (int bb = 0; bb < 2; bb++)
            dc.d[bb] = r.e[bb] > 0xff ? 0.0f : dq_u2f(moe__e8m0_half_bits((uint8_t)r.e[bb]));
    }
    DQ void dq(const Raw &r, const Dec &dc, int, int s, float f[8]) {
        int bb = s >> 2, ss = s & 3, w0 = (ss & 1) * 2, sh = (ss >> 1) * 4;
#pragma unroll
        for (int j = 0; j < 8; j++) {
            int n = (int)((DQ_B(r.q[bb] + w0, j) >> sh) & 0xF);
            f[j] = dc.d[bb] * dq_i2f(moe__mxfp4_kvalue(n));
        }
    }
    DQ int xcol(int t, int s) { return 64 * t + 8 * s; }
};

/* Q4_K scale/min bytes: byte i (0..11) of the scales, which follow d, dmin in hdr. */
DQ uint32_t dq_k12(const uint4 &hdr, int i) { return dq_byte(dq_comp(hdr, 1 + (i >> 2)), i & 3); }
DQ void dq_q4k_sm(const uint4 &hdr, int j, int *sc, int *m) {
    if (j < 4) {
        *sc = (int)(dq_k12(hdr, j) & 63);
        *m = (int)(dq_k12(hdr, j + 4) & 63);
    } else {
        *sc = (int)((dq_k12(hdr, j + 4) & 0xF) | ((dq_k12(hdr, j - 4) >> 6) << 4));
        *m = (int)((dq_k12(hdr, j + 4) >> 4) | ((dq_k12(hdr, j) >> 6) << 4));
    }
}

/* Q4_K: one super-block per chunk; lane t holds qs[32t, 32t+32): sub-blocks
 * 2t (low nibbles) and 2t+1 (high nibbles), columns [64t, 64t+64). */
struct FmtQ4_K {
    enum { MINB = 2, CW = 256, S = 8, QUANT = 1 };
    struct Raw { uint4 hdr; uint4 q[2]; };
    struct Dec { float dl[2], ml[2]; };
    DQ void load(Raw &r, const uint8_t *row, int64_t chunk, int t, int, bool ok) {
        const uint8_t *p = row + chunk * 144;
        uint4 z = make_uint4(0, 0, 0, 0);
        r.hdr = ok ? dq_ld128(p) : z;
        r.q[0] = ok ? dq_ld128(p + 16 + 32 * t) : z;
        r.q[1] = ok ? dq_ld128(p + 32 + 32 * t) : z;
    }
    DQ void prep(const Raw &r, int t, Dec &dc) {
        float d = dq_h2f(r.hdr.x & 0xffff), dmin = dq_h2f(r.hdr.x >> 16);
#pragma unroll
        for (int k = 0; k < 2; k++) {
            int sc, m;
            dq_q4k_sm(r.hdr, 2 * t + k, &sc, &m);
            dc.dl[k] = d * (float)sc;
            dc.ml[k] = dmin * (float)m;
        }
    }
    DQ void dq(const Raw &r, const Dec &dc, int, int s, float f[8]) {
        int k = s >> 2, sh = 4 * k, w0 = 2 * (s & 3);
        uint32_t w[2] = {dq_comp(r.q[w0 >> 2], w0 & 3), dq_comp(r.q[(w0 + 1) >> 2], (w0 + 1) & 3)};
#pragma unroll
        for (int j = 0; j < 8; j++) {
            int n = (int)((DQ_B(w, j) >> sh) & 0xF);
            f[j] = dc.dl[k] * dq_i2f(n) - dc.ml[k];
        }
    }
    DQ int xcol(int t, int s) { return 64 * t + 8 * s; }
};

/* Q5_K: as Q4_K plus the fifth bits, bit (2t + k) of qh[l]. */
struct FmtQ5_K {
    enum { MINB = 1, CW = 256, S = 8, QUANT = 1 };
    struct Raw { uint4 hdr; uint4 qh[2]; uint4 q[2]; };
    struct Dec { float dl[2], ml[2]; };
    DQ void load(Raw &r, const uint8_t *row, int64_t chunk, int t, int, bool ok) {
        const uint8_t *p = row + chunk * 176;
        uint4 z = make_uint4(0, 0, 0, 0);
        r.hdr = ok ? dq_ld128(p) : z;
        r.qh[0] = ok ? dq_ld128(p + 16) : z;
        r.qh[1] = ok ? dq_ld128(p + 32) : z;
        r.q[0] = ok ? dq_ld128(p + 48 + 32 * t) : z;
        r.q[1] = ok ? dq_ld128(p + 64 + 32 * t) : z;
    }
    DQ void prep(const Raw &r, int t, Dec &dc) {
        float d = dq_h2f(r.hdr.x & 0xffff), dmin = dq_h2f(r.hdr.x >> 16);
#pragma unroll
        for (int k = 0; k < 2; k++) {
            int sc, m;
            dq_q4k_sm(r.hdr, 2 * t + k, &sc, &m);
            dc.dl[k] = d * (float)sc;
            dc.ml[k] = dmin * (float)m;
        }
    }
    DQ void dq(const Raw &r, const Dec &dc, int t, int s, float f[8]) {
        int k = s >> 2, sh = 4 * k, w0 = 2 * (s & 3), hb = 2 * t + k;
        uint32_t w[2] = {dq_comp(r.q[w0 >> 2], w0 & 3), dq_comp(r.q[(w0 + 1) >> 2], (w0 + 1) & 3)};
        uint32_t h[2] = {dq_comp(r.qh[w0 >> 2], w0 & 3), dq_comp(r.qh[(w0 + 1) >> 2], (w0 + 1) & 3)};
#pragma unroll
        for (int j = 0; j < 8; j++) {
            int n = (int)((DQ_B(w, j) >> sh) & 0xF) | (int)(((DQ_B(h, j) >> hb) & 1) << 4);
            f[j] = dc.dl[k] * dq_i2f(n) - dc.ml[k];
        }
    }
    DQ int xcol(int t, int s) { return 64 * t + 8 * s; }
};

/* Q6_K: lane t = 2h + u holds ql[64h + 32u, +32) (both nibbles: s = u and
 * u + 2), qh[32h, +32) and the four scales of those 64 elements. */
struct FmtQ6_K {
    enum { MINB = 1, CW = 256, S = 8, QUANT = 1 };
    struct Raw { uint32_t ql[8], qh[8], sc, d; };
    struct Dec { float dl[4]; };
    DQ void load(Raw &r, const uint8_t *row, int64_t chunk, int t, int, bool ok) {
        const uint8_t *p = row + chunk * 210;
        int h = t >> 1, u = t & 1;
        if (ok) {
#pragma unroll
            for (int i = 0; i < 8; i++) {
                r.ql[i] = dq_ld16(p + 64 * h + 32 * u + 4 * i) | dq_ld16(p + 64 * h + 32 * u + 4 * i + 2) << 16;
                r.qh[i] = dq_ld16(p + 128 + 32 * h + 4 * i) | dq_ld16(p + 128 + 32 * h + 4 * i + 2) << 16;
            }
            r.sc = dq_ld16(p + 192 + 8 * h + 2 * u) | dq_ld16(p + 192 + 8 * h + 2 * u + 4) << 16;
            r.d = dq_ld16(p + 208);
        } else {
#pragma unroll
            for (int i = 0; i < 8; i++) r.ql[i] = r.qh[i] = 0;
            r.sc = r.d = 0;
        }
    }
    DQ void prep(const Raw &r, int, Dec &dc) {
        float d = dq_h2f(r.d);
#pragma unroll
        for (int k = 0; k < 4; k++) dc.dl[k] = d * (float)(int8_t)dq_byte(r.sc, k);
    }
    DQ void dq(const Raw &r, const Dec &dc, int t, int s, float f[8]) {
        int hi = s >> 2, l0 = 8 * (s & 3), k = 2 * hi + ((s & 3) >> 1);
        int qsh = 2 * (t & 1) + 4 * hi; /* 2 * (u + 2 hi) */
#pragma unroll
        for (int j = 0; j < 8; j++) {
            int nib = (int)((DQ_B(r.ql, l0 + j) >> (4 * hi)) & 0xF);
            int top = (int)((DQ_B(r.qh, l0 + j) >> qsh) & 3);
            f[j] = dc.dl[k] * dq_i2f((nib | top << 4) - 32);
        }
    }
    DQ int xcol(int t, int s) { return 128 * (t >> 1) + 32 * ((t & 1) + 2 * (s >> 2)) + 8 * (s & 3); }
};

/* Q2_K: lane t = 2h + u holds qs[32h, +32) (2-bit fields s = 2u, 2u+1) and
 * the four scale bytes at 8h + 4u. */
struct FmtQ2_K {
    enum { MINB = 1, CW = 256, S = 8, QUANT = 1 };
    struct Raw { uint32_t qs[8], sc, dd; };
    struct Dec { float dl[4], ml[4]; };
    DQ void load(Raw &r, const uint8_t *row, int64_t chunk, int t, int, bool ok) {
        const uint8_t *p = row + chunk * 84;
        int h = t >> 1, u = t & 1;
        if (ok) {
#pragma unroll
            for (int i = 0; i < 8; i++) r.qs[i] = dq_ld32(p + 16 + 32 * h + 4 * i);
            r.sc = dq_ld32(p + 8 * h + 4 * u);
            r.dd = dq_ld32(p + 80);
        } else {
#pragma unroll
            for (int i = 0; i < 8; i++) r.qs[i] = 0;
            r.sc = r.dd = 0;
        }
    }
    DQ void prep(const Raw &r, int, Dec &dc) {
        float d = dq_h2f(r.dd & 0xffff), dmin = dq_h2f(r.dd >> 16);
#pragma unroll
        for (int k = 0; k < 4; k++) {
            uint32_t b = dq_byte(r.sc, k);
            dc.dl[k] = d * (float)(b & 0xF);
            dc.ml[k] = dmin * (float)(b >> 4);
        }
    }
    DQ void dq(const Raw &r, const Dec &dc, int t, int s, float f[8]) {
        int hi = s >> 2, l0 = 8 * (s & 3), k = 2 * hi + ((s & 3) >> 1);
        int sh = 2 * (2 * (t & 1) + hi);
#pragma unroll
        for (int j = 0; j < 8; j++) {
            int q = (int)((DQ_B(r.qs, l0 + j) >> sh) & 3);
            f[j] = dc.dl[k] * dq_i2f(q) - dc.ml[k];
        }
    }
    DQ int xcol(int t, int s) { return 128 * (t >> 1) + 32 * (2 * (t & 1) + (s >> 2)) + 8 * (s & 3); }
};

/* Q3_K: the Q2_K split, plus hmask[0, 32) (bit 4h + s) and the 6-bit scales. */
struct FmtQ3_K {
    enum { MINB = 1, CW = 256, S = 8, QUANT = 1 };
    struct Raw { uint32_t qs[8], hm[8], sc[3], d; };
    struct Dec { float dl[4]; };
    DQ void load(Raw &r, const uint8_t *row, int64_t chunk, int t, int, bool ok) {
        const uint8_t *p = row + chunk * 110;
        int h = t >> 1;
        if (ok) {
#pragma unroll
            for (int i = 0; i < 8; i++) {
                r.qs[i] = dq_ld16(p + 32 + 32 * h + 4 * i) | dq_ld16(p + 34 + 32 * h + 4 * i) << 16;
                r.hm[i] = dq_ld16(p + 4 * i) | dq_ld16(p + 2 + 4 * i) << 16;
            }
#pragma unroll
            for (int i = 0; i < 3; i++) r.sc[i] = dq_ld16(p + 96 + 4 * i) | dq_ld16(p + 98 + 4 * i) << 16;
            r.d = dq_ld16(p + 108);
        } else {
#pragma unroll
            for (int i = 0; i < 8; i++) r.qs[i] = r.hm[i] = 0;
            r.sc[0] = r.sc[1] = r.sc[2] = r.d = 0;
        }
    }
    DQ uint32_t sbyte(const Raw &r, int i) {
        uint32_t w = (i >> 2) == 0 ? r.sc[0] : (i >> 2) == 1 ? r.sc[1] : r.sc[2];
        return dq_byte(w, i & 3);
    }
    DQ void prep(const Raw &r, int t, Dec &dc) {
        float d = dq_h2f(r.d);
        int h = t >> 1, u = t & 1;
#pragma unroll
        for (int k = 0; k < 4; k++) {
            int jj = 8 * h + 4 * u + k;
            int lo = jj < 8 ? (int)(sbyte(r, jj) & 0xF) : (int)(sbyte(r, jj - 8) >> 4);
            int hb = (int)((sbyte(r, 8 + (jj & 3)) >> (2 * (jj >> 2))) & 3);
            dc.dl[k] = d * (float)((lo | hb << 4) - 32);
        }
    }
    DQ void dq(const Raw &r, const Dec &dc, int t, int s, float f[8]) {
        int hi = s >> 2, l0 = 8 * (s & 3), k = 2 * hi + ((s & 3) >> 1);
        int sf = 2 * (t & 1) + hi; /* the 2-bit field s */
        int mb = 4 * (t >> 1) + sf;
#pragma unroll
        for (int j = 0; j < 8; j++) {
            int lo = (int)((DQ_B(r.qs, l0 + j) >> (2 * sf)) & 3);
            int hb = (int)((DQ_B(r.hm, l0 + j) >> mb) & 1);
            f[j] = dc.dl[k] * dq_i2f(lo - (hb ? 0 : 4));
        }
    }
    DQ int xcol(int t, int s) { return 128 * (t >> 1) + 32 * (2 * (t & 1) + (s >> 2)) + 8 * (s & 3); }
};

#ifdef __CUDACC__
/* ------------------------------------------------------------------------ */
/* Device side                                                               */
/* ------------------------------------------------------------------------ */

template <typename MT> __device__ __forceinline__ uint32_t dk_pack(float a, float b);
template <> __device__ __forceinline__ uint32_t dk_pack<__nv_bfloat16>(float a, float b) {
    __nv_bfloat162 v = __floats2bfloat162_rn(a, b);
    return *(uint32_t *)&v;
}
template <> __device__ __forceinline__ uint32_t dk_pack<__half>(float a, float b) {
    __half2 v = __floats2half2_rn(a, b);
    return *(uint32_t *)&v;
}

template <typename MT> __device__ __forceinline__ void dk_mma(float c[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                                              uint32_t a3, uint32_t b0, uint32_t b1);
template <> __device__ __forceinline__ void dk_mma<__nv_bfloat16>(float c[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                                                 uint32_t a3, uint32_t b0, uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
template <> __device__ __forceinline__ void dk_mma<__half>(float c[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                                          uint32_t a3, uint32_t b0, uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

/* mma.m16n8k32 and m16n8k16 s8 x s8 -> s32 with a zero accumulator in: the
 * int8 tensor-core consumers of the streaming kernels (decode_stream.cuh) and
 * the int8 kernels (decode_qmma.cu); sm_80 and later. */
static __device__ __forceinline__ void dk_mma_s8(int c[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                                 uint32_t b0, uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%10, %10, %10, %10};\n"
                 : "=r"(c[0]), "=r"(c[1]), "=r"(c[2]), "=r"(c[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "r"(0));
}
static __device__ __forceinline__ void dk_mma_s8_k16(int c[4], uint32_t a0, uint32_t a1, uint32_t b0) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5}, {%6}, "
                 "{%7, %7, %7, %7};\n"
                 : "=r"(c[0]), "=r"(c[1]), "=r"(c[2]), "=r"(c[3])
                 : "r"(a0), "r"(a1), "r"(b0), "r"(0));
}

/* The A fragment pairs of step s: 8 values of the mma type packed in pairs. */
template <typename FM, typename MT>
__device__ __forceinline__ uint4 dk_frag(const typename FM::Raw &r, const typename FM::Dec &dc, int t, int s) {
    if constexpr (FM::QUANT) {
        float f[8];
        FM::dq(r, dc, t, s, f);
        return make_uint4(dk_pack<MT>(f[0], f[1]), dk_pack<MT>(f[2], f[3]), dk_pack<MT>(f[4], f[5]),
                          dk_pack<MT>(f[6], f[7]));
    } else {
        return r.v[s];
    }
}

/* 8 activations of row p at column col as mma-type pairs; zero past C or without a row. */
template <typename MT>
__device__ __forceinline__ uint4 dk_loadb(const char *p, int col, int C, int xmode) {
    if (!p || col >= C) return make_uint4(0, 0, 0, 0);
    if (xmode == 0) return __ldg((const uint4 *)(p + (size_t)col * 2));
    float f[8];
    if (xmode == 1) {
        float4 a = __ldg((const float4 *)(p + (size_t)col * 4)), b = __ldg((const float4 *)(p + (size_t)col * 4 + 16));
        f[0] = a.x; f[1] = a.y; f[2] = a.z; f[3] = a.w; f[4] = b.x; f[5] = b.y; f[6] = b.z; f[7] = b.w;
    } else {
        uint4 v = __ldg((const uint4 *)(p + (size_t)col * 2));
        const uint32_t *w = (const uint32_t *)&v;
#pragma unroll
        for (int i = 0; i < 4; i++) {
            if (xmode == 2) {
                __half2 hh = *(const __half2 *)&w[i];
                f[2 * i] = __low2float(hh);
                f[2 * i + 1] = __high2float(hh);
            } else {
                __nv_bfloat162 hh = *(const __nv_bfloat162 *)&w[i];
                f[2 * i] = __low2float(hh);
                f[2 * i + 1] = __high2float(hh);
            }
        }
    }
    return make_uint4(dk_pack<MT>(f[0], f[1]), dk_pack<MT>(f[2], f[3]), dk_pack<MT>(f[4], f[5]),
                      dk_pack<MT>(f[6], f[7]));
}

static __device__ __forceinline__ float dk_bias(const void *p, int type, int64_t i) {
    if (type == MOE_TYPE_BF16) return __bfloat162float(((const __nv_bfloat16 *)p)[i]);
    if (type == MOE_TYPE_F16) return __half2float(((const __half *)p)[i]);
    return ((const float *)p)[i];
}

/* The activations of moe.h, as src/ref/ref.c writes them (comparisons keep NaN). */
static __device__ __forceinline__ float dk_act(int act, float g, float u, float alpha, float limit) {
    switch (act) {
    case MOE_ACT_SWIGLU: return g / (1.0f + expf(-g)) * u;
    case MOE_ACT_GEGLU_TANH: return 0.5f * g * (1.0f + tanhf(0.7978845608028654f * (g + 0.044715f * g * g * g))) * u;
    case MOE_ACT_GEGLU_ERF: return 0.5f * g * (1.0f + erff(g * 0.7071067811865476f)) * u;
    case MOE_ACT_SWIGLU_OAI:
        g = g > limit ? limit : g;
        u = u > limit ? limit : (u < -limit ? -limit : u);
        return g / (1.0f + expf(-alpha * g)) * (u + 1.0f);
    case MOE_ACT_SILU: return u / (1.0f + expf(-u));
    case MOE_ACT_GELU: return 0.5f * u * (1.0f + tanhf(0.7978845608028654f * (u + 0.044715f * u * u * u)));
    case MOE_ACT_RELU2: return u < 0.f ? 0.f : u * u;
    }
    return 0.f;
}

static __device__ __forceinline__ void dk_store_out(void *out, int type, int64_t i, float v) {
    if (type == MOE_TYPE_BF16) ((__nv_bfloat16 *)out)[i] = __float2bfloat16_rn(v);
    else if (type == MOE_TYPE_F16) ((__half *)out)[i] = __float2half_rn(v);
    else ((float *)out)[i] = v;
}

static __device__ __forceinline__ void dk_grid_wait(void) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}
static __device__ __forceinline__ void dk_grid_launch_dependents(void) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

/*
 * The expert kernel. grid = (row blocks of 16 * RW rows, active expert slots),
 * 256 threads = 8 warps = RW row groups x KS slices of C. PH: MOE_DEC_GATE_UP,
 * MOE_DEC_UP (non-gated) or MOE_DEC_DOWN. NT: token tiles of 8 per pass over
 * the weights (an expert with more pairs than 8 * NT takes several passes).
 */
template <typename FM, typename MT, int PH, int NT>
__global__ void __launch_bounds__(256, FM::MINB) k_dec(const moe_dec_args a) {
    constexpr int NR = PH == MOE_DEC_GATE_UP ? 4 : 2; /* row fragments per warp */
    constexpr int NG = PH == MOE_DEC_GATE_UP ? 2 : 1; /* accumulator sets */
    constexpr int U = FM::QUANT ? 1 : 2;              /* chunks whose loads are issued together */
    __shared__ float red[8][NT * NG * 4][32];
    __shared__ int s_last;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
    const int j = blockIdx.y;

    dk_grid_wait();
    dk_grid_launch_dependents();
    const int n_active = *a.n_active;
    if (j >= n_active) return;
    const int e = a.act_e[j], p0 = a.act_off[j], p1 = a.act_off[j + 1];
    const int KS = a.KS, rg = warp / KS, ks = warp - rg * KS;
    const int row_base = blockIdx.x * 16 * a.RW;
    const int r0 = row_base + rg * 16 + g, r1 = r0 + 8;
    const bool ok0 = r0 < a.N, ok1 = r1 < a.N;
    const uint8_t *wrow[NR];
    wrow[0] = a.w0 + (int64_t)e * a.w0_se + (int64_t)r0 * a.w0_sn;
    wrow[1] = a.w0 + (int64_t)e * a.w0_se + (int64_t)r1 * a.w0_sn;
    if constexpr (NR == 4) {
        wrow[NR - 2] = a.w1 + (int64_t)e * a.w1_se + (int64_t)r0 * a.w1_sn;
        wrow[NR - 1] = a.w1 + (int64_t)e * a.w1_se + (int64_t)r1 * a.w1_sn;
    }
    const int c_beg = (int)((int64_t)ks * a.n_chunks / KS), c_end = (int)((int64_t)(ks + 1) * a.n_chunks / KS);
    const size_t bes = PH == MOE_DEC_DOWN ? 2 : (a.xmode == 1 ? 4 : 2); /* bytes per B element */

    for (int pp = p0; pp < p1; pp += NT * 8) {
        const int m = min(NT * 8, p1 - pp);
        const char *brow[NT];
#pragma unroll
        for (int nt = 0; nt < NT; nt++) {
            int ci = nt * 8 + g;
            brow[nt] = nullptr;
            if (ci < m) {
                int pair = a.sorted[pp + ci];
                int64_t r = PH == MOE_DEC_DOWN ? pair : pair / a.K;
                brow[nt] = (const char *)a.xb + (size_t)r * (size_t)a.ldb * bes;
            }
        }
        float acc[NT][NG][4];
#pragma unroll
        for (int nt = 0; nt < NT; nt++)
#pragma unroll
            for (int gi = 0; gi < NG; gi++)
#pragma unroll
                for (int q = 0; q < 4; q++) acc[nt][gi][q] = 0.f;

        for (int c = c_beg; c < c_end; c += U) {
            typename FM::Raw R[U][NR];
#pragma unroll
            for (int u = 0; u < U; u++)
#pragma unroll
                for (int r = 0; r < NR; r++) FM::load(R[u][r], wrow[r], c + u, t, a.C, (r & 1 ? ok1 : ok0) && c + u < c_end);
#pragma unroll
            for (int u = 0; u < U; u++) {
                if (c + u >= c_end) break;
                typename FM::Dec D[NR];
#pragma unroll
                for (int r = 0; r < NR; r++) FM::prep(R[u][r], t, D[r]);
#pragma unroll
                for (int s = 0; s < FM::S; s++) {
                    uint4 A[NR];
#pragma unroll
                    for (int r = 0; r < NR; r++) A[r] = dk_frag<FM, MT>(R[u][r], D[r], t, s);
                    const int col = (c + u) * FM::CW + FM::xcol(t, s);
#pragma unroll
                    for (int nt = 0; nt < NT; nt++) {
                        if (nt * 8 >= m) break;
                        uint4 b = dk_loadb<MT>(brow[nt], col, a.C, PH == MOE_DEC_DOWN ? 0 : a.xmode);
#pragma unroll
                        for (int gi = 0; gi < NG; gi++) {
                            dk_mma<MT>(acc[nt][gi], A[2 * gi].x, A[2 * gi + 1].x, A[2 * gi].y, A[2 * gi + 1].y, b.x, b.y);
                            dk_mma<MT>(acc[nt][gi], A[2 * gi].z, A[2 * gi + 1].z, A[2 * gi].w, A[2 * gi + 1].w, b.z, b.w);
                        }
                    }
                }
            }
        }
        /* slices of C summed in slice order: deterministic */
        if (KS > 1) {
#pragma unroll
            for (int nt = 0; nt < NT; nt++)
#pragma unroll
                for (int gi = 0; gi < NG; gi++)
#pragma unroll
                    for (int q = 0; q < 4; q++) red[warp][(nt * NG + gi) * 4 + q][lane] = acc[nt][gi][q];
            __syncthreads();
            if (ks == 0) {
                for (int s2 = 1; s2 < KS; s2++)
#pragma unroll
                    for (int nt = 0; nt < NT; nt++)
#pragma unroll
                        for (int gi = 0; gi < NG; gi++)
#pragma unroll
                            for (int q = 0; q < 4; q++) acc[nt][gi][q] += red[warp + s2][(nt * NG + gi) * 4 + q][lane];
            }
        }
        if (ks == 0) {
#pragma unroll
            for (int nt = 0; nt < NT; nt++) {
#pragma unroll
                for (int q = 0; q < 4; q++) {
                    int row = q < 2 ? r0 : r1, ci = nt * 8 + 2 * t + (q & 1);
                    if (ci >= m || row >= a.N) continue;
                    int pair = a.sorted[pp + ci];
                    if (PH == MOE_DEC_DOWN) {
                        float v = acc[nt][0][q];
                        if (a.b0) v += dk_bias(a.b0, a.b0_type, (int64_t)e * a.b0_se + (int64_t)row * a.b0_sn);
                        a.y[(int64_t)pair * a.N + row] = a.w[pair] * v;
                    } else {
                        float gv = 0.f, uv;
                        if (PH == MOE_DEC_GATE_UP) {
                            gv = acc[nt][0][q];
                            if (a.b0) gv += dk_bias(a.b0, a.b0_type, (int64_t)e * a.b0_se + (int64_t)row * a.b0_sn);
                            uv = acc[nt][NG - 1][q];
                            if (a.b1) uv += dk_bias(a.b1, a.b1_type, (int64_t)e * a.b1_se + (int64_t)row * a.b1_sn);
                        } else {
                            uv = acc[nt][0][q];
                            if (a.b0) uv += dk_bias(a.b0, a.b0_type, (int64_t)e * a.b0_se + (int64_t)row * a.b0_sn);
                        }
                        float hv = dk_act(a.act, gv, uv, a.alpha, a.limit);
                        ((unsigned short *)a.h)[(int64_t)pair * a.N + row] =
                            (unsigned short)(dk_pack<MT>(hv, 0.f) & 0xffffu);
                    }
                }
            }
        }
        if (KS > 1) __syncthreads();
    }

    if (PH == MOE_DEC_DOWN) {
        /* the last expert block of this row block sums the slots of every token */
        __syncthreads();
        if (tid == 0) {
            __threadfence();
            unsigned prev = atomicAdd(a.counters + blockIdx.x, 1u);
            s_last = prev == (unsigned)(n_active - 1);
        }
        __syncthreads();
        if (s_last) {
            __threadfence();
            const int rows = 16 * a.RW;
            for (int idx = tid; idx < a.T * rows; idx += 256) {
                int tt = idx / rows, n = row_base + (idx - tt * rows);
                if (n >= a.N) continue;
                float s = 0.f;
                for (int k = 0; k < a.K; k++) {
                    int id = a.ids[(int64_t)tt * a.K + k];
                    if ((unsigned)id >= (unsigned)a.E) continue;
                    s += __ldcg(a.y + ((int64_t)tt * a.K + k) * a.N + n);
                }
                dk_store_out(a.out, a.out_type, (int64_t)tt * a.N + n, s);
            }
            if (tid == 0) a.counters[blockIdx.x] = 0;
        }
    }
}

/* The launch configuration of the decode kernels: grid x threads, dynamic
 * shared memory, stream, and with pdl the programmatic dependent launch
 * attribute (the kernel may start while the previous one finishes; it calls
 * griddepcontrol.wait before reading that kernel's output). at: storage for
 * the attribute, alive until the launch. */
static inline void dk_launch_config(cudaLaunchConfig_t *cfg, cudaLaunchAttribute *at, dim3 grid, unsigned threads,
                                    size_t smem, cudaStream_t s, int pdl) {
    memset(cfg, 0, sizeof *cfg);
    cfg->gridDim = grid;
    cfg->blockDim = dim3(threads, 1, 1);
    cfg->dynamicSmemBytes = smem;
    cfg->stream = s;
    at->id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at->val.programmaticStreamSerializationAllowed = 1;
    cfg->attrs = at;
    cfg->numAttrs = pdl ? 1 : 0;
}

template <typename FM, typename MT, int PH, int NT>
static cudaError_t dk_launch_one(const moe_dec_args *a, dim3 grid, cudaStream_t s) {
    cudaLaunchConfig_t cfg;
    cudaLaunchAttribute at;
    dk_launch_config(&cfg, &at, grid, 256, 0, s, a->pdl);
    return cudaLaunchKernelEx(&cfg, k_dec<FM, MT, PH, NT>, *a);
}

template <typename FM, typename MT>
static cudaError_t dk_launch_fmt(int ph, int nt, const moe_dec_args *a, dim3 grid, cudaStream_t s) {
    if (nt <= 1) {
        if (ph == MOE_DEC_GATE_UP) return dk_launch_one<FM, MT, MOE_DEC_GATE_UP, 1>(a, grid, s);
        if (ph == MOE_DEC_UP) return dk_launch_one<FM, MT, MOE_DEC_UP, 1>(a, grid, s);
        return dk_launch_one<FM, MT, MOE_DEC_DOWN, 1>(a, grid, s);
    }
    if (ph == MOE_DEC_GATE_UP) return dk_launch_one<FM, MT, MOE_DEC_GATE_UP, 4>(a, grid, s);
    if (ph == MOE_DEC_UP) return dk_launch_one<FM, MT, MOE_DEC_UP, 4>(a, grid, s);
    return dk_launch_one<FM, MT, MOE_DEC_DOWN, 4>(a, grid, s);
}
#endif /* __CUDACC__ */

#endif
