/*
 * Internal definitions shared by every part of libmoe: the context and layer
 * structs, the backend interface, error reporting, logging and tensor
 * addressing. Nothing here is public; see include/moe.h for the API.
 */
#ifndef MOE_CORE_H
#define MOE_CORE_H

#include "moe.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MOE__ERR_LEN 1024
#define MOE__MAX_BACKENDS 16

typedef struct moe_layer moe_layer;
typedef struct moe__backend moe__backend;

struct moe_ctx {
    moe_ctx_params p;
    int n_threads;
    moe_log_level log_level;
    char err[MOE__ERR_LEN];
    /* Per-backend state made on first use (a thread pool, a CUDA handle...),
     * freed by the backend's ctx_fini when the context is freed. */
    void *backend_state[MOE__MAX_BACKENDS];
};

/* Arguments of one forward, checked by core before the backend sees them. */
typedef struct moe__fwd {
    int64_t T;
    const void *x;           /* [T, D] act_type */
    const int32_t *ids;      /* [T, K] */
    const float *w;          /* [T, K] */
    void *out;               /* [T, D] act_type */
    void *ws;
    size_t ws_size;
} moe__fwd;

struct moe_layer {
    moe_ctx *ctx;
    moe_layer_desc desc;     /* as given, strides filled in */
    /* Views resolved from any layout: gate and up as [E, I, D], down [E, D, I];
     * biases as [E, I] / [E, D] (data NULL when absent). For CONCAT and
     * INTERLEAVED they point into gate_up with adjusted offsets and strides,
     * so code that reads through them needs no layout switch. gate is absent
     * (data NULL) for non-gated activations. */
    moe_tensor gate, up, down;
    moe_tensor gate_bias, up_bias, down_bias;
    bool gated;
    const moe__backend *backend;
    void *impl;              /* the backend's own state */
    /* When backend is a small-batch backend (it has max_tokens), the layer
     * that runs forwards of more tokens: same description, the next backend
     * of the chain. NULL when one backend runs every T. */
    moe_layer *next;
    char err[MOE__ERR_LEN];
};

/* A backend: one way of running a layer. Registered in src/backends.c in
 * order of preference. */
struct moe__backend {
    const char *name;
    moe_device device;
    /* 1 if this build and machine can run the backend; else 0 and why. */
    int (*probe)(moe_ctx *ctx, char *why, size_t n);
    /* 1 if the backend supports this (already validated) layer; else 0 and why. */
    int (*supports)(const moe_layer *L, char *why, size_t n);
    /* Makes L->impl (repacks, uploads). Errors go through moe__layer_error. */
    moe_status (*init)(moe_layer *L);
    void (*fini)(moe_layer *L);
    /* Workspace bytes for T tokens. */
    size_t (*workspace)(const moe_layer *L, int64_t T);
    moe_status (*forward)(moe_layer *L, const moe__fwd *a);
    void (*describe)(const moe_layer *L, int64_t T, char *buf, size_t n);
    /* Frees the per-context state this backend kept in ctx->backend_state[slot]. */
    void (*ctx_fini)(void *state);
    /* Small-batch backends: the largest T this backend should run for this
     * layer (chosen by measurement per GPU); larger forwards go to the next
     * backend of the chain. NULL: the backend runs every T. */
    int64_t (*max_tokens)(const moe_layer *L);
};

/* src/backends.c: the backends compiled into this library, best first. */
extern const moe__backend *const moe__backends[];
extern const int moe__n_backends;
/* Index of b in moe__backends (its ctx->backend_state slot), or -1. */
int moe__backend_slot(const moe__backend *b);
const moe__backend *moe__backend_find(const char *name);
/* Tests only: makes layer creation choose from list[0..n) instead of the
 * compiled-in registry (NULL restores it), so that the selection rules can be
 * tested with fake backends and injected probe results on any machine. */
void moe__registry_override(const moe__backend *const *list, int n);

/* ---- errors and logging (src/core/status.c, src/core/log.c) ---- */

/* Formats a message into ctx->err (ctx may be NULL: a thread-local buffer),
 * logs it at ERROR, and returns s. */
moe_status moe__ctx_error(moe_ctx *ctx, moe_status s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
moe_status moe__layer_error(moe_layer *L, moe_status s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
void moe__log(const moe_ctx *ctx, moe_log_level level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* MOE_LOG=debug|info|warn|error|none, or -1 when unset or unknown. */
int moe__env_log_level(void);

/* ---- tensors ---- */

/* Byte address of element (e, n, c) of t (c must be a block start for block types). */
static inline const void *moe__tensor_at(const moe_tensor *t, int64_t e, int64_t n, int64_t c) {
    int64_t off = e * t->stride_e + n * t->stride_n + c * t->stride_c;
    int64_t bs = moe_type_block_size(t->type), bb = moe_type_block_bytes(t->type);
    return (const char *)t->data + (off / bs) * bb;
}

/* a*b with overflow check: 0 on overflow. */
static inline int moe__mul_ok(int64_t a, int64_t b, int64_t *r) {
    return !__builtin_mul_overflow(a, b, r);
}

/* Ceil of a / b for positive values. */
static inline int64_t moe__cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* ---- per-forward checks shared by the backends ---- */

/* Checks every host-side id in [0, E); on failure sets L's error naming the
 * first bad (token, slot, value). */
moe_status moe__check_ids_host(moe_layer *L, int64_t T, const int32_t *ids);

/* Bytes per element of an activation type (F32, F16, BF16). */
static inline size_t moe__act_size(moe_type t) { return t == MOE_TYPE_F32 ? 4 : 2; }

#ifdef __cplusplus
}
#endif

#endif
