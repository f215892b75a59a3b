#!/bin/bash
# Session 19: every kernel of bench_decode's first forwards of PRESET:QTYPE:T (the
# streaming row, run alone by ncu: no overlap between launches), duration, DRAM and
# SM throughput, with the fused launch off so the phases show apart.
#   OUT=out CARRY=dir CASES="mixtral-8x7b:q4_K:1 ..." bash bench/decode/s19/ncu_t1.sh
OUT=${OUT:-bench/decode/out}; mkdir -p "$OUT" /tmp/b
for f in ${CARRY:-build-devbin/carry}/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
for c in ${CASES:-mixtral-8x7b:q4_K:1}; do
  IFS=: read -r preset qt T <<< "$c"
  MOE_DECODE_FUSED=${FUSED:-0} timeout 200 ncu --clock-control none --section SpeedOfLight --section Occupancy \
    -k "regex:k_sv|k_svf|k_route|k_qg|k_dec|moe_" --metrics dram__bytes_read.sum,gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__cycles_active.min,sm__cycles_active.avg,sm__cycles_active.max,gpc__cycles_elapsed.max --launch-count ${LC:-12} --csv --page raw \
    /tmp/b/bench_decode --quant --only $preset --qtypes $qt --qtokens $T --no-kdec --no-i8 --reps 1 --routings 1 \
    > "$OUT/ncu_t1_${preset}_${qt}_$T.csv" 2>&1
  python3 - "$OUT/ncu_t1_${preset}_${qt}_$T.csv" "$c" <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
if not rows: print(sys.argv[2], "no rows"); sys.exit()
h = rows[0]; ix = {n: i for i, n in enumerate(h)}
def g(r, n):
    return r[ix[n]] if n in ix else "?"
print("==", sys.argv[2])
for r in rows[2:]:
    name = g(r, "Kernel Name")[:60]
    print(f"{name:60s} {g(r,'gpu__time_duration.sum'):>10s} ns  dram {g(r,'dram__bytes_read.sum'):>12s} B  "
          f"dram% {g(r,'dram__throughput.avg.pct_of_peak_sustained_elapsed'):>6s} "
          f"sm% {g(r,'sm__throughput.avg.pct_of_peak_sustained_elapsed'):>6s} occ {g(r,'sm__warps_active.avg.pct_of_peak_sustained_active'):>6s} "
          f"grid {g(r,'launch__grid_size')} regs {g(r,'launch__registers_per_thread')}")
PY
done
