#!/bin/bash
# Session 22, device call 3: the new rules (bm 256 with tails from 64 pairs an expert; the hand-over to
# the GGUF GEMMs at 6 / 16 pairs) tested, the hand-over measured where run 2 left gaps (qwen3 T = 80-112,
# deepseek-v3 T = 128-768), the rule's pick at 64 pairs against run 2's forced times, and ncu of the
# register-A kernel's first launch (GEMM 1) at qwen3 Q4_K T = 4096 (256 tokens) and T = 512 (64).
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s22/call3.sh
W=/tmp/w; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $W/gpu.txt
export MOE_TEST_SEED=12345
for t in cuda_quant_prefill_gguf_gemm cuda_quant_prefill_forced cuda_quant_cases; do
  timeout 150 /tmp/b/moe-tests $t > $W/tests_$t.log 2>&1 & done; wait
echo "== tests"; tail -qn1 $W/tests_*.log
B=/tmp/b/bench_decode
timeout 100 $B --prefill --prefill-decode --prefill-nodeq --only qwen3-30b-a3b --prefill-tokens 64,80,96,112,128 \
  --qtypes q4_K,q8_0 --reps 10 --json $W/handover_q.jsonl > $W/handover_q.log 2>&1
timeout 150 $B --prefill --prefill-decode --prefill-nodeq --only deepseek-v3 --prefill-tokens 128,256,512,768 \
  --qtypes q4_K,q8_0 --reps 10 --json $W/handover_d.jsonl > $W/handover_d.log 2>&1
timeout 100 $B --prefill --prefill-nodeq --only qwen3-30b-a3b,deepseek-v3 --prefill-tokens 1024,2048 \
  --qtypes q4_K,q8_0 --reps 10 --json $W/rule.jsonl > $W/rule.log 2>&1
echo "== bench"; grep -hE "^prefill" $W/handover_q.log $W/handover_d.log $W/rule.log | sed -E 's/ +\(.*//; s/  +/ /g; s/ TFLOP.s//; s/x the bf16 time/x/'
for c in 4096 512; do
  timeout 150 ncu --section SourceCounters --section WarpStateStats --section SpeedOfLight --section SchedulerStats \
    --section Occupancy --section LaunchStats -k regex:gemm_sm90_qs --launch-count 1 -o /tmp/rep$c \
    $B --prefill --prefill-nodeq --only qwen3-30b-a3b --qtypes q4_K --prefill-tokens $c --reps 1 > $W/ncu_log_$c.txt 2>&1
  ncu -i /tmp/rep$c.ncu-rep --page details --csv > $W/ncu_details_$c.csv 2>&1
  ncu -i /tmp/rep$c.ncu-rep --page source --csv --print-source sass 2>&1 | xz -T4 > $W/ncu_src_$c.csv.xz
  echo "== ncu T=$c: $(grep -c . $W/ncu_details_$c.csv) lines"; grep -m1 "Kernel Name\|gemm_sm90" $W/ncu_details_$c.csv | cut -c1-200
  grep -E "\"(Duration|Compute \(SM\) Throughput|Memory Throughput|Issue Slots Busy|No Eligible|Warp Cycles Per Issued Instruction|Achieved Occupancy|Registers Per Thread)\"" $W/ncu_details_$c.csv | awk -F'","' '{print $(NF-2), $(NF-1), $NF}'
done
tar cJf $OUT/call3.tar.xz -C $W .
