"""The PyTorch baseline of bench/decode (the torchtitan pipeline): argsort
permute, torch._grouped_mm gate/up, activation, torch._grouped_mm down,
weighted index_add. bf16, same presets, same T.

The forward has no host synchronisation (expert counts by index_add into a
zero tensor, not bincount, whose output size needs the maximum on the host)
and is captured once into a CUDA graph; each timed replay follows an L2 flush
(a read-only sum of 4x L2, outside the events), timed with CUDA events,
median of 30. Falls back to eager launches (reported as mode "eager") where
capture fails. One JSON object per line to --json.

    python3 bench/decode/torch_moe.py --json out.jsonl
"""
import argparse
import json

import torch
import torch.nn.functional as F

PRESETS = [  # name, D, I, E, K, gpt-oss (bias + clamped swiglu)
    ("qwen3-30b-a3b", 2048, 768, 128, 8, False),
    ("mixtral-8x7b", 4096, 14336, 8, 2, False),
    ("deepseek-v3", 7168, 2048, 256, 8, False),
    ("gpt-oss-20b", 2880, 2880, 32, 4, True),
    ("gpt-oss-120b", 2880, 2880, 128, 4, True),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--tokens", default="1,2,4,8,16,32,64")
    ap.add_argument("--reps", type=int, default=30)
    args = ap.parse_args()
    Ts = [int(t) for t in args.tokens.split(",")]
    dev = torch.device("cuda")
    name = torch.cuda.get_device_name()
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    flush = torch.ones(4 * l2 // 8, dtype=torch.int64, device=dev)  # read (sum) to flush: no dirty lines
    out = open(args.json, "a") if args.json else None
    torch.manual_seed(0)
    for pname, D, I, E, K, oss in PRESETS:
        # weights as [E, N, C] (rows along C); _grouped_mm takes [E, C, N] views
        w13 = (torch.randn(E, 2 * I, D, device=dev, dtype=torch.bfloat16) / D ** 0.5)
        w2 = (torch.randn(E, D, I, device=dev, dtype=torch.bfloat16) / I ** 0.5)
        b13 = torch.randn(E, 2 * I, device=dev, dtype=torch.bfloat16) * 0.1 if oss else None
        b2 = torch.randn(E, D, device=dev, dtype=torch.bfloat16) * 0.1 if oss else None
        w13t, w2t = w13.transpose(1, 2), w2.transpose(1, 2)
        expert_bytes = (w13.numel() + w2.numel()) * 2 / E

        def fwd(x, ids, wts):
            T = x.shape[0]
            flat = ids.reshape(-1)
            order = torch.argsort(flat, stable=True)
            tok = order // K
            counts = torch.zeros(E, device=dev, dtype=torch.int32).index_add_(
                0, flat, torch.ones_like(flat, dtype=torch.int32))
            offs = torch.cumsum(counts, 0, dtype=torch.int32)
            xs = x[tok]
            gu = torch._grouped_mm(xs, w13t, offs=offs)
            if oss:
                gu = gu + b13[flat[order]]
                g, u = gu[:, :I], gu[:, I:]
                g = g.clamp(max=7.0)
                u = u.clamp(-7.0, 7.0)
                h = (g * torch.sigmoid(1.702 * g)) * (u + 1)
            else:
                g, u = gu[:, :I], gu[:, I:]
                h = F.silu(g) * u
            y = torch._grouped_mm(h.to(torch.bfloat16), w2t, offs=offs)
            if oss:
                y = y + b2[flat[order]]
            y = y * wts.reshape(-1)[order, None].to(y.dtype)
            o = torch.zeros(T, D, device=dev, dtype=torch.float32)
            o.index_add_(0, tok, y.float())
            return o.to(torch.bfloat16)

        for T in Ts:
            x = torch.randn(T, D, device=dev, dtype=torch.bfloat16)
            ids = torch.rand(T, E, device=dev).topk(K, dim=1).indices.to(torch.int32)
            wts = torch.softmax(torch.rand(T, K, device=dev), dim=1)
            touched = int(torch.unique(ids).numel())
            mode, err, med = "graph", None, float("nan")
            try:
                s = torch.cuda.Stream()
                s.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(s):
                    for _ in range(3):
                        fwd(x, ids, wts)
                torch.cuda.current_stream().wait_stream(s)
                torch.cuda.synchronize()
                try:
                    graph = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(graph):
                        fwd(x, ids, wts)
                    run = graph.replay
                except Exception:  # noqa: BLE001
                    mode = "eager"
                    torch.cuda.synchronize()

                    def run():
                        fwd(x, ids, wts)
                for _ in range(3):
                    run()
                ts = []
                for _ in range(args.reps):
                    flush.sum()
                    a = torch.cuda.Event(enable_timing=True)
                    b = torch.cuda.Event(enable_timing=True)
                    a.record()
                    run()
                    b.record()
                    b.synchronize()
                    ts.append(a.elapsed_time(b) * 1e3)
                ts.sort()
                med = ts[len(ts) // 2]
            except Exception as ex:  # noqa: BLE001
                err = str(ex)[:200]
            gbps = touched * expert_bytes / (med * 1e-6) / 1e9 if med == med else float("nan")
            print(f"{pname:14s} torch-{mode:5s} T={T:4d}  {med:9.1f} us  {gbps:7.1f} GB/s" +
                  (f"  ERROR {err}" if err else ""), flush=True)
            if out:
                out.write(json.dumps({"gpu": name, "preset": pname, "wtype": "bf16", "variant": "torch",
                                      "mode": mode, "T": T, "median_us": med, "gbps": gbps, "error": err}) + "\n")
        del w13, w2, w13t, w2t, b13, b2
        torch.cuda.empty_cache()
    if out:
        out.close()


if __name__ == "__main__":
    main()
