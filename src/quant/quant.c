/*
 * f32 <-> moe_type row conversion: the dispatch over types and the public
 * moe_quantize_row / moe_dequantize_row. The GGUF block formats live in
 * q_legacy.c (Q4_0, Q8_0, MXFP4) and q_k.c (the K-quants); dense types
 * convert element by element with RNE.
 */
#include "quant.h"

#include "half.h"

#include <string.h>

int moe__dequantize_row(moe_type t, const void *src, float *dst, int64_t n) {
    int64_t bs = moe_type_block_size(t);
    if (!bs || n < 0 || n % bs) return -1;
    const uint16_t *h = (const uint16_t *)src;
    switch (t) {
    case MOE_TYPE_F32: memcpy(dst, src, (size_t)n * 4); return 0;
    case MOE_TYPE_F16: for (int64_t i = 0; i < n; i++) dst[i] = moe__f16_to_f32(h[i]); return 0;
    case MOE_TYPE_BF16: for (int64_t i = 0; i < n; i++) dst[i] = moe__bf16_to_f32(h[i]); return 0;
    case MOE_TYPE_Q4_0: moe__dequantize_row_q4_0(src, dst, n); return 0;
    case MOE_TYPE_Q8_0: moe__dequantize_row_q8_0(src, dst, n); return 0;
    case MOE_TYPE_MXFP4: moe__dequantize_row_mxfp4(src, dst, n); return 0;
    case MOE_TYPE_Q2_K: moe__dequantize_row_q2_k(src, dst, n); return 0;
    case MOE_TYPE_Q3_K: moe__dequantize_row_q3_k(src, dst, n); return 0;
    case MOE_TYPE_Q4_K: moe__dequantize_row_q4_k(src, dst, n); return 0;
    case MOE_TYPE_Q5_K: moe__dequantize_row_q5_k(src, dst, n); return 0;
    case MOE_TYPE_Q6_K: moe__dequantize_row_q6_k(src, dst, n); return 0;
    }
    return -1;
}

int moe__quantize_row(moe_type t, const float *src, void *dst, int64_t n) {
    int64_t bs = moe_type_block_size(t);
    if (!bs || n < 0 || n % bs) return -1;
    uint16_t *h = (uint16_t *)dst;
    switch (t) {
    case MOE_TYPE_F32: memcpy(dst, src, (size_t)n * 4); return 0;
    case MOE_TYPE_F16: for (int64_t i = 0; i < n; i++) h[i] = moe__f32_to_f16(src[i]); return 0;
    case MOE_TYPE_BF16: for (int64_t i = 0; i < n; i++) h[i] = moe__f32_to_bf16(src[i]); return 0;
    case MOE_TYPE_Q4_0: moe__quantize_row_q4_0(src, dst, n); return 0;
    case MOE_TYPE_Q8_0: moe__quantize_row_q8_0(src, dst, n); return 0;
    case MOE_TYPE_MXFP4: moe__quantize_row_mxfp4(src, dst, n); return 0;
    case MOE_TYPE_Q2_K: moe__quantize_row_q2_k(src, dst, n); return 0;
    case MOE_TYPE_Q3_K: moe__quantize_row_q3_k(src, dst, n); return 0;
    case MOE_TYPE_Q4_K: moe__quantize_row_q4_k(src, dst, n); return 0;
    case MOE_TYPE_Q5_K: moe__quantize_row_q5_k(src, dst, n); return 0;
    case MOE_TYPE_Q6_K: moe__quantize_row_q6_k(src, dst, n); return 0;
    }
    return -1;
}

static moe_status check_row(const char *fn, moe_type t, const void *a, const void *b, int64_t n) {
    if (!a || !b) return moe__ctx_error(NULL, MOE_ERR_NULL_POINTER, "%s: %s is NULL", fn, !a ? "src" : "dst");
    int64_t bs = moe_type_block_size(t);
    if (!bs) return moe__ctx_error(NULL, MOE_ERR_UNSUPPORTED, "%s: type %d is not a moe_type", fn, (int)t);
    if (n < 0) return moe__ctx_error(NULL, MOE_ERR_INVALID_DIM, "%s: n = %lld, expected >= 0", fn, (long long)n);
    if (n % bs)
        return moe__ctx_error(NULL, MOE_ERR_BLOCK_SHAPE, "%s: n = %lld is not a multiple of %lld, required by %s", fn,
                              (long long)n, (long long)bs, moe_type_name(t));
    return MOE_OK;
}

moe_status moe_quantize_row(moe_type t, const float *src, void *dst, int64_t n) {
    moe_status s = check_row("moe_quantize_row", t, src, dst, n);
    if (s) return s;
    if (moe__quantize_row(t, src, dst, n))
        return moe__ctx_error(NULL, MOE_ERR_UNSUPPORTED, "moe_quantize_row: %s is not supported", moe_type_name(t));
    return MOE_OK;
}

moe_status moe_dequantize_row(moe_type t, const void *src, float *dst, int64_t n) {
    moe_status s = check_row("moe_dequantize_row", t, src, dst, n);
    if (s) return s;
    if (moe__dequantize_row(t, src, dst, n))
        return moe__ctx_error(NULL, MOE_ERR_UNSUPPORTED, "moe_dequantize_row: %s is not supported", moe_type_name(t));
    return MOE_OK;
}
