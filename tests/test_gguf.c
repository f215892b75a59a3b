/*
 * The GGUF reader on hand-built byte buffers: a valid file read back field by
 * field (every value type, nested arrays, tensors, a layer and its forward
 * against a hand computation), then each kind of bad input (truncation at
 * every offset, bad magic and version, counts and lengths past the end,
 * overflowing shapes, misaligned or overlapping data, duplicates, unknown
 * types, shapes that disagree with the metadata, missing tensors) must give
 * its status and a message naming the field, and random byte flips must never
 * crash (run under MOE_SANITIZE=ON to see reads out of bounds).
 */
#include "harness.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- a GGUF writer for tests ---------------------------------------------------- */

typedef struct { uint8_t *p; size_t n, cap; } buf;

static void put(buf *b, const void *src, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
}
static void u8(buf *b, uint8_t v) { put(b, &v, 1); }
static void u32(buf *b, uint32_t v) { for (int i = 0; i < 4; i++) u8(b, (uint8_t)(v >> (8 * i))); }
static void u64(buf *b, uint64_t v) { for (int i = 0; i < 8; i++) u8(b, (uint8_t)(v >> (8 * i))); }
static void str(buf *b, const char *s) { u64(b, strlen(s)); put(b, s, strlen(s)); }
static void set_u64(buf *b, size_t at, uint64_t v) { for (int i = 0; i < 8; i++) b->p[at + i] = (uint8_t)(v >> (8 * i)); }
static void set_u32(buf *b, size_t at, uint32_t v) { for (int i = 0; i < 4; i++) b->p[at + i] = (uint8_t)(v >> (8 * i)); }

static void header(buf *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    put(b, "GGUF", 4);
    u32(b, version);
    u64(b, n_tensors);
    u64(b, n_kv);
}
static void kv_u32(buf *b, const char *k, uint32_t v) { str(b, k); u32(b, MOE_GGUF_TYPE_UINT32); u32(b, v); }
static void kv_str(buf *b, const char *k, const char *v) { str(b, k); u32(b, MOE_GGUF_TYPE_STRING); str(b, v); }
static void kv_f32(buf *b, const char *k, float v) {
    uint32_t u;
    memcpy(&u, &v, 4);
    str(b, k);
    u32(b, MOE_GGUF_TYPE_FLOAT32);
    u32(b, u);
}
static void tinfo(buf *b, const char *name, int n_dims, const uint64_t *ne, uint32_t type, uint64_t off) {
    str(b, name);
    u32(b, (uint32_t)n_dims);
    for (int i = 0; i < n_dims; i++) u64(b, ne[i]);
    u32(b, type);
    u64(b, off);
}
static void pad(buf *b, size_t align) { while (b->n % align) u8(b, 0); }

/* ---- the reference file ----------------------------------------------------------- */

/* A qwen3moe layer: E = 2, K = 1, D = 4, I = 2, f32 weights, plus one key of
 * every value type and nested arrays. Offsets of interest are recorded. */
enum { E_ = 2, D_ = 4, I_ = 2 };
static float W_router[E_ * D_], W_gate[E_ * I_ * D_], W_up[E_ * I_ * D_], W_down[E_ * D_ * I_];

typedef struct {
    size_t n_kv_at, string_len_at, tensor_type_at, tensor_off_at, tensor_ne0_at, array_len_at;
} marks;

static void fill_weights(void) {
    for (int i = 0; i < E_ * D_; i++) W_router[i] = 0.25f * (float)(i % 5) - 0.5f;
    for (int i = 0; i < E_ * I_ * D_; i++) {
        W_gate[i] = 0.125f * (float)((i * 7) % 11) - 0.6f;
        W_up[i] = 0.1f * (float)((i * 5) % 9) - 0.4f;
        W_down[i] = 0.2f * (float)((i * 3) % 7) - 0.55f;
    }
}

/* misalign = 1: general.alignment = 1 and every tensor one byte off its natural alignment */
static void build_model_ex(buf *b, marks *m, int misalign) {
    fill_weights();
    memset(b, 0, sizeof *b);
    header(b, 3, 4, misalign ? 21 : 20);
    if (m) m->n_kv_at = 16;
    if (misalign) kv_u32(b, "general.alignment", 1);
    kv_str(b, "general.architecture", "qwen3moe");
    kv_u32(b, "qwen3moe.block_count", 1);
    kv_u32(b, "qwen3moe.expert_count", E_);
    kv_u32(b, "qwen3moe.expert_used_count", 1);
    kv_u32(b, "qwen3moe.embedding_length", D_);
    kv_u32(b, "qwen3moe.expert_feed_forward_length", I_);
    str(b, "t.u8"); u32(b, MOE_GGUF_TYPE_UINT8); u8(b, 200);
    str(b, "t.i8"); u32(b, MOE_GGUF_TYPE_INT8); u8(b, (uint8_t)-5);
    str(b, "t.u16"); u32(b, MOE_GGUF_TYPE_UINT16); u8(b, 0x34); u8(b, 0x12);
    str(b, "t.i16"); u32(b, MOE_GGUF_TYPE_INT16); u8(b, 0xff); u8(b, 0xff);
    str(b, "t.i32"); u32(b, MOE_GGUF_TYPE_INT32); u32(b, (uint32_t)-70000);
    kv_f32(b, "t.f32", 1.5f);
    str(b, "t.bool"); u32(b, MOE_GGUF_TYPE_BOOL); u8(b, 1);
    str(b, "t.u64"); u32(b, MOE_GGUF_TYPE_UINT64); u64(b, 1ull << 40);
    str(b, "t.i64"); u32(b, MOE_GGUF_TYPE_INT64); u64(b, (uint64_t)-3);
    double d = -2.25;
    uint64_t du;
    memcpy(&du, &d, 8);
    str(b, "t.f64"); u32(b, MOE_GGUF_TYPE_FLOAT64); u64(b, du);
    if (m) m->string_len_at = b->n + 8 + strlen("t.str") + 4;
    kv_str(b, "t.str", "hello");
    str(b, "t.arr_u32"); u32(b, MOE_GGUF_TYPE_ARRAY); u32(b, MOE_GGUF_TYPE_UINT32);
    if (m) m->array_len_at = b->n;
    u64(b, 3); u32(b, 10); u32(b, 20); u32(b, 30);
    str(b, "t.arr_str"); u32(b, MOE_GGUF_TYPE_ARRAY); u32(b, MOE_GGUF_TYPE_STRING); u64(b, 3);
    str(b, "a"); str(b, ""); str(b, "ccc");
    /* [[1, 2], [], [[...]] is not allowed (one element type per array): [[1,2], [3]] of i8, then [["x"]] */
    str(b, "t.nested"); u32(b, MOE_GGUF_TYPE_ARRAY); u32(b, MOE_GGUF_TYPE_ARRAY); u64(b, 3);
    u32(b, MOE_GGUF_TYPE_INT8); u64(b, 2); u8(b, 1); u8(b, 2);
    u32(b, MOE_GGUF_TYPE_INT8); u64(b, 0);
    u32(b, MOE_GGUF_TYPE_ARRAY); u64(b, 1); u32(b, MOE_GGUF_TYPE_STRING); u64(b, 1); str(b, "deep");
    /* tensors, 32-byte aligned, back to back; the last one ends the file */
    uint64_t ne_r[2] = {D_, E_}, ne_g[3] = {D_, I_, E_}, ne_d[3] = {I_, D_, E_};
    size_t o_r = 0, o_g = 32, o_u = o_g + sizeof W_gate, o_d = o_u + sizeof W_up, at[4];
    if (m) m->tensor_ne0_at = b->n + 8 + strlen("blk.0.ffn_gate_inp.weight") + 4;
    tinfo(b, "blk.0.ffn_gate_inp.weight", 2, ne_r, MOE_TYPE_F32, o_r);
    at[0] = b->n - 8;
    if (m) m->tensor_type_at = b->n + 8 + strlen("blk.0.ffn_gate_exps.weight") + 4 + 3 * 8;
    if (m) m->tensor_off_at = m->tensor_type_at + 4;
    tinfo(b, "blk.0.ffn_gate_exps.weight", 3, ne_g, MOE_TYPE_F32, o_g);
    at[1] = b->n - 8;
    tinfo(b, "blk.0.ffn_up_exps.weight", 3, ne_g, MOE_TYPE_F32, o_u);
    at[2] = b->n - 8;
    tinfo(b, "blk.0.ffn_down_exps.weight", 3, ne_d, MOE_TYPE_F32, o_d);
    at[3] = b->n - 8;
    if (misalign) {
        /* alignment 1: data starts right here; shift every tensor so that its address
         * (in a 16-byte aligned copy) is 1 mod 4 */
        size_t sh = (5 - b->n % 4) % 4;
        size_t offs[4] = {o_r + sh, o_g + sh, o_u + sh, o_d + sh};
        for (int i = 0; i < 4; i++) set_u64(b, at[i], offs[i]);
        for (size_t i = 0; i < sh; i++) u8(b, 0);
    } else {
        pad(b, 32);
    }
    size_t start = b->n;
    put(b, W_router, sizeof W_router);
    while (b->n - start < 32) u8(b, 0);
    put(b, W_gate, sizeof W_gate);
    put(b, W_up, sizeof W_up);
    put(b, W_down, sizeof W_down);
}

static void build_model(buf *b, marks *m) { build_model_ex(b, m, 0); }

/* Opens n bytes of b from an exactly-sized copy (so that ASan sees any read past the end). */
static moe_status open_copy(const uint8_t *p, size_t n, moe_gguf **f, uint8_t **copy) {
    *copy = malloc(n ? n : 1);
    if (n) memcpy(*copy, p, n);
    return moe_gguf_open_memory(*copy, n, f);
}

/* Reads every key, array element and tensor byte of f; returns a checksum. */
static uint64_t walk_value(const moe_gguf *f, const moe_gguf_value *v, int depth) {
    uint64_t h = (uint64_t)v->type * 31 + v->n;
    if (v->type == MOE_GGUF_TYPE_STRING) {
        for (uint64_t i = 0; i < v->n; i++) h = h * 131 + ((const uint8_t *)v->data)[i];
    } else if (v->type == MOE_GGUF_TYPE_ARRAY) {
        for (uint64_t i = 0; i < v->n && i < 4096; i++) {
            moe_gguf_value e;
            if (moe_gguf_array_get(f, v, i, &e) == MOE_OK) h = h * 7 + walk_value(f, &e, depth + 1);
            else h += 1000003;
        }
    } else {
        uint64_t fb;
        memcpy(&fb, &v->f, 8);
        h = h * 17 + v->u + (uint64_t)v->i + fb;
    }
    return h;
}

static uint64_t walk(const moe_gguf *f) {
    uint64_t h = 0;
    for (int64_t i = 0; i < moe_gguf_n_kv(f); i++) {
        const char *k;
        moe_gguf_value v;
        if (moe_gguf_kv_at(f, i, &k, &v) != MOE_OK) return 0;
        h += walk_value(f, &v, 0) + strlen(k) + (uint64_t)(moe_gguf_find_key(f, k) == i);
    }
    for (int64_t i = 0; i < moe_gguf_n_tensors(f); i++) {
        moe_gguf_tensor_info t;
        if (moe_gguf_tensor_at(f, i, &t) != MOE_OK) return 0;
        const uint8_t *p = t.data;
        for (uint64_t j = 0; j < t.size; j++) h += p[j];
        h += (uint64_t)(moe_gguf_find_tensor(f, t.name) == i);
    }
    moe_layer_desc d;
    moe_gguf_router r;
    for (int l = 0; l < 2; l++)
        if (moe_gguf_layer_desc(f, l, NULL, &d, &r) == MOE_OK) h += (uint64_t)(d.E + d.D + d.I);
    return h;
}

/* ---- the valid file --------------------------------------------------------------- */

TEST(gguf_reads_every_value_type) {
    buf b;
    build_model(&b, NULL);
    moe_gguf *f;
    uint8_t *copy;
    CHECK_STATUS(open_copy(b.p, b.n, &f, &copy), MOE_OK);
    CHECK(moe_gguf_version(f) == 3 && moe_gguf_n_kv(f) == 20 && moe_gguf_n_tensors(f) == 4);
    CHECK(moe_gguf_alignment(f) == 32 && moe_gguf_data_offset(f) % 32 == 0);
    uint32_t u;
    int32_t i;
    uint64_t u64v;
    float fl;
    int bo;
    const char *s;
    size_t len;
    CHECK_STATUS(moe_gguf_get_u32(f, "t.u8", &u), MOE_OK);
    CHECK(u == 200);
    CHECK_STATUS(moe_gguf_get_i32(f, "t.i8", &i), MOE_OK);
    CHECK(i == -5);
    CHECK_STATUS(moe_gguf_get_u32(f, "t.u16", &u), MOE_OK);
    CHECK(u == 0x1234);
    CHECK_STATUS(moe_gguf_get_i32(f, "t.i16", &i), MOE_OK);
    CHECK(i == -1);
    CHECK_STATUS(moe_gguf_get_i32(f, "t.i32", &i), MOE_OK);
    CHECK(i == -70000);
    CHECK_STATUS(moe_gguf_get_u32(f, "t.i32", &u), MOE_ERR_GGUF_FORMAT); /* negative */
    CHECK(strstr(moe_gguf_last_error(f), "-70000") && strstr(moe_gguf_last_error(f), "u32"));
    CHECK_STATUS(moe_gguf_get_f32(f, "t.f32", &fl), MOE_OK);
    CHECK(fl == 1.5f);
    CHECK_STATUS(moe_gguf_get_f32(f, "t.f64", &fl), MOE_OK);
    CHECK(fl == -2.25f);
    CHECK_STATUS(moe_gguf_get_bool(f, "t.bool", &bo), MOE_OK);
    CHECK(bo == 1);
    CHECK_STATUS(moe_gguf_get_u64(f, "t.u64", &u64v), MOE_OK);
    CHECK(u64v == 1ull << 40);
    CHECK_STATUS(moe_gguf_get_u32(f, "t.u64", &u), MOE_ERR_GGUF_FORMAT); /* too large */
    CHECK_STATUS(moe_gguf_get_u64(f, "t.i64", &u64v), MOE_ERR_GGUF_FORMAT);
    CHECK_STATUS(moe_gguf_get_string(f, "t.str", &s, &len), MOE_OK);
    CHECK(strcmp(s, "hello") == 0 && len == 5);
    CHECK_STATUS(moe_gguf_get_string(f, "t.u8", &s, &len), MOE_ERR_GGUF_FORMAT);
    CHECK(strstr(moe_gguf_last_error(f), "t.u8") && strstr(moe_gguf_last_error(f), "u8"));
    CHECK_STATUS(moe_gguf_get_u32(f, "no.such.key", &u), MOE_ERR_NOT_FOUND);
    CHECK(strstr(moe_gguf_last_error(f), "no.such.key"));
    moe_gguf_type et;
    uint64_t n;
    CHECK_STATUS(moe_gguf_get_array(f, "t.arr_u32", &et, &n), MOE_OK);
    CHECK(et == MOE_GGUF_TYPE_UINT32 && n == 3);
    moe_gguf_value a, e, e2;
    CHECK_STATUS(moe_gguf_get(f, "t.arr_u32", &a), MOE_OK);
    CHECK_STATUS(moe_gguf_array_get(f, &a, 2, &e), MOE_OK);
    CHECK(e.type == MOE_GGUF_TYPE_UINT32 && e.u == 30);
    CHECK_STATUS(moe_gguf_array_get(f, &a, 3, &e), MOE_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(moe_gguf_get(f, "t.arr_str", &a), MOE_OK);
    CHECK(a.data == NULL && a.n == 3);
    CHECK_STATUS(moe_gguf_array_get(f, &a, 2, &e), MOE_OK);
    CHECK(e.type == MOE_GGUF_TYPE_STRING && e.n == 3 && memcmp(e.data, "ccc", 3) == 0);
    CHECK_STATUS(moe_gguf_array_get(f, &a, 1, &e), MOE_OK);
    CHECK(e.n == 0);
    CHECK_STATUS(moe_gguf_get(f, "t.nested", &a), MOE_OK);
    CHECK(a.elem_type == MOE_GGUF_TYPE_ARRAY && a.n == 3);
    CHECK_STATUS(moe_gguf_array_get(f, &a, 0, &e), MOE_OK);
    CHECK(e.type == MOE_GGUF_TYPE_ARRAY && e.elem_type == MOE_GGUF_TYPE_INT8 && e.n == 2);
    CHECK_STATUS(moe_gguf_array_get(f, &e, 1, &e2), MOE_OK);
    CHECK(e2.i == 2);
    CHECK_STATUS(moe_gguf_array_get(f, &a, 2, &e), MOE_OK);
    CHECK_STATUS(moe_gguf_array_get(f, &e, 0, &e2), MOE_OK);
    CHECK(e2.type == MOE_GGUF_TYPE_ARRAY && e2.elem_type == MOE_GGUF_TYPE_STRING);
    moe_gguf_value e3;
    CHECK_STATUS(moe_gguf_array_get(f, &e2, 0, &e3), MOE_OK);
    CHECK(e3.n == 4 && memcmp(e3.data, "deep", 4) == 0);
    moe_gguf_tensor_info t;
    CHECK_STATUS(moe_gguf_get_tensor(f, "blk.0.ffn_down_exps.weight", &t), MOE_OK);
    CHECK(t.type == MOE_TYPE_F32 && t.n_dims == 3 && t.ne[0] == I_ && t.ne[1] == D_ && t.ne[2] == E_ && t.ne[3] == 1);
    CHECK(t.size == sizeof W_down && memcmp(t.data, W_down, sizeof W_down) == 0);
    CHECK(t.offset + t.size == b.n);
    CHECK_STATUS(moe_gguf_get_tensor(f, "blk.9.nothing", &t), MOE_ERR_NOT_FOUND);
    CHECK(walk(f) != 0);
    moe_gguf_close(f);
    free(copy);
    free(b.p);
}

TEST(gguf_layer_forward_matches_hand_computation) {
    buf b;
    build_model(&b, NULL);
    moe_gguf *f;
    uint8_t *copy;
    CHECK_STATUS(open_copy(b.p, b.n, &f, &copy), MOE_OK);
    moe_ctx *ctx;
    CHECK_STATUS(moe_ctx_create(NULL, &ctx), MOE_OK);
    moe_layer *L;
    moe_gguf_router r;
    CHECK_STATUS(moe_layer_from_gguf(ctx, f, 0, NULL, &L, &r), MOE_OK);
    CHECK(r.route.E == E_ && r.route.K == 1 && r.route.renormalize == 1 && r.route.score == MOE_SCORE_SOFTMAX);
    CHECK(r.D == D_ && r.weight.data != NULL && r.bias.data == NULL && r.route.score_bias == NULL);
    enum { T = 3 };
    float x[T * D_], logits[T * E_], w[T], out[T * D_];
    int32_t ids[T];
    for (int k = 0; k < T * D_; k++) x[k] = 0.3f * (float)((k * 5) % 7) - 0.8f;
    CHECK_STATUS(moe_gguf_router_logits(&r, T, x, logits), MOE_OK);
    CHECK_STATUS(moe_route_topk(ctx, &r.route, T, logits, ids, w), MOE_OK);
    size_t ws;
    CHECK_STATUS(moe_layer_workspace_size(L, T, &ws), MOE_OK);
    void *work = ws ? malloc(ws) : NULL;
    CHECK_STATUS(moe_layer_forward(L, T, x, ids, w, out, work, ws), MOE_OK);
    free(work);
    for (int t = 0; t < T; t++) {
        double lg[E_];
        int best = 0;
        for (int e = 0; e < E_; e++) {
            lg[e] = 0;
            for (int c = 0; c < D_; c++) lg[e] += (double)W_router[e * D_ + c] * x[t * D_ + c];
            CHECK(fabs(lg[e] - logits[t * E_ + e]) < 1e-5);
            if (lg[e] > lg[best]) best = e;
        }
        CHECK(ids[t] == best && fabs(w[t] - 1.0f) < 1e-6); /* K = 1, renormalised */
        double h[I_];
        for (int i = 0; i < I_; i++) {
            double g = 0, u = 0;
            for (int c = 0; c < D_; c++) {
                g += (double)W_gate[(best * I_ + i) * D_ + c] * x[t * D_ + c];
                u += (double)W_up[(best * I_ + i) * D_ + c] * x[t * D_ + c];
            }
            h[i] = g / (1 + exp(-g)) * u;
        }
        for (int c = 0; c < D_; c++) {
            double o = 0;
            for (int i = 0; i < I_; i++) o += (double)W_down[(best * D_ + c) * I_ + i] * h[i];
            CHECK_MSG(fabs(o - out[t * D_ + c]) < 1e-5, "out[%d][%d] = %g, expected %g", t, c, out[t * D_ + c], o);
        }
    }
    moe_layer_free(L);
    moe_ctx_free(ctx);
    moe_gguf_close(f);
    free(copy);
    free(b.p);
}

TEST(gguf_open_file_and_io_errors) {
    buf b;
    build_model(&b, NULL);
    char path[] = "/tmp/moe_test_gguf_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    CHECK(write(fd, b.p, b.n) == (ssize_t)b.n);
    close(fd);
    moe_gguf *f;
    CHECK_STATUS(moe_gguf_open(path, &f), MOE_OK);
    CHECK(walk(f) != 0);
    moe_gguf_close(f);
    CHECK(truncate(path, 100) == 0);
    CHECK_STATUS(moe_gguf_open(path, &f), MOE_ERR_GGUF_FORMAT);
    CHECK(f == NULL && strstr(moe_gguf_last_error(NULL), path));
    CHECK(truncate(path, 0) == 0);
    CHECK_STATUS(moe_gguf_open(path, &f), MOE_ERR_GGUF_FORMAT);
    CHECK(strstr(moe_gguf_last_error(NULL), "0 bytes"));
    unlink(path);
    CHECK_STATUS(moe_gguf_open(path, &f), MOE_ERR_IO);
    CHECK(strstr(moe_gguf_last_error(NULL), "No such file"));
    CHECK_STATUS(moe_gguf_open("/tmp", &f), MOE_ERR_IO);
    CHECK(strstr(moe_gguf_last_error(NULL), "not a regular file"));
    CHECK_STATUS(moe_gguf_open(NULL, &f), MOE_ERR_NULL_POINTER);
    moe_gguf_close(NULL);
    free(b.p);
}

/* ---- bad input -------------------------------------------------------------------- */

/* Opens the buffer and expects status want with every needle in the message. */
static void expect_error(const buf *b, moe_status want, const char *n1, const char *n2) {
    moe_gguf *f = (moe_gguf *)1;
    uint8_t *copy;
    moe_status s = open_copy(b->p, b->n, &f, &copy);
    free(copy);
    const char *msg = moe_gguf_last_error(NULL);
    if (s == MOE_OK) moe_gguf_close(f);
    CHECK_MSG(s == want, "status %s, expected %s (message: %s)", moe_status_name(s), moe_status_name(want), msg);
    CHECK_MSG(f == NULL, "*out not NULL on failure");
    CHECK_MSG(!n1 || strstr(msg, n1), "message '%s' lacks '%s'", msg, n1);
    CHECK_MSG(!n2 || strstr(msg, n2), "message '%s' lacks '%s'", msg, n2);
}

TEST(gguf_truncated_at_every_offset) {
    buf b;
    marks m;
    build_model(&b, &m);
    for (size_t n = 0; n < b.n; n++) {
        moe_gguf *f;
        uint8_t *copy;
        moe_status s = open_copy(b.p, n, &f, &copy);
        free(copy);
        CHECK_MSG(s != MOE_OK, "a file truncated to %zu of %zu bytes opened", n, b.n);
        CHECK_MSG(s == MOE_ERR_GGUF_FORMAT, "truncated to %zu: %s (%s)", n, moe_status_name(s), moe_gguf_last_error(NULL));
        CHECK_MSG(moe_gguf_last_error(NULL)[0], "truncated to %zu: empty message", n);
    }
    free(b.p);
}

TEST(gguf_bad_header) {
    buf b = {0};
    build_model(&b, NULL);
    b.p[0] = 'X';
    expect_error(&b, MOE_ERR_GGUF_FORMAT, "magic", "GGUF");
    if (moe_test_failed()) return;
    b.p[0] = 'G';
    set_u32(&b, 4, 1);
    expect_error(&b, MOE_ERR_UNSUPPORTED, "version 1", NULL);
    if (moe_test_failed()) return;
    set_u32(&b, 4, 4);
    expect_error(&b, MOE_ERR_GGUF_FORMAT, "version = 4", "expected 2 or 3");
    if (moe_test_failed()) return;
    set_u32(&b, 4, 0x03000000u);
    expect_error(&b, MOE_ERR_UNSUPPORTED, "big-endian", NULL);
    if (moe_test_failed()) return;
    set_u32(&b, 4, 2); /* version 2 reads the same */
    moe_gguf *f;
    uint8_t *copy;
    CHECK_STATUS(open_copy(b.p, b.n, &f, &copy), MOE_OK);
    CHECK(moe_gguf_version(f) == 2);
    moe_gguf_close(f);
    free(copy);
    set_u32(&b, 4, 3);
    set_u64(&b, 16, 1ull << 60); /* n_kv */
    expect_error(&b, MOE_ERR_GGUF_FORMAT, "n_kv = 1152921504606846976", "at most");
    if (moe_test_failed()) return;
    set_u64(&b, 16, 20);
    set_u64(&b, 8, UINT64_MAX); /* n_tensors */
    expect_error(&b, MOE_ERR_GGUF_FORMAT, "n_tensors = 18446744073709551615", "at most");
    if (moe_test_failed()) return;
    set_u64(&b, 8, 5); /* one tensor more than written: its info runs into the data */
    expect_error(&b, MOE_ERR_GGUF_FORMAT, NULL, NULL);
    free(b.p);
}

TEST(gguf_bad_strings_and_values) {
    buf b;
    marks m;
    build_model(&b, &m);
    set_u64(&b, m.string_len_at, 1ull << 40);
    expect_error(&b, MOE_ERR_GGUF_FORMAT, "t.str", "length 1099511627776");
    if (moe_test_failed()) return;
    set_u64(&b, m.string_len_at, UINT64_MAX);
    expect_error(&b, MOE_ERR_GGUF_FORMAT, "length 18446744073709551615", NULL);
    if (moe_test_failed()) return;
    set_u64(&b, m.string_len_at, 5);
    set_u64(&b, m.array_len_at, (1ull << 62) + 1); /* * 4 bytes wraps to 4 */
    expect_error(&b, MOE_ERR_GGUF_FORMAT, "t.arr_u32", "array of 4611686018427387905 u32");
    if (moe_test_failed()) return;
    set_u64(&b, m.array_len_at, 3);
    set_u32(&b, m.array_len_at - 4, 13); /* element type */
    expect_error(&b, MOE_ERR_GGUF_FORMAT, "element type 13", "0..12");
    if (moe_test_failed()) return;
    free(b.p);

    /* value type, NUL in a key, duplicate key, nesting */
    buf c = {0};
    header(&c, 3, 0, 1);
    str(&c, "k");
    u32(&c, 77);
    u32(&c, 0);
    expect_error(&c, MOE_ERR_GGUF_FORMAT, "value type 77", "'k'");
    free(c.p);
    if (moe_test_failed()) return;
    memset(&c, 0, sizeof c);
    header(&c, 3, 0, 1);
    u64(&c, 3);
    put(&c, "a\0b", 3);
    u32(&c, MOE_GGUF_TYPE_UINT8);
    u8(&c, 0);
    expect_error(&c, MOE_ERR_GGUF_FORMAT, "NUL", NULL);
    free(c.p);
    if (moe_test_failed()) return;
    memset(&c, 0, sizeof c);
    header(&c, 3, 0, 2);
    kv_u32(&c, "dup.key", 1);
    kv_str(&c, "dup.key", "x");
    expect_error(&c, MOE_ERR_GGUF_FORMAT, "duplicate key name 'dup.key'", "#0 and #1");
    free(c.p);
    if (moe_test_failed()) return;
    memset(&c, 0, sizeof c);
    header(&c, 3, 0, 1);
    str(&c, "deep");
    u32(&c, MOE_GGUF_TYPE_ARRAY);
    for (int i = 0; i < 40; i++) { u32(&c, MOE_GGUF_TYPE_ARRAY); u64(&c, 1); }
    u32(&c, MOE_GGUF_TYPE_UINT8);
    u64(&c, 0);
    expect_error(&c, MOE_ERR_UNSUPPORTED, "nested", "at most 16");
    free(c.p);
    if (moe_test_failed()) return;
    /* an array claiming more strings than bytes remain */
    memset(&c, 0, sizeof c);
    header(&c, 3, 0, 1);
    str(&c, "strs");
    u32(&c, MOE_GGUF_TYPE_ARRAY);
    u32(&c, MOE_GGUF_TYPE_STRING);
    u64(&c, 1000000);
    str(&c, "only one");
    expect_error(&c, MOE_ERR_GGUF_FORMAT, "array of 1000000 string", "at least 8 bytes");
    free(c.p);
}

TEST(gguf_bad_alignment_key) {
    buf c = {0};
    header(&c, 3, 0, 1);
    kv_u32(&c, "general.alignment", 48);
    expect_error(&c, MOE_ERR_GGUF_FORMAT, "general.alignment = 48", "power of 2");
    free(c.p);
    if (moe_test_failed()) return;
    memset(&c, 0, sizeof c);
    header(&c, 3, 0, 1);
    kv_str(&c, "general.alignment", "32");
    expect_error(&c, MOE_ERR_GGUF_FORMAT, "general.alignment has type string", "u32");
    free(c.p);
    if (moe_test_failed()) return;
    /* alignment 64 is honoured: a tensor at offset 64 opens, one at 32 does not */
    for (int bad = 0; bad < 2; bad++) {
        memset(&c, 0, sizeof c);
        header(&c, 3, 2, 1);
        kv_u32(&c, "general.alignment", 64);
        uint64_t ne[1] = {8};
        tinfo(&c, "a", 1, ne, MOE_TYPE_F32, 0);
        tinfo(&c, "b", 1, ne, MOE_TYPE_F32, bad ? 32 : 64);
        pad(&c, 64);
        for (int i = 0; i < 128; i++) u8(&c, (uint8_t)i);
        if (bad) {
            expect_error(&c, MOE_ERR_GGUF_FORMAT, "tensor 'b': data offset 32", "alignment 64");
        } else {
            moe_gguf *f;
            uint8_t *copy;
            CHECK_STATUS(open_copy(c.p, c.n, &f, &copy), MOE_OK);
            CHECK(moe_gguf_alignment(f) == 64 && moe_gguf_data_offset(f) % 64 == 0);
            moe_gguf_close(f);
            free(copy);
        }
        free(c.p);
        if (moe_test_failed()) return;
    }
}

TEST(gguf_bad_tensor_infos) {
    buf b;
    marks m;
    build_model(&b, &m);
    set_u32(&b, m.tensor_type_at, 99);
    expect_error(&b, MOE_ERR_UNSUPPORTED, "blk.0.ffn_gate_exps.weight", "type 99");
    if (moe_test_failed()) return;
    set_u32(&b, m.tensor_type_at, 4); /* a removed ggml type id */
    expect_error(&b, MOE_ERR_UNSUPPORTED, "type 4", NULL);
    if (moe_test_failed()) return;
    set_u32(&b, m.tensor_type_at, MOE_TYPE_Q4_0); /* ne[0] = 4 is not a multiple of 32 */
    expect_error(&b, MOE_ERR_GGUF_FORMAT, "ne[0] = 4 is not a multiple of 32", "q4_0");
    if (moe_test_failed()) return;
    set_u32(&b, m.tensor_type_at, MOE_TYPE_F16); /* smaller data: opens, the layer then sees f16 */
    moe_gguf *f;
    uint8_t *copy;
    CHECK_STATUS(open_copy(b.p, b.n, &f, &copy), MOE_OK);
    moe_gguf_close(f);
    free(copy);
    set_u32(&b, m.tensor_type_at, MOE_TYPE_F32);
    set_u64(&b, m.tensor_off_at, 33);
    expect_error(&b, MOE_ERR_GGUF_FORMAT, "data offset 33", "alignment 32");
    if (moe_test_failed()) return;
    set_u64(&b, m.tensor_off_at, 1ull << 40);
    expect_error(&b, MOE_ERR_GGUF_FORMAT, "blk.0.ffn_gate_exps.weight", "run past the end");
    if (moe_test_failed()) return;
    set_u64(&b, m.tensor_off_at, UINT64_MAX - 31);
    expect_error(&b, MOE_ERR_GGUF_FORMAT, "run past the end", NULL);
    if (moe_test_failed()) return;
    set_u64(&b, m.tensor_off_at, 64); /* overlaps the up tensor */
    expect_error(&b, MOE_ERR_GGUF_FORMAT, "overlaps", NULL);
    if (moe_test_failed()) return;
    set_u64(&b, m.tensor_off_at, 32);
    set_u64(&b, m.tensor_ne0_at, 1ull << 62); /* router ne = [2^62, 2]: 2^63 elements */
    expect_error(&b, MOE_ERR_SIZE_OVERFLOW, "blk.0.ffn_gate_inp.weight", "overflows");
    if (moe_test_failed()) return;
    set_u64(&b, m.tensor_ne0_at, UINT64_MAX);
    expect_error(&b, MOE_ERR_SIZE_OVERFLOW, "ne[0] = 18446744073709551615", NULL);
    if (moe_test_failed()) return;
    set_u64(&b, m.tensor_ne0_at, 1ull << 40); /* fits, but runs past the end */
    expect_error(&b, MOE_ERR_GGUF_FORMAT, "run past the end", NULL);
    if (moe_test_failed()) return;
    set_u64(&b, m.tensor_ne0_at, D_);
    set_u32(&b, m.tensor_ne0_at - 4, 5); /* n_dims */
    expect_error(&b, MOE_ERR_GGUF_FORMAT, "n_dims = 5", "at most 4");
    free(b.p);
    if (moe_test_failed()) return;

    buf c = {0};
    header(&c, 3, 2, 0);
    uint64_t ne[1] = {8};
    tinfo(&c, "same", 1, ne, MOE_TYPE_F32, 0);
    tinfo(&c, "same", 1, ne, MOE_TYPE_F32, 32);
    pad(&c, 32);
    for (int i = 0; i < 64; i++) u8(&c, 0);
    expect_error(&c, MOE_ERR_GGUF_FORMAT, "duplicate tensor name 'same'", NULL);
    free(c.p);
}

/* ---- layers from bad files --------------------------------------------------------- */

/* Replaces the first occurrence of a string's bytes (same length) in b. */
static int patch_n(buf *b, const char *from, const char *to, size_t n) {
    for (size_t i = 0; i + n <= b->n; i++)
        if (memcmp(b->p + i, from, n) == 0) {
            memcpy(b->p + i, to, n);
            return 1;
        }
    return 0;
}
static int patch(buf *b, const char *from, const char *to) { return patch_n(b, from, to, strlen(from)); }

static void expect_layer_error(const buf *b, int layer, moe_status want, const char *n1, const char *n2) {
    moe_gguf *f;
    uint8_t *copy;
    CHECK_STATUS(open_copy(b->p, b->n, &f, &copy), MOE_OK);
    moe_layer_desc d;
    moe_status s = moe_gguf_layer_desc(f, layer, NULL, &d, NULL);
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", moe_gguf_last_error(f));
    moe_gguf_close(f);
    free(copy);
    CHECK_MSG(s == want, "status %s, expected %s (%s)", moe_status_name(s), moe_status_name(want), msg);
    CHECK_MSG(!n1 || strstr(msg, n1), "message '%s' lacks '%s'", msg, n1);
    CHECK_MSG(!n2 || strstr(msg, n2), "message '%s' lacks '%s'", msg, n2);
}

TEST(gguf_layer_bad_metadata_and_tensors) {
    buf b;
    build_model(&b, NULL);
    expect_layer_error(&b, 1, MOE_ERR_INVALID_ARGUMENT, "layer_index = 1", "block_count = 1");
    if (moe_test_failed()) return;
    expect_layer_error(&b, -1, MOE_ERR_INVALID_ARGUMENT, "layer_index = -1", NULL);
    if (moe_test_failed()) return;
    CHECK(patch(&b, "blk.0.ffn_down_exps", "blk.0.ffn_doWn_exps"));
    expect_layer_error(&b, 0, MOE_ERR_NOT_FOUND, "blk.0.ffn_down_exps.weight", "not in the file");
    if (moe_test_failed()) return;
    CHECK(patch(&b, "blk.0.ffn_doWn_exps", "blk.0.ffn_down_exps"));
    CHECK(patch(&b, "blk.0.ffn_gate_inp.", "blk.0.ffn_gate_inX."));
    expect_layer_error(&b, 0, MOE_ERR_NOT_FOUND, "blk.0.ffn_gate_inp.weight", NULL);
    if (moe_test_failed()) return;
    CHECK(patch(&b, "blk.0.ffn_gate_inX.", "blk.0.ffn_gate_inp."));
    CHECK(patch(&b, "qwen3moe.expert_feed_forward_length", "qwen3moe.expert_feed_forward_lengtX"));
    /* no I in the metadata: taken from the up tensor, the layer still loads */
    moe_gguf *f;
    uint8_t *copy;
    CHECK_STATUS(open_copy(b.p, b.n, &f, &copy), MOE_OK);
    moe_layer_desc d;
    CHECK_STATUS(moe_gguf_layer_desc(f, 0, NULL, &d, NULL), MOE_OK);
    CHECK(d.I == I_ && d.E == E_ && d.D == D_ && d.K == 1 && d.layout == MOE_GATE_UP_SEPARATE);
    moe_gguf_close(f);
    free(copy);
    CHECK(patch(&b, "qwen3moe.expert_feed_forward_lengtX", "qwen3moe.expert_feed_forward_length"));
    /* embedding_length = 4 -> 8: every shape disagrees */
    size_t at = 0;
    for (size_t i = 0; i + 24 < b.n; i++)
        if (memcmp(b.p + i, "qwen3moe.embedding_length", 25) == 0) at = i + 25 + 4;
    CHECK(at);
    set_u32(&b, at, 8);
    expect_layer_error(&b, 0, MOE_ERR_GGUF_FORMAT, "qwen3moe.embedding_length", "ne[0] = 4, expected 8");
    if (moe_test_failed()) return;
    set_u32(&b, at, D_);
    CHECK(patch(&b, "qwen3moe.expert_used_count", "qwen3moe.expert_used_counX"));
    expect_layer_error(&b, 0, MOE_ERR_NOT_FOUND, "qwen3moe.expert_used_count", NULL);
    if (moe_test_failed()) return;
    CHECK(patch(&b, "qwen3moe.expert_used_counX", "qwen3moe.expert_used_count"));
    CHECK(patch_n(&b, "\x08\x00\x00\x00\x00\x00\x00\x00qwen3moe", "\x08\x00\x00\x00\x00\x00\x00\x00mamba2xx", 16));
    expect_layer_error(&b, 0, MOE_ERR_UNSUPPORTED, "general.architecture = 'mamba2xx'", "qwen3moe");
    free(b.p);
}

/* ---- random corruption -------------------------------------------------------------- */

TEST(gguf_random_byte_flips_never_crash) {
    buf b;
    build_model(&b, NULL);
    moe_rng r;
    moe_rng_seed(&r, moe_test_seed());
    int opened = 0, failed = 0;
    for (int it = 0; it < 4000; it++) {
        uint8_t *p = malloc(b.n);
        memcpy(p, b.p, b.n);
        int flips = 1 + (int)(moe_rng_u64(&r) % 4);
        for (int k = 0; k < flips; k++) {
            /* bias toward the header and infos, where the structure is */
            size_t limit = (moe_rng_u64(&r) & 1) ? b.n : 900;
            size_t at = (size_t)(moe_rng_u64(&r) % (limit < b.n ? limit : b.n));
            p[at] ^= (uint8_t)(1u << (moe_rng_u64(&r) % 8));
            if (moe_rng_u64(&r) % 4 == 0) p[at] = (uint8_t)moe_rng_u64(&r);
        }
        size_t n = (moe_rng_u64(&r) % 8 == 0) ? (size_t)(moe_rng_u64(&r) % b.n) : b.n;
        moe_gguf *f;
        moe_status s = moe_gguf_open_memory(p, n, &f);
        if (s == MOE_OK) {
            opened++;
            (void)walk(f);
            moe_gguf_close(f);
        } else {
            failed++;
            CHECK_MSG(moe_gguf_last_error(NULL)[0], "iteration %d: %s with an empty message", it, moe_status_name(s));
        }
        free(p);
        if (moe_test_failed()) break;
    }
    CHECK(opened > 0 && failed > 0);
    free(b.p);
}

TEST(gguf_layer_misaligned_data_and_bad_params) {
    buf b;
    build_model_ex(&b, NULL, 1);
    moe_gguf *f;
    uint8_t *copy;
    CHECK_STATUS(open_copy(b.p, b.n, &f, &copy), MOE_OK); /* the file itself is valid */
    CHECK(moe_gguf_alignment(f) == 1);
    moe_gguf_tensor_info t;
    CHECK_STATUS(moe_gguf_get_tensor(f, "blk.0.ffn_down_exps.weight", &t), MOE_OK);
    CHECK(memcmp(t.data, W_down, sizeof W_down) == 0 && (uintptr_t)t.data % 4 == 1);
    moe_layer_desc d;
    CHECK_STATUS(moe_gguf_layer_desc(f, 0, NULL, &d, NULL), MOE_ERR_UNSUPPORTED);
    CHECK(strstr(moe_gguf_last_error(f), "not 4-byte aligned") && strstr(moe_gguf_last_error(f), "general.alignment = 1"));
    moe_gguf_close(f);
    free(copy);
    free(b.p);

    build_model(&b, NULL);
    CHECK_STATUS(open_copy(b.p, b.n, &f, &copy), MOE_OK);
    moe_gguf_layer_params p = moe_gguf_layer_params_default();
    p.K = 3;
    CHECK_STATUS(moe_gguf_layer_desc(f, 0, &p, &d, NULL), MOE_ERR_INVALID_ARGUMENT);
    CHECK(strstr(moe_gguf_last_error(f), "params.K = 3"));
    p.K = 2;
    CHECK_STATUS(moe_gguf_layer_desc(f, 0, &p, &d, NULL), MOE_OK);
    CHECK(d.K == 2);
    moe_ctx *ctx;
    CHECK_STATUS(moe_ctx_create(NULL, &ctx), MOE_OK);
    moe_layer *L = (moe_layer *)1;
    CHECK_STATUS(moe_layer_from_gguf(ctx, f, 5, NULL, &L, NULL), MOE_ERR_INVALID_ARGUMENT);
    CHECK(L == NULL && strstr(moe_ctx_last_error(ctx), "layer_index = 5"));
    moe_ctx_free(ctx);
    moe_gguf_close(f);
    free(copy);
    free(b.p);
}
