/*
 * The shared case table: every backend and every forced kernel runs these
 * cases and is compared with the reference backend on the same weights
 * (normalised L2 error under a per-case limit, NaN/Inf agreement, guard bytes
 * untouched, a poisoned output fully overwritten, two runs bitwise equal).
 */
#ifndef MOE_TEST_CASES_H
#define MOE_TEST_CASES_H

#include "moe.h"

#include <stddef.h>

typedef enum moe_case_routing {
    ROUTE_RANDOM = 0,     /* K distinct random experts per token */
    ROUTE_SKIP_LAST = 1,  /* expert E-1 receives no token */
    ROUTE_ALL_SAME = 2,   /* every token picks experts 0..K-1: all tokens on the same experts */
    ROUTE_DUPLICATE = 3,  /* slot 1 repeats slot 0's expert (valid: each pair counts) */
} moe_case_routing;

typedef struct moe_case {
    const char *name;
    int64_t T, E, D, I, K;
    moe_act act;
    moe_gate_up_layout layout;
    int bias;             /* gate/up and down biases */
    moe_type wtype;       /* weight type of gate, up, down */
    moe_type act_type;    /* x and out */
    moe_case_routing routing;
    int transposed;       /* weights stored [E, C, N] (torch._grouped_mm layout) */
    int nan_input;        /* x[0][0] = NaN: token 0's output is NaN, no other */
} moe_case;

extern const moe_case moe_cases[];
extern const int moe_n_cases;

typedef enum { MOE_CASE_PASS = 0, MOE_CASE_FAIL = 1, MOE_CASE_SKIP = 2 } moe_case_result;

/*
 * Builds case c with fresh random data from seed, runs it on ctx with the
 * backend forced to `backend` (NULL = automatic), and compares with the
 * reference. SKIP when the backend refuses the layer (MOE_ERR_BACKEND_UNAVAILABLE
 * or MOE_ERR_UNSUPPORTED); msg says why or what failed. On success *err_out
 * (may be NULL) is the normalised error.
 */
moe_case_result moe_case_run(const moe_case *c, moe_ctx *ctx, const char *backend, unsigned long long seed,
                             double *err_out, char *msg, size_t n);
/* The same with down in type down_type (llama.cpp's Q4_K_M, for one, puts some
 * layers' down in Q6_K beside Q4_K gate/up) */
moe_case_result moe_case_run_down(const moe_case *c, moe_type down_type, moe_ctx *ctx, const char *backend,
                                  unsigned long long seed, double *err_out, char *msg, size_t n);

/* The error limit for case c (depends on weight and activation types). */
double moe_case_tolerance(const moe_case *c);

/* Runs every case of the table on ctx/backend; reports failures through the
 * harness and returns the number of (passed, skipped) cases. */
void moe_cases_run_all(moe_ctx *ctx, const char *backend, int *passed, int *skipped);

#endif
