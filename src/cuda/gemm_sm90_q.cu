/*
 * The Hopper grouped GEMM (gemm_sm90.cuh) on GGUF-quantised weights: the
 * GEMMs of cuda-quant's prefill path (decode.cu) for Q8_0 and Q4_K, without
 * dequantising the experts into the workspace first.
 *
 * Per k-block (64 columns of the reduced dimension) TMA brings the B tile's
 * raw bytes, 256 rows of GGUF blocks, into a two-slot ring; the producer
 * warpgroup decodes them with the decode kernels' format decoders
 * (decode_kernels.h: the same Raw words, prep and dk_frag as dequant.cu, so a
 * weight becomes the very bf16/f16 value the dequantising path writes) into the
 * stage's B tile, in the 128B-swizzled layout the wgmma descriptors read, and
 * the consumer warpgroups run unchanged. The quantised bytes are read once per
 * m-tile (from L2 after the first), the dequantised copy never exists.
 *
 * Raw boxes (3-D maps over [E, N, row bytes], moe__cuda_quant_tmap):
 *   Q8_0: one box of 80 bytes a row from the 16-byte boundary at or below byte
 *     68 kb: blocks 2 kb and 2 kb + 1 (34 bytes each: f16 scale, 32 int8),
 *     4 (kb % 4) bytes into the box;
 *   Q4_K: three boxes of 16 bytes a row: the super-block's header (d, dmin,
 *     12 bytes of 6-bit scales and mins) at 144 (kb / 4), and the 32 code bytes
 *     of sub-blocks 2 (kb % 4) and 2 (kb % 4) + 1 at 144 (kb / 4) + 16 + 32 (kb % 4).
 * Rows need byte strides that are multiples of 16 (D and I multiples of 256
 * for Q8_0; always for Q4_K); decode.cu checks them before choosing this path.
 */
#include "common.cuh"
#include "cuda_backends.h"
#include "decode_kernels.h"
#include "gemm_sm90.cuh"

#include <stdio.h>
#include <string.h>

static_assert(SM90_QF_Q8_0 == MOE_DF_Q8_0 && SM90_QF_Q4_K == MOE_DF_Q4_K, "gemm_sm90.cuh's format numbers");

#ifdef MOE_SM90A
static __device__ __forceinline__ uint4 lds128(uint32_t a) {
    uint4 v;
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(a));
    return v;
}
static __device__ __forceinline__ void sts128(uint32_t a, uint4 v) {
    asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"r"(a), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
                 : "memory");
}
/* Four byte-sized integers b (bytes of u) as floats 2^23 + b: a byte permute
 * against 2^23's bits (0x4B000000), no I2F. Subtracting 2^23 (plus a bias) is
 * exact, so every weight is the value the format decoders make
 * (decode_kernels.h: FmtQ8_0 / FmtQ4_K::dq, d * q and dl * q - ml), with about
 * 4 instructions an element instead of 7. */
static __device__ __forceinline__ float magic_byte(uint32_t u, int j) {
    return __int_as_float(__byte_perm(u, 0x4B000000u, 0x7440 | j));
}
template <typename T>
static __device__ __forceinline__ void sts_piece(uint32_t dst, int s, int r, const float f[8]) {
    sts128(dst + ((s ^ (r & 7)) << 4),
           make_uint4(dk_pack<T>(f[0], f[1]), dk_pack<T>(f[2], f[3]), dk_pack<T>(f[4], f[5]), dk_pack<T>(f[6], f[7])));
}

/* Q8_0: a k-block's two blocks are the 68 bytes at 68 kb of the row. TMA boxes
 * start at multiples of 16 bytes, so the box of 80 bytes starts at
 * 68 kb - 4 (kb % 4) (68 = 4 mod 16) and the blocks sit (kb % 4) words in. */
template <> struct Sm90Quant<SM90_QF_Q8_0> {
    static __device__ __forceinline__ int x0(int kb) { return 68 * kb - 4 * (kb & 3); }
    static __device__ __forceinline__ void load(uint32_t dst, const CUtensorMap *tm, int kb, int row, int e,
                                                uint32_t bar) {
        tma_3d(dst, tm, x0(kb), row, e, bar);
    }
    /* the 20 words of row r's box, the blocks from word Q: block 0's f16 scale
     * at byte 0 and codes at 2 (realigned), block 1's at 34 and 36. Codes
     * biased by 128 (xor), 2^23 + 128 + q made by the permute. */
    template <int Q, typename T> static __device__ __forceinline__ void row_q(const uint32_t *v, int r, uint32_t dst) {
        const uint32_t *w = v + Q;
        const float d[2] = {dq_h2f(w[0] & 0xffffu), dq_h2f(w[8] >> 16)};
#pragma unroll
        for (int s = 0; s < 8; s++) {
            const int bb = s >> 2, i = 2 * (s & 3);
            uint32_t q[2];
#pragma unroll
            for (int h = 0; h < 2; h++)
                q[h] = (bb ? w[9 + i + h] : __byte_perm(w[i + h], w[i + h + 1], 0x5432)) ^ 0x80808080u;
            float f[8];
#pragma unroll
            for (int j = 0; j < 8; j++) f[j] = d[bb] * (magic_byte(q[j >> 2], j & 3) - 8388736.0f);
            sts_piece<T>(dst, s, r, f);
        }
    }
    template <typename T> static __device__ __forceinline__ void row(uint32_t raw, int r, int kb, uint32_t dst) {
        uint32_t v[20];
        const uint32_t a = raw + r * 80;
#pragma unroll
        for (int i = 0; i < 5; i++) {
            const uint4 q = lds128(a + 16 * i);
            v[4 * i] = q.x;
            v[4 * i + 1] = q.y;
            v[4 * i + 2] = q.z;
            v[4 * i + 3] = q.w;
        }
        switch (kb & 3) { /* uniform over the warpgroup: one path a k-block */
        case 0: row_q<0, T>(v, r, dst); break;
        case 1: row_q<1, T>(v, r, dst); break;
        case 2: row_q<2, T>(v, r, dst); break;
        default: row_q<3, T>(v, r, dst); break;
        }
    }
};

template <> struct Sm90Quant<SM90_QF_Q4_K> {
    static __device__ __forceinline__ void load(uint32_t dst, const CUtensorMap *tm, int kb, int row, int e,
                                                uint32_t bar) {
        const int sb = 144 * (kb >> 2), q = sb + 16 + 32 * (kb & 3);
        tma_3d(dst, tm, sb, row, e, bar);
        tma_3d(dst + 2048, tm, q, row, e, bar);
        tma_3d(dst + 4096, tm, q + 16, row, e, bar);
    }
    /* sub-blocks 2t (low nibbles of the 32 code bytes) and 2t + 1 (high), t = kb % 4 */
    template <typename T> static __device__ __forceinline__ void row(uint32_t raw, int r, int kb, uint32_t dst) {
        FmtQ4_K::Raw R;
        R.hdr = lds128(raw + 16 * r);
        R.q[0] = lds128(raw + 2048 + 16 * r);
        R.q[1] = lds128(raw + 4096 + 16 * r);
        FmtQ4_K::Dec dc;
        FmtQ4_K::prep(R, kb & 3, dc);
        const uint32_t w[8] = {R.q[0].x, R.q[0].y, R.q[0].z, R.q[0].w, R.q[1].x, R.q[1].y, R.q[1].z, R.q[1].w};
#pragma unroll
        for (int s = 0; s < 8; s++) {
            const int k = s >> 2, w0 = 2 * (s & 3);
            float f[8];
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const uint32_t n = (w[w0 + h] >> (4 * k)) & 0x0F0F0F0Fu;
#pragma unroll
                for (int j = 0; j < 4; j++) f[4 * h + j] = dc.dl[k] * (magic_byte(n, j) - 8388608.0f) - dc.ml[k];
            }
            sts_piece<T>(dst, s, r, f);
        }
    }
};
#endif

template <int ACT, typename T, int QF>
static __global__ void __launch_bounds__(NTHREADS, 1)
    gemm_sm90_q(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB0,
                const __grid_constant__ CUtensorMap tmB1, const __grid_constant__ CUtensorMap tmO, const moe_cuda_gemm g) {
    gemm_sm90_body<ACT, T, 1, 1, 128, 256, QF>(tmA, tmB0, tmB1, tmO, g);
}

extern "C" int moe__cuda_quant_box(int fmt) { return fmt == MOE_DF_Q8_0 ? 80 : fmt == MOE_DF_Q4_K ? 16 : 0; }

template <int ACT, typename T, int QF>
static cudaError_t launch(const moe_cuda_gemm *g, const CUtensorMap *tm, const CUtensorMap *b0, const CUtensorMap *b1,
                          int sm_count, cudaStream_t s) {
    /* persistent: one CTA an SM (its shared memory), no more than there are tiles */
    const int nout = g->mode == 1 && g->gated ? 128 : 256;
    const int64_t most = (int64_t)g->max_mtiles * ((g->N + nout - 1) / nout);
    const unsigned grid = (unsigned)(most < sm_count ? (most < 1 ? 1 : most) : sm_count);
    gemm_sm90_q<ACT, T, QF><<<grid, NTHREADS, SM90_SMEM_BYTES_Q(QF), s>>>(tm[0], *b0, *b1, tm[1], *g);
    return cudaGetLastError();
}

template <typename T, int QF>
static cudaError_t dispatch(const moe_cuda_gemm *g, const CUtensorMap *tm, const CUtensorMap *b0,
                            const CUtensorMap *b1, int sm_count, cudaStream_t s) {
    switch (g->mode == 2 ? -1 : g->act) {
#define MOE_ACT_CASE_(a) \
    case a: return launch<a, T, QF>(g, tm, b0, b1, sm_count, s);
        MOE_CUDA_FOR_ACTS(MOE_ACT_CASE_)
#undef MOE_ACT_CASE_
    }
    return cudaErrorInvalidValue;
}

extern "C" cudaError_t moe__cuda_gemm_sm90_q(const moe_cuda_gemm *g, const CUtensorMap *tmB0, const CUtensorMap *tmB1,
                                             int sm_count, cudaStream_t s, char *why, size_t n) {
    if (g->bm != 128 || g->bn != 256 || g->cm != 1 || g->cn != 1 || g->gather ||
        (g->qfmt != MOE_DF_Q8_0 && g->qfmt != MOE_DF_Q4_K)) {
        snprintf(why, n, "quantised B (format %d) runs BM 128, BN 256, 1 x 1, A through TMA; got BM %d BN %d %dx%d%s",
                 g->qfmt, g->bm, g->bn, g->cm, g->cn, g->gather ? ", gather" : "");
        return cudaErrorInvalidValue;
    }
    CUtensorMap tm[2];
    if (moe__cuda_sm90_tmap_a_out(g, tm, why, n)) return cudaErrorInvalidValue;
    const int f16 = g->dtype == MOE_TYPE_F16;
    if (g->qfmt == MOE_DF_Q8_0)
        return f16 ? dispatch<__half, SM90_QF_Q8_0>(g, tm, tmB0, tmB1, sm_count, s)
                   : dispatch<__nv_bfloat16, SM90_QF_Q8_0>(g, tm, tmB0, tmB1, sm_count, s);
    return f16 ? dispatch<__half, SM90_QF_Q4_K>(g, tm, tmB0, tmB1, sm_count, s)
               : dispatch<__nv_bfloat16, SM90_QF_Q4_K>(g, tm, tmB0, tmB1, sm_count, s);
}

template <typename T, int QF> static cudaError_t prepare_q(void) {
    cudaError_t e = cudaSuccess;
#define MOE_ACT_PREP_(a)                                                                                               \
    if (!e)                                                                                                            \
        e = cudaFuncSetAttribute(gemm_sm90_q<a, T, QF>, cudaFuncAttributeMaxDynamicSharedMemorySize,                  \
                                 SM90_SMEM_BYTES_Q(QF));
    MOE_CUDA_FOR_ACTS(MOE_ACT_PREP_)
#undef MOE_ACT_PREP_
    return e;
}

extern "C" cudaError_t moe__cuda_gemm_sm90_q_prepare(void) {
    cudaError_t e = prepare_q<__nv_bfloat16, SM90_QF_Q8_0>();
    if (!e) e = prepare_q<__half, SM90_QF_Q8_0>();
    if (!e) e = prepare_q<__nv_bfloat16, SM90_QF_Q4_K>();
    if (!e) e = prepare_q<__half, SM90_QF_Q4_K>();
    return e;
}
