#!/bin/bash
# Session 40 run 2: the register-A kernel with and without clusters of 2 (MOE_SM90_QS_MC=1 / 0) under ncu's
# counters (no source view): each GEMM's time, SM clock, tensor pipe, L2 throughput and bytes, DRAM bytes, issue.
# GGUF Q8_0 qwen3 and Q4_K mixtral T = 4096 (bench_decode --prefill, the GGUF GEMMs), gpt-oss-20b MXFP4 T = 4096.
#   OUT=out CARRY=dir bash bench/decode/s40/ncu2.sh
. bench/cuda/device_common.sh
dev_setup 4002
W=/tmp/w40; mkdir -p $W
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed,lts__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum,dram__bytes_read.sum,smsp__issue_active.avg.pct_of_peak_sustained_elapsed,lts__t_sectors_srcunit_tex_op_read.sum,launch__grid_size,launch__cluster_dim_x
BD="/tmp/b/bench_decode --prefill --prefill-nodeq --reps 1"
for c in ${CASES:-"q8qwen:qwen3-30b-a3b:q8_0" "q4mix:mixtral-8x7b:q4_K" "mxgpt:gpt-oss-20b:mxfp4"}; do
  IFS=: read -r tag p q <<< "$c"
  for mc in 0 1; do
    MOE_SM90_QS_MC=$mc timeout 200 ncu --clock-control none --metrics $M -k "regex:gemm_sm90_qs" --launch-count 2 --csv \
      $BD --only $p --qtypes $q --prefill-tokens ${TOK:-4096} > $W/ncu_${tag}_mc$mc.csv 2> $W/err_${tag}_mc$mc.txt
    echo "== $tag MOE_SM90_QS_MC=$mc"
    python3 - $W/ncu_${tag}_mc$mc.csv <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
if not rows: print("no rows"); sys.exit()
h = rows[0]; iid = h.index("ID"); im = h.index("Metric Name"); iv = h.index("Metric Value")
by = {}
for r in rows[1:]: by.setdefault(r[iid], {})[r[im]] = r[iv]
for k, m in by.items():
    print(" ".join(f"{n.split('__')[1][:28]}={m.get(n,'')}" for n in sorted(m)))
PY
  done
done
tar cf $OUT/run2.tar -C $W .
dev_gpu
exit 0
