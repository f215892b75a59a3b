#!/usr/bin/env python3
"""The paths of bench_decode on the same routings side by side: every jsonl line one (preset, type, T,
variant) median; rows (preset, type, T), columns the variants named (rounds averaged), then an optional
ratio of two of them and the default's time over the fastest of the others ("<" past 1.03).

    python3 bench/decode/s27/paths_table.py --variants stream,kdec,i8,default [--ratio i8/stream] [--best] r*.jsonl
"""
import argparse
import collections
import json


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--variants", required=True)
    ap.add_argument("--ratio")
    ap.add_argument("--best", action="store_true", help="a column naming the fastest path")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    vs = a.variants.split(",")
    t = collections.defaultdict(lambda: collections.defaultdict(list))
    for p in a.files:
        for line in open(p):
            if line.strip():
                r = json.loads(line)
                t[(r["preset"], r["wtype"], r["T"])][r["variant"]].append(r["median_us"])
    extra = [a.ratio] if a.ratio else []
    if a.best:
        extra.append("best")
    print("| preset | type | T | " + " | ".join(vs + extra) + " | default/best |")
    print("|---|---|---|" + "---|" * (len(vs) + len(extra) + 1))
    for k in sorted(t):
        m = {v: sum(x) / len(x) for v, x in t[k].items()}
        cand = {v: m[v] for v in vs if v != "default" and v in m}
        b = min(cand, key=cand.get)
        r = m["default"] / cand[b] if "default" in m else 0
        cells = [f"{m[v]:.1f}" if v in m else "-" for v in vs]
        if a.ratio:
            n, d = a.ratio.split("/")
            cells.append(f"{m[n] / m[d]:.3f}" if n in m and d in m else "-")
        if a.best:
            cells.append(b)
        print(f"| {k[0]} | {k[1]} | {k[2]} | " + " | ".join(cells) + f" | {r:.3f}{' <' if r > 1.03 else ''} |")


if __name__ == "__main__":
    main()
