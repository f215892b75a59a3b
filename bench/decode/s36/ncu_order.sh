#!/bin/bash
# Session 36, device call 13: why mixtral's GGUF GEMMs lost to the dynamic order (runs 8-9). ncu of the
# first GGUF forward's two GEMM launches (gemm_sm90_qs: gate/up, then down) in the static order
# (MOE_SM90_SCHED=0) and the dynamic one (=1, past the rule that now keeps mixtral static there): time,
# DRAM and L2 bytes, L2 hit rate, SM clock, active cycles per SM (mean and max). CASE=preset:type:T.
# Then the new test on this build.
#   RUN=13 CASE=mixtral-8x7b:q8_0:2048 OUT=out CARRY=build-gpu/carryN bash bench/decode/s36/ncu_order.sh
RUN=${RUN:-13}
W=/tmp/w$RUN
. $(dirname $0)/../s30/lib.sh
s30_unpack
IFS=: read -r preset qt T <<< "${CASE:-mixtral-8x7b:q8_0:2048}"
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,lts__t_sector_hit_rate.pct,sm__cycles_elapsed.avg.per_second,sm__cycles_active.avg,sm__cycles_active.max,sm__cycles_active.min
for v in 0 1; do
  MOE_SM90_SCHED=$v timeout 200 ncu --metrics $M -k "regex:gemm_sm90_qs" --launch-count 2 --csv \
    $B --prefill --prefill-nodeq --only $preset --qtypes $qt --prefill-tokens $T --reps 1 > $W/ncu_sched$v.csv 2>$W/ncu_err$v.log
done
python3 - $W > $W/ncu_table.txt <<'PY'
import csv, sys, collections
w = sys.argv[1]
print("| order | launch | metric | value |")
print("|---|---|---|---|")
for v, name in (("0", "static"), ("1", "dynamic")):
    rows = [r for r in csv.reader(l for l in open(f"{w}/ncu_sched{v}.csv") if l.startswith('"'))]
    if not rows:
        continue
    hdr = rows[0]
    i_id, i_m, i_u, i_v = hdr.index("ID"), hdr.index("Metric Name"), hdr.index("Metric Unit"), hdr.index("Metric Value")
    for r in rows[1:]:
        print(f"| {name} | {r[i_id]} | {r[i_m]} ({r[i_u]}) | {r[i_v]} |")
PY
s30_run_tests "cuda_quant_prefill_gguf_order" 300
tar cJf $OUT/call$RUN.tar.xz -C $W .
cat $W/gpu.txt; cat $W/ncu_table.txt; tail -3 $W/ncu_err0.log
