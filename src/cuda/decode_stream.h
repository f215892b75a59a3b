/*
 * Host interface of the streaming small-batch kernels (decode_stream.cuh):
 * the arguments of one launch and the entry point decode.cu calls.
 */
#ifndef MOE_CUDA_DECODE_STREAM_H
#define MOE_CUDA_DECODE_STREAM_H

#include <cuda_runtime.h>
#include <stdint.h>

#include "decode.h" /* MOE_DF_* */

#define MOE_SV_THREADS 288 /* 8 consumer warps + 1 producer warp */
#define MOE_SV_MAXP 1024   /* (token, slot) pairs of one streaming chunk at most */
#define MOE_SV_LIST 256    /* entries of a block's pair / slot list: NT pairs, or a token's K slots (K <= this) */
/* Phase value of the expert-major down launch (after MOE_DEC_GATE_UP, MOE_DEC_UP,
 * MOE_DEC_DOWN of decode.h): blocks per (expert, token group, row tile) as in
 * phase 1, y[pair] = down_e h[pair] + b in f32, and the block that finishes
 * a token's last pair in a row tile sums its slots in order into out. */
#define MOE_SV_DOWN_E 3

/* Bytes of a block's ring that the run-time split's routing (decode_stream.cuh
 * sv_route_dyn) borrows before the first copy: 3 E ints. */
#define MOE_SV_ROUTE_SCRATCH(E) (12 * (int64_t)(E))

typedef struct moe_sv_args {
    int phase;                /* MOE_DEC_GATE_UP, MOE_DEC_UP, MOE_DEC_DOWN (token-major) or MOE_SV_DOWN_E */
    int dense;                /* bf16/f16 weights (else GGUF blocks) */
    /* weights [E, N, C]; w1 = up in phase GATE_UP; byte strides */
    const uint8_t *w0, *w1;
    int64_t w0_se, w0_sn, w1_se, w1_sn;
    int row_bytes;            /* bytes of one row */
    int pitch;                /* shared-memory bytes per staged row (multiple of 16) */
    int cst;                  /* GGUF rows a bulk copy (0 or 1: a copy a row): where rows lie back to back (row
                               * stride = row bytes), a copy takes cst of a stage's rows as they lie, at the place
                               * of its first row in the slot (rows a pitch apart) and that row's misalignment in
                               * 16 bytes (decode_stream.cuh sv_srow) */
    int N, C;                 /* rows, reduced dimension */
    int R, SRS, NS, NT;       /* rows per block, rows per stage, stages, pairs per block (phase 1, DOWN_E) */
    int KC, KCb, NC;          /* columns (bytes) per stage of a row, chunks per row (dense; GGUF: whole rows) */
    /* biases [E, N] (element strides), NULL = none */
    const void *b0, *b1;
    int b0_type, b1_type;
    int64_t b0_se, b0_sn, b1_se, b1_sn;
    int act;
    float alpha, limit;
    const void *x;            /* phase 1: x [T, C] of x_type */
    int x_type;
    const void *h;            /* phase 2: h [T*K, C] (mma type, or f32 for GGUF weights) */
    void *hout;               /* phase 1: h [T*K, N] */
    const int32_t *ids;       /* [T, K] */
    const float *w;           /* [T, K] */
    int T, K, E;
    void *out;                /* phase 2: out [T, N] of out_type */
    int out_type;
    float *y;                 /* DOWN_E: y [T*K, N] f32 */
    unsigned *cnt;            /* DOWN_E: [T, row tiles] pairs of the token finished; phase 1 zeroes ncnt of them */
    int ncnt;
    int pdl;                  /* phase 2 launched with programmatic dependent launch */
    int fmt;                  /* the weights' format (MOE_DF_*) */
    int rb;                   /* GGUF: bytes of an activation block's record (sv_qact_rb_of; MXFP4 8 where the plan has
                               * room for its biased dot's start, else 4: decode.cu sv_plan) */
    int qmma;                 /* Q8_0/Q4_0 rows x 8 tokens on int8 tensor cores for passes of at least qmma tokens
                               * (0: never; sv_plan: needs NT 8, SRS >= 8) */
    int bps;                  /* blocks an SM the plan is for (host only: describe) */
    /* GGUF: h quantised once, by phase 1 (NULL: every phase 2 block quantises the f32 h rows it stages). Its
     * 32-element blocks as int8 [T*K, I] in element order at hq, their records {d, s0, s1, 0} (moe_qx_quantize32's
     * scale and half sums; 16 bytes) [T*K, I / 32] at hq + hq_rec. Phase 1 writes them, phase 2 stages from them. */
    uint8_t *hq;
    int64_t hq_rec;
    unsigned *hq_cnt;         /* phase 1: rows of (pair, block of 32) written so far, for the blocks that two jobs
                               * share ([MOE_SV_MAXP, I / 32], zero between launches: the job that completes one
                               * quantises it and zeroes its counter); the layer's, not the workspace's */
    int dynw;                 /* the run-time split's aligned mode weighted by the groups' pairs, a step costing dynw
                               * + pairs (decode.h moe__sv_split_range_w); 0: unweighted */
    int dyn;                  /* phase 1 split at run time (sv_route_dyn, 2 T K <= MOE_SV_LIST): gridDim.x blocks share
                               * the pair groups' rows, jobs of at most R rows; else a block per (group opener, row tile) */
} moe_sv_args;

/* The formats the int8 tensor-core consumer (decode_stream.cuh sv_qmma_stage)
 * decodes: 32-element blocks of int8 quants or of nibbles and a scale. MXFP4
 * had it too until its dp4a consumer (nibble order, session 12) measured 0.89-
 * 0.94x its time at mixtral T = 32-64, gpt-oss-20b T = 64, gpt-oss-120b T =
 * 256-512, qwen3 T = 128-256 and even elsewhere (H200, bench/decode/s13 run 14):
 * MXFP4 runs dp4a at every T. */
static __host__ __device__ constexpr bool sv_fmt_has_qmma(int F) { return F == MOE_DF_Q8_0 || F == MOE_DF_Q4_0; }

#ifdef __cplusplus
extern "C" {
#endif
/* Shared-memory bytes of one block of a launch with these arguments. */
int moe__sv_smem_bytes(const moe_sv_args *a);
/* Bytes of a GGUF activation block's record for format fmt (MOE_DF_*) as the
 * kernels stage it by default (moe_sv_args.rb; MXFP4 may take 8: decode.cu sv_plan). */
int moe__sv_rec_bytes(int fmt);
/* Launches phase a->phase of format fmt on grid (pairs or tokens, row tiles). */
cudaError_t moe__sv_launch(int fmt, const moe_sv_args *a, dim3 grid, cudaStream_t s);
/* Blocks of that launch that fit on an SM at once (current device; -1 on error). */
int moe__sv_blocks_per_sm(int fmt, const moe_sv_args *a);
/* Both phases in one cooperative launch (k_svf) of `grid` blocks: a1 phase 1,
 * a2 phase 2 (their R, SRS, pitch planned as for two launches; a1->NS is the
 * ring depth of the fused layout); gb: two zeroed counters owned by the layer
 * (the kernel leaves them zeroed). cudaErrorCooperativeLaunchTooLarge when
 * the grid cannot be resident at once (*resident: blocks that can). */
int moe__sv_fused_smem_bytes(const moe_sv_args *a1, const moe_sv_args *a2);
cudaError_t moe__sv_fused_launch(int fmt, const moe_sv_args *a1, const moe_sv_args *a2, unsigned *gb, int grid,
                                 cudaStream_t s, int *resident);
/* Raises the dynamic shared-memory limit of every instance to the device's
 * opt-in maximum (current device); max_dyn gets the smallest such limit,
 * max_static the most static shared memory of an instance. */
cudaError_t moe__sv_prepare(int *max_dyn, int *max_static);
#ifdef __cplusplus
}
#endif

#endif
