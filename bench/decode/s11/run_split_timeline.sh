#!/bin/bash
# Session 11 (prepared, not run): per-block timelines of the gate/up launch, planned grid
# (MOE_SV_DYN=0) against the run-time split (1), to find the split's ~4.5 us (NOTES_decode.md
# session 11, run 15). Build: git apply bench/decode/s11/split_timeline.patch, build libmoe_internal
# and bench_decode as usual, gzip it as dir/bench_decode_tl.gz, then on the device:
#   OUT=out CARRY=dir ARGS="--quant --only qwen3-30b-a3b --qtypes q8_0 --qtokens 8" bash bench/decode/s11/run_split_timeline.sh
OUT=${OUT:-bench/decode/out}; mkdir -p "$OUT" /tmp/b
gunzip -c ${CARRY:-build-devbin/carry}/bench_decode_tl.gz > /tmp/b/bench_decode_tl; chmod +x /tmp/b/bench_decode_tl
for dyn in 0 1; do
  MOE_SV_TIMELINE=1 MOE_SV_DYN=$dyn MOE_DECODE_FUSED=0 timeout 120 /tmp/b/bench_decode_tl --no-kdec --reps 5 ${ARGS} > "$OUT/tl_dyn$dyn.txt" 2>&1
done
python3 - "$OUT" <<'PY' | tee "$OUT/tl_summary.txt"
import sys, collections, statistics as st
for dyn in (0, 1):
    rows = [l.split() for l in open(f"{sys.argv[1]}/tl_dyn{dyn}.txt") if l.startswith("TL ")]
    ms = [l.split()[1] for l in open(f"{sys.argv[1]}/tl_dyn{dyn}.txt") if l.startswith("TLMS")]
    ph = [r for r in rows if r[1] == "0"]
    start = [float(r[3]) for r in ph]; routed = [float(r[4]) for r in ph]; end = [float(r[5]) for r in ph]
    sm = collections.Counter(int(r[6]) for r in ph)
    dur = [e - s for s, e in zip(start, end)]
    print(f"MOE_SV_DYN={dyn}: forward {ms[-1] if ms else '?'} us; gate/up blocks {len(ph)} on {len(sm)} SMs "
          f"({sum(1 for v in sm.values() if v == 2)} with 2); start {min(start):.1f}-{max(start):.1f}, "
          f"routed +{st.median([r - s for s, r in zip(start, routed)]):.2f} (median), "
          f"end {min(end):.1f}-{max(end):.1f}, block time median {st.median(dur):.1f} max {max(dur):.1f}, "
          f"jobs {collections.Counter(r[7] for r in ph)}")
    # per SM: the last end; by SM id / 18 (a rough GPC grouping: 132 SMs, ~16-18 a GPC)
    last = collections.defaultdict(float)
    for r in ph: last[int(r[6])] = max(last[int(r[6])], float(r[5]))
    g = collections.defaultdict(list)
    for s, e in last.items(): g[s // 18].append(e)
    print("  last end by SM group of 18: " + " ".join(f"{k}:{max(v):.1f}/{st.median(v):.1f}" for k, v in sorted(g.items())))
PY
