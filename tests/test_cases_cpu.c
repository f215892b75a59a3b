/*
 * The shared case table on the CPU: the automatically chosen CPU backend and
 * every CPU backend forced in turn, each against the reference.
 */
#include "cases.h"
#include "harness.h"

#include <stdlib.h>

static void run_on(const char *backend, int n_threads) {
    moe_ctx_params p = moe_ctx_default_params();
    p.n_threads = n_threads;
    moe_ctx *ctx;
    CHECK_STATUS(moe_ctx_create(&p, &ctx), MOE_OK);
    int passed, skipped;
    moe_cases_run_all(ctx, backend, &passed, &skipped);
    moe_ctx_free(ctx);
    if (!moe_test_failed() && passed == 0) moe_test_fail(__FILE__, __LINE__, "no case ran (%d skipped)", skipped);
}

TEST(cases_cpu_auto) { run_on(NULL, 0); }
