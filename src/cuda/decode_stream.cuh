/*
 * The streaming small-batch kernels ("stream" path of cuda-decode and
 * cuda-quant, sm_90): weight rows reach shared memory through bulk copies
 * (cp.async.bulk, one per row, completed on mbarriers) issued by one producer
 * warp into a ring of NS stages, while eight consumer warps take dot products
 * out of the stage before. The copies need no address arithmetic per lane and
 * keep NS - 1 stages (tens of KB per block) in flight, which is what a
 * weight-streaming kernel needs to approach the read bandwidth at T = 1.
 *
 * Two launches per forward, no routing kernel:
 *   phase 1  grid (T*K pairs, row tiles): the block of pair p runs when p is
 *            the first pair of its expert e; it collects every pair routed to
 *            e (ids read in place), stages the tokens' x (bf16/f16, or 8-bit
 *            blocks for the quantized formats), streams rows [r0, r0 + R) of
 *            gate and up, and writes h[pair, r] = act(gate x + bg, up x + bu)
 *            (mma type for dense weights, f32 for quantized ones).
 *   phase 2  grid (T tokens, row tiles), programmatic dependent launch: the
 *            producer streams the down rows of the token's K experts before
 *            phase 1 has finished (they depend on ids only); the consumers
 *            wait for h, then out[t, r] = sum over valid slots k, in slot
 *            order, of w[t,k] * (down_e h[t,k] + bd). No atomics: bitwise
 *            deterministic; a token with no valid id gets out = 0.
 * Rows of a stage: SRS whole rows of one tensor (and one expert). GGUF
 * rows: consumer warp w takes row w (SRS >= 16: rows w, w + 8, ..., each
 * on 256 / SRS lanes) or, when SRS < 8, part w % P of row w / P (P = 8 / SRS
 * column parts); each (row, part, token) sum goes to shared memory once, and
 * the epilogue adds the parts in order. Dense rows: 8 rows a stage, tensor
 * cores, the k range split over the warps.
 * Quantized rows are copied from their 16-byte-aligned start (rows of
 * Q8_0 etc. need not be aligned); the consumer starts at the offset.
 */
#ifndef MOE_CUDA_DECODE_STREAM_CUH
#define MOE_CUDA_DECODE_STREAM_CUH

#include "decode_kernels.h"
#include "decode_stream.h"
#include "qdot.cuh"
#include "sm90_sync.cuh"

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define SV_ON 1
#endif

#ifdef SV_ON
/* the eight consumer warps only */
static __device__ __forceinline__ void sv_consumer_sync(void) { asm volatile("bar.sync 1, 256;\n" ::: "memory"); }
#endif

/* One activation. h written by other blocks of the same launch (k_svf) is
 * read after the grid barrier by an SM that has not loaded those lines
 * before, so plain (L1-allocating) loads see it. */
static __device__ __forceinline__ float sv_load_act(const void *p, int type, int64_t i) {
    if (type == MOE_TYPE_BF16) return __bfloat162float(((const __nv_bfloat16 *)p)[i]);
    if (type == MOE_TYPE_F16) return __half2float(((const __half *)p)[i]);
    return ((const float *)p)[i];
}

/* Bytes of one staged dense activation row of C elements (mma type). */
static __host__ __device__ __forceinline__ int sv_dense_act_stride(int C) { return (2 * C + 15) & ~15; }

/* The unit shape (qdot.cuh) of a GGUF format's decoder. */
static __host__ __device__ constexpr int sv_qdot_kind_of(int F) {
    return F == MOE_DF_Q4_0 || F == MOE_DF_Q8_0 || F == MOE_DF_MXFP4 ? MOE_QDOT_S
           : F == MOE_DF_Q3_K || F == MOE_DF_Q6_K                     ? MOE_QDOT_SS
           : F == MOE_DF_Q4_K || F == MOE_DF_Q5_K                     ? MOE_QDOT_SM
                                                                      : MOE_QDOT_SSMM;
}
template <int F> static __host__ __device__ constexpr int sv_qdot_kind() { return sv_qdot_kind_of(F); }

/* GGUF activations are staged unit-major for a layout of nrt rows: the rows'
 * 32-byte int8 pieces of unit u together (row i at u * SQ + 32 i), then the
 * rows' records of unit u (row i at u * SM + RB i: {scale}, {scale, s0 + s1}
 * or {scale, s0 + s1, s0, s1}, RB = 4, 8 or 16 bytes by what the format's dot
 * reads). One address per unit serves every token (immediate offsets). The
 * unit strides are odd multiples of the widest load (SQ = 32 nrt + 16, SM =
 * RB (nrt | 1)) so that the lanes of a row, on consecutive units, hit
 * different banks (strides of 32 nrt made T >= 2 up to 3x slower: s6 run 10). */
static __host__ __device__ __forceinline__ int sv_qact_sq(int nrt) { return 32 * nrt + 16; }
static __host__ __device__ __forceinline__ int sv_qact_bytes(int nrt, int C, int rb) {
    /* a multiple of 16: in the fused layout the next phase's activations follow
     * (gpt-oss, 90 units of 52 bytes: misaligned 16-byte loads without it) */
    return ((C / 32) * (sv_qact_sq(nrt) + rb * (nrt | 1)) + 15) & ~15;
}
static __host__ __device__ constexpr int sv_qact_rb_kind(int DK) {
    return DK == MOE_QDOT_SSMM ? 16 : DK == MOE_QDOT_SM ? 8 : 4;
}
/* MXFP4's records are {scale} (4) or, where the plan has room (decode.cu
 * sv_plan: moe_sv_args.rb), {scale, -64 (s0 + s1)} (8), the start of its
 * biased dot (qdot.cuh moe__mxfp4_dotb). */
template <int F> static __host__ __device__ constexpr int sv_qact_rb() { return sv_qact_rb_kind(sv_qdot_kind_of(F)); }
/* The record bytes of format fmt (MOE_DF_*) at run time (host planning,
 * layouts); spelled out rather than through sv_qdot_kind_of, whose extra
 * compares in every kernel's layout code moved the SASS of all instances;
 * decode_stream.cu checks that the two agree for every format */
static __host__ __device__ constexpr int sv_qact_rb_of(int fmt) {
    return fmt == MOE_DF_Q2_K ? 16 : fmt == MOE_DF_Q4_K || fmt == MOE_DF_Q5_K ? 8 : 4;
}

/* An activation block's 32 quantised values (element order, qq; MXFP4's
 * nibble order made here) and its record (scale dd, half sums s0, s1) into
 * the staged layout: piece i of unit u (sv_qact_sq), the record of RB bytes
 * after the pieces. */
template <int F>
static __device__ __forceinline__ void sv_put_q32(uint8_t *dst, int nrt, int i, int u, int C, int rb, int32_t qq[8],
                                                  float dd, int s0, int s1) {
    if (F == MOE_DF_MXFP4) moe_qx_nib_order(qq); /* the order moe_qunit_mxfp4_nib decodes in */
    const int RB = F == MOE_DF_MXFP4 ? rb : sv_qact_rb<F>(); /* rb: moe_sv_args.rb */
    const int sq = sv_qact_sq(nrt);
    int4 *qd = (int4 *)(dst + u * sq + 32 * i);
    qd[0] = make_int4(qq[0], qq[1], qq[2], qq[3]);
    qd[1] = make_int4(qq[4], qq[5], qq[6], qq[7]);
    uint8_t *m = dst + (C / 32) * sq + u * (RB * (nrt | 1)) + RB * i;
    if (RB == 16) *(int4 *)m = make_int4(__float_as_int(dd), s0 + s1, s0, s1);
    else if (RB == 8) *(int2 *)m = make_int2(__float_as_int(dd), (F == MOE_DF_MXFP4 ? -MOE__MXFP4_BIAS : 1) * (s0 + s1));
    else *(float *)m = dd;
}

/* Stages nr activation rows into shared memory as the mma type (dense: row i
 * at dst + i * dstride) or as 8-bit blocks (GGUF, unit-major for a layout of
 * nrt rows, sv_qact_sq), all rows in one parallel loop of the 256 consumer
 * threads (a loop per row would pay an L2 round trip each).
 * Row i is list[first + i] / K of x (mode 0, phase 1: pair -> token), t * K +
 * list[first + i] of h (mode 1, token-major down: the token's valid slots) or
 * list[first + i] of h (mode 2, expert-major down: the pairs). With hq
 * (modes 1-2: moe_sv_args.hq, hq_rec) h's blocks were quantised by phase 1
 * and are copied. */
template <int F>
static __device__ __forceinline__ void sv_stage_acts(uint8_t *dst, int dstride, int nrt, const void *src, int type,
                                                     const int *list, int first, int nr, int mode, int K, int t, int C,
                                                     int rb, int tid, const uint8_t *hq = nullptr, int64_t hq_rec = 0) {
    constexpr bool DENSE = F <= MOE_DF_F16;
    const int per = DENSE ? C / 8 : C / 32;
    for (int idx = tid; idx < nr * per; idx += 256) {
        const int i = idx / per, c = idx - i * per;
        const int64_t row = mode == 1 ? (int64_t)t * K + list[first + i] : mode == 2 ? list[first + i] : list[first + i] / K;
        uint8_t *d = dst + (size_t)i * dstride;
        if (DENSE) {
            uint4 v;
            if ((F == MOE_DF_BF16 && type == MOE_TYPE_BF16) || (F == MOE_DF_F16 && type == MOE_TYPE_F16)) {
                v = *(const uint4 *)((const uint8_t *)src + ((size_t)row * C + 8 * c) * 2);
            } else {
                float f[8];
#pragma unroll
                for (int q = 0; q < 8; q++) f[q] = sv_load_act(src, type, row * C + 8 * c + q);
                typedef typename std::conditional<F == MOE_DF_F16, __half, __nv_bfloat16>::type MT;
                v = make_uint4(dk_pack<MT>(f[0], f[1]), dk_pack<MT>(f[2], f[3]), dk_pack<MT>(f[4], f[5]),
                               dk_pack<MT>(f[6], f[7]));
            }
            *(uint4 *)(d + 16 * c) = v;
        } else if (hq && mode != 0) { /* h's blocks quantised by phase 1: a copy */
            const int u = c;
            const uint4 *gq = (const uint4 *)(hq + (size_t)row * C + 32 * u);
            const uint4 q0 = __ldcg(gq), q1 = __ldcg(gq + 1); /* L2: k_svf's phase 1 wrote them in this launch */
            const int4 rc = __ldcg((const int4 *)(hq + hq_rec + ((size_t)row * (C / 32) + u) * 16));
            int32_t qq[8] = {(int32_t)q0.x, (int32_t)q0.y, (int32_t)q0.z, (int32_t)q0.w,
                             (int32_t)q1.x, (int32_t)q1.y, (int32_t)q1.z, (int32_t)q1.w};
            sv_put_q32<F>(dst, nrt, i, u, C, rb, qq, __int_as_float(rc.x), rc.y, rc.z);
        } else {
            const int u = c;
            float f[32];
            if (type == MOE_TYPE_F32) { /* 8 x 16 B: the row starts 16-byte aligned, C % 32 == 0 */
                const float4 *p4 = (const float4 *)((const float *)src + row * C + 32 * u);
#pragma unroll
                for (int q = 0; q < 8; q++) {
                    float4 v = p4[q];
                    f[4 * q] = v.x; f[4 * q + 1] = v.y; f[4 * q + 2] = v.z; f[4 * q + 3] = v.w;
                }
            } else {
                const uint4 *p4 = (const uint4 *)((const uint16_t *)src + row * C + 32 * u);
#pragma unroll
                for (int q = 0; q < 4; q++) {
                    uint4 v = p4[q];
                    const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
                    for (int r = 0; r < 4; r++) {
                        if (type == MOE_TYPE_BF16) {
                            f[8 * q + 2 * r] = __uint_as_float(w[r] << 16);
                            f[8 * q + 2 * r + 1] = __uint_as_float(w[r] & 0xffff0000u);
                        } else {
                            float2 h2 = __half22float2(*(const __half2 *)&w[r]);
                            f[8 * q + 2 * r] = h2.x;
                            f[8 * q + 2 * r + 1] = h2.y;
                        }
                    }
                }
            }
            int32_t qq[8];
            float dd;
            int ss[2];
            moe_qx_quantize32(f, qq, &dd, ss);
            sv_put_q32<F>(dst, nrt, i, u, C, rb, qq, dd, ss[0], ss[1]);
        }
    }
}


/* Unit u of a GGUF row against the staged activation rows (sv_row_dot;
 * token j's piece at act + u * SQ + 32 j, its record at meta + u * SM + RB j,
 * sv_qact_sq); for the 256-element formats, u is piece k of block blk. */
#ifndef MOE_SV_UNROLL1
#define MOE_SV_UNROLL1 2
#endif
#define SV_STR_(x) #x
#define SV_UNROLL_PRAGMA(n) _Pragma(SV_STR_(unroll n))

/* Q6_K passes of 1 to MOE_SV_Q6K_U tokens (a compile-time knob) decode
 * unsigned bytes with zero point 32 (qdot.cuh moe_qunit_q6_k_bk_u). */
#ifndef MOE_SV_Q6K_U
#define MOE_SV_Q6K_U 2
#endif
#define SV_Q6K_Z32(F, NTC) ((F) == MOE_DF_Q6_K && (NTC) >= 1 && (NTC) <= MOE_SV_Q6K_U)

/* One decoded unit against the nt staged tokens: the unit's 32-byte pieces
 * at xq (token j at 32 j), their records at xm (RB j). NTC: nt as a
 * compile-time constant (sv_row_dot dispatches on it), or 0. */
template <int F, int NT, int NTC>
static __device__ __forceinline__ void sv_unit_tokens(const moe_qunit &w, const uint8_t *xqb, const uint8_t *xm,
                                                      int nt, float acc[NT], int rb) {
    constexpr int DK = sv_qdot_kind<F>();
    const int RB = F == MOE_DF_MXFP4 ? rb : sv_qact_rb<F>();
    const int4 *xq = (const int4 *)xqb;
#pragma unroll
    for (int j = 0; j < NT; j++) {
        if (NTC ? j < NTC : j < nt) {
            const int4 q0 = xq[2 * j], q1 = xq[2 * j + 1];
            const int32_t xv[8] = {q0.x, q0.y, q0.z, q0.w, q1.x, q1.y, q1.z, q1.w};
            float xd;
            int s16[2] = {0, 0};
            if (DK == MOE_QDOT_SSMM) { /* s0, s1 */
                const int4 r = *(const int4 *)(xm + RB * j);
                xd = __int_as_float(r.x);
                s16[0] = r.z;
                s16[1] = r.w;
            } else if (DK == MOE_QDOT_SM) { /* only s0 + s1 is used: as s16[0] */
                const int2 r = *(const int2 *)(xm + RB * j);
                xd = __int_as_float(r.x);
                s16[0] = r.y;
            } else {
                xd = *(const float *)(xm + RB * j);
            }
            if constexpr (SV_Q6K_Z32(F, NTC)) acc[j] += moe_qunit_dot_z32(&w, xv, xd);
            else acc[j] += moe_qunit_dot_kind_uq(DK, F == MOE_DF_Q4_K, &w, xv, xd, s16);
        }
    }
}

/* Q3_K's offsets made once a row where a lane's blocks share their alignment
 * (as Q6_K's; compile time, a measurement knob: 0 makes them every unit). */
#ifndef MOE_SV_Q3K_AT
#define MOE_SV_Q3K_AT 1
#endif

/* Bytes of one 256-element block of a K-quant format. */
template <int F> static __host__ __device__ constexpr int sv_kq_block_bytes() {
    return F == MOE_DF_Q2_K ? 84 : F == MOE_DF_Q3_K ? 110 : F == MOE_DF_Q4_K ? 144 : F == MOE_DF_Q5_K ? 176 : 210;
}

/* The K-quant decoders whose piece's offsets and shifts a lane makes once
 * where its blocks share their alignment (qdot.cuh moe__q6k_at, moe__q3k_at):
 * made from the first block bp0 and piece k, unit() decodes the block at bp. */
template <int F, int NTC> struct sv_kq_at {
    enum { ON = 0 };
    __device__ __forceinline__ sv_kq_at(const uint8_t *, int) {}
    __device__ __forceinline__ void unit(const uint8_t *, moe_qunit *) const {}
};
template <int NTC> struct sv_kq_at<MOE_DF_Q6_K, NTC> {
    enum { ON = 1 };
    moe__q6k_at a;
    __device__ __forceinline__ sv_kq_at(const uint8_t *bp0, int k) : a(moe__q6k_at_make(bp0, k)) {}
    __device__ __forceinline__ void unit(const uint8_t *bp, moe_qunit *w) const {
        moe__qunit_q6_k_at(bp, &a, !SV_Q6K_Z32(MOE_DF_Q6_K, NTC), w);
    }
};
template <int NTC> struct sv_kq_at<MOE_DF_Q3_K, NTC> {
    enum { ON = MOE_SV_Q3K_AT };
    moe__q3k_at a;
    int k;
    __device__ __forceinline__ sv_kq_at(const uint8_t *bp0, int k0) : a(moe__q3k_at_make(bp0, k0)), k(k0) {}
    __device__ __forceinline__ void unit(const uint8_t *bp, moe_qunit *w) const { moe__qunit_q3_k_at(bp, k, &a, w); }
};

/* Piece k of the K-quant block at bp against the staged activation rows:
 * token j's piece at xq + 32 j, its record at xm + RB j (sv_qact_sq). */
template <int F, int NT, int NTC>
static __device__ __forceinline__ void sv_unit_dot_at(const uint8_t *bp, int k, const uint8_t *xq, const uint8_t *xm,
                                                      int nt, float acc[NT]) {
    moe_qunit w;
    if (F == MOE_DF_Q2_K) moe_qunit_q2_k_bk(bp, 0, k, &w);
    else if (F == MOE_DF_Q3_K) moe_qunit_q3_k_bk(bp, 0, k, &w);
    else if (F == MOE_DF_Q4_K) moe_qunit_q4_k_bk_u(bp, 0, k, &w); /* unsigned bytes: moe_qunit_dot_kind_uq */
    else if (F == MOE_DF_Q5_K) moe_qunit_q5_k_bk(bp, 0, k, &w);
    else if (SV_Q6K_Z32(F, NTC)) moe_qunit_q6_k_bk_u(bp, 0, k, &w); /* zero point 32: moe_qunit_dot_z32 */
    else moe_qunit_q6_k_bk(bp, 0, k, &w);
    sv_unit_tokens<F, NT, NTC>(w, xq, xm, nt, acc, sv_qact_rb<F>());
}

/* Unit u of a GGUF row of a 256-element format (u is piece k of block blk)
 * against the staged activation rows (token j's piece at act + u * SQ + 32 j,
 * its record at meta + u * SM + RB j, sv_qact_sq). */
template <int F, int NT, int NTC>
static __device__ __forceinline__ void sv_unit_dot(const uint8_t *row, int u, int blk, int k, const uint8_t *act,
                                                   const uint8_t *meta, int nrt, int nt, float acc[NT]) {
    constexpr int RB = sv_qact_rb<F>();
    sv_unit_dot_at<F, NT, NTC>(row + sv_kq_block_bytes<F>() * blk, k, act + u * sv_qact_sq(nrt),
                               meta + u * (RB * (nrt | 1)), nt, acc);
}

/* MXFP4's context in the unit loops: its table words in registers
 * (moe__mxfp4_tab_make) and its record bytes (moe_sv_args.rb). */
struct sv_mx {
    moe__mxfp4_tab tab;
    int rb;
};

/* Passes of up to this many tokens take MXFP4's biased dot where the records
 * hold its start (rb 8; qdot.cuh moe__mxfp4_wb_aw); more tokens, or records of
 * the scale alone, passes of 1-2 tokens the positive and negative codes apart
 * (moe__mxfp4_dotn_aw) and the rest the signed values (compile time, a
 * measurement knob). Against those (s29 runs 3-4, one binary, MOE_SV_MXFP4_RB=4
 * as the base): single tokens 0.87-0.98 (deepseek-v3 T = 2 / 4 0.866 / 0.959,
 * mixtral T = 2 0.951, gpt-oss-120b T = 8 / 16 0.970 / 0.960), passes of 2
 * even (mixtral T = 8 1.009), of 2-4 slower (gpt-oss-20b T = 16 1.029); with 5-8
 * the 8-token instances spilled. */
#ifndef MOE_SV_MXFP4_PN
#define MOE_SV_MXFP4_PN 1
#endif

/* The units u0, u0 + L, ... below ue of a row of a 32-element format (Q4_0,
 * Q8_0, MXFP4): L is even, so L units are a multiple of 4 bytes and the
 * offset of a unit in its aligned word stays the lane's (qdot.cuh _aw
 * decoders); the weight, activation and record pointers step by constants
 * (the byte form recomputed all three and the offset from u, ~14
 * instructions a unit). LC: L as a compile-time constant, or 0. */
template <int F, int NT, int UR, int LC, int NTC>
static __device__ __forceinline__ void sv_row_dot32(const uint8_t *row, const uint8_t *act, const uint8_t *meta,
                                                    int nrt, int nt, int u0, int ue, int L, float acc[NT],
                                                    const sv_mx &mx) {
    const int LS = LC ? LC : L;
    constexpr int UB = F == MOE_DF_Q8_0 ? 34 : F == MOE_DF_Q4_0 ? 18 : 17;
    const int RB = F == MOE_DF_MXFP4 ? mx.rb : sv_qact_rb<F>();
    const int SQ = sv_qact_sq(nrt), SM = RB * (nrt | 1);
    const uint8_t *p = row + UB * u0;
    const int sh = 8 * (int)((uintptr_t)p & 3);
    const uint8_t *a = p - ((uintptr_t)p & 3);
    const uint8_t *xq = act + u0 * SQ, *xm = meta + u0 * SM;
    if constexpr (F == MOE_DF_MXFP4 && NTC >= 1 && NTC <= MOE_SV_MXFP4_PN) {
        if (mx.rb == 8) { /* the biased values from the records' start (qdot.cuh moe__mxfp4_wb_aw) */
            SV_UNROLL_PRAGMA(UR)
            for (int u = u0; u < ue; u += LS, a += UB * LS, xq += SQ * LS, xm += SM * LS) {
                uint32_t w[8];
                float d;
                moe__mxfp4_wb_aw(a, sh, &mx.tab, w, &d);
#pragma unroll
                for (int j = 0; j < NTC; j++) {
                    const int4 q0 = ((const int4 *)xq)[2 * j], q1 = ((const int4 *)xq)[2 * j + 1];
                    const int32_t xv[8] = {q0.x, q0.y, q0.z, q0.w, q1.x, q1.y, q1.z, q1.w};
                    const int2 r = *(const int2 *)(xm + 8 * j);
                    acc[j] = moe__mxfp4_dotb(w, d, xv, __int_as_float(r.x), r.y, acc[j]);
                }
            }
            return;
        }
    }
    if constexpr (F == MOE_DF_MXFP4 && NTC >= 1 && NTC <= 2) {
        /* records of the scale alone: positive and negative codes apart (qdot.cuh moe__mxfp4_dotn_aw) */
        SV_UNROLL_PRAGMA(UR)
        for (int u = u0; u < ue; u += LS, a += UB * LS, xq += SQ * LS, xm += SM * LS) {
            int32_t xv[8 * NTC];
            float xd[NTC];
#pragma unroll
            for (int j = 0; j < NTC; j++) {
                const int4 q0 = ((const int4 *)xq)[2 * j], q1 = ((const int4 *)xq)[2 * j + 1];
                xv[8 * j] = q0.x; xv[8 * j + 1] = q0.y; xv[8 * j + 2] = q0.z; xv[8 * j + 3] = q0.w;
                xv[8 * j + 4] = q1.x; xv[8 * j + 5] = q1.y; xv[8 * j + 6] = q1.z; xv[8 * j + 7] = q1.w;
                xd[j] = *(const float *)(xm + RB * j);
            }
            moe__mxfp4_dotn_aw(a, sh, &mx.tab, NTC, xv, xd, acc);
        }
    } else {
        SV_UNROLL_PRAGMA(UR)
        for (int u = u0; u < ue; u += LS, a += UB * LS, xq += SQ * LS, xm += SM * LS) {
            moe_qunit w;
            if (F == MOE_DF_Q4_0) moe__qunit_q4_0_aw(a, sh, &w);
            else if (F == MOE_DF_Q8_0) moe__qunit_q8_0_aw(a, sh, &w);
            else moe__qunit_mxfp4_nib_aw(a, sh, &mx.tab, &w); /* activations staged in nibble order */
            sv_unit_tokens<F, NT, NTC>(w, xq, xm, nt, acc, RB);
        }
    }
}

/* One GGUF weight row (in shared memory) against NT staged 8-bit activation
 * rows: units ub + li, ub + li + L, ... below ue, taken by lane li of the L
 * lanes that share the row; sums per token in acc (not reduced across lanes).
 * Dense rows go through sv_mma_stage instead. The activation sums are loaded
 * only for the formats with a min. NTC: the pass's tokens as a constant.
 * UR: units a lane's loop body takes at once (sv_consume: MOE_SV_UNROLL1
 * where a pass takes one token, the phase is not the token-major down and
 * the format is not MXFP4, else 1). 2 gives each warp a second unit's loads
 * and ALU chain to issue while the first waits (s12 run 3, T = 1: Q4_K and
 * Q6_K 0.96-0.975, Q8_0 0.96-0.99, MXFP4 0.99-1.03); with 4 or 8 tokens the
 * unrolled body costs registers (up to 115) and was 1.2-1.3x slower (run 2). */
template <int F, int NT, int UR, int NTC>
static __device__ __forceinline__ void sv_row_dot_n(const uint8_t *row, const uint8_t *act, const uint8_t *meta,
                                                    int nrt, int nt, int ub, int ue, int li, int L, float acc[NT],
                                                    const sv_mx &mx) {
    /* 256-element blocks (8 units): where the lane's units are L apart with
     * L and ub multiples of 8, each is sub-block k0 of its block, so the
     * decoder's shifts and offsets that depend on the sub-block alone are
     * loop invariant (the decoders take the block and k0 apart) */
    constexpr bool SB = F == MOE_DF_Q2_K || F == MOE_DF_Q3_K || F == MOE_DF_Q4_K || F == MOE_DF_Q5_K || F == MOE_DF_Q6_K;
    if constexpr (SB) {
        if (((ub | L) & 7) == 0) {
            /* the block, activation and record pointers step by constants (the
             * unit's offsets recomputed from the block number took ~20
             * instructions a unit: session 28's SASS of Q6_K) */
            constexpr int BB = sv_kq_block_bytes<F>(), RB = sv_qact_rb<F>();
            const int k0 = li & 7, u0 = ub + li, SQ = sv_qact_sq(nrt), SM = RB * (nrt | 1);
            const uint8_t *bp = row + BB * (u0 >> 3), *xq = act + u0 * SQ, *xm = meta + u0 * SM;
            const int bstep = BB * (L >> 3), qstep = SQ * L, mstep = SM * L;
            if constexpr (sv_kq_at<F, NTC>::ON) {
                if ((bstep & 3) == 0) { /* the lane's blocks share their alignment: offsets made once */
                    const sv_kq_at<F, NTC> at(bp, k0);
                    SV_UNROLL_PRAGMA(UR)
                    for (int u = u0; u < ue; u += L, bp += bstep, xq += qstep, xm += mstep) {
                        moe_qunit w;
                        at.unit(bp, &w);
                        sv_unit_tokens<F, NT, NTC>(w, xq, xm, nt, acc, sv_qact_rb<F>());
                    }
                    return;
                }
            }
            SV_UNROLL_PRAGMA(UR)
            for (int u = u0; u < ue; u += L, bp += bstep, xq += qstep, xm += mstep)
                sv_unit_dot_at<F, NT, NTC>(bp, k0, xq, xm, nt, acc);
            return;
        }
        /* rows whose units do not fall in whole blocks per lane (parts of a row) */
        SV_UNROLL_PRAGMA(UR)
        for (int u = ub + li; u < ue; u += L) sv_unit_dot<F, NT, NTC>(row, u, u >> 3, u & 7, act, meta, nrt, nt, acc);
    } else {
        /* a constant stride where a warp takes the row (gpt-oss-20b Q8_0: 6% slower with L, s6 run 3) */
        if (L == 32) sv_row_dot32<F, NT, UR, 32, NTC>(row, act, meta, nrt, nt, ub + li, ue, L, acc, mx);
        else sv_row_dot32<F, NT, UR, 0, NTC>(row, act, meta, nrt, nt, ub + li, ue, L, acc, mx);
    }
}

/* The row loop for the pass's token count as a compile-time constant (1 to
 * NT, uniform over the block): without it every unit ran NT guarded token
 * bodies, each a branch the warp waits on (BSSY/BSYNC), and their activation
 * loads could not move ahead of the dot products (ncu, s12 run 4: mixtral
 * Q8_0 T = 16, branch resolving 10% and short scoreboard 25% of the samples). */
template <int F, int NT, int UR>
static __device__ __forceinline__ void sv_row_dot(const uint8_t *row, const uint8_t *act, const uint8_t *meta, int nrt,
                                                  int nt, int ub, int ue, int li, int L, float acc[NT],
                                                  const sv_mx &mx) {
    static_assert(NT >= 1 && NT <= 8, "passes of 1 to 8 tokens");
#define SV_NT_CASE(c)                                                                                           \
    case c:                                                                                                     \
        if constexpr (c <= NT) sv_row_dot_n<F, NT, UR, c>(row, act, meta, nrt, nt, ub, ue, li, L, acc, mx);    \
        break;
    switch (NT == 1 ? 1 : nt) {
        SV_NT_CASE(1)
        SV_NT_CASE(2)
        SV_NT_CASE(3)
        SV_NT_CASE(4)
        SV_NT_CASE(5)
        SV_NT_CASE(6)
        SV_NT_CASE(7)
        SV_NT_CASE(8)
    default: break;
    }
#undef SV_NT_CASE
}

/* The first nt sums over the L lanes (8, 16 or 32) that share a row: lanes
 * L apart hold other rows. Every lane of the warp calls it. All five
 * shuffles run, without branches; the two levels that may reach another
 * row (16, 8) add 0 instead where they do (a branch per level cost
 * gpt-oss-20b Q8_0, whose warps take whole rows, 6-9%: s6 runs 2-4). */
template <int NT> static __device__ __forceinline__ void sv_group_sum_n(float acc[NT], int nt, int L) {
    const bool x16 = L > 16, x8 = L > 8;
#pragma unroll
    for (int j = 0; j < NT; j++) {
        if (j >= nt) break;
        float v = acc[j];
        const float t16 = __shfl_xor_sync(0xffffffffu, v, 16);
        v += x16 ? t16 : 0.f;
        const float t8 = __shfl_xor_sync(0xffffffffu, v, 8);
        v += x8 ? t8 : 0.f;
        v += __shfl_xor_sync(0xffffffffu, v, 4);
        v += __shfl_xor_sync(0xffffffffu, v, 2);
        v += __shfl_xor_sync(0xffffffffu, v, 1);
        acc[j] = v;
    }
}

#ifdef SV_ON
/* B fragments of mma.m16n8k16 for 8 weight rows x 16 columns: row r of the
 * pair from lanes 8j + r (j = 0: columns 0-7, 1: columns 8-15). */
static __device__ __forceinline__ void sv_ldsm_x2(uint32_t addr, uint32_t &b0, uint32_t &b1) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n" : "=r"(b0), "=r"(b1) : "r"(addr));
}
#endif

/* Dense stage: the 8 rows of a unit, columns [kc0, kc0 + klen) of the chunk,
 * against tokens 0..nt-1 (rows of the A operand), k range of warp w; acc is
 * the m16n8 accumulator (token g = lane / 4, rows 2t, 2t + 1 with t = lane % 4). */
template <int F>
static __device__ __forceinline__ void sv_mma_stage(const uint8_t *st, int pitch, const uint8_t *act, int act_stride,
                                                    int nt, int kc0, int klen, int KW, int warp, int lane, float acc[4]) {
#ifdef SV_ON
    typedef typename std::conditional<F == MOE_DF_F16, __half, __nv_bfloat16>::type MT;
    const int g = lane >> 2, t = lane & 3;
    const int kb = warp * KW, ke = min(kb + KW, klen);
    const uint32_t brow = smem_u32(st + (lane & 7) * pitch + ((lane >> 3) & 1) * 16);
    const uint8_t *arow = act + g * act_stride + (size_t)(kc0 + 2 * t) * 2;
    const bool ga = g < nt;
#pragma unroll 4
    for (int k = kb; k < ke; k += 16) {
        uint32_t b0, b1;
        sv_ldsm_x2(brow + 2 * k, b0, b1);
        uint32_t a0 = 0, a2 = 0;
        if (ga) {
            a0 = *(const uint32_t *)(arow + 2 * k);
            a2 = *(const uint32_t *)(arow + 2 * k + 16);
        }
        dk_mma<MT>(acc, a0, 0u, a2, 0u, b0, b1);
    }
#endif
}

/* The int8 tensor-core consumer's per-warp partial sums of a stage, two
 * stages' worth: [2][8 warps][SRS rows][8 tokens] floats. */
static __host__ __device__ __forceinline__ int sv_qmma_scratch_bytes(const moe_sv_args *a) {
    return a->qmma ? 2 * 8 * a->SRS * 8 * 4 : 0;
}

#ifdef SV_ON
/* Unit u of a row of a 32-element format in shared memory: the A fragment
 * words of lane quad t, elements 4t..4t+3 (lo) and 16+4t..19+4t (hi) as
 * int8, and the unit's scale d (the dp4a decoders' sc, qdot.cuh). Q8_0: two
 * aligned words each; Q4_0: element j and j + 16 are the low and high
 * nibbles of byte j, so one word (two aligned loads) gives both. */
template <int F>
static __device__ __forceinline__ void sv_qfrag(const uint8_t *row, int u, int t, uint32_t &lo, uint32_t &hi,
                                                float &d) {
    if (F == MOE_DF_Q8_0) {
        const uint8_t *p = row + 34 * u;
        d = __half2float(*(const __half *)p);
        const uintptr_t q = (uintptr_t)(p + 2 + 4 * t);
        const uint32_t *w = (const uint32_t *)(q & ~(uintptr_t)3);
        const int sh = 8 * (int)(q & 3);
        lo = __funnelshift_r(w[0], w[1], sh);
        hi = __funnelshift_r(w[4], w[5], sh);
    } else {
        /* Q4_0 (the other formats are compiled here but never run: QMMA_OK) */
        const uint8_t *p = row + 18 * u;
        d = __half2float(*(const __half *)p);
        const uintptr_t q = (uintptr_t)(p + 2 + 4 * t);
        const uint32_t *w = (const uint32_t *)(q & ~(uintptr_t)3);
        const uint32_t v = __funnelshift_r(w[0], w[1], 8 * (int)(q & 3));
        lo = moe__qsub8x4(v & 0x0F0F0F0Fu);
        hi = moe__qsub8x4((v >> 4) & 0x0F0F0F0Fu);
    }
}

/* GGUF: where row ri of a stage lies in its slot st; the stage's first row
 * is row rbase of the rows at wrow0, sn bytes apart in memory. A bulk copy
 * of a.cst rows (sv_produce) keeps them as they lie, from the place of its
 * first row (a.pitch apart, as rows copied one by one) after that row's
 * misalignment in 16 bytes. */
static __device__ __forceinline__ const uint8_t *sv_srow(const uint8_t *st, const moe_sv_args &a, const uint8_t *wrow0,
                                                        int64_t sn, int rbase, int ri) {
    const int c0 = a.cst > 1 ? ri - ri % a.cst : ri; /* the first row of ri's copy */
    return st + c0 * a.pitch + (ri - c0) * a.row_bytes + ((uintptr_t)(wrow0 + (int64_t)(rbase + c0) * sn) & 15);
}

/* One stage of rows of a 32-element format (Q8_0, Q4_0) against 8
 * staged tokens on int8 tensor cores:
 * m16n8k32 with 16 weight rows as A and the tokens as B, one unit (32
 * quants) a k step; warp w takes units w, w + 8, ... of every 16-row tile and
 * scales each int32 dot by the row's and the token's scale. The warps'
 * partial sums meet in scr ([warp][row][token]); sv_consume sums them in
 * warp order after a barrier of the consumers (deterministic). */
template <int F>
static __device__ __forceinline__ void sv_qmma_stage(const uint8_t *st, const moe_sv_args &sa, const uint8_t *wrow0, int64_t sn,
                                                     int rbase, int srs, int nrows, int C, const uint8_t *acts,
                                                     float *scr, int warp, int lane) {
    const int U = C / 32, g = lane >> 2, t = lane & 3;
    const int SQ = sv_qact_sq(8);
    const uint8_t *meta = acts + U * SQ; /* records of these formats: the scale, 4 bytes, 9 a unit */
    for (int rt = 0; rt < srs; rt += 16) {
        const int ra = rt + g, rb = rt + g + 8;
        const bool va = ra < srs && rbase + ra < nrows, vb = rb < srs && rbase + rb < nrows;
        const uint8_t *rowa = sv_srow(st, sa, wrow0, sn, rbase, ra);
        const uint8_t *rowb = sv_srow(st, sa, wrow0, sn, rbase, rb);
        float f[4] = {0.f, 0.f, 0.f, 0.f};
        for (int u = warp; u < U; u += 8) {
            uint32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
            float da = 0.f, db = 0.f;
            if (va) sv_qfrag<F>(rowa, u, t, a0, a2, da);
            if (vb) sv_qfrag<F>(rowb, u, t, a1, a3, db);
            const uint8_t *xp = acts + u * SQ + 32 * g + 4 * t;
            const uint32_t b0 = *(const uint32_t *)xp, b1 = *(const uint32_t *)(xp + 16);
            const float *xd = (const float *)(meta + u * 36 + 8 * t); /* tokens 2t, 2t + 1 */
            int c[4];
            dk_mma_s8(c, a0, a1, a2, a3, b0, b1);
            const float x0 = xd[0], x1 = xd[1];
            f[0] += (float)c[0] * (da * x0);
            f[1] += (float)c[1] * (da * x1);
            f[2] += (float)c[2] * (db * x0);
            f[3] += (float)c[3] * (db * x1);
        }
        if (ra < srs) *(float2 *)(scr + (warp * srs + ra) * 8 + 2 * t) = make_float2(f[0], f[1]);
        if (rb < srs) *(float2 *)(scr + (warp * srs + rb) * 8 + 2 * t) = make_float2(f[2], f[3]);
    }
}
#endif

/* Partial sums of one phase (floats) and its staged activation rows (bytes). */
static __host__ __device__ __forceinline__ int sv_red_count(const moe_sv_args *a) {
    const int P = a->dense ? 8 : a->SRS >= 8 ? 1 : 8 / a->SRS;
    const int G = a->phase == MOE_DEC_GATE_UP ? 2 : 1;
    return a->phase == MOE_DEC_DOWN ? a->R * a->K * P : a->R * G * P * a->NT;
}
static __host__ __device__ __forceinline__ int sv_act_bytes(const moe_sv_args *a) {
    const int nrt = a->phase == MOE_DEC_DOWN ? a->K : a->NT;
    return a->dense ? nrt * sv_dense_act_stride(a->C) : sv_qact_bytes(nrt, a->C, a->rb);
}

/* Shared-memory layout of one block of k_sv: barriers, the pair / slot list,
 * partial sums, the int8 consumer's scratch (sv_qmma_scratch_bytes, maybe 0),
 * staged activations, the ring. */
static __host__ __device__ __forceinline__ void sv_layout(const moe_sv_args *a, int *red_off, int *qscr_off,
                                                          int *act_off, int *ring_off, int *total) {
    int o = 128 + 4 * MOE_SV_LIST;
    *red_off = o;
    o += (4 * sv_red_count(a) + 15) & ~15;
    *qscr_off = o;
    o += sv_qmma_scratch_bytes(a);
    *act_off = o;
    o += sv_act_bytes(a);
    o = (o + 127) & ~127;
    *ring_off = o;
    o += a->NS * a->SRS * a->pitch;
    *total = o;
}

/* The fused kernel (both phases in one launch): barriers, two pair/slot
 * lists, both phases' partial sums and activations, and one ring of NS
 * slots of the larger stage. */
typedef struct sv_fused_layout {
    int list2, red1, red2, act1, act2, ring, slot, total;
} sv_fused_layout;
static __host__ __device__ __forceinline__ sv_fused_layout sv_layout_fused(const moe_sv_args *a1, const moe_sv_args *a2) {
    sv_fused_layout L;
    int o = 128 + 4 * MOE_SV_LIST;
    L.list2 = o;
    o += 4 * MOE_SV_LIST;
    L.red1 = o;
    o += (4 * sv_red_count(a1) + 15) & ~15;
    L.red2 = o;
    o += (4 * sv_red_count(a2) + 15) & ~15;
    L.act1 = o;
    o += sv_act_bytes(a1);
    L.act2 = o;
    o += sv_act_bytes(a2);
    o = (o + 127) & ~127;
    L.ring = o;
    const int s1 = a1->SRS * a1->pitch, s2 = a2->SRS * a2->pitch;
    L.slot = s1 > s2 ? s1 : s2;
    o += a1->NS * L.slot;
    L.total = o;
    return L;
}


/* The work of one block in one phase. */
typedef struct sv_job {
    int on;                   /* the block has work in this phase */
    int e1, t2;               /* phase 1: the expert; phase 2: the token */
    int n;                    /* pairs of e1 this block takes, or valid slots of t2 */
    int r0, nrows, nrb, npass, per_pass;
    const int *list;          /* shared memory: the pairs, or the valid slots in order */
} sv_job;

/* Expert-major routing of pair p (phase 1 and DOWN_E), called by every
 * thread: the pairs of one expert, in pair order, go in groups of NT; the
 * block works when p's id is in range and p opens a group (its rank among
 * the expert's pairs is a multiple of NT). Warp 0 lists the group's pairs in
 * *list (count in *s_n, read after a barrier). p's rank: one barrier count
 * per blockDim.x pairs before p. */
template <int NTC>
static __device__ __forceinline__ sv_job sv_route1(const moe_sv_args &a, int p, int tile, int *list, int *s_n) {
    sv_job j;
    memset(&j, 0, sizeof j);
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, TK = a.T * a.K, NT = a.NT;
    j.list = list;
    j.r0 = tile * a.R;
    j.e1 = p < TK ? a.ids[p] : -1;
    const int ok = (unsigned)j.e1 < (unsigned)a.E;
    if constexpr (NTC == 1) { /* the instance for groups of one pair (T = 1; a.NT = 1): every pair in range is a
                               * group of its own, no rank to count (a barrier and a second pass over the ids: 1-6%
                               * of a T = 1 forward, bench/decode/s26 run 4) */
        j.on = ok;
        if (ok && tid == 0) {
            list[0] = p;
            *s_n = 1;
        }
        return j;
    }
    int rank = 0;
    for (int b = 0; b == 0 || b < p; b += blockDim.x) { /* p is the same for the whole block */
        const int q = b + tid, idq = q < TK ? a.ids[q] : -1;
        rank += __syncthreads_count(ok && q < p && idq == j.e1);
    }
    j.on = ok && rank % NT == 0;
    if (j.on && warp == 0) {
        int n = 0;
        for (int b = p; b < TK && n < NT; b += 32) {
            int q = b + lane;
            bool m = q < TK && a.ids[q] == j.e1;
            unsigned bal = __ballot_sync(0xffffffffu, m);
            const int i = n + __popc(bal & ((1u << lane) - 1));
            if (m && i < NT) list[i] = q;
            n += __popc(bal);
        }
        if (lane == 0) *s_n = n < NT ? n : NT;
    }
    return j;
}

/* Phase 1 split at run time (a.dyn; 2 T*K <= MOE_SV_LIST, every thread of
 * the block calls it): the block's own routing of all T*K pairs into its
 * list area, list[0, TK) the pairs expert by expert in pair order and
 * list[TK + g] the g-th group (experts in order, up to NT pairs each): start
 * in list (bits 0-7), pairs (8-11), expert (12+). A pair's rank among its
 * expert's pairs: the lanes before it with the same id (match) plus the
 * expert's pairs in earlier warps (one warp at a time adds its counts, a
 * barrier each), so that the groups are the same in every run. tmp: 3 E
 * ints of scratch (the ring, before any copy into it). Returns the number
 * of groups. */
static __device__ __forceinline__ int sv_route_dyn(const moe_sv_args &a, int *list, int *tmp, int *s_tot) {
    const int tid = threadIdx.x, nth = blockDim.x, E = a.E, TK = a.T * a.K, NT = a.NT;
    const int warp = tid >> 5, lane = tid & 31, nw = nth >> 5;
    int *cnt = tmp, *base = tmp + E, *gbase = tmp + 2 * E, *ginfo = list + TK;
    for (int e = tid; e < E; e += nth) cnt[e] = 0;
    __syncthreads();
    const int e = tid < TK ? a.ids[tid] : -1; /* 2 TK <= MOE_SV_LIST < blockDim.x: one pair a thread */
    const bool ok = (unsigned)e < (unsigned)E;
    const unsigned m = __match_any_sync(0xffffffffu, ok ? e : -1);
    const int leader = __ffs(m) - 1;
    int bw = 0;
    for (int w = 0; w < (TK + 31) >> 5; w++) {
        if (warp == w && ok && lane == leader) {
            bw = cnt[e];
            cnt[e] = bw + __popc(m);
        }
        __syncthreads();
    }
    const int r = __shfl_sync(0xffffffffu, bw, leader) + __popc(m & ((1u << lane) - 1));
    /* exclusive scan of (pairs, groups) over the experts: thread t sums a chunk */
    const int ch = (E + nth - 1) / nth, e0 = min(E, tid * ch), e1 = min(E, e0 + ch);
    int sp = 0, sg = 0;
    for (int i = e0; i < e1; i++) { sp += cnt[i]; sg += (cnt[i] + NT - 1) / NT; }
    int ip = sp, ig = sg; /* inclusive within the warp */
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const int vp = __shfl_up_sync(0xffffffffu, ip, o), vg = __shfl_up_sync(0xffffffffu, ig, o);
        if (lane >= o) { ip += vp; ig += vg; }
    }
    if (lane == 31) { s_tot[2 * warp] = ip; s_tot[2 * warp + 1] = ig; }
    __syncthreads();
    int op = ip - sp, og = ig - sg;
    for (int w = 0; w < warp; w++) { op += s_tot[2 * w]; og += s_tot[2 * w + 1]; }
    for (int i = e0; i < e1; i++) {
        base[i] = op; gbase[i] = og;
        op += cnt[i]; og += (cnt[i] + NT - 1) / NT;
    }
    int G = 0;
    for (int w = 0; w < nw; w++) G += s_tot[2 * w + 1];
    __syncthreads();
    if (ok) {
        list[base[e] + r] = tid;
        if (r % NT == 0) ginfo[gbase[e] + r / NT] = (base[e] + r) | (min(NT, cnt[e] - r) << 8) | (e << 12);
    }
    __syncthreads();
    return G;
}

/* One job of this block's share [u, u1) of a run-time split (a.dyn): the
 * groups' rows in stage steps of SRS rows (group g's steps are g nst ..
 * g nst + nst - 1), a job at most R rows of one group. Called with the step
 * u where the job starts (u0 for the block's first job); sets j and returns
 * the step after it. */
template <int PH>
static __device__ __forceinline__ int sv_dyn_job(const moe_sv_args &a, int u, int u1, const int *list, const int *ginfo,
                                                 sv_job &j) {
    constexpr int G = PH == MOE_DEC_GATE_UP ? 2 : 1;
    memset(&j, 0, sizeof j);
    const int nst = (a.N + a.SRS - 1) / a.SRS, g = u / nst, s0 = u - g * nst;
    const int steps = min(min(u1 - u, nst - s0), max(1, a.R / a.SRS));
    const int gi = ginfo[g];
    j.on = 1;
    j.e1 = gi >> 12;
    j.list = list + (gi & 255);
    j.n = (gi >> 8) & 15;
    j.r0 = s0 * a.SRS;
    j.nrows = min(steps * a.SRS, a.N - j.r0);
    j.nrb = (j.nrows + a.SRS - 1) / a.SRS;
    j.npass = 1; /* n <= NT */
    j.per_pass = j.nrb * G * a.NC;
    return u + steps;
}

/* The block's steps [u0, u1) of a run-time split of G groups (decode.h
 * moe__sv_split_range). */
static __device__ __forceinline__ void sv_dyn_range(const moe_sv_args &a, int G, const int *ginfo, int &u0, int &u1) {
    if (a.dynw > 0 && G > 0) moe__sv_split_range_w(G, (a.N + a.SRS - 1) / a.SRS, ginfo, a.dynw, blockIdx.x, gridDim.x, &u0, &u1);
    else moe__sv_split_range(G, (a.N + a.SRS - 1) / a.SRS, blockIdx.x, gridDim.x, a.dyn == 2, &u0, &u1);
}

/* Phase 2 routing of token t (warp 0 writes the list): the valid slots in order. */
static __device__ __forceinline__ sv_job sv_route2(const moe_sv_args &a, int t, int tile, int *list, int *s_n) {
    sv_job j;
    memset(&j, 0, sizeof j);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, K = a.K;
    j.list = list;
    j.r0 = tile * a.R;
    j.t2 = t;
    j.on = t < a.T;
    if (j.on && warp == 0) {
        int n = 0;
        for (int b = 0; b < K; b += 32) {
            int k = b + lane;
            bool m = k < K && (unsigned)a.ids[t * K + k] < (unsigned)a.E;
            unsigned bal = __ballot_sync(0xffffffffu, m);
            if (m) list[n + __popc(bal & ((1u << lane) - 1))] = k;
            n += __popc(bal);
        }
        if (lane == 0) *s_n = n;
    }
    return j;
}

/* After the barrier that publishes *s_n: the job's extent. */
template <int PH, int NT> static __device__ __forceinline__ void sv_job_finish(const moe_sv_args &a, sv_job &j, int n) {
    constexpr int G = PH == MOE_DEC_GATE_UP ? 2 : 1;
    if (!j.on) return;
    j.n = n; /* phase 1 and DOWN_E: at most NT (one pass) */
    j.nrows = min(a.R, a.N - j.r0);
    j.nrb = (j.nrows + a.SRS - 1) / a.SRS;
    j.npass = PH == MOE_DEC_DOWN ? 1 : (n + NT - 1) / NT;
    j.per_pass = (PH == MOE_DEC_DOWN ? n * j.nrb : j.nrb * G) * a.NC;
}

#ifdef SV_ON
/* The bytes of one bulk copy: rows r .. r1 - 1 (sn apart; cl bytes of the
 * last one from its start), widened to 16-byte bounds: [lo, hi). */
static __device__ __forceinline__ void sv_copy_span(const uint8_t *base, int r, int r1, int64_t sn, int cl, uintptr_t &lo,
                                                    uintptr_t &hi) {
    const uintptr_t ad = (uintptr_t)(base + (int64_t)r * sn), end = ad + (uintptr_t)(r1 - r - 1) * sn + cl;
    lo = ad & ~(uintptr_t)15;
    hi = (end + 15) & ~(uintptr_t)15;
}

/* Producer (the producer warp, lane l copying row l, l + 32, ... of a stage,
 * or rows l a.cst .. (l + 1) a.cst - 1 in one copy where they lie back to
 * back): the bulk copies of every stage of job j, through the ring position
 * gs (continued across jobs). Lane 0 posts the stage's byte count (a warp
 * sum) on the full barrier before any lane copies into it. */
template <int PH>
static __device__ __forceinline__ void sv_produce(const moe_sv_args &a, const sv_job &j, uint8_t *ring, int slot_bytes,
                                                  uint64_t *bars, int NS, int &gs) {
    constexpr int G = PH == MOE_DEC_GATE_UP ? 2 : 1;
    constexpr bool DOWN = PH == MOE_DEC_DOWN;
    const int K = a.K, SRS = a.SRS, NC = a.NC, total = j.npass * j.per_pass, lane = threadIdx.x & 31;
    int c = 0, rb = 0, g = 0, kk = 0, s = 0;
    if (total <= 0) return; /* a token without valid ids: no stages */
    int slot = gs % NS, sph = (gs / NS) & 1;
    int e = DOWN ? a.ids[j.t2 * K + j.list[0]] : j.e1;
    for (int i = 0; i < total; i++, gs++) {
        if (gs >= NS) mbar_wait(smem_u32(&bars[NS + slot]), sph ^ 1);
        const uint8_t *wb = g ? a.w1 : a.w0;
        const int64_t se = g ? a.w1_se : a.w0_se, sn = g ? a.w1_sn : a.w0_sn;
        const int rr0 = rb * SRS, rr1 = min(j.nrows, rr0 + SRS);
        const int cb = c * a.KCb, cl = min(a.KCb, a.row_bytes - cb);
        const uint8_t *base = wb + (int64_t)e * se + (int64_t)j.r0 * sn + cb;
        const uint32_t fb = smem_u32(&bars[slot]);
        uint8_t *dst = ring + (size_t)slot * slot_bytes;
        /* a copy of CR rows (a.cst, rows back to back) or of each row, lane l taking copies l, l + 32, ... */
        const int CR = a.cst > 1 ? a.cst : 1;
        uint32_t bytes = 0;
        for (int r = rr0 + lane * CR; r < rr1; r += 32 * CR) {
            uintptr_t lo, hi;
            sv_copy_span(base, r, min(rr1, r + CR), sn, cl, lo, hi);
            bytes += (uint32_t)(hi - lo);
        }
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) bytes += __shfl_xor_sync(0xffffffffu, bytes, o);
        if (lane == 0) mbar_expect_tx(fb, bytes);
        __syncwarp();
        for (int r = rr0 + lane * CR; r < rr1; r += 32 * CR) {
            uintptr_t lo, hi;
            sv_copy_span(base, r, min(rr1, r + CR), sn, cl, lo, hi);
            bulk_g2s(smem_u32(dst + (r - rr0) * a.pitch), (const void *)lo, (uint32_t)(hi - lo), fb);
        }
        if (++slot == NS) { slot = 0; sph ^= 1; }
        /* the next stage: (c, then rb and kk for the down phase, or g then rb) */
        if (++s == j.per_pass) { /* next pass: the same rows again */
            s = c = rb = g = kk = 0;
            e = DOWN ? a.ids[j.t2 * K + j.list[0]] : j.e1;
        } else if (++c == NC) {
            c = 0;
            if (DOWN) {
                if (++rb == j.nrb) {
                    rb = 0;
                    if (++kk < j.n) e = a.ids[j.t2 * K + j.list[kk]];
                }
            } else if (++g == G) {
                g = 0;
                ++rb;
            }
        }
    }
}

/* DOWN_E, after a block has written its y rows (every consumer thread
 * calls it): each of its pairs counts towards its token's counter for this
 * row tile; the block whose pair completes a token (all of the token's valid
 * slots) writes out[t, r0 .. r0 + nrows) = sum over valid slots k, in slot
 * order, of w[t,k] * y[t*K+k, r]. The sum's order does not depend on which
 * block completes it: deterministic. Counters are zeroed by phase 1. */
static __device__ __forceinline__ void sv_combine_tile(const moe_sv_args &a, const sv_job &j, int *s_tok) {
    const int tid = threadIdx.x, K = a.K, N = a.N, nrows = j.nrows;
    __threadfence(); /* this thread's y stores, before the counts */
    if (tid == 0) s_tok[0] = 0;
    sv_consumer_sync();
    if (tid < j.n) {
        const int t = j.list[tid] / K;
        int nv = 0;
        for (int k = 0; k < K; k++) nv += (unsigned)a.ids[t * K + k] < (unsigned)a.E;
        const unsigned old = atomicAdd(&a.cnt[(int64_t)t * gridDim.y + blockIdx.y], 1u);
        if (old + 1 == (unsigned)nv) s_tok[1 + atomicAdd(&s_tok[0], 1)] = t;
    }
    sv_consumer_sync();
    const int nt = s_tok[0];
    if (!nt) return;
    __threadfence();
    for (int idx = tid; idx < nt * nrows; idx += 256) {
        const int i = idx / nrows, t = s_tok[1 + i], r = j.r0 + (idx - i * nrows);
        float sum = 0.f;
        for (int k = 0; k < K; k++) {
            const int p = t * K + k;
            if ((unsigned)a.ids[p] < (unsigned)a.E) sum += a.w[p] * __ldcg(a.y + (int64_t)p * N + r);
        }
        dk_store_out(a.out, a.out_type, (int64_t)t * N + r, sum);
    }
}

/* One activation block quantised by a warp, lane e holding element e: bit
 * for bit moe_qx_quantize32 (the same float operations; the max and the half
 * sums by warp reductions). *v the lane's value; *dd, *s0, *s1 the block's
 * scale and half sums, on every lane. */
static __device__ __forceinline__ void sv_warp_q32(float x, int lane, int *v, float *dd, int *s0, int *s1) {
    const uint32_t amax = __reduce_max_sync(0xffffffffu, __float_as_uint(x) & 0x7fffffffu);
    if (amax >= 0x7f800000u) { /* Inf or NaN in the block: d = NaN, q = 0 */
        *dd = __uint_as_float(0x7fc00000u);
        *v = 0;
    } else {
        *dd = __uint_as_float(amax) / 127.f;
        const float id = *dd != 0.f ? 1.f / *dd : 0.f;
        *v = (int)roundf(fminf(fmaxf(x * id, -127.f), 127.f));
    }
    *s0 = (int)__reduce_add_sync(0xffffffffu, (unsigned)(lane < 16 ? *v : 0));
    *s1 = (int)__reduce_add_sync(0xffffffffu, (unsigned)(lane < 16 ? 0 : *v));
}

/* Phase 1 of GGUF layers: the job's h values (token q of the pass, row r0 +
 * ri at red[ri * rstride + q]) quantised in 32-element blocks, a warp a
 * (token, block) and a lane an element (sv_warp_q32), into a.hq for phase 2
 * to copy instead of every phase 2 block quantising the f32 rows it stages. A block that the job's rows hold whole is done from
 * shared memory; one that other jobs share (row tiles are not multiples of
 * 32 rows: qwen3's 24, mixtral's 112) goes through the f32 h rows: each job
 * writes its part, counts its rows on the block's counter (a.hq_cnt), and
 * the job whose rows complete the 32 quantises it and zeroes the counter. */
static __device__ __forceinline__ void sv_hq_quantise(const moe_sv_args &a, const sv_job &j, const int *pairs, int nt,
                                                      const float *red, int rstride, int warp, int lane) {
    const int N = a.N, r0 = j.r0, r1 = j.r0 + j.nrows, nb = N >> 5;
    const int b0 = r0 >> 5, nbk = ((r1 - 1) >> 5) - b0 + 1;
    for (int w = warp; w < nt * nbk; w += 8) {
        const int q = w / nbk, b = b0 + (w - q * nbk), r = 32 * b + lane;
        const int64_t pair = pairs[q];
        const bool mine = r >= r0 && r < r1;
        float x = mine ? red[(r - r0) * rstride + q] : 0.f;
        if (32 * b < r0 || 32 * b + 32 > r1) { /* shared with another job */
            float *hp = (float *)a.hout + pair * N + r;
            if (mine) __stcg(hp, x);
            __syncwarp();
            __threadfence();
            const unsigned n = __popc(__ballot_sync(0xffffffffu, mine));
            unsigned *cnt = a.hq_cnt + pair * nb + b, old = 0;
            if (lane == 0) old = atomicAdd(cnt, n);
            old = __shfl_sync(0xffffffffu, old, 0);
            if (old + n != 32) continue; /* the last job to count quantises it */
            __threadfence();
            if (!mine) x = __ldcg(hp);
            if (lane == 0) *cnt = 0u;
        }
        int v, s0, s1;
        float dd;
        sv_warp_q32(x, lane, &v, &dd, &s0, &s1);
        a.hq[pair * N + r] = (uint8_t)v;
        if (lane == 0) *(int4 *)(a.hq + a.hq_rec + (pair * nb + b) * 16) = make_int4(__float_as_int(dd), s0, s1, 0);
    }
}

/* Consumers (the 8 warps): job j's activations, stages and epilogue. Phase 2
 * expects h to be visible (the caller waits for it). */
template <int F, int PH, int NT, bool QM>
static __device__ __forceinline__ void sv_consume(const moe_sv_args &a, const sv_job &j, uint8_t *acts, float *red,
                                                  const uint8_t *ring, int slot_bytes, uint64_t *bars, int NS, int &gs,
                                                  int *s_tok, float *qscr) {
    constexpr bool DENSE = F <= MOE_DF_F16;
    constexpr bool DOWN = PH == MOE_DEC_DOWN;
    constexpr bool DOWNE = PH == MOE_SV_DOWN_E;
    constexpr int HT = DENSE ? (F == MOE_DF_F16 ? MOE_TYPE_F16 : MOE_TYPE_BF16) : MOE_TYPE_F32; /* h's type */
    constexpr int G = PH == MOE_DEC_GATE_UP ? 2 : 1;
    /* Q8_0, Q4_0 against groups of 8 tokens: int8 tensor cores (sv_qmma_stage) where planned */
    constexpr bool QMMA_OK = QM && sv_fmt_has_qmma(F) && NT == 8 && !DOWN;
    const bool qmma_on = QMMA_OK && a.qmma > 0 && qscr;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int K = a.K, SRS = a.SRS, C = a.C, NC = DENSE ? a.NC : 1, n = j.n, nrows = j.nrows, r0 = j.r0;
    const int P = DENSE ? 8 : SRS >= 8 ? 1 : 8 / SRS;
    const int astride = DENSE ? sv_dense_act_stride(C) : 0; /* GGUF: unit-major, sv_qact_sq */
    const int nrt = DOWN ? K : NT; /* rows of the staged activations' layout (GGUF: unit-major) */
    if (DOWN && n == 0) { /* no valid id: out = 0 */
        for (int ri = tid; ri < nrows; ri += 256) dk_store_out(a.out, a.out_type, (int64_t)j.t2 * a.N + r0 + ri, 0.f);
        return;
    }
    if (DOWN) sv_stage_acts<F>(acts, astride, nrt, a.h, HT, j.list, 0, n, 1, K, j.t2, C, a.rb, tid, a.hq, a.hq_rec);
    for (int pass = 0; pass < j.npass; pass++) {
        const int nt = DOWN ? 1 : min(NT, n - pass * NT);
        /* an mma takes 8 tokens whatever nt is; below a.qmma tokens dp4a is cheaper */
        const bool qmma = qmma_on && nt >= a.qmma;
        if (!DOWN) {
            if (pass) sv_consumer_sync(); /* the previous pass is done with acts and red */
            if (DOWNE) sv_stage_acts<F>(acts, astride, nrt, a.h, HT, j.list, pass * NT, nt, 2, K, 0, C, a.rb, tid, a.hq, a.hq_rec);
            else sv_stage_acts<F>(acts, astride, nrt, a.x, a.x_type, j.list, pass * NT, nt, 0, K, 0, C, a.rb, tid);
        }
        sv_consumer_sync();
        float macc[4] = {0.f, 0.f, 0.f, 0.f};
        /* stage s = unit * NC + c, unit = kk * nrb + rb (token-major down) or rb * G + g:
         * counters advanced per stage (no divisions in the loop); ring slot and phase too */
        int c = 0, rb = 0, g = 0, kk = 0;
        int slot = gs % NS, sph = (gs / NS) & 1;
        int e = DOWN ? a.ids[j.t2 * K + j.list[0]] : j.e1;
        /* GGUF: this lane's row within a stage and its part of the row's units.
         * Below 8 rows a stage, a row's units go to P = 8 / SRS warps; from 8
         * rows, each warp takes SRS / 8 rows, gL = 256 / SRS lanes a row (a lane
         * takes every gL-th unit), so that a lane works through several units
         * per stage and sums over gL lanes, not 32 (was one row per warp and a
         * warp sum per row: on 24-unit rows, 8 lanes idle and 10 shuffles and
         * adds per unit per token). Lanes of different rows reading the same
         * unit of an activation row load the same address. */
        const int gP = DENSE ? 1 : P, gL = SRS >= 16 ? 256 / SRS : 32;
        const int gi = (SRS >= 8 ? warp : warp / gP) + 8 * (lane / gL), gli = lane & (gL - 1);
        const int gpp = SRS >= 8 ? 0 : warp - (warp / gP) * gP;
        const int gper = (C / 32 + gP - 1) / gP, gub = gpp * gper, gue = min(C / 32, gub + gper);
        for (int s = 0; s < j.per_pass; s++, gs++) {
            mbar_wait(smem_u32(&bars[slot]), sph);
            const uint8_t *st = ring + (size_t)slot * slot_bytes;
            if (DENSE) {
                /* tensor cores: tokens x 8 rows per mma, k split over the 8 warps */
                const int kc0 = c * a.KC;
                if (c == 0) macc[0] = macc[1] = macc[2] = macc[3] = 0.f;
                if (DOWN) sv_mma_stage<F>(st, a.pitch, acts + kk * astride, astride, 1, kc0, min(a.KC, C - kc0), a.KC / 8, warp, lane, macc);
                else sv_mma_stage<F>(st, a.pitch, acts, astride, nt, kc0, min(a.KC, C - kc0), a.KC / 8, warp, lane, macc);
                if (c == NC - 1) {
                    const int tg = lane >> 2, ri = rb * SRS + 2 * (lane & 3);
                    if (tg < nt) {
#pragma unroll
                        for (int q = 0; q < 2; q++) {
                            if (ri + q >= nrows) continue;
                            if (DOWN) red[((ri + q) * K + kk) * 8 + warp] = macc[q];
                            else red[(((ri + q) * G + g) * 8 + warp) * NT + tg] = macc[q];
                        }
                    }
                }
            } else if (QMMA_OK && qmma) {
                const uint8_t *wb = g ? a.w1 : a.w0;
                const int64_t se = g ? a.w1_se : a.w0_se, sn = g ? a.w1_sn : a.w0_sn;
                sv_qmma_stage<F>(st, a, wb + (int64_t)e * se + (int64_t)r0 * sn, sn, rb * SRS, SRS, nrows, C, acts,
                              qscr + (s & 1) * (8 * SRS * 8), warp, lane);
            } else {
                const uint8_t *wb = g ? a.w1 : a.w0;
                const int64_t se = g ? a.w1_se : a.w0_se, sn = g ? a.w1_sn : a.w0_sn;
                const uint8_t *wrow0 = wb + (int64_t)e * se + (int64_t)r0 * sn;
                const int ri = rb * SRS + gi;
                const bool valid = ri < nrows;
                float acc[NT];
#pragma unroll
                for (int q = 0; q < NT; q++) acc[q] = 0.f;
                /* MXFP4's table words in registers for the unit loop (a shuffle of the
                 * whole warp, before the branch; moe__mxfp4_tab_make) */
                const sv_mx mx = {F == MOE_DF_MXFP4 ? moe__mxfp4_tab_make() : moe__mxfp4_tab{0u, 0u, 0u, 0u, 0u, 0u}, a.rb};
                if (valid) {
                    const uint8_t *row = sv_srow(st, a, wrow0, sn, rb * SRS, gi);
                    const int RB = F == MOE_DF_MXFP4 ? a.rb : sv_qact_rb<F>();
                    const uint8_t *meta = acts + (C / 32) * sv_qact_sq(nrt);
                    constexpr int UR = NT == 1 && !DOWN && F != MOE_DF_MXFP4 ? MOE_SV_UNROLL1 : 1;
                    if (DOWN) sv_row_dot<F, NT, UR>(row, acts + 32 * kk, meta + RB * kk, nrt, 1, gub, gue, gli, gL, acc, mx);
                    else sv_row_dot<F, NT, UR>(row, acts, meta, nrt, nt, gub, gue, gli, gL, acc, mx);
                }
                sv_group_sum_n<NT>(acc, DOWN ? 1 : nt, gL); /* every lane: the shuffles take the whole warp */
                if (valid && gli == 0) {
                    if (DOWN) {
                        red[(ri * K + kk) * P + gpp] = acc[0];
                    } else {
#pragma unroll
                        for (int q = 0; q < NT; q++)
                            if (q < nt) red[((ri * G + g) * P + gpp) * NT + q] = acc[q];
                    }
                }
            }
            /* every consumer thread releases the slot itself (the empty barrier
             * counts 256), its own reads before the producer's next bulk copy
             * into the slot. One arrive per warp after __syncwarp is ordered as
             * well under the PTX memory model, but compute-sanitizer's racecheck
             * reports it once a ring wraps (bench/decode/s7 run 3; clean with
             * this, run 4). A fence.proxy.async before the arrive cost dense
             * qwen3 T = 1 3% (run 4) and racecheck does not need it; like
             * CUTLASS's TMA pipelines, the release is the arrive alone. */
            mbar_arrive(smem_u32(&bars[NS + slot]));
            if (QMMA_OK && qmma) { /* the 8 warps' partial sums of this stage, in warp order */
                sv_consumer_sync();
                const float *sc = qscr + (s & 1) * (8 * SRS * 8);
                for (int idx = tid; idx < SRS * 8; idx += 256) {
                    const int row = idx >> 3, q = idx & 7, ri = rb * SRS + row;
                    if (q < nt && ri < nrows) {
                        float v = 0.f;
#pragma unroll
                        for (int w = 0; w < 8; w++) v += sc[(w * SRS + row) * 8 + q];
                        red[(ri * G + g) * NT + q] = v; /* P = 1 */
                    }
                }
            }
            if (++slot == NS) { slot = 0; sph ^= 1; }
            if (++c == NC) {
                c = 0;
                if (DOWN) {
                    if (++rb == j.nrb) {
                        rb = 0;
                        if (++kk < n) e = a.ids[j.t2 * K + j.list[kk]];
                    }
                } else if (++g == G) {
                    g = 0;
                    ++rb;
                }
            }
        }
        sv_consumer_sync();
        /* epilogue */
        if (DOWN) {
            for (int ri = tid; ri < nrows; ri += 256) {
                const int r = r0 + ri;
                float sum = 0.f;
                for (int kk = 0; kk < n; kk++) {
                    const int k = j.list[kk], e = a.ids[j.t2 * K + k];
                    float v = 0.f;
                    for (int pp = 0; pp < P; pp++) v += red[(ri * K + kk) * P + pp];
                    if (a.b0) v += dk_bias(a.b0, a.b0_type, (int64_t)e * a.b0_se + (int64_t)r * a.b0_sn);
                    sum += a.w[j.t2 * K + k] * v;
                }
                dk_store_out(a.out, a.out_type, (int64_t)j.t2 * a.N + r, sum);
            }
        } else {
            for (int idx = tid; idx < nrows * nt; idx += 256) {
                const int ri = idx / nt, q = idx - ri * nt, r = r0 + ri;
                float v[2] = {0.f, 0.f};
#pragma unroll
                for (int g = 0; g < G; g++)
                    for (int pp = 0; pp < P; pp++) v[g] += red[((ri * G + g) * P + pp) * NT + q];
                if (DOWNE) { /* y = down_e h + b, weighted and summed by sv_combine_tile */
                    const float yv = v[0] + (a.b0 ? dk_bias(a.b0, a.b0_type, (int64_t)j.e1 * a.b0_se + (int64_t)r * a.b0_sn) : 0.f);
                    a.y[(int64_t)j.list[pass * NT + q] * a.N + r] = yv;
                    continue;
                }
                float gv, uv;
                if (G == 2) {
                    gv = v[0] + (a.b0 ? dk_bias(a.b0, a.b0_type, (int64_t)j.e1 * a.b0_se + (int64_t)r * a.b0_sn) : 0.f);
                    uv = v[1] + (a.b1 ? dk_bias(a.b1, a.b1_type, (int64_t)j.e1 * a.b1_se + (int64_t)r * a.b1_sn) : 0.f);
                } else {
                    gv = 0.f;
                    uv = v[0] + (a.b0 ? dk_bias(a.b0, a.b0_type, (int64_t)j.e1 * a.b0_se + (int64_t)r * a.b0_sn) : 0.f);
                }
                const float hv = dk_act(a.act, gv, uv, a.alpha, a.limit);
                if (!DENSE && a.hq) { /* for sv_hq_quantise, in the partial sum this thread alone read */
                    red[ri * G * P * NT + q] = hv;
                    continue;
                }
                const int64_t hi = (int64_t)j.list[pass * NT + q] * a.N + r;
                if constexpr (F == MOE_DF_F16) ((__half *)a.hout)[hi] = __float2half_rn(hv);
                else if constexpr (F == MOE_DF_BF16) ((__nv_bfloat16 *)a.hout)[hi] = __float2bfloat16_rn(hv);
                else ((float *)a.hout)[hi] = hv;
            }
            if (!DENSE && !DOWNE && a.hq) {
                sv_consumer_sync();
                sv_hq_quantise(a, j, j.list + pass * NT, nt, red, G * P * NT, warp, lane);
            }
        }
    }
    if (DOWNE) sv_combine_tile(a, j, s_tok);
}

static __device__ __forceinline__ void sv_init_bars(uint64_t *bars, int NS) {
    if (threadIdx.x == 0) {
        for (int i = 0; i < NS; i++) {
            mbar_init(smem_u32(&bars[i]), 1);
            mbar_init(smem_u32(&bars[NS + i]), MOE_SV_THREADS - 32);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
}

/* Every block of the (cooperative) launch has written its h: gb[0] counts
 * arrivals; called by the 256 consumer threads. */
static __device__ __forceinline__ void sv_grid_sync(unsigned *gb) {
    sv_consumer_sync();
    if (threadIdx.x == 0) {
        __threadfence();
        atomicAdd(&gb[0], 1u);
        unsigned v;
        do {
            asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(gb) : "memory");
        } while (v < gridDim.x);
        __threadfence();
        /* the last block to pass resets both counters for the next launch */
        if (atomicAdd(&gb[1], 1u) == gridDim.x - 1) {
            gb[1] = 0;
            gb[0] = 0;
            __threadfence();
        }
    }
    sv_consumer_sync();
}
#endif

/* One phase per launch: grid (pairs or tokens, row tiles). QM: the instance
 * with the int8 tensor-core consumer (its own code, so that the dp4a
 * instances stay as they were: sharing one instance made gpt-oss-20b Q8_0
 * T = 32 1.16x slower with the int8 path unused; bench/decode/s7 run 15).
 * Registers for two blocks an SM, which the planner counts on (sv_plan, bps;
 * 96 a thread: the row loops per token count, sv_row_dot, took some
 * instances to 117), and for three in Q8_0's dp4a instances (72): at 90-92
 * there, a down block could not join the gate/up blocks on an SM before they
 * finished (programmatic launch), and gpt-oss-20b Q8_0 T = 16 lost 5-14% as a
 * layer while each kernel alone got faster (s12 runs 24-26). */
template <int F, int PH, int NT, bool QM>
__global__ void __launch_bounds__(MOE_SV_THREADS, F == MOE_DF_Q8_0 && !QM ? 3 : 2) k_sv(const moe_sv_args a) {
#ifdef SV_ON
    constexpr bool DOWN = PH == MOE_DEC_DOWN, DOWNE = PH == MOE_SV_DOWN_E;
    extern __shared__ __align__(128) uint8_t sm[];
    __shared__ int s_n, s_tok[1 + NT]; /* DOWN_E: tokens this block completes */
    __shared__ int s_tot[2 * (MOE_SV_THREADS / 32)];
    int red_off, qscr_off, act_off, ring_off, total;
    sv_layout(&a, &red_off, &qscr_off, &act_off, &ring_off, &total);
    uint64_t *bars = (uint64_t *)sm; /* full [0, NS), empty [NS, 2 NS) */
    int *list = (int *)(sm + 128);
    const int NS = a.NS, slot_bytes = a.SRS * a.pitch;
    const bool dyn = !DOWN && !DOWNE && a.dyn;
    int u0 = 0, u1 = 0;
    sv_job j;
    if (DOWNE) { /* expert-major down: routed as phase 1; h waited for below */
        j = sv_route1<NT>(a, blockIdx.x, blockIdx.y, list, &s_n);
        if (blockIdx.x == 0) { /* tokens without an id in range: out = 0 (no pair completes them) */
            const int r0 = blockIdx.y * a.R, nr = min(a.R, a.N - r0), lane = threadIdx.x & 31;
            for (int t = threadIdx.x >> 5; t < a.T; t += blockDim.x >> 5) {
                int nv = 0;
                for (int k = lane; k < a.K; k += 32) nv += (unsigned)a.ids[t * a.K + k] < (unsigned)a.E;
                if (!__any_sync(0xffffffffu, nv))
                    for (int r = lane; r < nr; r += 32) dk_store_out(a.out, a.out_type, (int64_t)t * a.N + r0 + r, 0.f);
            }
        }
        if (!j.on) return;
    } else if (!DOWN) {
        dk_grid_wait();
        dk_grid_launch_dependents();
        /* the expert-major down launch's counters, for this forward: every block a slice */
        if (a.cnt) {
            const int nb = gridDim.x * gridDim.y, b = blockIdx.y * gridDim.x + blockIdx.x;
            for (int i = b * blockDim.x + threadIdx.x; i < a.ncnt; i += nb * blockDim.x) a.cnt[i] = 0;
        }
        if (dyn) {
            const int G = sv_route_dyn(a, list, (int *)(sm + ring_off), s_tot);
            sv_dyn_range(a, G, list + a.T * a.K, u0, u1);
            if (u0 >= u1) return;
            /* the ring held the routing's scratch: generic writes before the bulk copies into it */
            asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        } else {
            j = sv_route1<NT>(a, blockIdx.x, blockIdx.y, list, &s_n);
            if (!j.on) return;
        }
    } else {
        j = sv_route2(a, blockIdx.x, blockIdx.y, list, &s_n);
    }
    sv_init_bars(bars, NS);
    __syncthreads();
    if (!dyn) sv_job_finish<PH, NT>(a, j, s_n);
    int gs = 0;
    if (threadIdx.x >= 256) { /* the producer warp */
        if (dyn)
            for (int u = u0; u < u1;) {
                u = sv_dyn_job<PH>(a, u, u1, list, list + a.T * a.K, j);
                sv_produce<PH>(a, j, sm + ring_off, slot_bytes, bars, NS, gs);
            }
        else sv_produce<PH>(a, j, sm + ring_off, slot_bytes, bars, NS, gs);
        return;
    }
    if (DOWN || DOWNE) dk_grid_wait(); /* h comes from phase 1 */
    if (dyn) {
        for (int u = u0; u < u1;) {
            u = sv_dyn_job<PH>(a, u, u1, list, list + a.T * a.K, j);
            sv_consume<F, PH, NT, QM>(a, j, sm + act_off, (float *)(sm + red_off), sm + ring_off, slot_bytes, bars, NS, gs,
                                  s_tok, (float *)(sm + qscr_off));
        }
        return;
    }
    sv_consume<F, PH, NT, QM>(a, j, sm + act_off, (float *)(sm + red_off), sm + ring_off, slot_bytes, bars, NS, gs, s_tok,
                          (float *)(sm + qscr_off));
#endif
}

/* Both phases in one cooperative launch of gridDim.x blocks (all resident):
 * block b takes phase 1 item b (pair b % TK, row tile b / TK) and phase 2 item
 * b (token b % T, row tile b / T). Its producer streams the phase 2 rows as
 * soon as the phase 1 stages are issued, so they arrive while the other
 * blocks finish phase 1 and the grid-wide barrier (gb) completes. */
template <int F, int PH1, int NT>
__global__ void __launch_bounds__(MOE_SV_THREADS, 2) k_svf(const moe_sv_args a1, const moe_sv_args a2, unsigned *gb) {
#ifdef SV_ON
    extern __shared__ __align__(128) uint8_t sm[];
    __shared__ int s_n1, s_n2, s_tot[2 * (MOE_SV_THREADS / 32)];
    const sv_fused_layout L = sv_layout_fused(&a1, &a2);
    uint64_t *bars = (uint64_t *)sm;
    int *list1 = (int *)(sm + 128);
    const int NS = a1.NS, b = blockIdx.x, TK = a1.T * a1.K;
    const int n1 = TK * ((a1.N + a1.R - 1) / a1.R), n2 = a2.T * ((a2.N + a2.R - 1) / a2.R);
    int u0 = 0, u1 = 0;
    sv_job j1;
    if (a1.dyn) { /* phase 1 split at run time over the whole grid */
        const int G = sv_route_dyn(a1, list1, (int *)(sm + L.ring), s_tot);
        sv_dyn_range(a1, G, list1 + TK, u0, u1);
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        j1.on = 0;
    } else {
        j1 = sv_route1<NT>(a1, b < n1 ? b % TK : TK, b / TK, list1, &s_n1);
    }
    sv_job j2 = sv_route2(a2, b < n2 ? b % a2.T : a2.T, b / a2.T, (int *)(sm + L.list2), &s_n2);
    sv_init_bars(bars, NS);
    __syncthreads();
    if (!a1.dyn) sv_job_finish<PH1, NT>(a1, j1, s_n1);
    sv_job_finish<MOE_DEC_DOWN, 1>(a2, j2, s_n2);
    int gs = 0;
    if (threadIdx.x >= 256) { /* the producer warp */
        for (int u = u0; u < u1;) {
            u = sv_dyn_job<PH1>(a1, u, u1, list1, list1 + TK, j1);
            sv_produce<PH1>(a1, j1, sm + L.ring, L.slot, bars, NS, gs);
        }
        if (j1.on && !a1.dyn) sv_produce<PH1>(a1, j1, sm + L.ring, L.slot, bars, NS, gs);
        if (j2.on) sv_produce<MOE_DEC_DOWN>(a2, j2, sm + L.ring, L.slot, bars, NS, gs);
        return;
    }
    for (int u = u0; u < u1;) {
        u = sv_dyn_job<PH1>(a1, u, u1, list1, list1 + TK, j1);
        sv_consume<F, PH1, NT, false>(a1, j1, sm + L.act1, (float *)(sm + L.red1), sm + L.ring, L.slot, bars, NS, gs, NULL, NULL);
    }
    if (j1.on && !a1.dyn) sv_consume<F, PH1, NT, false>(a1, j1, sm + L.act1, (float *)(sm + L.red1), sm + L.ring, L.slot, bars, NS, gs, NULL, NULL);
    sv_grid_sync(gb);
    if (j2.on) sv_consume<F, MOE_DEC_DOWN, 1, false>(a2, j2, sm + L.act2, (float *)(sm + L.red2), sm + L.ring, L.slot, bars, NS, gs, NULL, NULL);
#endif
}

#endif
