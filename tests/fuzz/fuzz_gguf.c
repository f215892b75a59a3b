/*
 * libFuzzer target for the GGUF reader: opens arbitrary bytes with
 * moe_gguf_open_memory and, when they parse, walks everything the reader
 * lends out (every key through every getter, every array element at every
 * depth, every byte of every tensor), then builds each MoE layer the file
 * describes, computes router logits and runs a forward when the layer is
 * small. Built with -fsanitize=fuzzer,address,undefined: any read outside
 * the input, any UB, or a broken invariant (checked with TRAP) is a finding.
 * Build and run: tests/fuzz/run_fuzz.sh SECONDS.
 */
#include "moe.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define TRAP(cond) do { if (!(cond)) __builtin_trap(); } while (0)

static volatile uint64_t sink;

static void walk_value(const moe_gguf *f, const moe_gguf_value *v, int depth) {
    TRAP(depth <= 17);
    if (v->type == MOE_GGUF_TYPE_STRING) {
        const uint8_t *p = v->data;
        for (uint64_t i = 0; i < v->n; i++) sink += p[i];
        return;
    }
    if (v->type != MOE_GGUF_TYPE_ARRAY) {
        sink += v->u;
        return;
    }
    if (v->data) { /* fixed-size elements: the packed bytes are readable */
        const uint8_t *p = v->data;
        if (v->n) sink += p[0];
    }
    for (uint64_t i = 0; i < v->n; i++) {
        moe_gguf_value e;
        TRAP(moe_gguf_array_get(f, v, i, &e) == MOE_OK);
        TRAP(e.type == v->elem_type);
        walk_value(f, &e, depth + 1);
    }
    moe_gguf_value e;
    TRAP(moe_gguf_array_get(f, v, v->n, &e) == MOE_ERR_INVALID_ARGUMENT);
}

static moe_ctx *ctx;

static void try_layer(const moe_gguf *f, const uint8_t *data, size_t size, int l) {
    moe_layer_desc d;
    moe_gguf_router r;
    if (moe_gguf_layer_desc(f, l, NULL, &d, &r) != MOE_OK) {
        TRAP(moe_gguf_last_error(f)[0]);
        return;
    }
    /* every weight the layer borrows lies in the input */
    const void *ptrs[] = {d.gate.data, d.up.data, d.gate_up.data, d.down.data, r.weight.data};
    for (int i = 0; i < 5; i++)
        TRAP(!ptrs[i] || ((const uint8_t *)ptrs[i] >= data && (const uint8_t *)ptrs[i] < data + size));
    int64_t E = d.E, D = d.D, I = d.I, K = d.K;
    if (E * D > (1 << 16) || E * I * D > (1 << 18)) return;
    enum { T = 2 };
    float *x = calloc((size_t)(T * D), sizeof *x), *logits = malloc((size_t)(T * E) * sizeof *logits);
    float *w = malloc((size_t)(T * K) * sizeof *w), *out = malloc((size_t)(T * D) * sizeof *out);
    int32_t *ids = malloc((size_t)(T * K) * sizeof *ids);
    for (int64_t i = 0; i < T * D; i++) x[i] = (float)((i * 7) % 13) * 0.1f - 0.6f;
    moe_layer *L = NULL;
    if (moe_gguf_router_logits(&r, T, x, logits) == MOE_OK && moe_route_topk(ctx, &r.route, T, logits, ids, w) == MOE_OK &&
        moe_layer_create(ctx, &d, &L) == MOE_OK) {
        size_t ws = 0;
        TRAP(moe_layer_workspace_size(L, T, &ws) == MOE_OK);
        void *work = ws ? malloc(ws) : NULL;
        moe_status s = moe_layer_forward(L, T, x, ids, w, out, work, ws);
        TRAP(s == MOE_OK);
        free(work);
    }
    moe_layer_free(L);
    free(x);
    free(logits);
    free(w);
    free(out);
    free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!ctx) {
        moe_ctx_params p = moe_ctx_default_params();
        p.n_threads = 1;
        p.log_level = MOE_LOG_NONE;
        if (moe_ctx_create(&p, &ctx) != MOE_OK) __builtin_trap();
    }
    moe_gguf *f = (moe_gguf *)1;
    if (moe_gguf_open_memory(data, size, &f) != MOE_OK) {
        TRAP(f == NULL && moe_gguf_last_error(NULL)[0]);
        return 0;
    }
    int64_t n_kv = moe_gguf_n_kv(f), n_t = moe_gguf_n_tensors(f);
    TRAP(moe_gguf_version(f) == 2 || moe_gguf_version(f) == 3);
    for (int64_t i = 0; i < n_kv; i++) {
        const char *key;
        moe_gguf_value v;
        TRAP(moe_gguf_kv_at(f, i, &key, &v) == MOE_OK);
        TRAP(moe_gguf_find_key(f, key) == i);
        walk_value(f, &v, 0);
        uint32_t u32;
        int32_t i32;
        uint64_t u64;
        float f32;
        int b;
        const char *s;
        size_t len;
        moe_gguf_type et;
        (void)moe_gguf_get_u32(f, key, &u32);
        (void)moe_gguf_get_i32(f, key, &i32);
        (void)moe_gguf_get_u64(f, key, &u64);
        (void)moe_gguf_get_f32(f, key, &f32);
        (void)moe_gguf_get_bool(f, key, &b);
        if (moe_gguf_get_string(f, key, &s, &len) == MOE_OK) TRAP(strlen(s) <= len && s[len] == 0);
        (void)moe_gguf_get_array(f, key, &et, &u64);
    }
    for (int64_t i = 0; i < n_t; i++) {
        moe_gguf_tensor_info t;
        TRAP(moe_gguf_tensor_at(f, i, &t) == MOE_OK);
        TRAP(moe_gguf_find_tensor(f, t.name) == i);
        TRAP(t.offset <= size && t.size <= size - t.offset && t.offset >= moe_gguf_data_offset(f));
        TRAP((t.offset - moe_gguf_data_offset(f)) % moe_gguf_alignment(f) == 0);
        TRAP((const uint8_t *)t.data == data + t.offset);
        const uint8_t *p = t.data;
        for (uint64_t j = 0; j < t.size; j += 61) sink += p[j];
        if (t.size) sink += p[t.size - 1];
    }
    for (int l = 0; l < 3; l++) try_layer(f, data, size, l);
    moe_gguf_close(f);
    return 0;
}
