#!/usr/bin/env python3
"""bench_decode --prefill runs of two or more variants side by side: every file is one variant's
jsonl (name = the file's stem after the last '_'), rounds of a variant averaged; a row per (preset,
type, T, path): us, x the same run's bf16 (ratio_to_bf16), and the ratio to the first variant.

    python3 bench/decode/s36/prefill_ab.py r1_static.jsonl r1_dyn.jsonl r2_static.jsonl r2_dyn.jsonl
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "s26"))
from ab_table import load  # noqa: E402


def main(paths):
    order, vals = load(paths, ("median_us", "ratio_to_bf16"))
    us, xb = vals["median_us"], vals["ratio_to_bf16"]
    print("| preset | type | T | path | " + " | ".join(f"{v} us (x bf16)" for v in order) + " | " +
          " | ".join(f"{v}/{order[0]} (rounds)" for v in order[1:]) + " |")
    print("|---" * (4 + 2 * len(order) - 1) + "|")
    for k in sorted(us, key=lambda k: (k[0], k[1] != "bf16", k[1], k[2], k[3])):
        t = us[k]
        cells = [f"{sum(t[v]) / len(t[v]):.0f} ({sum(xb[k][v]) / len(xb[k][v]):.2f})" if t.get(v) else "-"
                 for v in order]
        rat = []
        for v in order[1:]:
            if t.get(v) and t.get(order[0]):
                each = [b / a for a, b in zip(t[order[0]], t[v])]
                rat.append(f"{sum(t[v]) / len(t[v]) / (sum(t[order[0]]) / len(t[order[0]])):.3f} "
                           f"({', '.join(f'{x:.3f}' for x in each)})")
            else:
                rat.append("-")
        print(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | " + " | ".join(cells) + " | " + " | ".join(rat) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
