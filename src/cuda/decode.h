/*
 * The small-batch ("decode") expert kernels behind the backends "cuda-decode"
 * (bf16/f16 weights) and "cuda-quant" (GGUF block weights): what
 * src/cuda/decode.cu hands to the per-format kernel files
 * (decode_dense.cu, qmm_legacy.cu, qmm_k.cu). Included by .cu files only.
 *
 * One forward of Tc tokens is three launches, no host sync, no allocation:
 *   route   one block: sorts the (expert, pair) keys, lists the active experts
 *   phase 1 grid (I row blocks, active experts): h[pair] = act(gate x + bg, up x + bu)
 *   phase 2 grid (D row blocks, active experts): y[pair] = w * (down h + bd), and the
 *           last block of each row block sums the K slots of every token in
 *           slot order into out (an int arrival counter, no float atomics)
 * Phases 1 and 2 are one kernel template: weight fragments decoded into
 * registers (bf16 or f16), tokens as the N = 8 side of mma.sync m16n8k16.
 */
#ifndef MOE_CUDA_DECODE_H
#define MOE_CUDA_DECODE_H

#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

/* Weight formats of the decode kernels. */
enum {
    MOE_DF_BF16 = 0,
    MOE_DF_F16,
    MOE_DF_Q4_0,
    MOE_DF_Q8_0,
    MOE_DF_MXFP4,
    MOE_DF_Q2_K,
    MOE_DF_Q3_K,
    MOE_DF_Q4_K,
    MOE_DF_Q5_K,
    MOE_DF_Q6_K,
    MOE_DF_COUNT
};

/* Pairs (token, slot) one route launch can sort in shared memory; a forward
 * with more is split into chunks of tokens. */
#define MOE_DEC_MAXP 4096

/* Phases of the expert kernel. */
enum { MOE_DEC_GATE_UP = 0, MOE_DEC_UP = 1, MOE_DEC_DOWN = 2 };

typedef struct moe_dec_args {
    /* weights [E, N, C]: byte strides per expert and per row; w1 = up in phase GATE_UP */
    const uint8_t *w0, *w1;
    int64_t w0_se, w0_sn, w1_se, w1_sn;
    int64_t row_bytes;        /* bytes of one row of w0 (for the L2 prefetch) */
    int N, C, n_chunks, RW, KS; /* rows, reduced dim, chunks of C, row groups x K slices = 8 warps */
    /* biases [E, N] (element strides), NULL = none; types f32/f16/bf16 */
    const void *b0, *b1;
    int b0_type, b1_type;
    int64_t b0_se, b0_sn, b1_se, b1_sn;
    int act;
    float alpha, limit;
    /* B side: x [T, D] (phase 1; xmode 0 same type as the mma, 1 f32, 2 f16 -> bf16, 3 bf16 -> f16)
     * or h [TK, I] (phase 2, the mma type) */
    const void *xb;
    int64_t ldb; /* elements per row of xb */
    int xmode;
    int T, K, E;
    /* routing (written by the route kernel) */
    const int *n_active, *act_e, *act_off, *sorted;
    /* outputs */
    void *h;                  /* phase 1: [TK, I] mma type */
    float *y;                 /* phase 2: [TK, D] f32 weighted rows */
    const float *w;           /* [T, K] routing weights */
    const int32_t *ids;       /* [T, K] */
    void *out;                /* [T, D] act type */
    int out_type;
    unsigned *counters;       /* [row blocks of phase 2] */
    int pdl;                  /* launched with programmatic dependent launch (sm_90) */
    /* the int8 kernels' phase 1 (decode_qmma.cu k_qg): h quantised in its epilogue as k_qg_quant would for
     * phase 2, int8 [TK, I] at hq (MXFP4's nibble order where hq_nib), scales hqd and d * sums hqs [TK, hq_ldx];
     * NULL: h as f32 in h */
    int8_t *hq;
    float *hqd, *hqs;
    int hq_ldx, hq_nib;
    /* the int8 kernels copy their stages by linear 16-byte chunks (1: moe__qg_linear), or row by row (0) */
    int qg_lin;
} moe_dec_args;

/* Launches the expert kernel of format fmt (one of the file's formats), phase
 * ph, NT token tiles of 8 per pass, on grid (row blocks, active experts) of
 * 256 threads. cudaErrorInvalidValue if fmt is not in this file. */
cudaError_t moe__dec_launch_dense(int fmt, int ph, int nt, const moe_dec_args *a, dim3 grid, cudaStream_t s);
cudaError_t moe__dec_launch_qlegacy(int fmt, int ph, int nt, const moe_dec_args *a, dim3 grid, cudaStream_t s);
cudaError_t moe__dec_launch_qk(int fmt, int ph, int nt, const moe_dec_args *a, dim3 grid, cudaStream_t s);

/* decode_qmma.cu: cuda-quant's int8 tensor-core kernels for groups of tokens
 * (formats with moe__qg_fmt_ok: Q8_0, Q4_0, Q4_K, Q5_K, Q6_K, MXFP4). moe__qg_prepare sets the
 * shared memory of a format's instances on the current device (an error when
 * the device has too little); moe__qg_quant quantises R rows of C elements
 * (type MOE_TYPE_*) into int8 blocks of 32: q [R, C], d and d * sum(q) [R, ldx]
 * (MXFP4 layers: q in nibble order); moe__qg_launch runs phase ph (MOE_DEC_*)
 * on grid (row tiles: moe__qg_rows(fmt) / 2 rows gated, else moe__qg_rows(fmt);
 * active expert slots), a->xb the
 * codes of x (phases 1) or h (phase 2), xd / xs their scales and sums, NT token
 * tiles of 8 a pass (1, 2 or 4), the instances built for bps (2 or 3) blocks
 * an SM; phase 1 writes a->h as f32. */
int moe__qg_fmt_ok(int fmt);
/* weight rows a block of format fmt's kernels (gate/up: half of each): 64 or 128 */
int moe__qg_rows(int fmt);
/* the blocks an SM format fmt's instances run at when bps is asked for (Q5_K
 * and Q6_K have instances for two only) */
static inline int moe__qg_bps(int fmt, int bps) { return fmt == MOE_DF_Q5_K || fmt == MOE_DF_Q6_K ? 2 : bps; }
/* whether the int8 kernels of format fmt copy their stages by linear 16-byte chunks (moe_dec_args.qg_lin) on
 * the weights of a (w0, and w1 where gated): Q4_K and Q5_K always, the others where the weights' address and
 * strides are multiples of 16 bytes; MXFP4 and Q6_K (stages of 136 and 210 bytes a row) only with knob set
 * (MOE_QG_LIN=0: row by row, as before session 35) */
int moe__qg_linear(int fmt, int knob, const moe_dec_args *a, int gated);
/* Row strides the int8 kernels take: their linear stage copies address a
 * block's 128 rows by 20-bit offsets / 16 from its first row, so a row stride
 * must stay below 128 KB (Q8_0 rows of ~123 K elements, Q4_K of ~233 K; the
 * presets' longest are 15 KB). Longer rows leave the layer to the other paths. */
static inline int moe__qg_row_stride_ok(int64_t row_bytes) { return row_bytes >= 0 && row_bytes < ((int64_t)1 << 17); }

/* How cuda-sm90's GEMMs on GGUF blocks (gemm_sm90_q.cu) have TMA read one
 * weight's rows: data at `data`, expert stride se, row stride sn, rows of
 * row_bytes, `rows` of them an expert. TMA needs 16-byte aligned starts and
 * strides; rows of Q8_0, Q4_0, Q2_K, MXFP4, Q3_K and Q6_K with neither but
 * starts and strides of whole units (4 bytes for Q8_0, Q4_0 and Q2_K, 2 for
 * the others) are read through a map from the
 * 16-byte boundary *a0 units below the data over groups of 2^*lg rows (a
 * multiple of 16 bytes), which stays within the tensor when a group's last
 * row ends before the next group starts. Returns MOE_QROWS_OK, or why not. */
enum { MOE_QROWS_OK = 0, MOE_QROWS_ALIGN, MOE_QROWS_PAST_GROUP, MOE_QROWS_GROUP_ROWS };
/* the bytes of a unit (16: rows TMA must address one by one) */
static inline int moe__quant_unit(int fmt) {
    return fmt == MOE_DF_Q8_0 || fmt == MOE_DF_Q4_0 || fmt == MOE_DF_Q2_K                          ? 4
           : fmt == MOE_DF_MXFP4 || fmt == MOE_DF_Q6_K || fmt == MOE_DF_Q3_K ? 2
                                                                             : 16;
}
static inline int moe__quant_rows_plan(int fmt, uintptr_t data, int64_t se, int64_t sn, int64_t row_bytes, int64_t rows,
                                       int *lg, int *a0) {
    const int U = moe__quant_unit(fmt);
    *lg = *a0 = 0;
    if (sn <= 0 || se < 0 || row_bytes <= 0 || rows <= 0) return MOE_QROWS_ALIGN;
    if (U < 16 && !((data | (uintptr_t)sn) & (uintptr_t)(U - 1))) {
        const int64_t m = (sn % 16) / U, per = 16 / U; /* units: of the stride mod 16, in 16 bytes */
        int64_t G = 1;
        while ((m * G) % per) G *= 2;
        *lg = G == 8 ? 3 : G == 4 ? 2 : G == 2 ? 1 : 0;
        *a0 = (int)(data % 16) / U;
        if (*a0 && U * *a0 + row_bytes > sn) return MOE_QROWS_PAST_GROUP;
        if (rows % G) return MOE_QROWS_GROUP_ROWS;
    }
    if (((data - (uintptr_t)(U < 16 ? U * *a0 : 0)) | (uintptr_t)se | (uintptr_t)(sn << *lg)) & 15)
        return MOE_QROWS_ALIGN;
    return MOE_QROWS_OK;
}
size_t moe__qg_smem(int fmt, int nt, int bps);
cudaError_t moe__qg_prepare(int fmt);
cudaError_t moe__qg_quant(const void *src, int type, int R, int C, int8_t *q, float *d, float *s, int ldx, int fmt,
                          int pdl, cudaStream_t st);
cudaError_t moe__qg_launch(int fmt, int ph, int nt, int bps, const moe_dec_args *a, const float *xd, const float *xs,
                           int ldx, dim3 grid, cudaStream_t s);

/* dequant.cu: the GGUF blocks of weight w ([E, N, C], byte strides se, sn) as
 * bf16 (out_f16 = 0) or f16 rows dst [E, N, C], contiguous, for the experts
 * with used[e] != 0 (used NULL: all); and used[] from the ids of a forward. */
cudaError_t moe__dec_dequant(int fmt, int out_f16, const uint8_t *w, int64_t se, int64_t sn, int E, int N, int C,
                             const unsigned char *used, void *dst, int sm_count, cudaStream_t s);
cudaError_t moe__dec_mark_used(const int32_t *ids, int TK, int E, unsigned char *used, cudaStream_t s);

/* cuda-decode hands a forward to the grouped GEMM backend (when it takes the
 * layer) above T = moe__dec_max_t(E, K): 4, or 2 where E <= 4K (the experts average a
 * pair each by T = 4). Measured on an H200 in session 5 (bench/decode/s5/
 * run7_cross.jsonl: the mma decode kernels, cuda-jit and cuda-sm90 at T = 4..512,
 * same routing per T): since session 3's 64-row tiles the GEMM reads the touched
 * experts at 75-97% of the read bandwidth from T = 8 (qwen3 T=8 146 vs 171 us,
 * T=32 278 vs 310; mixtral T=4 452 vs 551, T=8 597 vs 669; deepseek-v3 2-5% ahead
 * from T = 4), while gpt-oss-20b/120b keep the decode kernels ahead up to T = 16-32
 * (T=8: 246 vs 231, 398 vs 372). Over the 25 measured (preset, T) this rule is
 * within 1.0% of the faster path on average, 7.1% at worst (gpt-oss-120b T=8);
 * session 2's rule (3 pairs per expert, T > 3E/K) was 3.8% and 21.9% (mixtral T=4).
 * Session 10 (H200 and H100, bench/decode/s10 runs 25-26, T = 2..8): since session
 * 9's GEMM tiles the GEMM also leads gpt-oss at T = 4 and 8 (within 3.5% where it
 * does not), so T > 4 stands; below it, large touched experts go to the GEMM
 * earlier (moe__dec_gemm_min_t, below).
 * Session 35 (H200, bench/decode/s35 run 6, after sessions 32-34 sped up the streaming
 * kernels at T = 3-6 and changed the GEMM's order of units): the streaming kernels
 * lead gpt-oss-20b at T = 4 / 5 / 6 by 8.8 / 4.6 / 7.7%, gpt-oss-120b by 9.3 / 1.3 /
 * 2.7% and qwen3 at T = 5 by 7.7% (T = 6 1% behind); the GEMM leads from T = 8. So
 * T > 6 where E > 4K. */
static inline int64_t moe__dec_max_t(int64_t E, int64_t K) { return E <= 4 * K ? 2 : 6; }

/* cuda-decode (dense weights) hands T >= this to the grouped GEMM even below
 * its T threshold max_t: the first T >= 2 at which the experts a forward is
 * expected to touch (E (1 - (1 - K/E)^T), uniform routing) hold
 * MOE_DEC_GEMM_MIN_BYTES or more of weights (expert_bytes each); INT64_MAX if
 * none up to max_t. Session 10's 620 MB was measured on
 * an H200 and an H100 (bench/decode/s10, runs 25-26, every dense preset at
 * T = 2, 3, 4): the GEMM wins by 4-7% at deepseek-v3 T = 2-4 (1.4 GB at T =
 * 2), by 1-4% at mixtral T = 2 (1.2 GB) and by 3.5-6% at gpt-oss-20b/120b
 * T = 4 (660 / 760 MB), and loses by 4-10% at gpt-oss T = 3 (530 / 580 MB).
 * Session 35 (bench/decode/s35 run 6): the streaming kernels now lead gpt-oss at
 * T = 4-6 (up to 1.1 GB on gpt-oss-120b at T = 6), deepseek-v3 T = 2 (1.39 GB)
 * and mixtral T = 3 (1.6 GB) stay even or ahead on the GEMM: 1.2 GB. */
#define MOE_DEC_GEMM_MIN_BYTES 1.2e9
/* P(a given expert is not among the K distinct experts of any of T tokens)
 * = (1 - K / E)^T; E (1 - that) experts are touched on average. */
static inline double moe__dec_untouched(int64_t T, int64_t K, int64_t E) {
    double q = 1.0;
    for (int64_t t = 0; t < T; t++) q *= 1.0 - (double)K / (double)E;
    return q;
}

static inline int64_t moe__dec_gemm_min_t(int64_t E, int64_t K, double expert_bytes, int64_t max_t) {
    /* Not at T = 2 where experts are few (E <= 4K): session 27 (H200,
     * bench/decode/s27 run 4, three rounds of 4 routings) found mixtral T = 2
     * streamed in 332 us against 354 on the grouped GEMM (deepseek-v3 T = 2:
     * 354 against 350, so it keeps T = 2); session 10 had the GEMM 1-4% ahead there */
    for (int64_t t = E <= 4 * K ? 3 : 2; t <= max_t && t < 64; t++)
        if ((double)E * (1.0 - moe__dec_untouched(t, K, E)) * expert_bytes >= MOE_DEC_GEMM_MIN_BYTES) return t;
    return INT64_MAX;
}

/* The GGUF streaming kernels' down phase is expert-major (each touched
 * expert's rows read once, y rows and a combine) at T = 1 and from T = 8 where
 * T K >= E; below that, token-major (each token reads its K experts' rows and
 * sums them itself, no y), unless the rows it reads again are many: the
 * expected pairs beyond the distinct experts, T K - E (1 - (1 - K/E)^T), times
 * an expert's down bytes, 300 MB or more. Session 27 (H200, bench/decode/s27
 * run 12, three rounds of 2 routings, expert-major / token-major time):
 * deepseek-v3 T = 24 (about 660 / 860 / 430 MB read again) Q6_K / Q8_0 /
 * MXFP4 0.865 / 0.853 / 0.893, T = 16 (340 / 440 / 220 MB) 0.962 / 0.965 /
 * 0.995, T = 12 (200-260 MB) 1.00, T = 8 (60-115 MB) 1.02-1.08; gpt-oss-120b
 * Q8_0 / MXFP4 T = 24 (240 / 130 MB) 1.011 / 1.038, T = 16 1.03-1.07. */
#define MOE_SV_DOWN_AGAIN_BYTES 300e6
static inline int moe__sv_down_expert_gguf(int64_t T, int64_t K, int64_t E, double down_bytes) {
    if (T == 1) return 1;
    if (T < 8) return 0;
    if (T * K >= E) return 1;
    const double again = (double)(T * K) - (double)E * (1.0 - moe__dec_untouched(T, K, E));
    return again * down_bytes >= MOE_SV_DOWN_AGAIN_BYTES;
}

/* cuda-quant streams its GGUF blocks (decode_stream.cuh) up to this many pairs
 * an expert on average, the mma decode kernels above (up to the prefill path):
 * 4 for Q4_K (session 12, H200 run 9: the streaming kernels at 4 pairs an expert
 * 0.71x the mma kernels' time on mixtral T = 16 and 0.84x on qwen3 T = 64, at 8
 * pairs 1.24x on mixtral T = 32; they were 1.19-1.4x at 4 pairs before session
 * 12's decoders), 8 for the others (sessions 6-7, decode.cu sv_init; Q5_K, 2 until
 * session 13, streams at 4 and 8 pairs in 0.40-0.50x and 0.65-0.79x the mma kernels'
 * time on mixtral, qwen3 and deepseek-v3: bench/decode/s13 run 12), and 16
 * for MXFP4 experts of at most 20 MB (expert_bytes: gate, up and down blocks),
 * whose second group of 8 tokens reads the expert's rows again largely from L2:
 * H200 and H100, bench/decode/s10 runs 29-33, gpt-oss-20b (13 MB) T = 96-128
 * 1.37-1.44x and gpt-oss-120b T = 512 1.17x faster than the mma kernels, qwen3
 * (2.5 MB) even, while mixtral (93 MB) T = 64 is 1.08x and deepseek-v3 (23 MB)
 * T = 512 1.57x slower streaming, so they keep 8. */
static inline int64_t moe__dec_stream_pairs(int fmt, double expert_bytes) {
    if (fmt == MOE_DF_Q4_K) return 4;
    if (fmt == MOE_DF_MXFP4 && expert_bytes <= 20e6) return 16;
    return 8;
}

/* The same with cuda-quant's int8 tensor-core kernels (decode_qmma.cu) taking
 * the layer's formats (qg): they stream each expert's rows once for up to 32
 * tokens where the streaming kernels make a pass per 8 (or a dp4a pass per
 * token), and take over from 4 pairs an expert on experts of 10 MB or more.
 * Measured on an H200 (bench/decode/s16 runs 3-6), int8 against streaming
 * kernels: mixtral's 47-93 MB experts at 4 pairs (T = 16) Q8_0 579 vs 797
 * us, Q4_K 425 vs 570, MXFP4 501 vs 600, at 2 pairs (T = 8) 1.2-1.4x slower;
 * deepseek-v3's 23-47 MB experts at 4 pairs (T = 128) Q4_K 3340 vs 3757, Q8_0
 * 4643 vs 4905, MXFP4 3879 vs 3748 (the one loss), at 8 pairs 1.5-2x faster;
 * gpt-oss-20b's 13-26 MB experts at 4 pairs (T = 32) MXFP4 344 vs 394, Q8_0 431
 * vs 423, at 8 pairs 1.3x faster. Below 10 MB (qwen3's 2.5-5 MB experts) the
 * streaming kernels lead up to 8 pairs (Q8_0 T = 128 432 vs 578, Q4_K 477 vs
 * 514), so Q4_K streams to 8 there too; at 16 pairs (T = 256) the int8 kernels
 * lead (Q4_K 884 vs 970). Q8_0's kernels on 64-row blocks (session 17, run 9)
 * lead there from 4 pairs: qwen3 Q8_0 T = 64 309 vs 327 us, T = 128 423 vs
 * 430 (at 2 pairs, T = 32, 248 vs 208: the streaming kernels keep 1-3).
 * Session 18's K-quant kernels (scales once a super-block, linear stage
 * copies; bench/decode/s18 run 9, cross.py) moved the K-quants: on experts of
 * 10 MB or more the int8 kernels lead from 2 pairs (mixtral T = 8: Q4_K 269 vs
 * 322 us, Q5_K 312 vs 376, Q6_K 444 vs 500; deepseek-v3 Q4_K T = 64 2018 vs
 * 2219; at 1 pair 1.00-1.20x slower), below 10 MB from 4 (qwen3 T = 64: Q4_K
 * 266 vs 320, Q5_K 304 vs 364, Q6_K 370 vs 416; at 2 pairs 1.05-1.09x
 * slower). Q8_0 and MXFP4 did not move (Q8_0 at 2 pairs: mixtral 1.04x,
 * deepseek-v3 1.22x, gpt-oss-20b 1.01x slower; MXFP4 on qwen3 still streams
 * to 8: 1.05-1.07x slower at 4-8 pairs). Session 19's MXFP4 decode (positive
 * and negative codes on two mma; bench/decode/s19 runs 1-2 on an H100, run 12
 * on an H200) moved MXFP4: at 3 pairs the int8 kernels lead (H200: mixtral
 * T = 12 400 vs 502 us, gpt-oss-20b T = 24 253 vs 332), at 2 they do not
 * (mixtral T = 8 361 vs 315, gpt-oss-20b T = 16 226 vs 215, gpt-oss-120b T =
 * 64 739 vs 728); on qwen3's 2.5 MB experts they lead at 4 pairs (T = 64 277
 * vs 315) and trail at 2 (T = 32 207 vs 185). Session 27 moved Q8_0 on large
 * experts to 2 pairs (1 from 100 MB) and the small experts' formats to 2. */
static inline int64_t moe__dec_stream_pairs_qg(int fmt, double expert_bytes, int qg) {
    const int64_t p = moe__dec_stream_pairs(fmt, expert_bytes);
    if (!qg) return p;
    const int kq = fmt == MOE_DF_Q4_K || fmt == MOE_DF_Q5_K || fmt == MOE_DF_Q6_K;
    /* Q8_0 on experts of 10 MB or more: 2 pairs, 1 from 100 MB (session 27,
     * H200, bench/decode/s27 runs 5-6, int8 / streaming time: mixtral's 187 MB
     * experts 0.98 at T = 6 (1.5 pairs), 0.86 at 8, 0.67 at 10-12, 1.04 at 5;
     * gpt-oss-20b's 26 MB 1.05 at 2 pairs (T = 16), 0.81 at 2.5; deepseek-v3's
     * 47 MB 1.03 at 2 pairs (T = 64), 0.77 at 3; gpt-oss-120b 0.99 at 3). It was 3. */
    if (expert_bytes >= 10e6)
        return kq ? 1 : fmt == MOE_DF_MXFP4 ? 2 : fmt == MOE_DF_Q8_0 ? (expert_bytes >= 100e6 ? 1 : 2) : p < 3 ? p : 3;
    /* below 10 MB 2 pairs (was 3): qwen3's 2.5-5 MB experts (session 27, run
     * 14) int8 / streaming 1.06-1.12 at T = 24-32 (1.5-2 pairs; Q6_K 0.99 /
     * 0.95), 0.84-0.94 at T = 40-48 (2.5-3 pairs), Q4_K, Q6_K, Q8_0, MXFP4 alike */
    return kq || fmt == MOE_DF_Q8_0 || fmt == MOE_DF_MXFP4 ? 2 : p;
}

/* cuda-quant's streaming kernels take T up to this (above, the int8 kernels
 * where qg, else the mma kernels): moe__dec_stream_pairs_qg pairs an expert,
 * and on experts of 10 MB or more (with the int8 kernels) the K-quants by
 * fractions of a pair: Q4_K to 1.5 pairs and T = 8 at most, Q5_K to 1.25, Q6_K
 * to 2 (1.5 from 100 MB). Session 27 (H200, bench/decode/s27 runs 5-6, int8 / streaming time):
 * deepseek-v3's 25 MB Q4_K experts 1.19 at T = 4, 0.99 / 0.97 at T = 5 / 6,
 * 0.83-0.91 at T = 12-32 (the rule of 1 pair streamed to T = 32); mixtral's 99
 * MB 1.14 at T = 5, 1.02 at 6, 0.96 at 7, 0.77 at 8 (1 pair: T = 4). Session
 * 28's streaming loop (s28 run 3, after run 2's 0.87-0.96x for the K-quants):
 * Q4_K deepseek-v3 T = 8 1.015 (was the int8 kernels'), 10-16 0.93-0.96,
 * mixtral T = 6 1.06, 7 0.97; Q5_K mixtral T = 5 1.07, 6 0.95, deepseek-v3 T =
 * 24-40 0.99-1.01; Q6_K mixtral T = 5 / 6 / 7 1.15 / 1.04 / 0.93, deepseek-v3
 * T = 16-48 1.07-1.20; run 4 (H200) and run 6 (H100): deepseek-v3's 36 MB
 * Q6_K experts still 1.03-1.04 at T = 56 (1.75 pairs), 1.01 at 64, 0.77 at 80;
 * mixtral's 144 MB 0.93 at T = 7 (1.75 pairs). */
static inline int64_t moe__dec_stream_max_t(int fmt, double expert_bytes, int qg, int64_t E, int64_t K) {
    int64_t t = moe__dec_stream_pairs_qg(fmt, expert_bytes, qg) * E / K;
    if (qg && expert_bytes >= 10e6) {
        if (fmt == MOE_DF_Q4_K) t = 3 * E / (2 * K) < 8 ? 3 * E / (2 * K) : 8;
        else if (fmt == MOE_DF_Q5_K) t = 5 * E / (4 * K);
        else if (fmt == MOE_DF_Q6_K) t = expert_bytes < 100e6 ? 2 * E / K : 3 * E / (2 * K);
    }
    return t < 1 ? 1 : t;
}

/* Expert columns a streaming launch plans its grid for (rows a block = the
 * layer's rows x columns / (SMs x blocks an SM)), from the routing model of a
 * router: each of T tokens picks K distinct experts of E uniformly, so expert
 * e gets n_e ~ Binomial(T, K / E) pairs. by_groups (expert-major launches from
 * T = 5): the expected pair groups, E x E[ceil(n_e / NT)]. Below (T <= 4,
 * where one block column per expert and a single wave matter most): the mean
 * number of distinct experts plus ksd standard deviations, at most min(T K, E)
 * (ksd < 0: min(T K, E), the rule before session 11). A plan short of the
 * experts a forward touches sends the blocks past one wave (up to 2x), one
 * beyond them leaves SMs idle, so the plan leans high: 0.5 standard deviations
 * (H200, bench/decode/s11: mixtral GGUF T = 3-4 5-18% and gpt-oss-20b T = 3-4
 * 3-7% faster than min(T K, E), the other presets within 2%). */
#define MOE_SV_PLAN_SD 0.5
static inline int64_t moe__sv_plan_cols(int64_t T, int64_t K, int64_t E, int NT, int by_groups, double ksd) {
    const int64_t TK = T * K, all = TK < E ? TK : E;
    const double p = (double)K / (double)E;
    if (E <= 1 || p >= 1.0) return by_groups ? E * ((T + NT - 1) / NT) : all;
    if (!by_groups) {
        if (ksd < 0.0) return all;
        const double q1 = moe__dec_untouched(T, K, E); /* P(e untouched) */
        const double r2 = (double)(E - K) * (double)(E - K - 1) / ((double)E * (double)(E - 1));
        double q2 = 1.0; /* P(e and f untouched) */
        for (int64_t t = 0; t < T; t++) q2 *= r2 > 0.0 ? r2 : 0.0;
        const double e = (double)E, mean = e * (1.0 - q1);
        double var = e * q1 + e * (e - 1.0) * q2 - e * e * q1 * q1;
        if (var < 0.0) var = 0.0;
        const int64_t g = (int64_t)ceil(mean + ksd * sqrt(var) - 1e-9);
        return g < 1 ? 1 : g < all ? g : all;
    }
    /* E[ceil(n / NT)], n ~ Binomial(T, p), the terms from n = 0 upwards */
    double pm = pow(1.0 - p, (double)T), eg = 0.0;
    for (int64_t n = 1; n <= T; n++) {
        pm *= (double)(T - n + 1) / (double)n * p / (1.0 - p);
        eg += pm * (double)((n + NT - 1) / NT);
        if (pm < 1e-12 && (double)n > (double)T * p) break;
    }
    const int64_t g = (int64_t)(eg * (double)E + 0.5);
    return g < 1 ? 1 : g;
}

#if defined(__CUDACC__)
#define MOE__SV_HD static __host__ __device__ __forceinline__
#else
#define MOE__SV_HD static inline
#endif

/* Whether the split keeps each block inside one group (the aligned mode
 * of moe__sv_split_range): floor(nb / G) blocks a group cost at most one step beyond the even
 * share ceil(G nst / nb). */
MOE__SV_HD int moe__sv_split_aligned(int G, int nst, int nb) {
    const long long U = (long long)G * nst;
    const int sc = (int)((U + nb - 1) / nb), bpg = G > 0 ? nb / G : 0;
    return bpg >= 1 && (nst + bpg - 1) / bpg <= sc + 1;
}

/* The run-time split of phase 1 (decode_stream.cuh sv_route_dyn): block b of
 * nb gets the stage steps [u0, u1) of G groups of nst steps each (group g's
 * steps are g nst .. g nst + nst - 1). Either floor(nb / G) blocks a group,
 * each S_a = ceil(nst / that) steps of one group (one job, no second group's
 * activations and epilogue: small T, where a block's few stages are a chain
 * of latencies), where that costs at most one step more than S_c =
 * ceil(G nst / nb); else the steps cut evenly, a range possibly crossing
 * into the next group. tile_major (MOE_SV_DYNORD, a measurement knob): the
 * groups' blocks interleaved as in the planned grid. Blocks past the work
 * get an empty range. Host and device (tests/test_cuda_decode.c checks that
 * every step goes to exactly one block). */
MOE__SV_HD void moe__sv_split_range(int G, int nst, int b, int nb, int tile_major, int *u0, int *u1) {
    const long long U = (long long)G * nst;
    const int bpg = G > 0 ? nb / G : 0;
    if (bpg >= 1) {
        const int sa = (nst + bpg - 1) / bpg;
        if (moe__sv_split_aligned(G, nst, nb)) {
            const int g = tile_major ? b % G : b / bpg, i = tile_major ? b / G : b - g * bpg;
            *u0 = *u1 = 0;
            if (g < G && i < bpg && i * sa < nst) {
                *u0 = g * nst + i * sa;
                *u1 = g * nst + (nst < (i + 1) * sa ? nst : (i + 1) * sa);
            }
            return;
        }
    }
    *u0 = (int)(U * b / nb);
    *u1 = (int)(U * (b + 1) / nb);
}

/* The aligned mode weighted by the groups' pairs (moe_sv_args.dynw = A > 0):
 * a step of group k costs A + n_k (n_k its pairs: the dot products grow with
 * them, the bytes do not), and every group gets one block plus a share of the
 * other nb - G blocks by its cost: group k's blocks start at B_k = k +
 * floor((nb - G) (A k + p_k) / (A G + P)), p_k the pairs before it (gstart[k]
 * & 255: sv_route_dyn's group records) and P all of them. Block b takes an
 * even part of its group's nst steps. Where the aligned mode does not apply
 * (moe__sv_split_aligned), the unweighted split. */
MOE__SV_HD void moe__sv_split_range_w(int G, int nst, const int *gstart, int A, int b, int nb, int *u0, int *u1) {
    if (A <= 0 || !moe__sv_split_aligned(G, nst, nb)) {
        moe__sv_split_range(G, nst, b, nb, 0, u0, u1);
        return;
    }
    const long long X = nb - G, P = (gstart[G - 1] & 255) + ((gstart[G - 1] >> 8) & 15), W = (long long)A * G + P;
#define MOE__SV_BK(k) ((k) + (int)(X * ((long long)A * (k) + (gstart[k] & 255)) / W))
    int lo = 0, hi = G - 1; /* the last group whose blocks start at or before b */
    while (lo < hi) {
        const int mid = (lo + hi + 1) >> 1;
        if (MOE__SV_BK(mid) <= b) lo = mid;
        else hi = mid - 1;
    }
    const int k0 = MOE__SV_BK(lo), nbk = (lo + 1 < G ? MOE__SV_BK(lo + 1) : nb) - k0, i = b - k0;
#undef MOE__SV_BK
    const int sa = (nst + nbk - 1) / nbk;
    *u0 = *u1 = 0;
    if (i < nbk && i * sa < nst) {
        *u0 = lo * nst + i * sa;
        *u1 = lo * nst + (nst < (i + 1) * sa ? nst : (i + 1) * sa);
    }
}

/* Columns per chunk (CW) and the smallest alignment in bytes its loads need. */
static inline int moe__dec_chunk_cols(int fmt) { return fmt <= MOE_DF_F16 ? 64 : 256; }
static inline int moe__dec_align(int fmt) {
    switch (fmt) {
    case MOE_DF_BF16: case MOE_DF_F16: case MOE_DF_Q4_K: case MOE_DF_Q5_K: return 16;
    case MOE_DF_Q2_K: return 4;
    case MOE_DF_MXFP4: return 1;
    default: return 2;
    }
}

/* Blocks of 256 threads per SM the kernel is built for (FM::MINB in
 * __launch_bounds__): 2 where 128 registers hold a lane's work. */
static inline int moe__dec_min_blocks(int fmt) {
    switch (fmt) {
    case MOE_DF_Q2_K: case MOE_DF_Q3_K: case MOE_DF_Q5_K: case MOE_DF_Q6_K: case MOE_DF_Q8_0: return 1;
    default: return 2;
    }
}

#endif
