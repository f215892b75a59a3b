#!/usr/bin/env python3
"""bench_decode --prefill --prefill-rule runs (rounds averaged): a row per (preset, type, T) with the
GGUF GEMMs forced, dequantising forced and the layer's rule, us (x the run's bf16), which forced path
is faster, and the rule's time over the faster one's.

    python3 bench/decode/s36/rule_table.py r1_rule.jsonl r2_rule.jsonl
"""
import collections
import json
import sys


def main(paths):
    us = collections.defaultdict(lambda: collections.defaultdict(list))
    xb = collections.defaultdict(lambda: collections.defaultdict(list))
    for p in paths:
        for line in open(p):
            if line.strip():
                r = json.loads(line)
                if r["wtype"] == "bf16":
                    continue
                k = (r["preset"], r["wtype"], r["T"])
                us[k][r["variant"]].append(r["median_us"])
                xb[k][r["variant"]].append(r["ratio_to_bf16"])
    paths_ = ["prefill-gguf", "prefill-dequant", "prefill-rule"]
    print("| preset | type | T | GGUF GEMMs us (x bf16) | dequantising | rule | faster | rule / faster |")
    print("|---|---|---|---|---|---|---|---|")
    for k in sorted(us):
        m = {v: sum(us[k][v]) / len(us[k][v]) for v in paths_ if us[k].get(v)}
        x = {v: sum(xb[k][v]) / len(xb[k][v]) for v in paths_ if xb[k].get(v)}
        cells = [f"{m[v]:.0f} ({x[v]:.2f})" if v in m else "-" for v in paths_]
        best = min((v for v in paths_[:2] if v in m), key=lambda v: m[v], default=None)
        rat = f"{m['prefill-rule'] / m[best]:.3f}" if best and "prefill-rule" in m else "-"
        print(f"| {k[0]} | {k[1]} | {k[2]} | " + " | ".join(cells) +
              f" | {'gguf' if best == 'prefill-gguf' else 'dequant'} ({m[best] / max(m[v] for v in paths_[:2] if v in m):.3f}) | {rat} |")


if __name__ == "__main__":
    main(sys.argv[1:])
