/*
 * The reference implementation: the oracle every backend is tested against.
 * Scalar, f64 accumulation, one (token, slot) pair at a time, straight from
 * the formula in moe.h. Never optimised.
 */
#ifndef MOE_REF_H
#define MOE_REF_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const moe__backend moe__backend_ref;

/* The activation of moe.h in double: gate g (ignored when not gated), up u. */
double moe__ref_act(moe_act act, double g, double u, double alpha, double limit);

#ifdef __cplusplus
}
#endif

#endif
