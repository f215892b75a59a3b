/*
 * The test runner: runs every registered test (or those whose name contains
 * argv[1]), prints one line per test and closes with
 * "N passed, N failed, N skipped".
 */
#include "harness.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_TESTS 1024

static struct { const char *name; moe_test_fn fn; } tests[MAX_TESTS];
static int n_tests;
static int cur_failed, cur_skipped;
static char cur_msg[2048];
static uint64_t seed;

void moe_test_register(const char *name, moe_test_fn fn) {
    if (n_tests < MAX_TESTS) {
        tests[n_tests].name = name;
        tests[n_tests].fn = fn;
        n_tests++;
    }
}

void moe_test_fail(const char *file, int line, const char *fmt, ...) {
    if (cur_failed) return;
    cur_failed = 1;
    int k = snprintf(cur_msg, sizeof cur_msg, "%s:%d: ", file, line);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cur_msg + k, sizeof cur_msg - (size_t)k, fmt, ap);
    va_end(ap);
}

void moe_test_skip(const char *fmt, ...) {
    cur_skipped = 1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cur_msg, sizeof cur_msg, fmt, ap);
    va_end(ap);
}

void moe_test_note(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cur_msg, sizeof cur_msg, fmt, ap);
    va_end(ap);
}

int moe_test_failed(void) { return cur_failed; }
uint64_t moe_test_seed(void) { return seed; }

void moe_rng_seed(moe_rng *r, uint64_t s) { r->s = s; r->have = 0; }

uint64_t moe_rng_u64(moe_rng *r) {
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double moe_rng_uniform(moe_rng *r) { return (double)(moe_rng_u64(r) >> 11) * (1.0 / 9007199254740992.0); }

double moe_rng_normal(moe_rng *r) {
    if (r->have) { r->have = 0; return r->spare; }
    double u1 = moe_rng_uniform(r), u2 = moe_rng_uniform(r);
    if (u1 < 1e-300) u1 = 1e-300;
    double m = sqrt(-2.0 * log(u1));
    r->spare = m * sin(6.283185307179586 * u2);
    r->have = 1;
    return m * cos(6.283185307179586 * u2);
}

static int cmp_name(const void *a, const void *b) {
    return strcmp(((const char *const *)a)[0], ((const char *const *)b)[0]);
}

int main(int argc, char **argv) {
    const char *env = getenv("MOE_TEST_SEED");
    seed = env && *env ? strtoull(env, NULL, 10) : (uint64_t)time(NULL) ^ ((uint64_t)clock() << 32);
    printf("moe-tests: libmoe %s, seed %llu (MOE_TEST_SEED=%llu repeats this run)\n", moe_version(),
           (unsigned long long)seed, (unsigned long long)seed);
    qsort(tests, (size_t)n_tests, sizeof tests[0], cmp_name);
    int passed = 0, failed = 0, skipped = 0;
    for (int i = 0; i < n_tests; i++) {
        if (argc > 1 && !strstr(tests[i].name, argv[1])) continue;
        cur_failed = cur_skipped = 0;
        cur_msg[0] = 0;
        clock_t t0 = clock();
        tests[i].fn();
        double ms = 1e3 * (double)(clock() - t0) / CLOCKS_PER_SEC;
        if (cur_failed) {
            failed++;
            printf("FAIL %s (%.0f ms): %s\n", tests[i].name, ms, cur_msg);
        } else if (cur_skipped) {
            skipped++;
            printf("skip %s: %s\n", tests[i].name, cur_msg);
        } else {
            passed++;
            printf("ok   %s (%.0f ms)%s%s\n", tests[i].name, ms, cur_msg[0] ? ": " : "", cur_msg);
        }
        fflush(stdout);
    }
    printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    return failed ? 1 : 0;
}
