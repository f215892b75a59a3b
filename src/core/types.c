/*
 * Type traits: GGUF's block sizes and bytes per block for each moe_type.
 * src/quant/blocks.h asserts that its structs agree with these numbers.
 */
#include "core.h"

typedef struct { moe_type t; const char *name; int64_t block, bytes; } trait;

static const trait traits[] = {
    {MOE_TYPE_F32, "f32", 1, 4},       {MOE_TYPE_F16, "f16", 1, 2},
    {MOE_TYPE_BF16, "bf16", 1, 2},     {MOE_TYPE_Q4_0, "q4_0", 32, 18},
    {MOE_TYPE_Q8_0, "q8_0", 32, 34},   {MOE_TYPE_Q2_K, "q2_K", 256, 84},
    {MOE_TYPE_Q3_K, "q3_K", 256, 110}, {MOE_TYPE_Q4_K, "q4_K", 256, 144},
    {MOE_TYPE_Q5_K, "q5_K", 256, 176}, {MOE_TYPE_Q6_K, "q6_K", 256, 210},
    {MOE_TYPE_MXFP4, "mxfp4", 32, 17},
};

static const trait *find(moe_type t) {
    for (size_t i = 0; i < sizeof traits / sizeof traits[0]; i++)
        if (traits[i].t == t) return &traits[i];
    return 0;
}

int64_t moe_type_block_size(moe_type t) { const trait *r = find(t); return r ? r->block : 0; }
int64_t moe_type_block_bytes(moe_type t) { const trait *r = find(t); return r ? r->bytes : 0; }
const char *moe_type_name(moe_type t) { const trait *r = find(t); return r ? r->name : "unknown"; }

int64_t moe_type_row_bytes(moe_type t, int64_t n) {
    const trait *r = find(t);
    if (!r || n < 0 || n % r->block) return -1;
    int64_t b;
    if (!moe__mul_ok(n / r->block, r->bytes, &b)) return -1;
    return b;
}

int moe_act_is_gated(moe_act a) {
    return a == MOE_ACT_SWIGLU || a == MOE_ACT_GEGLU_TANH || a == MOE_ACT_GEGLU_ERF ||
           a == MOE_ACT_SWIGLU_OAI;
}

const char *moe_act_name(moe_act a) {
    switch (a) {
    case MOE_ACT_SWIGLU: return "swiglu";
    case MOE_ACT_GEGLU_TANH: return "geglu_tanh";
    case MOE_ACT_GEGLU_ERF: return "geglu_erf";
    case MOE_ACT_SWIGLU_OAI: return "swiglu_oai";
    case MOE_ACT_SILU: return "silu";
    case MOE_ACT_GELU: return "gelu";
    case MOE_ACT_RELU2: return "relu2";
    }
    return "unknown";
}
