/*
 * The backend "cuda-jit": the cuda-sm90 forward (layer.cu: routing, scatter,
 * combine) with its two grouped GEMMs compiled at layer creation by NVRTC,
 * specialised to the layer: D, I, E, K, dtype, activation, biases and cluster
 * shape are compile-time constants of the same kernel code as cuda-sm90
 * (gemm_sm90.cuh, embedded at build time by cmake/embed_jit.cmake), so the
 * compiler knows the k-loop trip counts, the row strides and which bounds and
 * bias tests can go. Must match the reference like cuda-sm90; with the same
 * rounding (no fast math), it matches cuda-sm90 bit for bit.
 *
 * The program is compiled once per layer shape and cached on disk (jit.c):
 * both kernels a forward can launch are in it and are loaded at init, so no
 * compile happens during a forward. Only the sm_90a kernel is specialised, so
 * the backend runs on compute capability 9.0 only. Chosen before cuda-sm90
 * (src/cuda/cuda_backends.h).
 */
#include "common.cuh"
#include "cuda_backends.h"
#include "jit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* cmake/embed_jit.cmake: the device headers, #include lines blanked */
extern "C" const char moe__jit_src_gemm_common_cuh[], moe__jit_src_wgmma_gen_cuh[], moe__jit_src_sm90_sync_cuh[],
    moe__jit_src_gemm_sm90_cuh[];


extern "C" char *moe__jit_sm90_source(const moe__jit_spec *sp) {
    char pre[2048];
    /* the moe_act values come from moe.h as compiled into this library */
    int np = snprintf(pre, sizeof pre,
                      "/* libmoe %s cuda-jit: sm_90a grouped GEMMs of one layer */\n"
                      "#define MOE_JIT 1\n"
                      "#define MOE_JIT_D %lld\n#define MOE_JIT_I %lld\n#define MOE_JIT_E %lld\n#define MOE_JIT_K %lld\n"
                      "#define MOE_JIT_ACT %d\n#define MOE_JIT_T %s\n"
                      "#define MOE_JIT_BIAS1 %d\n#define MOE_JIT_BIAS2 %d\n#define MOE_JIT_CM %d\n#define MOE_JIT_CN %d\n"
                      "#define MOE_JIT_C21 %d\n#define MOE_JIT_BN2 %d\n#define MOE_JIT_BN1 %d\n"
                      "enum { MOE_ACT_SWIGLU = %d, MOE_ACT_GEGLU_TANH = %d, MOE_ACT_GEGLU_ERF = %d, "
                      "MOE_ACT_SWIGLU_OAI = %d, MOE_ACT_SILU = %d, MOE_ACT_GELU = %d, MOE_ACT_RELU2 = %d };\n",
                      moe_version(), (long long)sp->D, (long long)sp->I, (long long)sp->E, (long long)sp->K, sp->act,
                      sp->dtype == MOE_TYPE_BF16 ? "__nv_bfloat16" : "__half", sp->bias1, sp->bias2, sp->cm, sp->cn,
                      sp->cm == 1 && sp->cn == 1 && sp->c21, sp->cm == 1 && sp->cn == 1 && sp->bn2 == 240 ? 240 : 256,
                      sp->cm == 1 && sp->cn == 1 && sp->bn1 == 240 ? 240 : 256,
                      MOE_ACT_SWIGLU, MOE_ACT_GEGLU_TANH, MOE_ACT_GEGLU_ERF, MOE_ACT_SWIGLU_OAI, MOE_ACT_SILU,
                      MOE_ACT_GELU, MOE_ACT_RELU2);
    if (np < 0 || np >= (int)sizeof pre) return NULL;
    static const char stub[] =
        "\n/* the kernels the host looks up by name: both tiles of the table (the M tile is\n"
        " * picked per forward from T), the 64-row one only without clusters, and with\n"
        " * MOE_JIT_C21 the 2 x 1 cluster kernels for the T the host picks them at; without\n"
        " * clusters GEMM 2 in n-tiles of MOE_JIT_BN2 and GEMM 1's BM 128 kernel of MOE_JIT_BN1 */\n"
        "#define MOE_JIT_KERNEL(name, act, cm, cn, bm, bn)                                                 \\\n"
        "    extern \"C\" __global__ void __launch_bounds__(NTHREADS, 1)                                   \\\n"
        "        name(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB0,   \\\n"
        "             const __grid_constant__ CUtensorMap tmB1, const __grid_constant__ CUtensorMap tmO,    \\\n"
        "             const moe_cuda_gemm g) {                                                              \\\n"
        "        gemm_sm90_body<act, MOE_JIT_T, cm, cn, bm, bn>(tmA, tmB0, tmB1, tmO, g);                  \\\n"
        "    }\n"
        "MOE_JIT_KERNEL(moe_jit_gemm1, MOE_JIT_ACT, MOE_JIT_CM, MOE_JIT_CN, 128, MOE_JIT_BN1)\n"
        "MOE_JIT_KERNEL(moe_jit_gemm2, -1, MOE_JIT_CM, MOE_JIT_CN, 128, MOE_JIT_BN2)\n"
        "#if MOE_JIT_CM == 1 && MOE_JIT_CN == 1\n"
        "MOE_JIT_KERNEL(moe_jit_gemm1_m64, MOE_JIT_ACT, 1, 1, 64, 256)\n"
        "MOE_JIT_KERNEL(moe_jit_gemm2_m64, -1, 1, 1, 64, MOE_JIT_BN2)\n"
        "#endif\n"
        "#if MOE_JIT_C21\n"
        "MOE_JIT_KERNEL(moe_jit_gemm1_c21, MOE_JIT_ACT, 2, 1, 128, 256)\n"
        "MOE_JIT_KERNEL(moe_jit_gemm2_c21, -1, 2, 1, 128, 256)\n"
        "#endif\n";
    const char *parts[] = {pre, moe__jit_src_gemm_common_cuh, moe__jit_src_wgmma_gen_cuh, moe__jit_src_sm90_sync_cuh,
                           moe__jit_src_gemm_sm90_cuh,
                           stub};
    size_t len = 1;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) len += strlen(parts[i]) + 1;
    char *src = (char *)malloc(len), *p = src;
    if (!src) return NULL;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        size_t l = strlen(parts[i]);
        memcpy(p, parts[i], l);
        p += l;
        *p++ = '\n';
    }
    *p = 0;
    return src;
}

extern "C" moe_status moe__jit_sm90_compile(const moe__jit_spec *sp, moe__jit_result *res, char *err, size_t err_n) {
    char *src = moe__jit_sm90_source(sp);
    if (!src) {
        memset(res, 0, sizeof *res);
        snprintf(err, err_n, "out of memory building the cuda-jit program");
        return MOE_ERR_OUT_OF_MEMORY;
    }
    moe_status s = moe__jit_compile("moe_sm90", src, "90a", NULL, 0, res, err, err_n);
    free(src);
    return s;
}

/* ------------------------------------------------------------------------ */
/* Backend callbacks                                                         */
/* ------------------------------------------------------------------------ */

static int jit_probe(moe_ctx *ctx, char *why, size_t n) {
    int ma, mi;
    if (!moe__cuda_probe_device(ctx, why, n, &ma, &mi)) return 0;
    if (ma != 9 || mi != 0) {
        snprintf(why, n,
                 "device %d has compute capability %d.%d; cuda-jit specialises only the sm_90a (wgmma) kernel, which "
                 "needs 9.0 (Hopper)",
                 ctx->p.cuda_device, ma, mi);
        return 0;
    }
    return moe__jit_available(why, n);
}

static moe_status jit_init(moe_layer *L) {
    moe_status st = moe__cuda_init_sm90(L); /* tensor maps, f32 biases: as cuda-sm90 */
    if (st) return st;
    moe_cuda_impl *im = (moe_cuda_impl *)L->impl;
    moe_cuda_jit *j = (moe_cuda_jit *)calloc(1, sizeof *j);
    if (!j) {
        moe__cuda_fini(L);
        return moe__layer_error(L, MOE_ERR_OUT_OF_MEMORY, "out of memory");
    }
    im->jit = j;
    const moe_layer_desc *d = &L->desc;
    moe__jit_spec sp;
    memset(&sp, 0, sizeof sp);
    sp.D = d->D;
    sp.I = d->I;
    sp.E = d->E;
    sp.K = d->K;
    sp.act = d->act;
    sp.gated = L->gated;
    sp.dtype = d->act_type;
    sp.bias1 = ((L->gated ? im->fb_gate : im->fb_up) ? 1 : 0) | (im->fb_up ? 2 : 0);
    sp.bias2 = im->fb_down ? 1 : 0;
    /* MOE_SM90_CM / CN as cuda-sm90 reads them; unset, also the default 2 x 1
     * clusters for large T (layer.cu moe__cuda_sm90_shape) */
    const int env_set = moe__cuda_sm90_env_cluster(&j->cm, &j->cn);
    sp.cm = j->cm;
    sp.cn = j->cn;
    sp.c21 = j->c21 = !env_set && moe__cuda_sm90_c21_possible(L);
    sp.bn2 = im->bn2; /* used by the 1 x 1 kernels only (the forward sets g.bn alike) */
    sp.bn1 = im->bn1; /* likewise: GEMM 1's BM 128 kernel without clusters */
    moe__jit_result r;
    char err[1024] = "";
    st = moe__jit_sm90_compile(&sp, &r, err, sizeof err);
    if (st) {
        moe__cuda_fini(L);
        return moe__layer_error(L, st, "%s", err);
    }
    j->cache_hit = r.cache_hit;
    j->ms = r.ms;
    snprintf(j->cache_path, sizeof j->cache_path, "%s", r.cache_path);

    /* load into the device's primary context, the one the runtime launches in */
    int prev = -1;
    const char *fail = NULL;
    char why[256] = "";
    CUresult cr = CUDA_SUCCESS;
    cudaError_t ce = cudaGetDevice(&prev);
    if (ce == cudaSuccess && prev != im->device) ce = cudaSetDevice(im->device);
    if (ce == cudaSuccess) ce = cudaFree(0); /* makes the primary context current on this thread */
    if (ce != cudaSuccess) fail = "cudaSetDevice";
    const moe_cuda_driver *cu = moe__cuda_driver();
    if (!fail && !cu) fail = "cudaGetDriverEntryPointByVersion(cuModuleLoadData, cuLaunchKernelEx...)";
    if (!fail && (cr = cu->module_load_data(&j->module, r.cubin)) != CUDA_SUCCESS) fail = "cuModuleLoadData";
    static const char *const names[6] = {"moe_jit_gemm1",     "moe_jit_gemm2",     "moe_jit_gemm1_m64",
                                         "moe_jit_gemm2_m64", "moe_jit_gemm1_c21", "moe_jit_gemm2_c21"};
    j->nfn = j->cm == 1 && j->cn == 1 ? 4 + 2 * j->c21 : 2;
    for (int i = 0; i < j->nfn && !fail; i++)
        if ((cr = cu->module_get_function(&j->fn[i], j->module, names[i])) != CUDA_SUCCESS) {
            snprintf(why, sizeof why, "cuModuleGetFunction(%s)", names[i]);
            fail = why;
        }
    for (int i = 0; i < j->nfn && !fail; i++)
        if ((ce = moe__cuda_gemm_sm90_jit_prepare(j->fn[i], i < 2 ? j->cm : i < 4 ? 1 : 2, i < 2 ? j->cn : 1,
                                                  i == 2 || i == 3 ? 64 : 128, im->sm_count, &j->max_clusters[i],
                                                  why, sizeof why)) != cudaSuccess)
            fail = why;
    if (prev >= 0 && prev != im->device) cudaSetDevice(prev);
    free(r.cubin);
    if (fail) {
        const char *name = NULL;
        if (cr != CUDA_SUCCESS) cu->get_error_name(cr, &name);
        moe__cuda_fini(L);
        return moe__layer_error(L, MOE_ERR_CUDA, "cuda-jit: %s failed (%s)", fail,
                                cr != CUDA_SUCCESS ? (name ? name : "CUresult") : ce ? cudaGetErrorString(ce) : "");
    }
    moe__log(L->ctx, MOE_LOG_INFO, "cuda-jit: kernels for D=%lld I=%lld E=%lld K=%lld %s %s: %s in %.1f ms (%s)",
             (long long)d->D, (long long)d->I, (long long)d->E, (long long)d->K, moe_act_name(d->act),
             moe_type_name(d->act_type), j->cache_hit ? "read from the cache" : "compiled", j->ms,
             j->cache_path[0] ? j->cache_path : "no cache");
    return MOE_OK;
}

static void jit_describe(const moe_layer *L, int64_t T, char *buf, size_t n) {
    const moe_cuda_impl *im = (const moe_cuda_impl *)L->impl;
    const moe_cuda_jit *j = im->jit;
    const moe_layer_desc *d = &L->desc;
    int cm, cn;
    const int gather = moe__cuda_sm90_shape(L, T, &cm, &cn), bm = moe__cuda_sm90_bm(L, T, cm, cn);
    snprintf(buf, n,
             "cuda-jit: sm_90a kernels specialised to D=%lld I=%lld E=%lld K=%lld act=%s %s%s, tiles %sBM 128 (cluster "
             "%dx%d%s); at this T: %dx%dx64 (gate/up), %dx%dx64 (down) in %dx%d clusters, raster bands of %d%s, compiled "
             "in %.1f ms "
             "(cache %s, %s); T = %lld, device %d (%d SMs): route count/scan/scatter%s, TMA + wgmma warp-specialised "
             "persistent GEMMs, deterministic combine",
             (long long)d->D, (long long)d->I, (long long)d->E, (long long)d->K, moe_act_name(d->act),
             moe_type_name(d->act_type), im->fb_up || im->fb_down ? " with biases" : "",
             j->cm == 1 && j->cn == 1 ? "BM 64 and " : "", j->cm, j->cn, j->c21 ? ", and 2x1 for large T" : "",
             bm, moe__cuda_sm90_tile_n(L, 1, cm, cn, bm), bm, moe__cuda_sm90_tile_n(L, 2, cm, cn, bm), cm,
             cn, moe__cuda_sm90_raster(L, T, bm, cm),
             moe__cuda_sm90_dynamic(L, cm, cn, gather, bm) ? ", units in dynamic order" : "", j->ms,
             j->cache_hit ? "hit" : "miss",
             j->cache_path[0] ? j->cache_path : "no cache dir", (long long)T, im->device, im->sm_count,
             gather ? " (GEMM 1 gathers x's rows)" : " + permuted copy of x");
}

extern "C" {
const moe__backend moe__backend_cuda_jit = {
    "cuda-jit",       MOE_DEVICE_CUDA,           jit_probe,          moe__cuda_supports_sm90, jit_init,
    moe__cuda_fini,   moe__cuda_workspace_sm90,  moe__cuda_forward,  jit_describe,            NULL,
};
}
