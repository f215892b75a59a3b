/*
 * The NVRTC compile cache of the cuda-jit backend: compiling needs no GPU, so
 * this runs wherever the library was built with CUDA and NVRTC can be opened.
 * Cold compile, warm hit, a compile error's message, a corrupt entry, two
 * processes filling the cache at once, and the cuda-jit program of real
 * layer shapes (qwen3, gpt-oss) compiled for sm_90a.
 */
#define _GNU_SOURCE 1 /* memmem */
#include "harness.h"

#ifdef MOE_WITH_CUDA
#include "cuda/jit.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *kernel_src =
    "extern \"C\" __global__ void axpy(float a, const float *x, float *y, int n) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) y[i] = a * x[i] + y[i];\n"
    "}\n";

static char dir[256];

static int setup_cache(void) {
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/moe-jit-test-%ld", (long)getpid());
        setenv("MOE_CACHE_DIR", dir, 1); /* read once per process, at the first compile */
    }
    char why[256];
    if (!moe__jit_available(why, sizeof why)) return 0;
    return moe__jit_cache_dir() != NULL;
}

TEST(jit_compile_then_cache_hit) {
    char why[256], err[1024];
    if (!setup_cache()) {
        moe__jit_available(why, sizeof why);
        SKIP("%s", moe__jit_available(NULL, 0) ? "no cache directory" : why);
    }
    char src[512];
    snprintf(src, sizeof src, "%s// %lld\n", kernel_src, (long long)getpid()); /* a key no earlier run made */
    moe__jit_result a, b;
    CHECK_STATUS(moe__jit_compile("axpy", src, "90a", NULL, 0, &a, err, sizeof err), MOE_OK);
    CHECK(!a.cache_hit && a.size > 16 && memcmp(a.cubin, "\x7f" "ELF", 4) == 0); /* the key is new to any cache */
    CHECK_STATUS(moe__jit_compile("axpy", src, "90a", NULL, 0, &b, err, sizeof err), MOE_OK);
    CHECK(b.cache_hit && b.size == a.size && memcmp(a.cubin, b.cubin, a.size) == 0);
    CHECK_MSG(b.ms < 50.0, "warm cache read took %.1f ms", b.ms);
    /* another arch or option is another entry */
    moe__jit_result c;
    const char *opt[] = {"-DMOE_JIT_TEST=1"};
    CHECK_STATUS(moe__jit_compile("axpy", src, "80", opt, 1, &c, err, sizeof err), MOE_OK);
    CHECK(!c.cache_hit && strcmp(c.cache_path, a.cache_path) != 0);
    /* a corrupt entry is recompiled and replaced */
    FILE *f = fopen(a.cache_path, "wb");
    CHECK(f != NULL);
    fputs("garbage", f);
    fclose(f);
    moe__jit_result d;
    CHECK_STATUS(moe__jit_compile("axpy", src, "90a", NULL, 0, &d, err, sizeof err), MOE_OK);
    CHECK(!d.cache_hit && d.size == a.size);
    char msg[128];
    snprintf(msg, sizeof msg, "cold %.0f ms, warm %.2f ms", a.ms, b.ms);
    free(a.cubin); free(b.cubin); free(c.cubin); free(d.cubin);
    moe_test_note("%s", msg);
}

TEST(jit_compile_error_has_log) {
    char err[1024];
    if (!setup_cache()) SKIP("NVRTC not available");
    moe__jit_result r;
    moe_status s = moe__jit_compile("broken", "__global__ void k() { undeclared_thing = 1; }", "90a", NULL, 0, &r, err,
                                    sizeof err);
    CHECK(s != MOE_OK);
    CHECK_MSG(strstr(err, "undeclared_thing") != NULL, "message lacks the compiler log: %s", err);
    CHECK(r.cubin == NULL);
}

TEST(jit_two_processes_fill_cache) {
    char err[1024];
    if (!setup_cache()) SKIP("NVRTC not available");
    char src[512];
    snprintf(src, sizeof src, "%s// race %lld\n", kernel_src, (long long)getpid());
    pid_t kids[2];
    for (int i = 0; i < 2; i++) {
        kids[i] = fork();
        if (kids[i] == 0) {
            moe__jit_result r;
            _exit(moe__jit_compile("axpy", src, "90a", NULL, 0, &r, err, sizeof err) == MOE_OK ? 0 : 1);
        }
    }
    for (int i = 0; i < 2; i++) {
        int st = 0;
        waitpid(kids[i], &st, 0);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    moe__jit_result r;
    CHECK_STATUS(moe__jit_compile("axpy", src, "90a", NULL, 0, &r, err, sizeof err), MOE_OK);
    CHECK(r.cache_hit && memcmp(r.cubin, "\x7f" "ELF", 4) == 0);
    free(r.cubin);
}

/* The cuda-jit program of real layer shapes, built by the function the
 * backend uses, compiles for sm_90a with no GPU; cold under 5 s, warm under 50 ms. */
static void jit_layer(const char *preset, const moe__jit_spec *sp) {
    char err[2048];
    if (!setup_cache()) SKIP("NVRTC not available");
    char *src = moe__jit_sm90_source(sp);
    CHECK(src != NULL && strstr(src, "moe_jit_gemm1") && strstr(src, "#define MOE_JIT_D"));
    /* the embedded headers lost their #include lines (NVRTC has no include path) */
    for (const char *l = src; l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        while (*l == ' ' || *l == '\t') l++;
        CHECK_MSG(strncmp(l, "#include", 8) != 0, "the JIT program still has an #include: %.60s", l);
    }
    free(src);
    moe__jit_result a, b;
    moe_status s = moe__jit_sm90_compile(sp, &a, err, sizeof err);
    CHECK_MSG(s == MOE_OK, "%s: %s", preset, err);
    if (s) return;
    /* cold unless the library read another cache directory before this test
     * set its own (MOE_CACHE_DIR given to a run of every test: the CUDA tests
     * compile first, and a warm machine may hold this very program) */
    const char *cdir = moe__jit_cache_dir();
    const int own_cache = cdir && strcmp(cdir, dir) == 0;
    CHECK(a.size > 16 && memcmp(a.cubin, "\x7f" "ELF", 4) == 0);
    CHECK_MSG(!own_cache || !a.cache_hit, "%s: first compile in a fresh cache directory was a cache hit", preset);
    CHECK_MSG(memmem(a.cubin, a.size, "moe_jit_gemm1", 13) && memmem(a.cubin, a.size, "moe_jit_gemm2", 13),
              "%s: the cubin lacks the extern \"C\" kernels", preset);
    /* the 64-row tiles of the tile table exist without clusters only */
    int m64 = memmem(a.cubin, a.size, "moe_jit_gemm1_m64", 17) && memmem(a.cubin, a.size, "moe_jit_gemm2_m64", 17);
    CHECK_MSG(m64 == (sp->cm == 1 && sp->cn == 1), "%s: BM 64 kernels %s", preset, m64 ? "present with clusters" : "missing");
    int c21 = memmem(a.cubin, a.size, "moe_jit_gemm1_c21", 17) && memmem(a.cubin, a.size, "moe_jit_gemm2_c21", 17);
    CHECK_MSG(c21 == (sp->c21 && sp->cm == 1 && sp->cn == 1), "%s: 2x1 kernels %s", preset, c21 ? "present" : "missing");
    CHECK_STATUS(moe__jit_sm90_compile(sp, &b, err, sizeof err), MOE_OK);
    CHECK(b.cache_hit && b.size == a.size && memcmp(a.cubin, b.cubin, a.size) == 0);
    CHECK_MSG(a.cache_hit || a.ms < 5000.0, "%s: cold compile took %.0f ms", preset, a.ms);
    CHECK_MSG(b.ms < 50.0, "%s: warm cache read took %.1f ms", preset, b.ms);
    moe_test_note("%s: cold %.0f ms, warm %.2f ms, cubin %zu KB", preset, a.ms, b.ms, a.size / 1024);
    free(a.cubin);
    free(b.cubin);
}

TEST(jit_sm90_qwen3) {
    moe__jit_spec sp = {2048, 768, 128, 8, MOE_ACT_SWIGLU, 1, MOE_TYPE_BF16, 0, 0, 1, 1, 0, 256, 256};
    jit_layer("qwen3-30b-a3b 2048/768/128/8 bf16 swiglu", &sp);
}

TEST(jit_sm90_gpt_oss) {
    /* n-tiles of 240: GEMM 2 (moe__cuda_sm90_bn2) and GEMM 1's BM 128 kernel (bn1) */
    moe__jit_spec sp = {2880, 2880, 32, 4, MOE_ACT_SWIGLU_OAI, 1, MOE_TYPE_BF16, 3, 1, 1, 1, 0, 240, 240};
    jit_layer("gpt-oss-20b 2880/2880/32/4 bf16 swiglu_oai + biases", &sp);
}

TEST(jit_sm90_f16_relu2_clusters) {
    /* not gated, f16, partial last n-tile, 2 x 2 clusters */
    moe__jit_spec sp = {1000, 1000, 16, 2, MOE_ACT_RELU2, 0, MOE_TYPE_F16, 1, 1, 2, 2, 0, 256, 256};
    jit_layer("f16 relu2 1000/1000/16/2 2x2 clusters", &sp);
}

TEST(jit_sm90_deepseek_c21) {
    /* D >= 4096: the program also holds the 2 x 1 cluster kernels for large T */
    moe__jit_spec sp = {7168, 2048, 256, 8, MOE_ACT_SWIGLU, 1, MOE_TYPE_BF16, 0, 0, 1, 1, 1, 256, 256};
    jit_layer("deepseek-v3 7168/2048/256/8 bf16 swiglu, 2x1 kernels", &sp);
}

/* ptxas serializes every wgmma of a kernel (a wait after each one, no MMA
 * overlapping the next: about half the speed) when it cannot keep the
 * accumulators in place through the pipeline, and only says so in its -v
 * output (src/cuda/NOTES.md, session 8). The GEMM kernels must not trigger
 * it, in their cuda-jit form (shape constants) nor in the ahead-of-time form
 * (the same body without MOE_JIT: run-time shapes and biases). */
static const char *const serialized_msgs[] = {"instructions are serialized", "warpgroup.arrive is injected"};

static const char *serialization_in(const char *log) {
    for (size_t i = 0; i < sizeof serialized_msgs / sizeof serialized_msgs[0]; i++) {
        const char *m = strstr(log, serialized_msgs[i]);
        if (m) return m;
    }
    return NULL;
}

/* A kernel ptxas must serialize: an accumulator written by an ordinary
 * instruction while a wgmma group is in flight. It shows that the check below
 * sees the message (the test would pass vacuously if ptxas -v output did not
 * reach the NVRTC log). Appended to a GEMM program, whose helpers it uses. */
static const char *serialized_probe =
    "extern \"C\" __global__ void __launch_bounds__(128, 1) moe_serial_probe(float *out, const float *in, int n) {\n"
    "    float acc[32];\n"
    "    for (int i = 0; i < 32; i++) acc[i] = 0.f;\n"
    "    const uint64_t d = (uint64_t)smem_u32(in);\n"
    "    for (int k = 0; k < n; k++) {\n"
    "        if (in[k] > 0.f) acc[k & 31] += in[k];\n"
    "        asm volatile(\"wgmma.fence.sync.aligned;\\n\" ::: \"memory\");\n"
    "        wgmma_m64k16<64, MOE_JIT_T>(acc, d, d, 1);\n"
    "        asm volatile(\"wgmma.commit_group.sync.aligned;\\n\" ::: \"memory\");\n"
    "        asm volatile(\"wgmma.wait_group.sync.aligned 1;\\n\" ::: \"memory\");\n"
    "    }\n"
    "    asm volatile(\"wgmma.wait_group.sync.aligned 0;\\n\" ::: \"memory\");\n"
    "    for (int i = 0; i < 32; i++) out[threadIdx.x * 32 + i] = acc[i];\n"
    "}\n";

static void check_pipelined(const char *what, const char *src) {
    char err[2048], *log = NULL;
    moe_status s = moe__jit_ptxas_info("moe_sm90", src, "90a", &log, err, sizeof err);
    CHECK_MSG(s == MOE_OK, "%s: %s", what, err);
    if (s) return;
    CHECK_MSG(strstr(log, "ptxas info") != NULL, "%s: no ptxas -v output in the NVRTC log", what);
    const char *m = serialization_in(log);
    while (m && m > log && m[-1] != '\n') m--; /* the whole line: it names the kernel */
    CHECK_MSG(m == NULL, "%s: ptxas serialized wgmmas: %.400s", what, m ? m : "");
    free(log);
}

static void wgmma_pipelined(const char *preset, const moe__jit_spec *sp) {
    char what[160], *src = NULL;
    if (!setup_cache()) SKIP("NVRTC not available");
    src = moe__jit_sm90_source(sp);
    CHECK(src != NULL);
    if (!src) return;
    snprintf(what, sizeof what, "%s, cuda-jit", preset);
    check_pipelined(what, src);
    /* the ahead-of-time body: the same program without MOE_JIT */
    char *def = strstr(src, "#define MOE_JIT 1\n");
    CHECK_MSG(def != NULL, "%s: the program does not start with #define MOE_JIT 1", preset);
    if (def) {
        memcpy(def, "//", 2);
        snprintf(what, sizeof what, "%s, ahead of time", preset);
        check_pipelined(what, src);
    }
    free(src);
}

TEST(jit_sm90_wgmma_pipelined) {
    moe__jit_spec q = {2048, 768, 128, 8, MOE_ACT_SWIGLU, 1, MOE_TYPE_BF16, 0, 0, 1, 1, 1, 256, 256}; /* with the 2x1 kernels */
    moe__jit_spec o = {2880, 2880, 32, 4, MOE_ACT_SWIGLU_OAI, 1, MOE_TYPE_BF16, 3, 1, 1, 1, 0, 240, 240}; /* n-tiles of 240 */
    moe__jit_spec r = {1000, 1000, 16, 2, MOE_ACT_RELU2, 0, MOE_TYPE_F16, 1, 1, 2, 2, 0, 256, 256};
    wgmma_pipelined("qwen3-30b-a3b bf16 swiglu", &q);
    wgmma_pipelined("gpt-oss-20b bf16 swiglu_oai + biases", &o);
    wgmma_pipelined("f16 relu2 + biases, 2x2 clusters", &r);
}

TEST(jit_serialized_wgmma_is_reported) {
    /* the negative control of jit_sm90_wgmma_pipelined */
    char err[2048], *log = NULL;
    if (!setup_cache()) SKIP("NVRTC not available");
    moe__jit_spec q = {2048, 768, 128, 8, MOE_ACT_SWIGLU, 1, MOE_TYPE_BF16, 0, 0, 1, 1, 0, 256, 256};
    char *src = moe__jit_sm90_source(&q);
    CHECK(src != NULL);
    if (!src) return;
    size_t n = strlen(src), m = strlen(serialized_probe);
    char *all = malloc(n + m + 1);
    CHECK(all != NULL);
    if (all) {
        memcpy(all, src, n);
        memcpy(all + n, serialized_probe, m + 1);
        moe_status s = moe__jit_ptxas_info("moe_probe", all, "90a", &log, err, sizeof err);
        CHECK_MSG(s == MOE_OK, "%s", err);
        if (s == MOE_OK) {
            CHECK_MSG(serialization_in(log) != NULL, "ptxas did not report the probe's serialized wgmma: %.400s", log);
            free(log);
        }
        free(all);
    }
    free(src);
}

#else
TEST(jit_compile_then_cache_hit) { SKIP("built without CUDA"); }
#endif
