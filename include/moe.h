/*
 * libmoe: the expert layer of a Mixture-of-Experts model, on CPUs and GPUs.
 *
 * One layer computes, for tokens x[T, D] and router choices topk_ids[T, K],
 * topk_weights[T, K]:
 *
 *     out[t] = sum over k of  w[t,k] * down_e( act(gate_e x[t] + bg_e, up_e x[t] + bu_e) ) + bd_e
 *                                                         with e = topk_ids[t,k]
 *
 * (the down bias bd_e is inside the weighted sum: w[t,k] * (down_e h + bd_e)).
 *
 * Dimension letters, used everywhere in this library:
 *     T  tokens in one forward          E  experts
 *     K  experts chosen per token       D  model (hidden) dimension
 *     I  expert intermediate dimension
 *
 * Conventions
 * - Every function returns a moe_status; MOE_OK is 0. On failure nothing is
 *   written to the outputs and a message saying what was wrong and what was
 *   expected is kept in the handle (moe_ctx_last_error, moe_layer_last_error).
 *   The library never aborts, exits or prints; messages go to the log callback.
 * - Weights, biases and all forward buffers are BORROWED: the library never
 *   copies or frees them unless a backend says so in moe_layer_describe
 *   (for example a repacked copy); the caller keeps them alive and unchanged
 *   for the life of the layer.
 * - On a CUDA context every forward-time pointer (x, topk_ids, topk_weights,
 *   out, workspace) is device memory, and calls are asynchronous on the
 *   context's stream. On a CPU context they are host memory and calls return
 *   when the result is written.
 * - The same expert id may appear twice in one token's top-k: each (token,
 *   slot) pair contributes on its own, with its own weight.
 * - NaN and Inf in x or in the weights propagate as IEEE arithmetic does.
 */
#ifndef MOE_H
#define MOE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MOE_VERSION_MAJOR 0
#define MOE_VERSION_MINOR 1
#define MOE_VERSION_PATCH 0
#define MOE_VERSION_NUMBER (MOE_VERSION_MAJOR * 10000 + MOE_VERSION_MINOR * 100 + MOE_VERSION_PATCH)

#if defined(_WIN32) && defined(MOE_BUILD_SHARED)
#define MOE_API __declspec(dllexport)
#elif defined(__GNUC__)
#define MOE_API __attribute__((visibility("default")))
#else
#define MOE_API
#endif

/* "0.1.0": the version of the library linked at run time. */
MOE_API const char *moe_version(void);
/* MOE_VERSION_NUMBER of the library linked at run time. */
MOE_API int moe_version_number(void);

/* ------------------------------------------------------------------------ */
/* Status codes                                                              */
/* ------------------------------------------------------------------------ */

/* X(name, value, description). Values are stable and never reused. */
#define MOE_STATUS_LIST(X)                                                                  \
    X(MOE_OK, 0, "success")                                                                 \
    X(MOE_ERR_NULL_POINTER, 1, "a required pointer is NULL")                               \
    X(MOE_ERR_INVALID_DIM, 2, "a dimension is out of range (T < 0, or E, D, I, K <= 0)")   \
    X(MOE_ERR_TOPK_EXCEEDS_EXPERTS, 3, "K is larger than E")                               \
    X(MOE_ERR_EXPERT_ID_OUT_OF_RANGE, 4, "a top-k expert id is outside [0, E)")            \
    X(MOE_ERR_NONFINITE_PARAM, 5, "a parameter that must be finite is NaN or Inf")         \
    X(MOE_ERR_SIZE_OVERFLOW, 6, "a size computed from the dimensions overflows")           \
    X(MOE_ERR_UNSUPPORTED, 7, "unsupported combination of type, activation or layout")    \
    X(MOE_ERR_INVALID_ARGUMENT, 8, "an argument has an invalid value")                     \
    X(MOE_ERR_BLOCK_SHAPE, 9, "a dimension is not a multiple of the quant block size")     \
    X(MOE_ERR_WORKSPACE_TOO_SMALL, 10, "the workspace is smaller than the size queried")   \
    X(MOE_ERR_OUT_OF_MEMORY, 11, "memory allocation failed")                               \
    X(MOE_ERR_BACKEND_UNAVAILABLE, 12, "the requested backend cannot run here")            \
    X(MOE_ERR_NO_DEVICE, 13, "no usable GPU, or the library was built without CUDA")      \
    X(MOE_ERR_CUDA, 14, "a CUDA runtime or driver call failed")                            \
    X(MOE_ERR_IO, 15, "a file could not be opened, read or mapped")                        \
    X(MOE_ERR_GGUF_FORMAT, 16, "the GGUF file is malformed")                               \
    X(MOE_ERR_NOT_FOUND, 17, "a key or tensor is not present")                             \
    X(MOE_ERR_MEMORY_SPACE, 18, "a buffer is in the wrong memory space for this context") \
    X(MOE_ERR_INTERNAL, 19, "internal error (a bug: please report it)")

typedef enum moe_status {
#define MOE_STATUS_ENUM_(name, value, text) name = value,
    MOE_STATUS_LIST(MOE_STATUS_ENUM_)
#undef MOE_STATUS_ENUM_
} moe_status;

/* A fixed description of a status ("a top-k expert id is outside [0, E)");
 * "unknown status" for values not in the list. Never NULL. */
MOE_API const char *moe_status_string(moe_status s);
/* The status' identifier ("MOE_ERR_EXPERT_ID_OUT_OF_RANGE"). Never NULL. */
MOE_API const char *moe_status_name(moe_status s);

/* ------------------------------------------------------------------------ */
/* Element and block types (values are GGUF's ggml_type numbers)             */
/* ------------------------------------------------------------------------ */

typedef enum moe_type {
    MOE_TYPE_F32 = 0,
    MOE_TYPE_F16 = 1,
    MOE_TYPE_Q4_0 = 2,
    MOE_TYPE_Q8_0 = 8,
    MOE_TYPE_Q2_K = 10,
    MOE_TYPE_Q3_K = 11,
    MOE_TYPE_Q4_K = 12,
    MOE_TYPE_Q5_K = 13,
    MOE_TYPE_Q6_K = 14,
    MOE_TYPE_BF16 = 30,
    MOE_TYPE_MXFP4 = 39,
} moe_type;

/* Elements per block (1 for F32/F16/BF16) and bytes per block. 0 for a value
 * that is not a moe_type. */
MOE_API int64_t moe_type_block_size(moe_type t);
MOE_API int64_t moe_type_block_bytes(moe_type t);
/* "f32", "q4_K", ... ; "unknown" for a value that is not a moe_type. */
MOE_API const char *moe_type_name(moe_type t);
/* Bytes of a row of n elements, or -1 if n is not a multiple of the block
 * size or t is unknown. */
MOE_API int64_t moe_type_row_bytes(moe_type t, int64_t n);

/* Converts n f32 values into n elements of type t (for block types n must be
 * a multiple of the block size; blocks are made the way GGUF's reference
 * quantizers make them). dst holds moe_type_row_bytes(t, n) bytes.
 * NaN or Inf in a block gives NaN block scales (the block decodes to NaN);
 * MXFP4, which cannot hold NaN, saturates Inf to +-6*scale and stores NaN as 0. */
MOE_API moe_status moe_quantize_row(moe_type t, const float *src, void *dst, int64_t n);
/* Converts n elements of type t (moe_type_row_bytes(t, n) bytes) to f32. */
/* Both take no context: their error messages are read with
 * moe_ctx_last_error(NULL) (per thread). */
MOE_API moe_status moe_dequantize_row(moe_type t, const void *src, float *dst, int64_t n);

/* ------------------------------------------------------------------------ */
/* Context                                                                   */
/* ------------------------------------------------------------------------ */

typedef enum moe_device {
    MOE_DEVICE_CPU = 0,
    MOE_DEVICE_CUDA = 1,
} moe_device;

typedef enum moe_log_level {
    MOE_LOG_DEBUG = 0,
    MOE_LOG_INFO = 1,
    MOE_LOG_WARN = 2,
    MOE_LOG_ERROR = 3,
    MOE_LOG_NONE = 4,
} moe_log_level;

/* Called with one line (no trailing newline) for each message at or above the
 * context's level. May be called from any thread that calls into the library. */
typedef void (*moe_log_fn)(moe_log_level level, const char *msg, void *user);

typedef struct moe_ctx_params {
    moe_device device;    /* default MOE_DEVICE_CPU */
    int cuda_device;      /* CUDA ordinal when device == MOE_DEVICE_CUDA; default 0 */
    void *cuda_stream;    /* a cudaStream_t; NULL = the legacy default stream */
    int n_threads;        /* CPU worker threads; 0 = one per online core */
    moe_log_fn log;       /* NULL = no logging */
    void *log_user;       /* passed back to log */
    moe_log_level log_level; /* default MOE_LOG_WARN; the environment variable
                                MOE_LOG=debug|info|warn|error overrides it */
} moe_ctx_params;

typedef struct moe_ctx moe_ctx;

/* Parameters with every field at its default. */
MOE_API moe_ctx_params moe_ctx_default_params(void);

/* Creates a context: the device, the CPU thread pool, logging. params may be
 * NULL for the defaults. *out is set to NULL on failure. Thread safety: one
 * context may be used by one thread at a time. */
MOE_API moe_status moe_ctx_create(const moe_ctx_params *params, moe_ctx **out);
/* Frees the context. NULL is a no-op. All layers made from it must be freed first. */
MOE_API void moe_ctx_free(moe_ctx *ctx);
/* The message of the last failed call made with this context or with a NULL
 * context ("" if none). Never NULL; valid until the next call on ctx. */
MOE_API const char *moe_ctx_last_error(const moe_ctx *ctx);
/* The context's device. */
MOE_API moe_device moe_ctx_device(const moe_ctx *ctx);
/* The number of CPU worker threads the context uses. */
MOE_API int moe_ctx_n_threads(const moe_ctx *ctx);

/* ------------------------------------------------------------------------ */
/* Layer description                                                         */
/* ------------------------------------------------------------------------ */

typedef enum moe_act {
    MOE_ACT_SWIGLU = 0,      /* silu(g) * u */
    MOE_ACT_GEGLU_TANH = 1,  /* gelu_tanh(g) * u */
    MOE_ACT_GEGLU_ERF = 2,   /* gelu_erf(g) * u */
    MOE_ACT_SWIGLU_OAI = 3,  /* GPT-OSS: g = min(g, limit), u = clamp(u, -limit, limit),
                                g * sigmoid(alpha * g) * (u + 1) */
    MOE_ACT_SILU = 4,        /* non-gated: silu(u) */
    MOE_ACT_GELU = 5,        /* non-gated: gelu_tanh(u) */
    MOE_ACT_RELU2 = 6,       /* non-gated: max(u, 0)^2 */
} moe_act;

/* 1 if act has a gate projection (SWIGLU, GEGLU_*, SWIGLU_OAI). */
MOE_API int moe_act_is_gated(moe_act act);
MOE_API const char *moe_act_name(moe_act act);

typedef enum moe_gate_up_layout {
    /* gate and up are two tensors [E, I, D]. Non-gated activations use up only. */
    MOE_GATE_UP_SEPARATE = 0,
    /* one tensor gate_up [E, 2I, D]: rows [0, I) gate, rows [I, 2I) up */
    MOE_GATE_UP_CONCAT = 1,
    /* one tensor gate_up [E, 2I, D]: row 2i is gate row i, row 2i+1 up row i */
    MOE_GATE_UP_INTERLEAVED = 2,
} moe_gate_up_layout;

typedef enum moe_mem {
    MOE_MEM_HOST = 0,
    MOE_MEM_DEVICE = 1,  /* CUDA device memory of the context's device */
} moe_mem;

/*
 * A borrowed 3-D weight tensor W[E, N, C] (or a 2-D bias B[E, N], C = 1):
 * element (e, n, c) is at element offset e*stride_e + n*stride_n + c*stride_c
 * from data. Strides are in ELEMENTS; 0 means "contiguous", i.e.
 * stride_c = 1, stride_n = C, stride_e = N*C.
 *
 * For projection weights N is the output dimension and C the input (reduced)
 * dimension: gate/up are [E, I, D] (or gate_up [E, 2I, D]), down is [E, D, I].
 * That is the layout GGUF and Hugging Face store. The layout that
 * torch._grouped_mm takes ([E, C, N], N contiguous) is stride_n = 1,
 * stride_c = N, stride_e = N*C.
 *
 * For block types (Q4_0 ... MXFP4) blocks run along C: stride_c must be 1 and
 * stride_n, stride_e multiples of the block size (in elements, i.e. a row of C
 * elements occupies moe_type_row_bytes(type, C) bytes).
 */
typedef struct moe_tensor {
    const void *data;  /* NULL = absent (for biases) */
    moe_type type;
    moe_mem mem;
    int64_t stride_e, stride_n, stride_c;
} moe_tensor;

typedef struct moe_layer_desc {
    int64_t E, D, I, K;
    moe_act act;
    float alpha;  /* SWIGLU_OAI only; GPT-OSS uses 1.702. Must be finite. */
    float limit;  /* SWIGLU_OAI only; GPT-OSS uses 7.0. Must be finite and > 0. */
    moe_gate_up_layout layout;
    moe_tensor gate;        /* [E, I, D]; SEPARATE and gated */
    moe_tensor up;          /* [E, I, D]; SEPARATE */
    moe_tensor gate_up;     /* [E, 2I, D]; CONCAT or INTERLEAVED (gated only) */
    moe_tensor down;        /* [E, D, I] */
    /* Optional biases (data NULL = none); types F32, F16 or BF16. */
    moe_tensor gate_bias;    /* [E, I]  with SEPARATE */
    moe_tensor up_bias;      /* [E, I]  with SEPARATE */
    moe_tensor gate_up_bias; /* [E, 2I] with CONCAT/INTERLEAVED, rows ordered as gate_up */
    moe_tensor down_bias;    /* [E, D] */
    moe_type act_type;   /* dtype of x and out: F32, F16 or BF16; default F32 */
    /* Backend name ("ref", "cpu", "cuda-sm90", ...); NULL or "" = automatic.
     * The environment variable MOE_BACKEND overrides it. */
    const char *backend;
} moe_layer_desc;

/* A description with every field at its default: act SWIGLU, layout SEPARATE,
 * alpha 1.702, limit 7, every tensor absent with type F32 and host memory,
 * act_type F32. Dimensions are 0 and must be set. */
MOE_API moe_layer_desc moe_layer_desc_default(void);

/* ------------------------------------------------------------------------ */
/* Layer                                                                     */
/* ------------------------------------------------------------------------ */

typedef struct moe_layer moe_layer;

/*
 * Checks desc and creates a layer, choosing its backend (logged at INFO
 * through ctx's log callback). Backends may repack the weights; they say so
 * in moe_layer_describe. The "cpu" backend copies BF16 gate, up and down
 * weights (each whose rows are contiguous and whose reduced dimension is a
 * multiple of 64) into its own layout on its SIMD paths, which doubles their
 * memory; MOE_CPU_REPACK=0 reads them in place instead (slower prefill);
 * MOE_ERR_OUT_OF_MEMORY if the copy cannot be allocated.
 * Synchronises with the device when it uploads data.
 * *out is NULL on failure; the message is in moe_ctx_last_error(ctx).
 */
MOE_API moe_status moe_layer_create(moe_ctx *ctx, const moe_layer_desc *desc, moe_layer **out);
/* Frees the layer; NULL is a no-op. */
MOE_API void moe_layer_free(moe_layer *layer);
/* The message of the last failed call on this layer ("" if none). Never NULL. */
MOE_API const char *moe_layer_last_error(const moe_layer *layer);
/* The name of the backend the layer runs on ("ref", "cpu", ...). */
MOE_API const char *moe_layer_backend(const moe_layer *layer);

/* Bytes of workspace moe_layer_forward needs for T tokens (may be 0). The
 * workspace is in the context's memory space (host or device). */
MOE_API moe_status moe_layer_workspace_size(const moe_layer *layer, int64_t T, size_t *bytes);

/*
 * One forward pass:
 *   x            [T, D]  act_type, row-major
 *   topk_ids     [T, K]  int32, each in [0, E)
 *   topk_weights [T, K]  float32
 *   out          [T, D]  act_type, row-major; fully overwritten (not accumulated)
 *   workspace    at least moe_layer_workspace_size(layer, T) bytes; may be NULL if 0
 * T = 0 is valid and does nothing. All pointers are in the context's memory space.
 * On a CPU context, the ids are checked before anything is written; an id out
 * of range returns MOE_ERR_EXPERT_ID_OUT_OF_RANGE naming the token, slot and value.
 * On a CUDA context the call is asynchronous on the stream; see the backend's
 * notes for what it does with ids out of range.
 */
MOE_API moe_status moe_layer_forward(moe_layer *layer, int64_t T, const void *x,
                                     const int32_t *topk_ids, const float *topk_weights,
                                     void *out, void *workspace, size_t workspace_size);

/* Writes into buf (NUL-terminated, truncated to n bytes) one line saying which
 * backend and which kernels a forward of T tokens runs. */
MOE_API moe_status moe_layer_describe(const moe_layer *layer, int64_t T, char *buf, size_t n);

/* ------------------------------------------------------------------------ */
/* Routing                                                                   */
/* ------------------------------------------------------------------------ */

typedef enum moe_score {
    MOE_SCORE_SOFTMAX = 0,  /* p = softmax(logits) over the E experts */
    MOE_SCORE_SIGMOID = 1,  /* p = sigmoid(logits) */
} moe_score;

typedef struct moe_route_params {
    int64_t E, K;
    moe_score score;
    int renormalize;        /* 1: weights divided by their sum over the K chosen */
    /* [E] float32 or NULL: added to p for SELECTION only (DeepSeek-V3's
     * e_score_correction_bias); the weights are the unbiased p. */
    const float *score_bias;
    /* Grouped top-k: experts form n_group equal groups; the topk_group best
     * groups are kept and the K experts chosen within them. A group's score is
     * its best selection score, or, with score_bias, the sum of its two best
     * (DeepSeek-V3). n_group <= 1 disables it. */
    int64_t n_group, topk_group;
    float routed_scaling;   /* weights multiplied by it last; default 1 */
} moe_route_params;

MOE_API moe_route_params moe_route_params_default(void);

/*
 * Router logits [T, E] float32 -> topk_ids [T, K] int32 and topk_weights
 * [T, K] float32, best first. Ties are broken by the lower expert index.
 * Buffers are in the context's memory space.
 */
MOE_API moe_status moe_route_topk(moe_ctx *ctx, const moe_route_params *params, int64_t T,
                                  const float *logits, int32_t *topk_ids, float *topk_weights);

/* ------------------------------------------------------------------------ */
/* GGUF files                                                                */
/* ------------------------------------------------------------------------ */

/*
 * A reader for GGUF files (versions 2 and 3, little-endian), the format of
 * llama.cpp's models: metadata key/values, tensor infos, and the tensor data,
 * which stay in the file's memory mapping and are lent out, never copied.
 *
 * Every count, length, shape and offset in the file is checked against the
 * bytes that remain before it is used; a malformed file gives
 * MOE_ERR_GGUF_FORMAT (or MOE_ERR_SIZE_OVERFLOW, MOE_ERR_UNSUPPORTED) and a
 * message naming the field, its value and the limit it broke.
 *
 * Errors: a call on a handle keeps its message in moe_gguf_last_error(f);
 * calls without one (a failed open, moe_gguf_router_logits) keep it in
 * moe_gguf_last_error(NULL), which is per thread.
 * Thread safety: a handle may be read from several threads at once, but the
 * last-error message is then unreliable.
 *
 * Lifetime: every pointer the reader gives out (names, strings, tensor data,
 * the weights of a layer made by moe_layer_from_gguf, a router's tensors)
 * points into the file handle or its mapping and is valid until
 * moe_gguf_close. A layer borrows its weights: free the layer before closing
 * the file. Do not truncate or rewrite a file while it is open (the mapping
 * would fault).
 */
typedef struct moe_gguf moe_gguf;

/* Metadata value types (GGUF's numbers). */
typedef enum moe_gguf_type {
    MOE_GGUF_TYPE_UINT8 = 0,
    MOE_GGUF_TYPE_INT8 = 1,
    MOE_GGUF_TYPE_UINT16 = 2,
    MOE_GGUF_TYPE_INT16 = 3,
    MOE_GGUF_TYPE_UINT32 = 4,
    MOE_GGUF_TYPE_INT32 = 5,
    MOE_GGUF_TYPE_FLOAT32 = 6,
    MOE_GGUF_TYPE_BOOL = 7,
    MOE_GGUF_TYPE_STRING = 8,
    MOE_GGUF_TYPE_ARRAY = 9,
    MOE_GGUF_TYPE_UINT64 = 10,
    MOE_GGUF_TYPE_INT64 = 11,
    MOE_GGUF_TYPE_FLOAT64 = 12,
} moe_gguf_type;

/* "u32", "string", "array", ...; "unknown" for other values. */
MOE_API const char *moe_gguf_type_name(moe_gguf_type t);

/* Opens and maps (read-only) the file at path and checks all of it: header,
 * every key/value, every tensor info, alignment, and that each tensor's data
 * lies inside the file. *out is NULL on failure; the message is in
 * moe_gguf_last_error(NULL). MOE_ERR_IO when the file cannot be opened or
 * mapped. */
MOE_API moe_status moe_gguf_open(const char *path, moe_gguf **out);
/* The same for a GGUF image already in memory: size bytes at data, BORROWED
 * (kept alive and unchanged until moe_gguf_close). data may be unaligned. */
MOE_API moe_status moe_gguf_open_memory(const void *data, size_t size, moe_gguf **out);
/* Unmaps and frees; NULL is a no-op. Free the layers made from f first. */
MOE_API void moe_gguf_close(moe_gguf *f);
/* The message of the last failed call on f ("" if none); f = NULL: of the
 * last failed call without a handle on this thread. Never NULL. */
MOE_API const char *moe_gguf_last_error(const moe_gguf *f);

/* The file's GGUF version (2 or 3), counts, alignment (general.alignment or
 * 32) and the offset of the data section from the start of the file. */
MOE_API uint32_t moe_gguf_version(const moe_gguf *f);
MOE_API int64_t moe_gguf_n_kv(const moe_gguf *f);
MOE_API int64_t moe_gguf_n_tensors(const moe_gguf *f);
MOE_API uint64_t moe_gguf_alignment(const moe_gguf *f);
MOE_API uint64_t moe_gguf_data_offset(const moe_gguf *f);

/* One metadata value, a view into the file. */
typedef struct moe_gguf_value {
    moe_gguf_type type;
    moe_gguf_type elem_type; /* ARRAY: the elements' type; otherwise equal to type */
    uint64_t n;              /* ARRAY: element count; STRING: length in bytes; otherwise 1 */
    /* STRING: the bytes, NOT NUL-terminated. ARRAY of numbers or bools: the
     * packed little-endian elements, possibly unaligned. ARRAY of strings or
     * arrays: NULL (use moe_gguf_array_get). Scalars: the value's bytes. */
    const void *data;
    uint64_t u;  /* integers and BOOL: the value as unsigned (bool: 0 or 1) */
    int64_t i;   /* integers and BOOL: the value as signed */
    double f;    /* FLOAT32, FLOAT64: the value */
    uint64_t internal_[2]; /* the reader's bookkeeping; do not touch */
} moe_gguf_value;

/* Index of key in [0, moe_gguf_n_kv(f)), or -1 if absent. */
MOE_API int64_t moe_gguf_find_key(const moe_gguf *f, const char *key);
/* Key/value number i, in file order. *key is NUL-terminated, owned by f. */
MOE_API moe_status moe_gguf_kv_at(const moe_gguf *f, int64_t i, const char **key, moe_gguf_value *value);
/* The value of key; MOE_ERR_NOT_FOUND when absent. */
MOE_API moe_status moe_gguf_get(const moe_gguf *f, const char *key, moe_gguf_value *value);
/* Element i of an ARRAY value (any element type, nested arrays included), in
 * constant time. */
MOE_API moe_status moe_gguf_array_get(const moe_gguf *f, const moe_gguf_value *array, uint64_t i,
                                      moe_gguf_value *elem);

/* Typed getters. MOE_ERR_NOT_FOUND when key is absent; MOE_ERR_GGUF_FORMAT,
 * naming the type or value, when it has the wrong type or does not fit.
 * Integer getters take any integer type whose value fits; get_f32 takes
 * FLOAT32 or FLOAT64; get_bool takes BOOL. */
MOE_API moe_status moe_gguf_get_u32(const moe_gguf *f, const char *key, uint32_t *v);
MOE_API moe_status moe_gguf_get_i32(const moe_gguf *f, const char *key, int32_t *v);
MOE_API moe_status moe_gguf_get_u64(const moe_gguf *f, const char *key, uint64_t *v);
MOE_API moe_status moe_gguf_get_f32(const moe_gguf *f, const char *key, float *v);
MOE_API moe_status moe_gguf_get_bool(const moe_gguf *f, const char *key, int *v);
/* A STRING value as a NUL-terminated copy owned by f; *len (may be NULL)
 * gets its length in bytes (the string may itself contain NUL bytes). */
MOE_API moe_status moe_gguf_get_string(const moe_gguf *f, const char *key, const char **s, size_t *len);
/* An ARRAY value's element type and count (elements: moe_gguf_get + moe_gguf_array_get). */
MOE_API moe_status moe_gguf_get_array(const moe_gguf *f, const char *key, moe_gguf_type *elem_type, uint64_t *n);

/* One tensor of the file. GGUF lists dimensions fastest-first: ne[0] is the
 * contiguous one, so ne = [D, I, E] is the row-major array [E][I][D]. */
typedef struct moe_gguf_tensor_info {
    const char *name;      /* NUL-terminated, owned by f */
    moe_type type;         /* the ggml type number; may be one libmoe does not
                              compute with (moe_type_block_size gives 0) */
    const char *type_name; /* "q4_0", "iq2_xxs", ... */
    int n_dims;            /* 0..4 */
    int64_t ne[4];         /* unused dimensions are 1 */
    int64_t n_elements;
    uint64_t offset;       /* of the data from the start of the file */
    uint64_t size;         /* bytes of data */
    const void *data;      /* in the mapping (host memory); valid until moe_gguf_close.
                              Aligned only as general.alignment makes it. */
} moe_gguf_tensor_info;

/* Index of the tensor named name in [0, moe_gguf_n_tensors(f)), or -1. */
MOE_API int64_t moe_gguf_find_tensor(const moe_gguf *f, const char *name);
/* Tensor number i, in file order. */
MOE_API moe_status moe_gguf_tensor_at(const moe_gguf *f, int64_t i, moe_gguf_tensor_info *info);
/* The tensor named name; MOE_ERR_NOT_FOUND when absent. */
MOE_API moe_status moe_gguf_get_tensor(const moe_gguf *f, const char *name, moe_gguf_tensor_info *info);

/* ---- MoE layers from a model file ---- */

typedef struct moe_gguf_layer_params {
    moe_type act_type;   /* dtype of x and out; default F32 */
    const char *backend; /* as moe_layer_desc.backend; NULL = automatic */
    int64_t K;           /* experts per token; 0 (default) = <arch>.expert_used_count */
} moe_gguf_layer_params;

MOE_API moe_gguf_layer_params moe_gguf_layer_params_default(void);

/*
 * How to route one layer's hidden states: logits = x W^T + b, then
 * moe_route_topk(ctx, &route, T, logits, ...). The tensors are borrowed from
 * the file (host memory).
 */
typedef struct moe_gguf_router {
    /* E, K, score (softmax or sigmoid), renormalize, routed_scaling
     * (<arch>.expert_weights_scale), n_group/topk_group
     * (<arch>.expert_group_count/expert_group_used_count), and score_bias:
     * blk.N.exp_probs_b.bias (f32 [E], in the file) or NULL. */
    moe_route_params route;
    moe_tensor weight; /* blk.N.ffn_gate_inp.weight, W[1, E, D] */
    moe_tensor bias;   /* blk.N.ffn_gate_inp.bias, b[1, E] (f32/f16/bf16); data NULL if none */
    int64_t D;
} moe_gguf_router;

/*
 * Fills desc (moe_layer_desc) and router (may be NULL) for MoE layer
 * layer_index (the N of blk.N) of a model file, from general.architecture:
 *   qwen3moe, qwen2moe (routed experts only: the shared expert is not part of
 *   the layer), llama (Mixtral), deepseek2, gpt-oss;
 * the metadata <arch>.expert_count (E), expert_used_count (K),
 * embedding_length (D), expert_feed_forward_length (I; for llama
 * feed_forward_length), expert_gating_func, expert_weights_norm,
 * expert_weights_scale, expert_group_count, expert_group_used_count; and the
 * tensors blk.N.ffn_{gate,up,down}_exps.weight or ffn_gate_up_exps.weight
 * (CONCAT: gate rows first), their .bias where present (gpt-oss),
 * ffn_gate_inp.weight/.bias and exp_probs_b.bias. Each shape is checked
 * against the metadata; a missing tensor gives MOE_ERR_NOT_FOUND, a shape
 * that disagrees MOE_ERR_GGUF_FORMAT, a type libmoe does not compute with (or
 * data not aligned for its type) MOE_ERR_UNSUPPORTED.
 * Routing as llama.cpp does it: softmax, or sigmoid for expert_gating_func
 * = 2; gating 3 (GPT-OSS: softmax over the chosen) is softmax + renormalize.
 * Without expert_weights_norm, qwen3moe, llama and gpt-oss renormalise and
 * qwen2moe and deepseek2 do not. GPT-OSS uses SWIGLU_OAI with alpha 1.702,
 * limit 7; the others SWIGLU.
 * The desc's tensors point into the file's mapping (host memory).
 * params may be NULL for the defaults. On failure the message is in
 * moe_gguf_last_error(f) and nothing is written to desc or router.
 */
MOE_API moe_status moe_gguf_layer_desc(const moe_gguf *f, int layer_index, const moe_gguf_layer_params *params,
                                       moe_layer_desc *desc, moe_gguf_router *router);

/* moe_gguf_layer_desc + moe_layer_create. The layer BORROWS its weights from
 * f's mapping: free the layer before moe_gguf_close(f). *out is NULL on
 * failure; the message is in moe_ctx_last_error(ctx). router may be NULL. */
MOE_API moe_status moe_layer_from_gguf(moe_ctx *ctx, const moe_gguf *f, int layer_index,
                                       const moe_gguf_layer_params *params, moe_layer **out,
                                       moe_gguf_router *router);

/* Router logits on the host: x [T, D] f32 -> logits [T, E] f32
 * (x W^T + b, accumulated in double). Weights of any type libmoe dequantizes. */
MOE_API moe_status moe_gguf_router_logits(const moe_gguf_router *router, int64_t T, const float *x, float *logits);

#ifdef __cplusplus
}
#endif

#endif /* MOE_H */
