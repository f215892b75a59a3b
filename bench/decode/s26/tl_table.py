#!/usr/bin/env python3
"""Summarise the streaming kernels' per-block timelines (stream_timeline.patch: `TLMS us` then
`TL phase block start routed waited end` lines, us from the first block's start) as min / median /
max of each stamp per phase, one block of lines per `== name` header in the log.

    python3 bench/decode/s26/tl_table.py timeline.log
"""
import statistics
import sys


def show(name, ms, rows):
    if not rows:
        return
    print(f"{name} (event {ms:.1f} us)")
    for ph, label in ((0, "gate/up"), (1, "down")):
        r = [x for x in rows if x[0] == ph]
        if not r:
            continue
        cols = []
        for i, lab in ((2, "start"), (3, "routed"), (4, "waited"), (5, "end")):
            v = sorted(x[i] for x in r)
            cols.append(f"{lab} {v[0]:6.1f}/{statistics.median(v):6.1f}/{v[-1]:6.1f}")
        print(f"  {label:8s} blocks {len(r):4d}  " + "  ".join(cols))


def main(path):
    name, ms, rows = "?", 0.0, []
    for line in open(path):
        p = line.split()
        if not p:
            continue
        if p[0] == "==":
            show(name, ms, rows)
            name, ms, rows = " ".join(p[1:]), 0.0, []
        elif p[0] == "TLMS":
            show(name, ms, rows)
            ms, rows = float(p[1]), []
        elif p[0] == "TL":
            rows.append((int(p[1]), int(p[2])) + tuple(float(x) for x in p[3:7]))
    show(name, ms, rows)


if __name__ == "__main__":
    main(sys.argv[1])
