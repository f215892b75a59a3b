/*
 * The GGUF reader's internals, shared by the reader (gguf.c) and the MoE
 * layer mapping (gguf_layer.c). Nothing here is public; see the "GGUF files"
 * section of include/moe.h.
 */
#ifndef MOE_GGUF_FILE_H
#define MOE_GGUF_FILE_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A parsed value: where it lies in the file and how to reach its elements. */
typedef struct moe__gguf_val {
    uint32_t type, elem_type; /* moe_gguf_type */
    uint64_t n;               /* ARRAY: elements; STRING: bytes; else 1 */
    uint64_t off;             /* file offset of the payload: the scalar, the
                                 string's bytes, or the array's first element */
    uint64_t table;           /* ARRAY of STRING/ARRAY: index of its first
                                 element in moe_gguf.elems; else UINT64_MAX */
} moe__gguf_val;

/* One element of an array of strings or arrays. */
typedef struct moe__gguf_elem {
    uint64_t off;   /* file offset of the element's encoding (its length or array header) */
    uint64_t table; /* for an array element with variable-size elements, its own table; else UINT64_MAX */
} moe__gguf_elem;

typedef struct moe__gguf_kv {
    const char *key;       /* NUL-terminated copy */
    moe__gguf_val v;
    const char *str;       /* STRING: NUL-terminated copy of the value */
} moe__gguf_kv;

typedef struct moe__gguf_tensor {
    const char *name;      /* NUL-terminated copy */
    uint32_t type;
    int n_dims;
    int64_t ne[4];
    int64_t n_elements;
    uint64_t rel;          /* offset within the data section */
    uint64_t size;         /* bytes */
} moe__gguf_tensor;

/* Chunked arena for the copies of names and strings (pointers never move). */
typedef struct moe__gguf_chunk {
    struct moe__gguf_chunk *next;
    size_t used, cap;
    char data[];
} moe__gguf_chunk;

struct moe_gguf {
    const uint8_t *base;  /* the mapping, or the caller's memory */
    uint64_t size;
    int mapped;           /* 1: base is our mmap of size bytes */
    uint32_t version;
    uint64_t alignment, data_offset;
    moe__gguf_kv *kv;
    int64_t n_kv;
    moe__gguf_tensor *tensors;
    int64_t n_tensors;
    moe__gguf_elem *elems; /* element tables of arrays of strings/arrays */
    uint64_t n_elems, cap_elems;
    /* open-addressing hash tables: slot = index + 1, 0 = empty; size a power of 2 */
    int64_t *kv_hash, *tensor_hash;
    uint64_t kv_hash_cap, tensor_hash_cap;
    moe__gguf_chunk *arena;
    char err[MOE__ERR_LEN];
};

/* Formats a message into f->err (f NULL: the thread's message of calls
 * without a handle) and returns s. */
moe_status moe__gguf_error(const moe_gguf *f, moe_status s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* A name from the file made safe for a message: bytes outside printable
 * ASCII (and backslashes) become \xNN; cut after about 120 bytes. */
void moe__gguf_escape(const char *name, char *out, size_t n);

/* ggml type traits for every type a GGUF file may hold (also those libmoe
 * does not compute with): 0 = unknown type. */
int64_t moe__gguf_type_block(uint32_t type);
int64_t moe__gguf_type_bytes(uint32_t type);
const char *moe__gguf_type_name(uint32_t type);

#ifdef __cplusplus
}
#endif

#endif
