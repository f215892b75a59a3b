#!/bin/bash
# Session 24, device call 7: the final tree (the GGUF GEMMs' format dispatch as a table, the hand-overs of runs 5
# and 6 in the rules). GPU tests, then the layer a user gets (--quant --default) on both sides of the new
# hand-overs from the decode kernels (qwen3 Q6_K 8 pairs an expert = T 128, mixtral Q6_K 24 = T 96).
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s24/call7.sh
W=/tmp/w7; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $W/gpu.txt
export MOE_TEST_SEED=777
B=/tmp/b/bench_decode
for t in cuda_quant_prefill_gguf_gemm cuda_quant_prefill_forced cuda_quant_cases_i8 cuda_quant_sweep_T; do
  ( timeout 400 stdbuf -oL /tmp/b/moe-tests $t ) > $W/tests_$t.log 2>&1 &
done
wait
echo "== tests"; for f in $W/tests_*.log; do echo "$(basename $f): $(tail -n1 $f)"; done
grep -hE "^FAIL|FAILED|error" $W/tests_*.log | head -20; grep -h "GGUF GEMMs against" $W/tests_*.log
timeout 120 $B --quant --default --no-kdec --no-i8 --only qwen3-30b-a3b,mixtral-8x7b --qtypes q6_K \
  --qtokens 96,128,160,192 --reps 5 --json $W/default.jsonl > $W/default.log 2>&1
echo "== default (rc $?)"
grep -hE " default " $W/default.log | sed -E 's/  +/ /g'
tar cJf $OUT/call7.tar.xz -C $W .
