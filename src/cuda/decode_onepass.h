/*
 * Host interface of the one-pass decode kernel (decode_onepass.cu, sm_90,
 * bf16/f16 weights): the whole expert layer for a small batch in one launch,
 * with no dependency between blocks until the final sums.
 *
 * The touched experts' rows of I are cut into units of 16 rows, and the
 * units of all (expert, pair group) in order are split evenly over one
 * block per SM. A block streams, for its rows i0..i1 of an expert, the gate
 * and up rows (all of D), forms h[pairs, i0..i1] and at once streams the
 * down columns i0..i1 of all D rows, adding down[:, i0..i1] h[i0..i1] into
 * its own f32 partial row per pair. Down is split along I, so nothing waits
 * on another block's h; the partial rows of an expert are summed (in block
 * order) by the block that finishes the expert's last piece, and the token's
 * K slots (in slot order) by the block that finishes its last slot.
 * Everything is read once: the layer streams its weights like one kernel
 * reading one array.
 */
#ifndef MOE_CUDA_DECODE_ONEPASS_H
#define MOE_CUDA_DECODE_ONEPASS_H

#include <stdint.h>

#ifdef __CUDACC__
#define MOE_OP_HD __host__ __device__
#else
#define MOE_OP_HD
#endif

#define MOE_OP_THREADS 288 /* 8 consumer warps + 1 producer warp */
#define MOE_OP_PMAX 256    /* (token, slot) pairs of one launch at most */
#define MOE_OP_UMAX 4      /* 16-row units of I a block takes per pass (h of 64 rows) */
#define MOE_OP_DR 256      /* down rows of D per box (and per counter) */
#define MOE_OP_SLOT (32 * 1024) /* bytes of one ring stage */
#define MOE_OP_NSMAX 8     /* ring stages at most */
#define MOE_OP_VPMAX 8     /* pairs of one group at most (the mma's 8 token columns) */
#define MOE_OP_CSMAX 4     /* blocks of a cluster at most */

#ifdef __cplusplus
extern "C" {
#endif


/* The block that holds unit u when U units go to G blocks in contiguous
 * ranges [b U / G, (b + 1) U / G): the largest b whose range starts at or
 * before u (ranges that are empty are never chosen). */
static inline MOE_OP_HD int moe__op_block_of(int64_t u, int64_t U, int G) {
    return (int)(((u + 1) * (int64_t)G - 1) / U);
}

/* Blocks that take part: G, or U where there are fewer units than blocks
 * (then every block of the split holds one unit: no empty range inside a
 * group, whose pieces are then the blocks bf..bl of moe__op_block_of). */
static inline MOE_OP_HD int moe__op_blocks(int64_t U, int G) { return U < G ? (int)U : G; }

/* Partial rows a launch may need: a group of n pairs whose nu units span
 * pieces in several blocks takes n rows per piece. Every piece is one more
 * than the block boundaries inside its group, so the sum over groups of
 * n (1 + boundaries) is at most P + VP (G - 1). */
static inline MOE_OP_HD int64_t moe__op_cap_slots(int64_t P, int VP, int G) {
    return P + (int64_t)VP * (G - 1);
}

#ifdef __cplusplus
}
#endif

#ifdef __CUDACC__
#include <cuda.h>
#include <cuda_runtime.h>
#ifdef __cplusplus
extern "C" {
#endif
typedef struct moe_op_args {
    int gated, act;
    float alpha, limit;
    int T, K, E, I, D;
    int VP;                  /* pairs per group: an expert with more pairs is streamed once per group */
    int NS;                  /* ring stages */
    int CS;                  /* blocks a cluster (they share h over distributed shared memory) */
    const int32_t *ids;      /* [T, K] */
    const float *w;          /* [T, K] */
    const void *x;           /* [T, D] of x_type */
    int x_type;
    void *out;               /* [T, D] of out_type */
    int out_type;
    /* biases [E, N] (element strides), NULL = none */
    const void *bg, *bu, *bd;
    int bg_type, bu_type, bd_type;
    int64_t bg_se, bg_sn, bu_se, bu_sn, bd_se, bd_sn;
    float *partial;          /* [cap_slots, D] f32 */
    int64_t cap_slots;
    int4 *tab;               /* [T*K]: each pair's first partial row, stride, pieces, expert (k_op -> k_op_sum) */
    int dbg;                 /* experiment: 1 no down stages, 2 no gate/up stages (MOE_OP_DEBUG) */
} moe_op_args;

/* Dynamic shared memory of one block: ring, staged x of VP pairs, the
 * consumer warps' sums, h. */
int moe__op_smem_bytes(int D, int VP, int NS);
/* Raises the instances' dynamic shared-memory limit to the device's opt-in
 * maximum (current device); max_dyn gets it. */
cudaError_t moe__op_prepare(int *max_dyn);
/* The layer's tensor maps: gate and up [E, I, D] in boxes of 64 columns x
 * 16 len rows, one per share length len = 1..MOE_OP_UMAX units (index len - 1;
 * 128-byte swizzle; g unused for an ungated layer), down [E, D, I] in boxes of
 * 16 columns x 128 rows (32-byte swizzle). */
typedef struct moe_op_maps {
    CUtensorMap g[MOE_OP_UMAX], u[MOE_OP_UMAX], d;
} moe_op_maps;
/* One launch of grid blocks (one per SM, in clusters of a->CS) for weights of
 * format fmt (MOE_DF_BF16 / MOE_DF_F16), then the sums (k_op_sum). */
cudaError_t moe__op_launch(int fmt, const moe_op_maps *m, const moe_op_args *a, int grid, cudaStream_t s);
/* Clusters of CS blocks with smem bytes each that can be resident at once. */
cudaError_t moe__op_clusters(int fmt, int CS, int smem, int *n);
#ifdef __cplusplus
}
#endif
#endif

#endif
