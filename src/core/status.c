/*
 * Status strings (from the one X-macro list in moe.h), per-handle error
 * messages, logging, and the version.
 */
#include "core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MOE_STR_(x) #x
#define MOE_XSTR_(x) MOE_STR_(x)

const char *moe_version(void) {
    return MOE_XSTR_(MOE_VERSION_MAJOR) "." MOE_XSTR_(MOE_VERSION_MINOR) "." MOE_XSTR_(MOE_VERSION_PATCH);
}

int moe_version_number(void) { return MOE_VERSION_NUMBER; }

const char *moe_status_string(moe_status s) {
    switch (s) {
#define MOE_STATUS_CASE_(name, value, text) case name: return text;
        MOE_STATUS_LIST(MOE_STATUS_CASE_)
#undef MOE_STATUS_CASE_
    }
    return "unknown status";
}

const char *moe_status_name(moe_status s) {
    switch (s) {
#define MOE_STATUS_CASE_(name, value, text) case name: return #name;
        MOE_STATUS_LIST(MOE_STATUS_CASE_)
#undef MOE_STATUS_CASE_
    }
    return "MOE_STATUS_UNKNOWN";
}

/* Errors of calls made without a context (ctx == NULL) land here. */
static _Thread_local char null_ctx_err[MOE__ERR_LEN];

static const char *const level_names[] = {"debug", "info", "warn", "error", "none"};

int moe__env_log_level(void) {
    const char *v = getenv("MOE_LOG");
    if (!v || !*v) return -1;
    for (int i = 0; i < 5; i++)
        if (strcasecmp(v, level_names[i]) == 0) return i;
    if (strcasecmp(v, "warning") == 0) return MOE_LOG_WARN;
    return -1;
}

static void vlog(const moe_ctx *ctx, moe_log_level level, const char *fmt, va_list ap) {
    if (!ctx || !ctx->p.log || level < ctx->log_level || ctx->log_level >= MOE_LOG_NONE) return;
    char line[MOE__ERR_LEN + 64];
    vsnprintf(line, sizeof line, fmt, ap);
    ctx->p.log(level, line, ctx->p.log_user);
}

void moe__log(const moe_ctx *ctx, moe_log_level level, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vlog(ctx, level, fmt, ap);
    va_end(ap);
}

static void set_error(const moe_ctx *ctx, char *dst, const char *fmt, va_list ap) {
    va_list ap2;
    va_copy(ap2, ap);
    vsnprintf(dst, MOE__ERR_LEN, fmt, ap);
    if (ctx && ctx->p.log && MOE_LOG_ERROR >= ctx->log_level && ctx->log_level < MOE_LOG_NONE)
        ctx->p.log(MOE_LOG_ERROR, dst, ctx->p.log_user);
    va_end(ap2);
}

moe_status moe__ctx_error(moe_ctx *ctx, moe_status s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    set_error(ctx, ctx ? ctx->err : null_ctx_err, fmt, ap);
    va_end(ap);
    return s;
}

moe_status moe__layer_error(moe_layer *L, moe_status s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    set_error(L ? L->ctx : NULL, L ? L->err : null_ctx_err, fmt, ap);
    va_end(ap);
    return s;
}

const char *moe_ctx_last_error(const moe_ctx *ctx) { return ctx ? ctx->err : null_ctx_err; }

const char *moe_layer_last_error(const moe_layer *L) { return L ? L->err : null_ctx_err; }
