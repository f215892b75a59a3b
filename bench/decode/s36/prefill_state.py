#!/usr/bin/env python3
"""Issue 6's quantised prefill report from bench_decode --prefill --prefill-rule runs: a row per (preset,
T), bf16 us (TFLOP/s), and for each GGUF type the layer a user gets ("prefill-rule": the GGUF GEMMs or
dequantising, by the layer's rule) us (TFLOP/s, x the run's bf16). Rounds averaged.

    python3 bench/decode/s36/prefill_state.py run11/r1_rule.jsonl
"""
import collections
import json
import sys


def main(paths):
    us = collections.defaultdict(list)
    tf = collections.defaultdict(list)
    for p in paths:
        for line in open(p):
            if line.strip():
                r = json.loads(line)
                if r["wtype"] == "bf16" or r["variant"] == "prefill-rule":
                    k = (r["preset"], r["T"], r["wtype"])
                    us[k].append(r["median_us"])
                    tf[k].append(r["tflops"])
    types = sorted({k[2] for k in us if k[2] != "bf16"})
    print("| preset | T | bf16 us (TFLOP/s) | " + " | ".join(f"{t} us (TFLOP/s, x bf16)" for t in types) + " |")
    print("|---" * (3 + len(types)) + "|")
    avg = lambda v: sum(v) / len(v)
    for pr, T in sorted({(k[0], k[1]) for k in us}):
        b = (pr, T, "bf16")
        if b not in us:
            continue
        cells = [f"{avg(us[b]):.0f} ({avg(tf[b]):.0f})"]
        for t in types:
            k = (pr, T, t)
            cells.append(f"{avg(us[k]):.0f} ({avg(tf[k]):.0f}, {avg(us[k]) / avg(us[b]):.2f})" if k in us else "-")
        print(f"| {pr} | {T} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
