/*
 * NVRTC behind dlopen, and the on-disk cubin cache of the cuda-jit backend
 * (see jit.h). Nothing here needs a GPU.
 */
#include "jit.h"

#include <nvrtc.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The NVRTC entry points we use, resolved from the shared library. */
static struct {
    int tried, ok;
    char why[256];
    int version;
    nvrtcResult (*create)(nvrtcProgram *, const char *, const char *, int, const char *const *, const char *const *);
    nvrtcResult (*compile)(nvrtcProgram, int, const char *const *);
    nvrtcResult (*log_size)(nvrtcProgram, size_t *);
    nvrtcResult (*log)(nvrtcProgram, char *);
    nvrtcResult (*cubin_size)(nvrtcProgram, size_t *);
    nvrtcResult (*cubin)(nvrtcProgram, char *);
    nvrtcResult (*destroy)(nvrtcProgram *);
    nvrtcResult (*ver)(int *, int *);
    const char *(*errstr)(nvrtcResult);
} nv;

static pthread_once_t nv_once = PTHREAD_ONCE_INIT;

static void nv_load(void) {
    static const char *names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
    const char *forced = getenv("MOE_NVRTC_PATH");
    void *h = NULL;
    if (forced && *forced) {
        h = dlopen(forced, RTLD_NOW | RTLD_LOCAL);
        if (!h) snprintf(nv.why, sizeof nv.why, "NVRTC not found (MOE_NVRTC_PATH=%s)", forced);
    } else {
        for (size_t i = 0; i < sizeof names / sizeof names[0] && !h; i++) h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (!h) snprintf(nv.why, sizeof nv.why, "NVRTC not found (libnvrtc.so.13, libnvrtc.so.12, libnvrtc.so)");
    }
    if (!h) return;
#define SYM(field, name)                                                                   \
    *(void **)&nv.field = dlsym(h, name);                                                  \
    if (!nv.field) {                                                                       \
        snprintf(nv.why, sizeof nv.why, "NVRTC lacks %s", name);                           \
        return;                                                                            \
    }
    SYM(create, "nvrtcCreateProgram");
    SYM(compile, "nvrtcCompileProgram");
    SYM(log_size, "nvrtcGetProgramLogSize");
    SYM(log, "nvrtcGetProgramLog");
    SYM(cubin_size, "nvrtcGetCUBINSize");
    SYM(cubin, "nvrtcGetCUBIN");
    SYM(destroy, "nvrtcDestroyProgram");
    SYM(ver, "nvrtcVersion");
    SYM(errstr, "nvrtcGetErrorString");
#undef SYM
    int ma = 0, mi = 0;
    nv.ver(&ma, &mi);
    nv.version = ma * 1000 + mi * 10;
    nv.ok = 1;
}

int moe__jit_available(char *why, size_t n) {
    pthread_once(&nv_once, nv_load);
    if (!nv.ok && why) snprintf(why, n, "%s", nv.why);
    return nv.ok;
}

int moe__jit_nvrtc_version(void) {
    pthread_once(&nv_once, nv_load);
    return nv.version;
}

/* ---- the cache ---- */

static void hash_bytes(uint64_t h[2], const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h[0] = (h[0] ^ b[i]) * 0x100000001b3ull;
        h[1] = (h[1] ^ b[i]) * 0x00000100000001b3ull + 0x9e3779b97f4a7c15ull;
    }
    /* field separator, so that ("ab","c") and ("a","bc") differ */
    h[0] = (h[0] ^ 0xff) * 0x100000001b3ull;
    h[1] = (h[1] ^ 0xfe) * 0x00000100000001b3ull;
}

static int mkdir_p(const char *path) {
    char tmp[512];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(tmp, 0700) && errno != EEXIST) return -1;
        *p = '/';
    }
    if (mkdir(tmp, 0700) && errno != EEXIST) return -1;
    return access(tmp, W_OK) == 0 ? 0 : -1;
}

static pthread_once_t dir_once = PTHREAD_ONCE_INIT;
static char cache_dir[400];

static void dir_init(void) {
    const char *env = getenv("MOE_CACHE_DIR");
    if (env && strcmp(env, "off") == 0) return;
    char d[400] = "";
    if (env && *env) snprintf(d, sizeof d, "%s", env);
    else if (getenv("XDG_CACHE_HOME") && *getenv("XDG_CACHE_HOME")) snprintf(d, sizeof d, "%s/libmoe", getenv("XDG_CACHE_HOME"));
    else if (getenv("HOME") && *getenv("HOME")) snprintf(d, sizeof d, "%s/.cache/libmoe", getenv("HOME"));
    if (d[0] && mkdir_p(d) == 0) snprintf(cache_dir, sizeof cache_dir, "%s", d);
}

const char *moe__jit_cache_dir(void) {
    pthread_once(&dir_once, dir_init);
    return cache_dir[0] ? cache_dir : NULL;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}

/* Reads a cached cubin; 0 on success. A file that is not an ELF image is
 * treated as absent (it is then overwritten). */
static int cache_read(const char *path, void **data, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    int rc = -1;
    if (fseek(f, 0, SEEK_END) == 0) {
        long n = ftell(f);
        if (n > 16 && n < (1L << 30) && fseek(f, 0, SEEK_SET) == 0) {
            char *b = malloc((size_t)n);
            if (b && fread(b, 1, (size_t)n, f) == (size_t)n && memcmp(b, "\x7f" "ELF", 4) == 0) {
                *data = b;
                *size = (size_t)n;
                rc = 0;
            } else {
                free(b);
            }
        }
    }
    fclose(f);
    return rc;
}

static void cache_write(const char *path, const void *data, size_t size) {
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%lx", path, (long)getpid(), (unsigned long)(uintptr_t)&tmp ^ (unsigned long)time(NULL));
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0) return;
    const char *p = data;
    size_t left = size;
    while (left) {
        ssize_t w = write(fd, p, left);
        if (w <= 0) break;
        p += w;
        left -= (size_t)w;
    }
    int ok = left == 0 && fsync(fd) == 0;
    close(fd);
    if (ok && rename(tmp, path) == 0) return; /* atomic: readers see all or nothing */
    unlink(tmp);
}

/* NVRTC: src compiled for sm_<arch> with -std=c++17 and opts into a malloc'd
 * cubin; with log != NULL also the program log (malloc'd, "" when empty). */
static moe_status build(const char *name, const char *src, const char *arch, const char *const *opts, int n_opts,
                        void **cubin_out, size_t *size_out, char **log_out, char *err, size_t err_n) {
    char arch_opt[64];
    snprintf(arch_opt, sizeof arch_opt, "-arch=sm_%s", arch);
    const char *all[64];
    int n = 0;
    all[n++] = arch_opt;
    all[n++] = "-std=c++17"; /* no --use_fast_math: the cuda-jit kernels must round as the nvcc-built ones */
    for (int i = 0; i < n_opts && n < 64; i++) all[n++] = opts[i];
    nvrtcProgram prog;
    nvrtcResult r = nv.create(&prog, src, name, 0, NULL, NULL);
    if (r != NVRTC_SUCCESS) {
        snprintf(err, err_n, "nvrtcCreateProgram(%s): %s", name, nv.errstr(r));
        return MOE_ERR_INTERNAL;
    }
    r = nv.compile(prog, n, all);
    size_t ls = 0;
    nv.log_size(prog, &ls);
    char *log = malloc(ls + 1);
    if (log) {
        log[0] = 0;
        if (ls) nv.log(prog, log);
        log[ls] = 0;
    }
    if (r != NVRTC_SUCCESS) {
        snprintf(err, err_n, "NVRTC could not compile %s for sm_%s: %s: %.700s", name, arch, nv.errstr(r),
                 log ? log : "");
        free(log);
        nv.destroy(&prog);
        return MOE_ERR_INTERNAL;
    }
    size_t size = 0;
    nv.cubin_size(prog, &size);
    void *cubin = size ? malloc(size) : NULL;
    if (!cubin || (log_out && !log)) {
        free(cubin);
        free(log);
        nv.destroy(&prog);
        snprintf(err, err_n, "NVRTC produced no cubin for %s (size %zu), or out of memory", name, size);
        return size ? MOE_ERR_OUT_OF_MEMORY : MOE_ERR_INTERNAL;
    }
    nv.cubin(prog, cubin);
    nv.destroy(&prog);
    *cubin_out = cubin;
    *size_out = size;
    if (log_out) *log_out = log;
    else free(log);
    return MOE_OK;
}

moe_status moe__jit_ptxas_info(const char *name, const char *src, const char *arch, char **log, char *err,
                               size_t err_n) {
    *log = NULL;
    if (!moe__jit_available(err, err_n)) return MOE_ERR_BACKEND_UNAVAILABLE;
    const char *opt[] = {"--ptxas-options=-v"};
    void *cubin = NULL;
    size_t size = 0;
    moe_status st = build(name, src, arch, opt, 1, &cubin, &size, log, err, err_n);
    free(cubin);
    return st;
}

moe_status moe__jit_compile(const char *name, const char *src, const char *arch, const char *const *opts,
                            int n_opts, moe__jit_result *res, char *err, size_t err_n) {
    memset(res, 0, sizeof *res);
    if (!moe__jit_available(err, err_n)) return MOE_ERR_BACKEND_UNAVAILABLE;
    double t0 = now_ms();
    char arch_opt[64];
    snprintf(arch_opt, sizeof arch_opt, "-arch=sm_%s", arch);
    uint64_t h[2] = {0xcbf29ce484222325ull, 0x84222325cbf29ce4ull};
    hash_bytes(h, src, strlen(src));
    hash_bytes(h, arch_opt, strlen(arch_opt));
    for (int i = 0; i < n_opts; i++) hash_bytes(h, opts[i], strlen(opts[i]));
    hash_bytes(h, &nv.version, sizeof nv.version);
    hash_bytes(h, moe_version(), strlen(moe_version()));
    const char *dir = moe__jit_cache_dir();
    if (dir) {
        snprintf(res->cache_path, sizeof res->cache_path, "%s/%s-%016llx%016llx.cubin", dir, name,
                 (unsigned long long)h[0], (unsigned long long)h[1]);
        if (cache_read(res->cache_path, &res->cubin, &res->size) == 0) {
            res->cache_hit = 1;
            res->ms = now_ms() - t0;
            return MOE_OK;
        }
    }
    void *cubin = NULL;
    size_t size = 0;
    moe_status st = build(name, src, arch, opts, n_opts, &cubin, &size, NULL, err, err_n);
    if (st) return st;
    res->cubin = cubin;
    res->size = size;
    res->ms = now_ms() - t0;
    if (dir) cache_write(res->cache_path, cubin, size);
    return MOE_OK;
}
