/*
 * Contexts: the device, thread count and logging every layer of the context
 * shares, plus the per-backend state slots (thread pools, CUDA handles).
 */
#include "core.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

moe_ctx_params moe_ctx_default_params(void) {
    moe_ctx_params p;
    memset(&p, 0, sizeof p);
    p.device = MOE_DEVICE_CPU;
    p.log_level = MOE_LOG_WARN;
    return p;
}

moe_status moe_ctx_create(const moe_ctx_params *params, moe_ctx **out) {
    if (!out) return moe__ctx_error(NULL, MOE_ERR_NULL_POINTER, "moe_ctx_create: out is NULL");
    *out = NULL;
    moe_ctx_params p = params ? *params : moe_ctx_default_params();
    if (p.device != MOE_DEVICE_CPU && p.device != MOE_DEVICE_CUDA)
        return moe__ctx_error(NULL, MOE_ERR_INVALID_ARGUMENT,
                              "moe_ctx_create: device = %d, expected MOE_DEVICE_CPU (0) or MOE_DEVICE_CUDA (1)",
                              (int)p.device);
    if (p.n_threads < 0 || p.n_threads > 4096)
        return moe__ctx_error(NULL, MOE_ERR_INVALID_ARGUMENT,
                              "moe_ctx_create: n_threads = %d, expected 0 (all cores) to 4096", p.n_threads);
    if (p.log_level < MOE_LOG_DEBUG || p.log_level > MOE_LOG_NONE)
        return moe__ctx_error(NULL, MOE_ERR_INVALID_ARGUMENT,
                              "moe_ctx_create: log_level = %d, expected 0 (debug) to 4 (none)", (int)p.log_level);
    if (p.device == MOE_DEVICE_CUDA && p.cuda_device < 0)
        return moe__ctx_error(NULL, MOE_ERR_INVALID_ARGUMENT,
                              "moe_ctx_create: cuda_device = %d, expected >= 0", p.cuda_device);
    moe_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return moe__ctx_error(NULL, MOE_ERR_OUT_OF_MEMORY, "moe_ctx_create: out of memory");
    ctx->p = p;
    int env = moe__env_log_level();
    ctx->log_level = env >= 0 ? (moe_log_level)env : p.log_level;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    ctx->n_threads = p.n_threads > 0 ? p.n_threads : (ncpu > 0 ? (int)ncpu : 1);
    *out = ctx;
    return MOE_OK;
}

void moe_ctx_free(moe_ctx *ctx) {
    if (!ctx) return;
    for (int i = 0; i < moe__n_backends && i < MOE__MAX_BACKENDS; i++)
        if (ctx->backend_state[i] && moe__backends[i]->ctx_fini)
            moe__backends[i]->ctx_fini(ctx->backend_state[i]);
    free(ctx);
}

moe_device moe_ctx_device(const moe_ctx *ctx) { return ctx ? ctx->p.device : MOE_DEVICE_CPU; }

int moe_ctx_n_threads(const moe_ctx *ctx) { return ctx ? ctx->n_threads : 0; }

int moe__backend_slot(const moe__backend *b) {
    for (int i = 0; i < moe__n_backends; i++)
        if (moe__backends[i] == b) return i;
    return -1;
}

const moe__backend *moe__backend_find(const char *name) {
    for (int i = 0; i < moe__n_backends; i++)
        if (strcmp(moe__backends[i]->name, name) == 0) return moe__backends[i];
    return NULL;
}
