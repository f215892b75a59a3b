/*
 * The C test runner's harness: tests register themselves with TEST(name),
 * check with CHECK / CHECK_STATUS, and may SKIP with a reason. The runner
 * (tests/harness.c) ends with "N passed, N failed, N skipped".
 */
#ifndef MOE_TEST_HARNESS_H
#define MOE_TEST_HARNESS_H

#include "moe.h"

#include <stdint.h>
#include <stdio.h>

typedef void (*moe_test_fn)(void);
void moe_test_register(const char *name, moe_test_fn fn);
void moe_test_fail(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void moe_test_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A note printed after a passing test's name (measurements, counts). */
void moe_test_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* 1 once the running test has failed (so helpers can stop early). */
int moe_test_failed(void);
/* The seed of this run: MOE_TEST_SEED, or fresh from the clock. */
uint64_t moe_test_seed(void);

#define TEST(name)                                                                          \
    static void test_##name(void);                                                          \
    __attribute__((constructor)) static void register_##name(void) {                       \
        moe_test_register(#name, test_##name);                                              \
    }                                                                                       \
    static void test_##name(void)

#define CHECK(cond)                                                                         \
    do {                                                                                    \
        if (!(cond)) {                                                                      \
            moe_test_fail(__FILE__, __LINE__, "CHECK(%s)", #cond);                          \
            return;                                                                         \
        }                                                                                   \
    } while (0)

#define CHECK_MSG(cond, ...)                                                                \
    do {                                                                                    \
        if (!(cond)) {                                                                      \
            moe_test_fail(__FILE__, __LINE__, __VA_ARGS__);                                 \
            return;                                                                         \
        }                                                                                   \
    } while (0)

/* Checks that expr returns status want. */
#define CHECK_STATUS(expr, want)                                                            \
    do {                                                                                    \
        moe_status got_ = (expr);                                                           \
        if (got_ != (want)) {                                                               \
            moe_test_fail(__FILE__, __LINE__, "%s returned %s, expected %s", #expr,         \
                          moe_status_name(got_), moe_status_name(want));                    \
            return;                                                                         \
        }                                                                                   \
    } while (0)

#define SKIP(...)                                                                           \
    do {                                                                                    \
        moe_test_skip(__VA_ARGS__);                                                         \
        return;                                                                             \
    } while (0)

/* ---- deterministic random numbers (splitmix64 + Box-Muller) ---- */
typedef struct { uint64_t s; int have; double spare; } moe_rng;
void moe_rng_seed(moe_rng *r, uint64_t seed);
uint64_t moe_rng_u64(moe_rng *r);
double moe_rng_uniform(moe_rng *r); /* [0, 1) */
double moe_rng_normal(moe_rng *r);

#endif
