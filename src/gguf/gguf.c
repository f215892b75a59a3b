/*
 * GGUF reader: versions 2 and 3 (little-endian), as written by llama.cpp's
 * gguf.cpp and gguf-py. The file is mapped read-only; tensors and values are
 * views into the mapping; only names and scalar strings are copied (to give
 * NUL-terminated C strings).
 *
 * Layout: magic "GGUF", u32 version, u64 n_tensors, u64 n_kv; n_kv key/values
 * (string key, u32 type, value); n_tensors infos (string name, u32 n_dims,
 * u64 ne[n_dims], u32 ggml type, u64 offset); padding to general.alignment
 * (default 32); the data section, where each tensor's offset is a multiple of
 * the alignment. A string is a u64 length and that many bytes; an array a u32
 * element type, a u64 count and the elements.
 *
 * Nothing in the file is trusted: each length and count is checked against
 * the bytes that remain before anything is allocated or read, arithmetic on
 * sizes is overflow-checked, and every error names the field, its value and
 * the limit. All checks run at open; the getters then only index.
 */
#include "gguf_file.h"

#include "half.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define HEADER_BYTES 24u
#define MAX_DEPTH 16        /* arrays nested deeper than this are refused (stack depth of the parser) */
#define MAX_DIMS 4          /* GGML_MAX_DIMS */
#define DEFAULT_ALIGNMENT 32u
#define NONE UINT64_MAX

/* ---- ggml types ---------------------------------------------------------- */

typedef struct { const char *name; int64_t block, bytes; } gtype;

/* ggml's type numbers; gaps are ids ggml removed. Sizes as ggml's type_traits. */
static const gtype gtypes[] = {
    [0] = {"f32", 1, 4},         [1] = {"f16", 1, 2},         [2] = {"q4_0", 32, 18},
    [3] = {"q4_1", 32, 20},      [6] = {"q5_0", 32, 22},      [7] = {"q5_1", 32, 24},
    [8] = {"q8_0", 32, 34},      [9] = {"q8_1", 32, 36},      [10] = {"q2_K", 256, 84},
    [11] = {"q3_K", 256, 110},   [12] = {"q4_K", 256, 144},   [13] = {"q5_K", 256, 176},
    [14] = {"q6_K", 256, 210},   [15] = {"q8_K", 256, 292},   [16] = {"iq2_xxs", 256, 66},
    [17] = {"iq2_xs", 256, 74},  [18] = {"iq3_xxs", 256, 98}, [19] = {"iq1_s", 256, 50},
    [20] = {"iq4_nl", 32, 18},   [21] = {"iq3_s", 256, 110},  [22] = {"iq2_s", 256, 82},
    [23] = {"iq4_xs", 256, 136}, [24] = {"i8", 1, 1},         [25] = {"i16", 1, 2},
    [26] = {"i32", 1, 4},        [27] = {"i64", 1, 8},        [28] = {"f64", 1, 8},
    [29] = {"iq1_m", 256, 56},   [30] = {"bf16", 1, 2},       [34] = {"tq1_0", 256, 54},
    [35] = {"tq2_0", 256, 66},   [39] = {"mxfp4", 32, 17},    [40] = {"nvfp4", 64, 36},
    [41] = {"q1_0", 128, 18},
};
#define N_GTYPES (sizeof gtypes / sizeof gtypes[0])

int64_t moe__gguf_type_block(uint32_t t) { return t < N_GTYPES ? gtypes[t].block : 0; }
int64_t moe__gguf_type_bytes(uint32_t t) { return t < N_GTYPES ? gtypes[t].bytes : 0; }
const char *moe__gguf_type_name(uint32_t t) { return t < N_GTYPES && gtypes[t].name ? gtypes[t].name : "unknown"; }

/* ---- metadata value types ------------------------------------------------ */

static const char *const vtype_names[] = {"u8", "i8", "u16", "i16", "u32", "i32", "f32",
                                          "bool", "string", "array", "u64", "i64", "f64"};
#define N_VTYPES 13u

const char *moe_gguf_type_name(moe_gguf_type t) {
    return (unsigned)t < N_VTYPES ? vtype_names[t] : "unknown";
}

/* Bytes of a fixed-size value type; 0 for STRING, ARRAY and unknown types. */
static uint64_t vtype_size(uint32_t t) {
    switch (t) {
    case MOE_GGUF_TYPE_UINT8: case MOE_GGUF_TYPE_INT8: case MOE_GGUF_TYPE_BOOL: return 1;
    case MOE_GGUF_TYPE_UINT16: case MOE_GGUF_TYPE_INT16: return 2;
    case MOE_GGUF_TYPE_UINT32: case MOE_GGUF_TYPE_INT32: case MOE_GGUF_TYPE_FLOAT32: return 4;
    case MOE_GGUF_TYPE_UINT64: case MOE_GGUF_TYPE_INT64: case MOE_GGUF_TYPE_FLOAT64: return 8;
    default: return 0;
    }
}

static int is_int_type(uint32_t t) {
    return t <= MOE_GGUF_TYPE_INT32 || t == MOE_GGUF_TYPE_UINT64 || t == MOE_GGUF_TYPE_INT64;
}

static int is_signed_type(uint32_t t) {
    return t == MOE_GGUF_TYPE_INT8 || t == MOE_GGUF_TYPE_INT16 || t == MOE_GGUF_TYPE_INT32 ||
           t == MOE_GGUF_TYPE_INT64;
}

/* ---- errors --------------------------------------------------------------- */

moe_status moe__gguf_error(const moe_gguf *f, moe_status s, const char *fmt, ...) {
    char buf[MOE__ERR_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (f)
        memcpy(((moe_gguf *)f)->err, buf, sizeof buf); /* the message buffer is the one mutable part */
    else
        moe__ctx_error(NULL, s, "%s", buf);
    return s;
}

const char *moe_gguf_last_error(const moe_gguf *f) { return f ? f->err : moe_ctx_last_error(NULL); }

/* ---- little-endian loads ---------------------------------------------------- */

static uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t le64(const uint8_t *p) { return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32; }

/* ---- arena ------------------------------------------------------------------ */

/* A NUL-terminated copy of len bytes at src, or NULL when out of memory. */
static char *arena_copy(moe_gguf *f, const uint8_t *src, uint64_t len) {
    if (len >= SIZE_MAX / 2) return NULL;
    size_t need = (size_t)len + 1;
    moe__gguf_chunk *c = f->arena;
    if (!c || c->cap - c->used < need) {
        size_t cap = need > 65536 ? need : 65536;
        c = malloc(sizeof *c + cap);
        if (!c) return NULL;
        c->next = f->arena;
        c->used = 0;
        c->cap = cap;
        f->arena = c;
    }
    char *d = c->data + c->used;
    if (len) memcpy(d, src, (size_t)len);
    d[len] = 0;
    c->used += need;
    return d;
}

void moe__gguf_escape(const char *name, char *out, size_t n) {
    size_t o = 0;
    if (!n) return;
    for (const unsigned char *p = (const unsigned char *)name; *p && o + 8 < n; p++) {
        if (o >= 120) {
            memcpy(out + o, "...", 3);
            o += 3;
            break;
        }
        if (*p >= 0x20 && *p < 0x7f && *p != '\\') out[o++] = (char)*p;
        else o += (size_t)snprintf(out + o, n - o, "\\x%02x", *p);
    }
    out[o] = 0;
}

typedef struct { char s[160]; } safe_name;

static safe_name esc(const char *name) {
    safe_name r;
    moe__gguf_escape(name, r.s, sizeof r.s);
    return r;
}

/* ---- the parser --------------------------------------------------------------- */

typedef struct {
    moe_gguf *f;
    uint64_t pos;     /* next byte to read; always <= f->size */
    char where[192];  /* what is being read, for messages: "key #3 'general.name'" */
} parser;

static uint64_t left(const parser *P) { return P->f->size - P->pos; }

static moe_status need(parser *P, uint64_t n, const char *what) {
    if (n <= left(P)) return MOE_OK;
    return moe__gguf_error(P->f, MOE_ERR_GGUF_FORMAT,
                           "%s: %s at offset %llu needs %llu bytes, but the file ends after %llu more (size %llu)",
                           P->where, what, (unsigned long long)P->pos, (unsigned long long)n,
                           (unsigned long long)left(P), (unsigned long long)P->f->size);
}

static moe_status rd_u32(parser *P, uint32_t *v, const char *what) {
    moe_status s = need(P, 4, what);
    if (s) return s;
    *v = le32(P->f->base + P->pos);
    P->pos += 4;
    return MOE_OK;
}

static moe_status rd_u64(parser *P, uint64_t *v, const char *what) {
    moe_status s = need(P, 8, what);
    if (s) return s;
    *v = le64(P->f->base + P->pos);
    P->pos += 8;
    return MOE_OK;
}

/* A string: its bytes start at *off and are *len long. */
static moe_status rd_str(parser *P, uint64_t *off, uint64_t *len, const char *what) {
    char lw[96];
    snprintf(lw, sizeof lw, "the length of %s", what);
    moe_status s = rd_u64(P, len, lw);
    if (s) return s;
    if (*len > left(P))
        return moe__gguf_error(P->f, MOE_ERR_GGUF_FORMAT,
                               "%s: %s has length %llu but only %llu bytes remain at offset %llu (file size %llu)",
                               P->where, what, (unsigned long long)*len, (unsigned long long)left(P),
                               (unsigned long long)P->pos, (unsigned long long)P->f->size);
    *off = P->pos;
    P->pos += *len;
    return MOE_OK;
}

/* A key or tensor name: a string without NUL bytes, copied. */
static moe_status rd_name(parser *P, const char **name, const char *what) {
    uint64_t off = 0, len = 0;
    moe_status s = rd_str(P, &off, &len, what);
    if (s) return s;
    const uint8_t *b = P->f->base + off;
    if (len && memchr(b, 0, (size_t)len))
        return moe__gguf_error(P->f, MOE_ERR_GGUF_FORMAT, "%s: %s of %llu bytes at offset %llu contains a NUL byte",
                               P->where, what, (unsigned long long)len, (unsigned long long)off);
    if (!(*name = arena_copy(P->f, b, len)))
        return moe__gguf_error(P->f, MOE_ERR_OUT_OF_MEMORY, "%s: out of memory copying a %llu-byte %s", P->where,
                               (unsigned long long)len, what);
    return MOE_OK;
}

/* Reserves n entries of the element table; *first is the first one's index. */
static moe_status reserve_elems(parser *P, uint64_t n, uint64_t *first) {
    moe_gguf *f = P->f;
    if (n > f->cap_elems - f->n_elems) {
        uint64_t cap = f->cap_elems ? f->cap_elems * 2 : 256;
        if (cap < f->n_elems + n) cap = f->n_elems + n;
        if (cap > SIZE_MAX / sizeof(moe__gguf_elem))
            return moe__gguf_error(f, MOE_ERR_SIZE_OVERFLOW, "%s: %llu array elements overflow", P->where,
                                   (unsigned long long)cap);
        moe__gguf_elem *e = realloc(f->elems, (size_t)cap * sizeof *e);
        if (!e)
            return moe__gguf_error(f, MOE_ERR_OUT_OF_MEMORY, "%s: out of memory for %llu array elements", P->where,
                                   (unsigned long long)cap);
        f->elems = e;
        f->cap_elems = cap;
    }
    *first = f->n_elems;
    f->n_elems += n;
    return MOE_OK;
}

static moe_status parse_val(parser *P, uint32_t type, int depth, moe__gguf_val *v) {
    moe_gguf *f = P->f;
    moe_status s;
    v->type = v->elem_type = type;
    v->n = 1;
    v->table = NONE;
    uint64_t sz = vtype_size(type);
    if (sz) {
        if ((s = need(P, sz, moe_gguf_type_name((moe_gguf_type)type)))) return s;
        v->off = P->pos;
        P->pos += sz;
        return MOE_OK;
    }
    if (type == MOE_GGUF_TYPE_STRING) return rd_str(P, &v->off, &v->n, "a string value");
    if (type != MOE_GGUF_TYPE_ARRAY)
        return moe__gguf_error(f, MOE_ERR_GGUF_FORMAT, "%s: value type %u at offset %llu, expected 0..12", P->where,
                               type, (unsigned long long)(P->pos - 4));
    if (depth >= MAX_DEPTH)
        return moe__gguf_error(f, MOE_ERR_UNSUPPORTED, "%s: arrays nested %d deep, at most %d are supported",
                               P->where, depth + 1, MAX_DEPTH);
    uint32_t et;
    uint64_t n;
    if ((s = rd_u32(P, &et, "an array's element type"))) return s;
    if (et >= N_VTYPES)
        return moe__gguf_error(f, MOE_ERR_GGUF_FORMAT, "%s: array element type %u at offset %llu, expected 0..12",
                               P->where, et, (unsigned long long)(P->pos - 4));
    if ((s = rd_u64(P, &n, "an array's length"))) return s;
    v->elem_type = et;
    v->n = n;
    uint64_t esz = vtype_size(et);
    if (esz) {
        if (n > left(P) / esz)
            return moe__gguf_error(f, MOE_ERR_GGUF_FORMAT,
                                   "%s: array of %llu %s elements (%llu bytes each) at offset %llu runs past the end "
                                   "of the file: %llu bytes remain",
                                   P->where, (unsigned long long)n, moe_gguf_type_name((moe_gguf_type)et),
                                   (unsigned long long)esz, (unsigned long long)P->pos, (unsigned long long)left(P));
        v->off = P->pos;
        P->pos += n * esz;
        return MOE_OK;
    }
    /* strings take at least 8 bytes (their length), arrays 12 (type and count) */
    uint64_t min = et == MOE_GGUF_TYPE_STRING ? 8 : 12;
    if (n > left(P) / min)
        return moe__gguf_error(f, MOE_ERR_GGUF_FORMAT,
                               "%s: array of %llu %s elements at offset %llu needs at least %llu bytes each, but only "
                               "%llu bytes remain",
                               P->where, (unsigned long long)n, moe_gguf_type_name((moe_gguf_type)et),
                               (unsigned long long)P->pos, (unsigned long long)min, (unsigned long long)left(P));
    uint64_t first = 0;
    if ((s = reserve_elems(P, n, &first))) return s;
    v->off = P->pos;
    v->table = first;
    for (uint64_t i = 0; i < n; i++) {
        moe__gguf_val sub;
        uint64_t at = P->pos;
        if ((s = parse_val(P, et, depth + 1, &sub))) return s;
        f->elems[first + i].off = at; /* f->elems may have moved: index, never hold pointers */
        f->elems[first + i].table = sub.table;
    }
    return MOE_OK;
}

/* ---- hash tables of names ------------------------------------------------------ */

static uint64_t hash_name(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

typedef const char *(*name_fn)(const moe_gguf *f, int64_t i);
static const char *kv_name(const moe_gguf *f, int64_t i) { return f->kv[i].key; }
static const char *tensor_name(const moe_gguf *f, int64_t i) { return f->tensors[i].name; }

static int64_t hash_find(const moe_gguf *f, const int64_t *tab, uint64_t cap, name_fn name, const char *key) {
    if (!tab || !key) return -1;
    for (uint64_t h = hash_name(key) & (cap - 1);; h = (h + 1) & (cap - 1)) {
        if (!tab[h]) return -1;
        if (strcmp(name(f, tab[h] - 1), key) == 0) return tab[h] - 1;
    }
}

/* Builds the table of n names; a name seen twice is an error naming both entries. */
static moe_status hash_build(moe_gguf *f, int64_t n, name_fn name, int64_t **tab, uint64_t *cap, const char *what) {
    uint64_t c = 16;
    while (c < (uint64_t)n * 2) c *= 2;
    if (c > SIZE_MAX / sizeof(int64_t))
        return moe__gguf_error(f, MOE_ERR_SIZE_OVERFLOW, "%lld %ss overflow the name table", (long long)n, what);
    int64_t *t = calloc((size_t)c, sizeof *t);
    if (!t) return moe__gguf_error(f, MOE_ERR_OUT_OF_MEMORY, "out of memory for the table of %lld %ss", (long long)n, what);
    *tab = t;
    *cap = c;
    for (int64_t i = 0; i < n; i++) {
        const char *k = name(f, i);
        uint64_t h = hash_name(k) & (c - 1);
        for (; t[h]; h = (h + 1) & (c - 1))
            if (strcmp(name(f, t[h] - 1), k) == 0)
                return moe__gguf_error(f, MOE_ERR_GGUF_FORMAT, "duplicate %s name '%s' (%s #%lld and #%lld)", what, esc(k).s,
                                       what, (long long)(t[h] - 1), (long long)i);
        t[h] = i + 1;
    }
    return MOE_OK;
}

/* ---- the file ------------------------------------------------------------------ */

static moe_status parse_header(parser *P, uint64_t *n_tensors, uint64_t *n_kv) {
    moe_gguf *f = P->f;
    snprintf(P->where, sizeof P->where, "header");
    if (f->size < HEADER_BYTES)
        return moe__gguf_error(f, MOE_ERR_GGUF_FORMAT, "the file is %llu bytes, shorter than the %u-byte GGUF header",
                               (unsigned long long)f->size, HEADER_BYTES);
    const uint8_t *b = f->base;
    if (memcmp(b, "GGUF", 4) != 0)
        return moe__gguf_error(f, MOE_ERR_GGUF_FORMAT,
                               "magic is %02x %02x %02x %02x, expected 47 47 55 46 (\"GGUF\"): not a GGUF file", b[0],
                               b[1], b[2], b[3]);
    uint32_t version = le32(b + 4);
    if (version == 1)
        return moe__gguf_error(f, MOE_ERR_UNSUPPORTED,
                               "GGUF version 1 (32-bit counts) is not supported, expected version 2 or 3");
    if (version == 0x02000000u || version == 0x03000000u)
        return moe__gguf_error(f, MOE_ERR_UNSUPPORTED,
                               "big-endian GGUF (version %u byte-swapped) is not supported: only little-endian files",
                               version >> 24);
    if (version != 2 && version != 3)
        return moe__gguf_error(f, MOE_ERR_GGUF_FORMAT, "version = %u, expected 2 or 3", version);
    f->version = version;
    *n_tensors = le64(b + 8);
    *n_kv = le64(b + 16);
    P->pos = HEADER_BYTES;
    /* the cheapest key/value is 13 bytes (empty key, u32 type, u8 value), a tensor info 24 */
    if (*n_kv > left(P) / 13)
        return moe__gguf_error(f, MOE_ERR_GGUF_FORMAT,
                               "n_kv = %llu, but the %llu bytes after the header hold at most %llu key/values",
                               (unsigned long long)*n_kv, (unsigned long long)left(P),
                               (unsigned long long)(left(P) / 13));
    if (*n_tensors > left(P) / 24)
        return moe__gguf_error(f, MOE_ERR_GGUF_FORMAT,
                               "n_tensors = %llu, but the %llu bytes after the header hold at most %llu tensor infos",
                               (unsigned long long)*n_tensors, (unsigned long long)left(P),
                               (unsigned long long)(left(P) / 24));
    return MOE_OK;
}

/* Grows an array of elements of size sz to hold at least n + 1 (doubling, so
 * memory follows what was actually read, not the file's count). */
static int grow(void **p, int64_t n, int64_t *cap, size_t sz) {
    if (n < *cap) return 1;
    int64_t c = *cap ? *cap * 2 : 64;
    if ((uint64_t)c > SIZE_MAX / sz) return 0;
    void *q = realloc(*p, (size_t)c * sz);
    if (!q) return 0;
    *p = q;
    *cap = c;
    return 1;
}

static moe_status parse_kvs(parser *P, uint64_t n_kv) {
    moe_gguf *f = P->f;
    int64_t cap = 0;
    moe_status s;
    for (uint64_t i = 0; i < n_kv; i++) {
        if (!grow((void **)&f->kv, f->n_kv, &cap, sizeof *f->kv))
            return moe__gguf_error(f, MOE_ERR_OUT_OF_MEMORY, "out of memory for key/value #%llu",
                                   (unsigned long long)i);
        moe__gguf_kv *kv = &f->kv[f->n_kv];
        memset(kv, 0, sizeof *kv);
        snprintf(P->where, sizeof P->where, "key/value #%llu of %llu", (unsigned long long)i,
                 (unsigned long long)n_kv);
        if ((s = rd_name(P, &kv->key, "the key"))) return s;
        snprintf(P->where, sizeof P->where, "key #%llu '%s'", (unsigned long long)i, esc(kv->key).s);
        uint32_t type;
        if ((s = rd_u32(P, &type, "the value type"))) return s;
        if ((s = parse_val(P, type, 0, &kv->v))) return s;
        if (type == MOE_GGUF_TYPE_STRING && !(kv->str = arena_copy(f, f->base + kv->v.off, kv->v.n)))
            return moe__gguf_error(f, MOE_ERR_OUT_OF_MEMORY, "%s: out of memory copying a %llu-byte string",
                                   P->where, (unsigned long long)kv->v.n);
        f->n_kv++;
    }
    return hash_build(f, f->n_kv, kv_name, &f->kv_hash, &f->kv_hash_cap, "key");
}

static moe_status parse_tensor_infos(parser *P, uint64_t n_tensors) {
    moe_gguf *f = P->f;
    int64_t cap = 0;
    moe_status s;
    for (uint64_t i = 0; i < n_tensors; i++) {
        if (!grow((void **)&f->tensors, f->n_tensors, &cap, sizeof *f->tensors))
            return moe__gguf_error(f, MOE_ERR_OUT_OF_MEMORY, "out of memory for tensor info #%llu",
                                   (unsigned long long)i);
        moe__gguf_tensor *t = &f->tensors[f->n_tensors];
        memset(t, 0, sizeof *t);
        snprintf(P->where, sizeof P->where, "tensor info #%llu of %llu", (unsigned long long)i,
                 (unsigned long long)n_tensors);
        if ((s = rd_name(P, &t->name, "the tensor name"))) return s;
        snprintf(P->where, sizeof P->where, "tensor #%llu '%s'", (unsigned long long)i, esc(t->name).s);
        uint32_t n_dims;
        if ((s = rd_u32(P, &n_dims, "n_dims"))) return s;
        if (n_dims > MAX_DIMS)
            return moe__gguf_error(f, MOE_ERR_GGUF_FORMAT, "%s: n_dims = %u, expected at most %d", P->where, n_dims,
                                   MAX_DIMS);
        t->n_dims = (int)n_dims;
        for (int d = 0; d < MAX_DIMS; d++) t->ne[d] = 1;
        for (uint32_t d = 0; d < n_dims; d++) {
            uint64_t ne;
            if ((s = rd_u64(P, &ne, "a dimension"))) return s;
            if (ne > (uint64_t)INT64_MAX)
                return moe__gguf_error(f, MOE_ERR_SIZE_OVERFLOW, "%s: ne[%u] = %llu, expected < 2^63", P->where, d,
                                       (unsigned long long)ne);
            t->ne[d] = (int64_t)ne;
        }
        if ((s = rd_u32(P, &t->type, "the tensor type"))) return s;
        if ((s = rd_u64(P, &t->rel, "the data offset"))) return s;
        int64_t bs = moe__gguf_type_block(t->type), bb = moe__gguf_type_bytes(t->type);
        if (!bs)
            return moe__gguf_error(f, MOE_ERR_UNSUPPORTED, "%s: type %u is not a ggml type this reader knows (0..%u)",
                                   P->where, t->type, (unsigned)N_GTYPES - 1);
        if (t->ne[0] % bs)
            return moe__gguf_error(f, MOE_ERR_GGUF_FORMAT,
                                   "%s: ne[0] = %lld is not a multiple of %lld, the block size of %s", P->where,
                                   (long long)t->ne[0], (long long)bs, moe__gguf_type_name(t->type));
        int64_t nel = 1, bytes = 0;
        int ok = moe__mul_ok(t->ne[0] / bs, bb, &bytes);
        for (int d = 0; d < MAX_DIMS && ok; d++) ok = moe__mul_ok(nel, t->ne[d], &nel);
        for (int d = 1; d < MAX_DIMS && ok; d++) ok = moe__mul_ok(bytes, t->ne[d], &bytes);
        if (!ok)
            return moe__gguf_error(f, MOE_ERR_SIZE_OVERFLOW,
                                   "%s: ne = [%lld, %lld, %lld, %lld] of %s overflows 2^63 elements or bytes", P->where,
                                   (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2], (long long)t->ne[3],
                                   moe__gguf_type_name(t->type));
        t->n_elements = nel;
        t->size = (uint64_t)bytes;
        f->n_tensors++;
    }
    return hash_build(f, f->n_tensors, tensor_name, &f->tensor_hash, &f->tensor_hash_cap, "tensor");
}

static moe_status read_alignment(moe_gguf *f) {
    f->alignment = DEFAULT_ALIGNMENT;
    int64_t i = hash_find(f, f->kv_hash, f->kv_hash_cap, kv_name, "general.alignment");
    if (i < 0) return MOE_OK;
    const moe__gguf_val *v = &f->kv[i].v;
    if (v->type != MOE_GGUF_TYPE_UINT32)
        return moe__gguf_error(f, MOE_ERR_GGUF_FORMAT, "general.alignment has type %s, expected u32",
                               moe_gguf_type_name((moe_gguf_type)v->type));
    uint32_t a = le32(f->base + v->off);
    if (a == 0 || (a & (a - 1)))
        return moe__gguf_error(f, MOE_ERR_GGUF_FORMAT, "general.alignment = %u, expected a power of 2", a);
    f->alignment = a;
    return MOE_OK;
}

typedef struct { uint64_t off, size; int64_t i; } span;

static int cmp_span(const void *a, const void *b) {
    const span *x = a, *y = b;
    return x->off < y->off ? -1 : x->off > y->off ? 1 : (x->i > y->i) - (x->i < y->i);
}

/* Each tensor's data: aligned, inside the file, not overlapping another. */
static moe_status check_data(moe_gguf *f) {
    for (int64_t i = 0; i < f->n_tensors; i++) {
        const moe__gguf_tensor *t = &f->tensors[i];
        if (t->rel % f->alignment)
            return moe__gguf_error(f, MOE_ERR_GGUF_FORMAT,
                                   "tensor '%s': data offset %llu is not a multiple of the alignment %llu%s", esc(t->name).s,
                                   (unsigned long long)t->rel, (unsigned long long)f->alignment,
                                   f->alignment == DEFAULT_ALIGNMENT ? " (the default; general.alignment is absent)"
                                                                     : " (general.alignment)");
        uint64_t start = f->data_offset + t->rel;
        if (t->rel > f->size || start > f->size || t->size > f->size - start)
            return moe__gguf_error(f, MOE_ERR_GGUF_FORMAT,
                                   "tensor '%s': its %llu bytes at data offset %llu (file offset %llu) run past the end "
                                   "of the file (size %llu)",
                                   esc(t->name).s, (unsigned long long)t->size, (unsigned long long)t->rel,
                                   (unsigned long long)(t->rel > f->size ? t->rel : start), (unsigned long long)f->size);
    }
    if (f->n_tensors < 2) return MOE_OK;
    span *sp = malloc((size_t)f->n_tensors * sizeof *sp);
    if (!sp) return moe__gguf_error(f, MOE_ERR_OUT_OF_MEMORY, "out of memory checking %lld tensors", (long long)f->n_tensors);
    int64_t m = 0;
    for (int64_t i = 0; i < f->n_tensors; i++)
        if (f->tensors[i].size) sp[m++] = (span){f->tensors[i].rel, f->tensors[i].size, i};
    qsort(sp, (size_t)m, sizeof *sp, cmp_span);
    moe_status s = MOE_OK;
    for (int64_t k = 1; k < m && !s; k++)
        if (sp[k - 1].off + sp[k - 1].size > sp[k].off)
            s = moe__gguf_error(f, MOE_ERR_GGUF_FORMAT,
                                "tensor '%s' (data [%llu, %llu)) overlaps tensor '%s' (data [%llu, %llu))",
                                esc(f->tensors[sp[k].i].name).s, (unsigned long long)sp[k].off,
                                (unsigned long long)(sp[k].off + sp[k].size), esc(f->tensors[sp[k - 1].i].name).s,
                                (unsigned long long)sp[k - 1].off, (unsigned long long)(sp[k - 1].off + sp[k - 1].size));
    free(sp);
    return s;
}

static moe_status parse(moe_gguf *f) {
    parser P = {f, 0, ""};
    uint64_t n_tensors = 0, n_kv = 0;
    moe_status s;
    if ((s = parse_header(&P, &n_tensors, &n_kv))) return s;
    if ((s = parse_kvs(&P, n_kv))) return s;
    if ((s = parse_tensor_infos(&P, n_tensors))) return s;
    if ((s = read_alignment(f))) return s;
    uint64_t pad = (f->alignment - P.pos % f->alignment) % f->alignment;
    f->data_offset = P.pos + pad; /* P.pos <= size < 2^64 - 2^32: cannot overflow */
    if (f->n_tensors && f->data_offset > f->size)
        return moe__gguf_error(f, MOE_ERR_GGUF_FORMAT,
                               "the data section starts at offset %llu (tensor infos end at %llu, aligned to %llu), "
                               "past the end of the file (size %llu)",
                               (unsigned long long)f->data_offset, (unsigned long long)P.pos,
                               (unsigned long long)f->alignment, (unsigned long long)f->size);
    return check_data(f);
}

void moe_gguf_close(moe_gguf *f) {
    if (!f) return;
    if (f->mapped) munmap((void *)f->base, (size_t)f->size);
    free(f->kv);
    free(f->tensors);
    free(f->elems);
    free(f->kv_hash);
    free(f->tensor_hash);
    for (moe__gguf_chunk *c = f->arena, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    free(f);
}

/* Parses f; on failure frees it and moves its message (prefixed) to the thread's message. */
static moe_status finish_open(moe_gguf *f, const char *prefix, moe_gguf **out) {
    moe_status s = parse(f);
    if (s) {
        moe__ctx_error(NULL, s, "%s%s", prefix, f->err);
        moe_gguf_close(f);
        return s;
    }
    *out = f;
    return MOE_OK;
}

moe_status moe_gguf_open_memory(const void *data, size_t size, moe_gguf **out) {
    if (out) *out = NULL;
    if (!out || (!data && size))
        return moe__gguf_error(NULL, MOE_ERR_NULL_POINTER, "moe_gguf_open_memory: %s is NULL", !out ? "out" : "data");
    moe_gguf *f = calloc(1, sizeof *f);
    if (!f) return moe__gguf_error(NULL, MOE_ERR_OUT_OF_MEMORY, "moe_gguf_open_memory: out of memory");
    f->base = data;
    f->size = size;
    return finish_open(f, "", out);
}

moe_status moe_gguf_open(const char *path, moe_gguf **out) {
    if (out) *out = NULL;
    if (!path || !out)
        return moe__gguf_error(NULL, MOE_ERR_NULL_POINTER, "moe_gguf_open: %s is NULL", !path ? "path" : "out");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return moe__gguf_error(NULL, MOE_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return moe__gguf_error(NULL, MOE_ERR_IO, "cannot stat '%s': %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return moe__gguf_error(NULL, MOE_ERR_IO, "'%s' is not a regular file", path);
    }
    if ((uint64_t)st.st_size > (uint64_t)SIZE_MAX || (uint64_t)st.st_size >= (uint64_t)1 << 62) {
        close(fd);
        return moe__gguf_error(NULL, MOE_ERR_SIZE_OVERFLOW, "'%s' is %lld bytes, more than this process can map",
                               path, (long long)st.st_size);
    }
    moe_gguf *f = calloc(1, sizeof *f);
    if (!f) {
        close(fd);
        return moe__gguf_error(NULL, MOE_ERR_OUT_OF_MEMORY, "moe_gguf_open: out of memory");
    }
    f->size = (uint64_t)st.st_size;
    if (f->size) { /* an empty file cannot be mapped; parse() reports it as too short */
        void *m = mmap(NULL, (size_t)f->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            int e = errno;
            close(fd);
            free(f);
            return moe__gguf_error(NULL, MOE_ERR_IO, "cannot map '%s' (%lld bytes): %s", path, (long long)st.st_size,
                                   strerror(e));
        }
        f->base = m;
        f->mapped = 1;
    }
    close(fd);
    char prefix[320];
    snprintf(prefix, sizeof prefix, "%.300s: ", path);
    return finish_open(f, prefix, out);
}

/* ---- queries -------------------------------------------------------------------- */

uint32_t moe_gguf_version(const moe_gguf *f) { return f ? f->version : 0; }
int64_t moe_gguf_n_kv(const moe_gguf *f) { return f ? f->n_kv : 0; }
int64_t moe_gguf_n_tensors(const moe_gguf *f) { return f ? f->n_tensors : 0; }
uint64_t moe_gguf_alignment(const moe_gguf *f) { return f ? f->alignment : 0; }
uint64_t moe_gguf_data_offset(const moe_gguf *f) { return f ? f->data_offset : 0; }

/* The public view of a value of f. */
static void make_value(const moe_gguf *f, const moe__gguf_val *v, moe_gguf_value *out) {
    memset(out, 0, sizeof *out);
    out->type = (moe_gguf_type)v->type;
    out->elem_type = (moe_gguf_type)v->elem_type;
    out->n = v->n;
    out->internal_[0] = v->off;
    out->internal_[1] = v->table;
    const uint8_t *p = f->base + v->off;
    if (v->type == MOE_GGUF_TYPE_ARRAY) {
        out->data = vtype_size(v->elem_type) ? p : NULL;
        return;
    }
    out->data = p;
    switch (v->type) {
    case MOE_GGUF_TYPE_UINT8: out->u = p[0]; out->i = p[0]; break;
    case MOE_GGUF_TYPE_INT8: out->i = (int8_t)p[0]; out->u = (uint64_t)out->i; break;
    case MOE_GGUF_TYPE_UINT16: out->u = le16(p); out->i = (int64_t)out->u; break;
    case MOE_GGUF_TYPE_INT16: out->i = (int16_t)le16(p); out->u = (uint64_t)out->i; break;
    case MOE_GGUF_TYPE_UINT32: out->u = le32(p); out->i = (int64_t)out->u; break;
    case MOE_GGUF_TYPE_INT32: out->i = (int32_t)le32(p); out->u = (uint64_t)out->i; break;
    case MOE_GGUF_TYPE_UINT64: out->u = le64(p); out->i = (int64_t)out->u; break;
    case MOE_GGUF_TYPE_INT64: out->i = (int64_t)le64(p); out->u = (uint64_t)out->i; break;
    case MOE_GGUF_TYPE_BOOL: out->u = p[0] != 0; out->i = p[0] != 0; break;
    case MOE_GGUF_TYPE_FLOAT32: out->f = moe__u32_as_f32(le32(p)); break;
    case MOE_GGUF_TYPE_FLOAT64: {
        uint64_t u = le64(p);
        double d;
        memcpy(&d, &u, 8);
        out->f = d;
        break;
    }
    default: break;
    }
}

int64_t moe_gguf_find_key(const moe_gguf *f, const char *key) {
    return f ? hash_find(f, f->kv_hash, f->kv_hash_cap, kv_name, key) : -1;
}

moe_status moe_gguf_kv_at(const moe_gguf *f, int64_t i, const char **key, moe_gguf_value *value) {
    if (!f || !value)
        return moe__gguf_error(f, MOE_ERR_NULL_POINTER, "moe_gguf_kv_at: %s is NULL", !f ? "f" : "value");
    if (i < 0 || i >= f->n_kv)
        return moe__gguf_error(f, MOE_ERR_INVALID_ARGUMENT, "moe_gguf_kv_at: i = %lld, expected 0..%lld", (long long)i,
                               (long long)f->n_kv - 1);
    if (key) *key = f->kv[i].key;
    make_value(f, &f->kv[i].v, value);
    return MOE_OK;
}

/* The key/value named key, or NULL with f's error set. */
static const moe__gguf_kv *lookup(const moe_gguf *f, const char *fn, const char *key) {
    if (!f || !key) {
        moe__gguf_error(f, MOE_ERR_NULL_POINTER, "%s: %s is NULL", fn, !f ? "f" : "key");
        return NULL;
    }
    int64_t i = hash_find(f, f->kv_hash, f->kv_hash_cap, kv_name, key);
    if (i < 0) {
        moe__gguf_error(f, MOE_ERR_NOT_FOUND, "key '%s' is not in the file", key);
        return NULL;
    }
    return &f->kv[i];
}

#define LOOKUP(fn, out)                                                                                    \
    const moe__gguf_kv *kv = lookup(f, fn, key);                                                           \
    if (!kv) return f && key ? MOE_ERR_NOT_FOUND : MOE_ERR_NULL_POINTER;                                   \
    if (!(out)) return moe__gguf_error(f, MOE_ERR_NULL_POINTER, "%s: the output pointer is NULL", fn);

moe_status moe_gguf_get(const moe_gguf *f, const char *key, moe_gguf_value *value) {
    LOOKUP("moe_gguf_get", value);
    make_value(f, &kv->v, value);
    return MOE_OK;
}

moe_status moe_gguf_array_get(const moe_gguf *f, const moe_gguf_value *a, uint64_t i, moe_gguf_value *elem) {
    if (!f || !a || !elem)
        return moe__gguf_error(f, MOE_ERR_NULL_POINTER, "moe_gguf_array_get: %s is NULL",
                               !f ? "f" : !a ? "array" : "elem");
    if (a->type != MOE_GGUF_TYPE_ARRAY)
        return moe__gguf_error(f, MOE_ERR_INVALID_ARGUMENT, "moe_gguf_array_get: the value is a %s, not an array",
                               moe_gguf_type_name(a->type));
    if (i >= a->n)
        return moe__gguf_error(f, MOE_ERR_INVALID_ARGUMENT, "moe_gguf_array_get: i = %llu, but the array has %llu elements",
                               (unsigned long long)i, (unsigned long long)a->n);
    moe__gguf_val v = {(uint32_t)a->elem_type, (uint32_t)a->elem_type, 1, 0, NONE};
    uint64_t off = a->internal_[0], table = a->internal_[1], esz = vtype_size(a->elem_type);
    if (esz) {
        /* the array was checked to fit at open; recheck so a forged value cannot reach outside */
        if (off > f->size || a->n > (f->size - off) / esz)
            return moe__gguf_error(f, MOE_ERR_INVALID_ARGUMENT, "moe_gguf_array_get: the array is not one of this file's values");
        v.off = off + i * esz;
    } else {
        if (table == NONE || table > f->n_elems || i >= f->n_elems - table)
            return moe__gguf_error(f, MOE_ERR_INVALID_ARGUMENT, "moe_gguf_array_get: the array is not one of this file's values");
        const moe__gguf_elem *e = &f->elems[table + i];
        const uint8_t *p = f->base + e->off;
        if (a->elem_type == MOE_GGUF_TYPE_STRING) {
            v.n = le64(p);
            v.off = e->off + 8;
        } else if (a->elem_type == MOE_GGUF_TYPE_ARRAY) {
            v.elem_type = le32(p);
            v.n = le64(p + 4);
            v.off = e->off + 12;
            v.table = e->table;
        } else {
            return moe__gguf_error(f, MOE_ERR_INVALID_ARGUMENT, "moe_gguf_array_get: element type %d is not a GGUF type",
                                   (int)a->elem_type);
        }
    }
    make_value(f, &v, elem);
    return MOE_OK;
}

static moe_status int_getter(const moe_gguf *f, const char *fn, const char *key, const char *want, int64_t lo,
                             uint64_t hi, int64_t *si, uint64_t *ui) {
    LOOKUP(fn, si || ui);
    moe_gguf_value v;
    make_value(f, &kv->v, &v);
    if (!is_int_type(v.type))
        return moe__gguf_error(f, MOE_ERR_GGUF_FORMAT, "key '%s' has type %s, expected an integer (%s)", key,
                               moe_gguf_type_name(v.type), want);
    int fits = is_signed_type(v.type) ? v.i >= lo && (v.i < 0 || (uint64_t)v.i <= hi) : v.u <= hi;
    if (!fits) {
        if (is_signed_type(v.type))
            return moe__gguf_error(f, MOE_ERR_GGUF_FORMAT, "key '%s' = %lld (%s) does not fit in %s", key,
                                   (long long)v.i, moe_gguf_type_name(v.type), want);
        return moe__gguf_error(f, MOE_ERR_GGUF_FORMAT, "key '%s' = %llu (%s) does not fit in %s", key,
                               (unsigned long long)v.u, moe_gguf_type_name(v.type), want);
    }
    if (si) *si = v.i;
    if (ui) *ui = v.u;
    return MOE_OK;
}

moe_status moe_gguf_get_u32(const moe_gguf *f, const char *key, uint32_t *v) {
    uint64_t u = 0;
    moe_status s = int_getter(f, "moe_gguf_get_u32", key, "u32", 0, UINT32_MAX, NULL, v ? &u : NULL);
    if (!s) *v = (uint32_t)u;
    return s;
}

moe_status moe_gguf_get_i32(const moe_gguf *f, const char *key, int32_t *v) {
    int64_t i = 0;
    moe_status s = int_getter(f, "moe_gguf_get_i32", key, "i32", INT32_MIN, INT32_MAX, v ? &i : NULL, NULL);
    if (!s) *v = (int32_t)i;
    return s;
}

moe_status moe_gguf_get_u64(const moe_gguf *f, const char *key, uint64_t *v) {
    return int_getter(f, "moe_gguf_get_u64", key, "u64", 0, UINT64_MAX, NULL, v);
}

moe_status moe_gguf_get_f32(const moe_gguf *f, const char *key, float *v) {
    LOOKUP("moe_gguf_get_f32", v);
    if (kv->v.type != MOE_GGUF_TYPE_FLOAT32 && kv->v.type != MOE_GGUF_TYPE_FLOAT64)
        return moe__gguf_error(f, MOE_ERR_GGUF_FORMAT, "key '%s' has type %s, expected f32 (or f64)", key,
                               moe_gguf_type_name((moe_gguf_type)kv->v.type));
    moe_gguf_value x;
    make_value(f, &kv->v, &x);
    *v = (float)x.f;
    return MOE_OK;
}

moe_status moe_gguf_get_bool(const moe_gguf *f, const char *key, int *v) {
    LOOKUP("moe_gguf_get_bool", v);
    if (kv->v.type != MOE_GGUF_TYPE_BOOL)
        return moe__gguf_error(f, MOE_ERR_GGUF_FORMAT, "key '%s' has type %s, expected bool", key,
                               moe_gguf_type_name((moe_gguf_type)kv->v.type));
    *v = f->base[kv->v.off] != 0;
    return MOE_OK;
}

moe_status moe_gguf_get_string(const moe_gguf *f, const char *key, const char **s, size_t *len) {
    LOOKUP("moe_gguf_get_string", s);
    if (kv->v.type != MOE_GGUF_TYPE_STRING)
        return moe__gguf_error(f, MOE_ERR_GGUF_FORMAT, "key '%s' has type %s, expected string", key,
                               moe_gguf_type_name((moe_gguf_type)kv->v.type));
    *s = kv->str;
    if (len) *len = (size_t)kv->v.n;
    return MOE_OK;
}

moe_status moe_gguf_get_array(const moe_gguf *f, const char *key, moe_gguf_type *elem_type, uint64_t *n) {
    LOOKUP("moe_gguf_get_array", elem_type || n);
    if (kv->v.type != MOE_GGUF_TYPE_ARRAY)
        return moe__gguf_error(f, MOE_ERR_GGUF_FORMAT, "key '%s' has type %s, expected array", key,
                               moe_gguf_type_name((moe_gguf_type)kv->v.type));
    if (elem_type) *elem_type = (moe_gguf_type)kv->v.elem_type;
    if (n) *n = kv->v.n;
    return MOE_OK;
}

int64_t moe_gguf_find_tensor(const moe_gguf *f, const char *name) {
    return f ? hash_find(f, f->tensor_hash, f->tensor_hash_cap, tensor_name, name) : -1;
}

moe_status moe_gguf_tensor_at(const moe_gguf *f, int64_t i, moe_gguf_tensor_info *info) {
    if (!f || !info)
        return moe__gguf_error(f, MOE_ERR_NULL_POINTER, "moe_gguf_tensor_at: %s is NULL", !f ? "f" : "info");
    if (i < 0 || i >= f->n_tensors)
        return moe__gguf_error(f, MOE_ERR_INVALID_ARGUMENT, "moe_gguf_tensor_at: i = %lld, expected 0..%lld",
                               (long long)i, (long long)f->n_tensors - 1);
    const moe__gguf_tensor *t = &f->tensors[i];
    memset(info, 0, sizeof *info);
    info->name = t->name;
    info->type = (moe_type)t->type;
    info->type_name = moe__gguf_type_name(t->type);
    info->n_dims = t->n_dims;
    memcpy(info->ne, t->ne, sizeof info->ne);
    info->n_elements = t->n_elements;
    info->offset = f->data_offset + t->rel;
    info->size = t->size;
    info->data = f->base + info->offset;
    return MOE_OK;
}

moe_status moe_gguf_get_tensor(const moe_gguf *f, const char *name, moe_gguf_tensor_info *info) {
    if (!f || !name || !info)
        return moe__gguf_error(f, MOE_ERR_NULL_POINTER, "moe_gguf_get_tensor: %s is NULL",
                               !f ? "f" : !name ? "name" : "info");
    int64_t i = moe_gguf_find_tensor(f, name);
    if (i < 0) return moe__gguf_error(f, MOE_ERR_NOT_FOUND, "tensor '%s' is not in the file", name);
    return moe_gguf_tensor_at(f, i, info);
}
