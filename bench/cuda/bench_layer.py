#!/usr/bin/env python3
"""
Whole-layer MoE forward on the GPU: libmoe (ctypes, cuda-sm90 and cuda-sm80)
against the torchtitan-style PyTorch pipeline (argsort permute,
torch._grouped_mm gate/up, activation, torch._grouped_mm down, weighted
index_add), in the same run, on the same bf16 weights and routing.

CUDA events around each forward, L2 flushed (256 MB write) before each
repeat, median of the repeats. TFLOP/s counts 6*T*K*D*I. Roofline =
max(FLOPs / measured bf16 matmul rate, bytes of experts touched + x + out /
measured copy bandwidth). Routing + combine share comes from the profiler
(kernels k_count, k_scan, k_scatter, k_combine).

    python3 bench/cuda/bench_layer.py --lib build-gpu/libmoe.so --out bench/cuda/results.json
"""
import argparse, ctypes as C, json, math, os, statistics, subprocess, sys, time

import torch
import torch.nn.functional as F

PRESETS = {  # D, I, E, K, gpt-oss style (biases, clamped swiglu, interleaved)
    "qwen3-30b-a3b": (2048, 768, 128, 8, False),
    "mixtral-8x7b": (4096, 14336, 8, 2, False),
    "deepseek-v3": (7168, 2048, 256, 8, False),
    "gpt-oss-20b": (2880, 2880, 32, 4, True),
    "gpt-oss-120b": (2880, 2880, 128, 4, True),
}

# ---- libmoe through ctypes ----
class Params(C.Structure):
    _fields_ = [("device", C.c_int), ("cuda_device", C.c_int), ("cuda_stream", C.c_void_p), ("n_threads", C.c_int),
                ("log", C.c_void_p), ("log_user", C.c_void_p), ("log_level", C.c_int)]

class Tensor(C.Structure):
    _fields_ = [("data", C.c_void_p), ("type", C.c_int), ("mem", C.c_int), ("stride_e", C.c_int64),
                ("stride_n", C.c_int64), ("stride_c", C.c_int64)]

class Desc(C.Structure):
    _fields_ = [("E", C.c_int64), ("D", C.c_int64), ("I", C.c_int64), ("K", C.c_int64), ("act", C.c_int),
                ("alpha", C.c_float), ("limit", C.c_float), ("layout", C.c_int), ("gate", Tensor), ("up", Tensor),
                ("gate_up", Tensor), ("down", Tensor), ("gate_bias", Tensor), ("up_bias", Tensor),
                ("gate_up_bias", Tensor), ("down_bias", Tensor), ("act_type", C.c_int), ("backend", C.c_char_p)]

BF16, DEV = 30, 1
ACT_SWIGLU, ACT_OAI = 0, 3
CONCAT, INTERLEAVED = 1, 2


class Lib:
    def __init__(self, path):
        L = C.CDLL(path)
        L.moe_ctx_default_params.restype = Params
        L.moe_layer_desc_default.restype = Desc
        L.moe_ctx_create.argtypes = [C.POINTER(Params), C.POINTER(C.c_void_p)]
        L.moe_ctx_last_error.restype = C.c_char_p
        L.moe_ctx_last_error.argtypes = [C.c_void_p]
        L.moe_layer_last_error.restype = C.c_char_p
        L.moe_layer_last_error.argtypes = [C.c_void_p]
        L.moe_layer_create.argtypes = [C.c_void_p, C.POINTER(Desc), C.POINTER(C.c_void_p)]
        L.moe_layer_free.argtypes = [C.c_void_p]
        L.moe_layer_workspace_size.argtypes = [C.c_void_p, C.c_int64, C.POINTER(C.c_size_t)]
        L.moe_layer_forward.argtypes = [C.c_void_p, C.c_int64, C.c_void_p, C.c_void_p, C.c_void_p, C.c_void_p,
                                        C.c_void_p, C.c_size_t]
        L.moe_layer_describe.argtypes = [C.c_void_p, C.c_int64, C.c_char_p, C.c_size_t]
        self.L = L
        p = L.moe_ctx_default_params()
        p.device = 1
        p.cuda_device = torch.cuda.current_device()
        p.cuda_stream = torch.cuda.current_stream().cuda_stream
        self.ctx = C.c_void_p()
        assert L.moe_ctx_create(C.byref(p), C.byref(self.ctx)) == 0

    def layer(self, backend, D, I, E, K, oss, gate_up, down, gu_bias, d_bias):
        d = self.L.moe_layer_desc_default()
        d.E, d.D, d.I, d.K = E, D, I, K
        d.act = ACT_OAI if oss else ACT_SWIGLU
        d.layout = INTERLEAVED if oss else CONCAT
        d.act_type = BF16
        d.gate_up = Tensor(gate_up.data_ptr(), BF16, DEV, 0, 0, 0)
        d.down = Tensor(down.data_ptr(), BF16, DEV, 0, 0, 0)
        if oss:
            d.gate_up_bias = Tensor(gu_bias.data_ptr(), BF16, DEV, 0, 0, 0)
            d.down_bias = Tensor(d_bias.data_ptr(), BF16, DEV, 0, 0, 0)
        d.backend = backend.encode()
        h = C.c_void_p()
        s = self.L.moe_layer_create(self.ctx, C.byref(d), C.byref(h))
        if s:
            raise RuntimeError(self.L.moe_ctx_last_error(self.ctx).decode())
        return h


def torch_pipeline(x, ids, w, gate_up_t, down_t, gu_bias, d_bias, oss, E, I):
    """torchtitan-style: gate_up_t [E, D, 2I], down_t [E, I, D] (views of libmoe's tensors)."""
    T, K = ids.shape
    flat = ids.view(-1)
    order = torch.argsort(flat, stable=True)
    counts = torch.bincount(flat, minlength=E)
    offs = torch.cumsum(counts, 0, dtype=torch.int32)
    tok = order // K
    xs = x[tok]
    h = torch._grouped_mm(xs, gate_up_t, offs=offs)
    if oss:
        eid = flat[order]
        h = h + gu_bias[eid]
        g, u = h[:, 0::2], h[:, 1::2]
        g = g.clamp(max=7.0)
        u = u.clamp(-7.0, 7.0)
        a = g * torch.sigmoid(1.702 * g) * (u + 1)
    else:
        g, u = h[:, :I], h[:, I:]
        a = F.silu(g) * u
    y = torch._grouped_mm(a, down_t, offs=offs)
    if oss:
        y = y + d_bias[flat[order]]
    y = y * w.view(-1)[order, None].to(y.dtype)
    out = torch.zeros_like(x)
    out.index_add_(0, tok, y)
    return out


def bench(fn, reps, flush):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        flush.zero_()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b) * 1e3)
    return statistics.median(ts), min(ts), max(ts)


def ceilings():
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    for _ in range(10):
        a @ b
    e1.record()
    e1.synchronize()
    tf = 10 * 2 * 8192 ** 3 / (e0.elapsed_time(e1) * 1e-3) / 1e12
    src = torch.empty(2 << 30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    for _ in range(2):
        dst.copy_(src)
    torch.cuda.synchronize()
    e0.record()
    for _ in range(5):
        dst.copy_(src)
    e1.record()
    e1.synchronize()
    bw = 5 * 2 * src.numel() / (e0.elapsed_time(e1) * 1e-3) / 1e12
    del a, b, src, dst
    return tf, bw


def kernel_share(fn):
    """Fraction of GPU kernel time in routing + combine, from the profiler, and the
    time of each kernel in us per forward (name -> us)."""
    from torch.profiler import profile, ProfilerActivity
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
    tot = small = 0.0
    per = {}
    for ev in prof.key_averages():
        t = getattr(ev, "device_time_total", None) or getattr(ev, "cuda_time_total", 0)
        tot += t
        per[ev.key[:60]] = t / 3
        if any(k in ev.key for k in ("k_count", "k_scan", "k_scatter", "k_place", "k_copy_rows", "k_combine", "Memset")):
            small += t
    if os.environ.get("BENCH_BREAKDOWN"):
        print("    kernels (us per forward): " + ", ".join(f"{k.split('(')[0]} {v:.0f}" for k, v in
                                                        sorted(per.items(), key=lambda kv: -kv[1]) if v > 0))
    return (small / tot if tot else float("nan")), {k.split("(")[0]: round(v, 1) for k, v in per.items() if v > 0}


ENV_KNOBS = ("MOE_SM90_BM", "MOE_SM90_TN", "MOE_SM90_QS_FOLD", "MOE_SM90_CM", "MOE_SM90_CN", "MOE_SM90_GATHER", "MOE_SM90_BN1", "MOE_SM90_BN2", "MOE_SM90_RASTER")


_ENV_SET = set()  # every variable an entry has set, cleared by the next call


def apply_env(entry):
    """Sets the environment an entry of --backends names (backend@K=V+K=V); clears the other knobs
    and whatever an earlier entry set (a variable no entry clears would leak into the next
    preset's layers, including its baseline's)."""
    for k in set(ENV_KNOBS) | _ENV_SET:
        os.environ.pop(k, None)
    _ENV_SET.clear()
    if "@" in entry:
        for kv in entry.split("@", 1)[1].split("+"):
            k, v = kv.split("=", 1)
            os.environ[k] = v
            _ENV_SET.add(k)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", default="build-gpu/libmoe.so")
    ap.add_argument("--out", default="bench/cuda/results.json")
    ap.add_argument("--presets", default=",".join(PRESETS))
    ap.add_argument("--tokens", default="512,4096,16384")
    ap.add_argument("--backends", default="cuda-sm90,cuda-sm80",
                    help="comma-separated; an entry may carry environment settings for its forwards, "
                         "e.g. cuda-jit@MOE_SM90_BM=64 (several joined by +)")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--sm90-variants", default="auto",
                    help="cluster shapes CMxCN for cuda-sm90 to time, e.g. auto,1x1,1x2,2x2 (MOE_SM90_CM/CN)")
    ap.add_argument("--routing", default="random", choices=("random", "balanced"),
                    help="random: top-k of softmax(random logits); balanced: token t takes experts (t K + k) mod E, "
                         "so every expert gets exactly T K / E rows where E divides T K (no partial m-tiles)")
    ap.add_argument("--probe", action="store_true", help="one forward per shape, nothing timed (for ncu)")
    ap.add_argument("--ab", type=int, default=0,
                    help="A/B mode: ROUNDS rounds per shape, the backends interleaved (order alternating), "
                         "each round a median of --reps; reports the paired ratios to the first backend")
    ap.add_argument("--base-lib", default=None,
                    help="A/B mode: also run each backend from these libraries (builds of other commits), "
                         "NAME=PATH,... (or one PATH, named base), as 'NAME:BACKEND', before --lib's: "
                         "the ratios are over the first")
    args = ap.parse_args()
    torch.manual_seed(0)
    lib = Lib(args.lib)
    base_libs = []
    if args.base_lib and args.ab:
        for i, item in enumerate(args.base_lib.split(",")):
            nm, path = item.split("=", 1) if "=" in item else ("base" if i == 0 else f"base{i}", item)
            base_libs.append((nm, Lib(path)))
    gpu = torch.cuda.get_device_name()
    try:
        drv = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True).stdout.strip()
    except Exception:
        drv = "?"
    peak_tf, peak_bw = ceilings() if not args.probe else (1.0, 1.0)
    print(f"# {gpu}, driver {drv}, torch {torch.__version__}: bf16 matmul {peak_tf:.0f} TFLOP/s, copy {peak_bw:.2f} TB/s",
          flush=True)
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    rows = []
    for name in args.presets.split(","):
        D, I, E, K, oss = PRESETS[name]
        gate_up = (torch.randn(E, 2 * I, D, device="cuda", dtype=torch.bfloat16) * D ** -0.5)
        down = (torch.randn(E, D, I, device="cuda", dtype=torch.bfloat16) * I ** -0.5)
        gu_bias = (torch.randn(E, 2 * I, device="cuda", dtype=torch.bfloat16) * 0.1) if oss else None
        d_bias = (torch.randn(E, D, device="cuda", dtype=torch.bfloat16) * 0.1) if oss else None
        layers, owner = {}, {}
        for b in args.backends.split(","):
            for lb, lbl in [(bl, nm + ":" + b) for nm, bl in base_libs] + [(lib, b)]:
                apply_env(b)  # some knobs (MOE_SM90_GATHER) are read when the layer is created
                try:
                    layers[lbl] = lb.layer(b.split("@")[0], D, I, E, K, oss, gate_up, down, gu_bias, d_bias)
                    owner[lbl] = lb
                except RuntimeError as ex:
                    print(f"  {name} {lbl}: {ex}", flush=True)
                apply_env("")
        for T in [int(t) for t in args.tokens.split(",")]:
            x = torch.randn(T, D, device="cuda", dtype=torch.bfloat16)
            logits = torch.randn(T, E, device="cuda")
            tw, ids = torch.topk(torch.softmax(logits, -1), K, dim=-1)
            if args.routing == "balanced":
                ids = (torch.arange(T * K, device="cuda") % E).view(T, K)
            ids = ids.to(torch.int32).contiguous()
            tw = tw.float().contiguous()
            flops = 6.0 * T * K * D * I
            touched = int(torch.unique(ids).numel())
            cnt = torch.bincount(ids.reshape(-1).long(), minlength=E)
            mtiles = int(((cnt + 127) // 128).sum())  # BM 128 tiles; T K / (128 mtiles) of their rows are used
            print(f"  {name} T={T} {args.routing}: rows an expert {cnt.float().mean():.1f} +- {cnt.float().std():.1f}, "
                  f"{mtiles} m-tiles of 128 ({T * K / (128 * mtiles) * 100:.0f}% filled)", flush=True)
            nbytes = touched * 3 * D * I * 2 + 2 * T * D * 2
            roof_us = max(flops / (peak_tf * 1e12), nbytes / (peak_bw * 1e12)) * 1e6
            if args.ab:
                fwds = {}
                for b, h in layers.items():
                    L = owner[b].L
                    ws = C.c_size_t()
                    apply_env(b.split(":", 1)[-1])  # the size depends on the knobs (the permuted copy or not)
                    L.moe_layer_workspace_size(h, T, C.byref(ws))
                    wbuf = torch.empty(ws.value, dtype=torch.uint8, device="cuda")
                    out = torch.empty_like(x)
                    fwds[b] = (lambda h=h, wbuf=wbuf, out=out, n=ws.value, L=L: L.moe_layer_forward(
                        h, T, x.data_ptr(), ids.data_ptr(), tw.data_ptr(), out.data_ptr(), wbuf.data_ptr(), n), out)
                    apply_env(b.split(":", 1)[-1])
                    if fwds[b][0]() != 0:
                        print(f"  {name} T={T} {b}: forward failed", flush=True)
                        fwds.pop(b)
                torch.cuda.synchronize()
                names = list(fwds)
                if len(names) >= 2:
                    meds = {b: [] for b in names}
                    for r in range(args.ab):
                        for b in (names if r % 2 == 0 else names[::-1]):
                            apply_env(b.split(":", 1)[-1])
                            meds[b].append(bench(fwds[b][0], args.reps, flush)[0])
                    base = names[0]
                    for b in names[1:]:
                        o0, o1 = fwds[names[0]][1].float(), fwds[b][1].float()
                        same = torch.equal(o0, o1)
                        diff = ((o1 - o0).norm() / o0.norm()).item()
                        ratios = sorted(m / n for m, n in zip(meds[b], meds[base]))
                        r = dict(preset=name, T=T, ab=True, base=base, backend=b, rounds=args.ab, reps=args.reps,
                                 base_us=statistics.median(meds[base]), us=statistics.median(meds[b]),
                                 base_rounds=meds[base], rounds_us=meds[b], ratio_median=statistics.median(ratios),
                                 ratio_min=ratios[0], ratio_max=ratios[-1], outputs_equal=same, rel_diff=diff)
                        rows.append(r)
                        print(f"  AB {name:14s} T={T:6d} {base} {r['base_us']:9.1f} us  {b} {r['us']:9.1f} us  "
                              f"ratio median {r['ratio_median']:.3f} [{ratios[0]:.3f}, {ratios[-1]:.3f}] "
                              f"same output {same} (rel diff {diff:.1e})", flush=True)
                del fwds
                apply_env("")
                continue
            if args.probe:
                for b, h in layers.items():
                    apply_env(b)
                    ws = C.c_size_t()
                    lib.L.moe_layer_workspace_size(h, T, C.byref(ws))
                    wbuf = torch.empty(ws.value, dtype=torch.uint8, device="cuda")
                    out = torch.empty_like(x)
                    lib.L.moe_layer_forward(h, T, x.data_ptr(), ids.data_ptr(), tw.data_ptr(), out.data_ptr(),
                                            wbuf.data_ptr(), ws.value)
                    torch.cuda.synchronize()
                continue
            try:
                ref = torch_pipeline(x, ids.long(), tw, gate_up.transpose(1, 2), down.transpose(1, 2), gu_bias,
                                     d_bias, oss, E, I)
                t_torch = bench(lambda: torch_pipeline(x, ids.long(), tw, gate_up.transpose(1, 2),
                                                       down.transpose(1, 2), gu_bias, d_bias, oss, E, I),
                                args.reps, flush)[0]
            except Exception as ex:
                print(f"  torch pipeline failed: {ex}", flush=True)
                ref, t_torch = None, float("nan")
            runs = []
            for b, h in layers.items():
                for v in (args.sm90_variants.split(",") if b == "cuda-sm90" else ["auto"]):
                    runs.append((b, h, v))
            for b, h, v in runs:
                apply_env(b)
                label = b
                if v != "auto":  # CMxCN
                    os.environ["MOE_SM90_CM"], os.environ["MOE_SM90_CN"] = v.split("x")
                    label = f"{b}[{v}]"
                ws = C.c_size_t()
                lib.L.moe_layer_workspace_size(h, T, C.byref(ws))
                wbuf = torch.empty(ws.value, dtype=torch.uint8, device="cuda")
                out = torch.empty_like(x)
                fwd = lambda: lib.L.moe_layer_forward(h, T, x.data_ptr(), ids.data_ptr(), tw.data_ptr(),
                                                      out.data_ptr(), wbuf.data_ptr(), ws.value)
                s = fwd()
                torch.cuda.synchronize()
                if s:
                    print(f"  {name} T={T} {label}: forward failed: {lib.L.moe_layer_last_error(h).decode()}", flush=True)
                    continue
                err = ((out.float() - ref.float()).norm() / ref.float().norm()).item() if ref is not None else float("nan")
                med, lo, hi = bench(fwd, args.reps, flush)
                share, kernels = kernel_share(fwd)
                r = dict(preset=name, T=T, D=D, I=I, E=E, K=K, routing=args.routing, mtiles128=mtiles, backend=label, us=med, us_min=lo, us_max=hi,
                         tflops=flops / (med * 1e-6) / 1e12, roofline_us=roof_us, roofline_frac=roof_us / med,
                         torch_us=t_torch, speedup_vs_torch=t_torch / med, route_combine_share=share,
                         rel_err_vs_torch=err, kernels_us=kernels)
                rows.append(r)
                print(f"  {name:14s} T={T:6d} {label:16s} {med:9.1f} us {r['tflops']:6.1f} TF "
                      f"roof {r['roofline_frac']*100:5.1f}% torch {t_torch:9.1f} us x{r['speedup_vs_torch']:.2f} "
                      f"route+comb {share*100:4.1f}% err {err:.1e}", flush=True)
                del wbuf, out
            del x
        for b, h in layers.items():
            owner[b].L.moe_layer_free(h)
        del gate_up, down, gu_bias, d_bias
        torch.cuda.empty_cache()
    res = dict(gpu=gpu, driver=drv, torch=torch.__version__, peak_bf16_tflops=peak_tf, copy_tbps=peak_bw,
               command=" ".join([os.path.basename(sys.executable)] + sys.argv), rows=rows,
               date=time.strftime("%Y-%m-%d %H:%M:%S"))
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(res, f, indent=1)
    print(f"\n| preset | T | backend | us | TFLOP/s | roofline | torch us | vs torch | route+combine | err |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if r.get("ab"):
            print(f"| {r['preset']} | {r['T']} | {r['backend']} vs {r['base']} | {r['us']:.0f} vs {r['base_us']:.0f} | "
                  f"ratio {r['ratio_median']:.3f} [{r['ratio_min']:.3f}, {r['ratio_max']:.3f}] | | | | | |")
            continue
        print(f"| {r['preset']} | {r['T']} | {r['backend']} | {r['us']:.0f} | {r['tflops']:.0f} | "
              f"{r['roofline_frac']*100:.0f}% | {r['torch_us']:.0f} | {r['speedup_vs_torch']:.2f}x | "
              f"{r['route_combine_share']*100:.1f}% | {r['rel_err_vs_torch']:.1e} |")


if __name__ == "__main__":
    main()
