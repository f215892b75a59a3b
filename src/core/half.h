/*
 * f16 and bf16 <-> f32 conversions for host code, round-to-nearest-even,
 * NaN kept NaN. Shared by every CPU-side part of the library and the tests.
 */
#ifndef MOE_HALF_H
#define MOE_HALF_H

#include <stdint.h>
#include <string.h>

static inline float moe__u32_as_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline uint32_t moe__f32_as_u32(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

static inline float moe__bf16_to_f32(uint16_t h) { return moe__u32_as_f32((uint32_t)h << 16); }

static inline uint16_t moe__f32_to_bf16(float f) {
    uint32_t u = moe__f32_as_u32(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static inline float moe__f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    uint32_t u;
    if (exp == 0x1f) {
        u = sign | 0x7f800000u | (man << 13);
    } else if (exp == 0) {
        if (man == 0) {
            u = sign;
        } else { /* subnormal: normalise */
            int e = -1;
            do { man <<= 1; e++; } while (!(man & 0x400u));
            u = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ffu) << 13);
        }
    } else {
        u = sign | ((exp + 112u) << 23) | (man << 13);
    }
    return moe__u32_as_f32(u);
}

static inline uint16_t moe__f32_to_f16(float f) {
    uint32_t u = moe__f32_as_u32(f);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu)); /* NaN */
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);                       /* Inf/overflow */
    if (a < 0x38800000u) {                                                          /* subnormal or 0 */
        if (a < 0x33000000u) return (uint16_t)sign;                                 /* < half the min subnormal */
        uint32_t e = a >> 23, m = (a & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126 - e; /* 14 + (112 - (e - 127)) ... bits to drop */
        uint32_t r = m >> (shift - 0);
        uint32_t rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        /* m * 2^(e-150) / 2^-24 = m >> (126 - e) */
        if (rem > half || (rem == half && (r & 1u))) r++;
        return (uint16_t)(sign | r);
    }
    uint32_t r = a - 0x38000000u; /* rebias exponent 127 -> 15 */
    uint32_t h = r >> 13, rem = r & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;
    return (uint16_t)(sign | h);
}

#endif
