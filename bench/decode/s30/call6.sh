#!/bin/bash
# Session 30, device calls 6 (H200) and 7 (H100): the session's final build. Tests (the quant and decode GPU
# tests, MOE_SV_HQ=0 too), memcheck on cuda_quant_stream_hq and racecheck on the single launch; then
# the default layer against the session's start in one binary (MOE_SV_HQ=0 MOE_DECODE_FUSED=1: every
# down block quantising h, and the single launch at T = 2 as well), GGUF Q8_0 / Q4_K / Q6_K / MXFP4 on
# the five presets, T = 1-16, ROUNDS rounds of 2 routings.
#   RUN=6 ROUNDS=3 OUT=out CARRY=build-devbin/carry6 bash bench/decode/s30/call6.sh
# run 10 (H200, ROUNDS=1): the same after sv_put_q32 / sv_warp_q32 were factored out (no change in time)
RUN=${RUN:-6}
W=/tmp/w$RUN; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version --format=csv,noheader > $W/gpu.txt
export MOE_TEST_SEED=300$RUN
for t in cuda_quant_stream_hq cuda_quant_cases cuda_quant_sweep_ cuda_quant_stream_ cuda_quant_graph_capture cuda_quant_i8_ cuda_decode_ cuda_stream_ decode_; do
  ( timeout 300 stdbuf -oL /tmp/b/moe-tests $t ) > $W/tests_$t.log 2>&1 &
done
for t in cuda_quant_cases cuda_quant_sweep_T cuda_quant_stream_; do
  ( MOE_SV_HQ=0 timeout 300 stdbuf -oL /tmp/b/moe-tests $t ) > $W/tests_hq0_$t.log 2>&1 &
done
wait
echo "== tests"; for f in $W/tests_*.log; do echo "$(basename $f): $(tail -n1 $f)"; done
grep -hE "FAIL|error" $W/tests_*.log | cut -c1-300 | head -20
timeout 240 compute-sanitizer --tool memcheck --print-limit 5 /tmp/b/moe-tests cuda_quant_stream_hq > $W/memcheck.log 2>&1
echo "memcheck: $(grep -E 'ERROR SUMMARY' $W/memcheck.log | tail -1) $(tail -n1 $W/memcheck.log)"
timeout 240 compute-sanitizer --tool racecheck --print-limit 5 /tmp/b/moe-tests cuda_quant_stream_odd_units > $W/racecheck.log 2>&1
echo "racecheck: $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' $W/racecheck.log | tail -1) $(tail -n1 $W/racecheck.log)"
P=qwen3-30b-a3b,gpt-oss-20b,mixtral-8x7b,deepseek-v3,gpt-oss-120b
B=/tmp/b/bench_decode
A="--quant --default --no-kdec --no-i8 --reps 10 --routings 2"
for r in $(seq 1 ${ROUNDS:-3}); do
  MOE_SV_HQ=0 MOE_DECODE_FUSED=1 timeout 150 $B $A --only $P --qtypes q8_0,q4_K,q6_K,mxfp4 --qtokens 1,2,3,4,8,16 \
    --json $W/r${r}_start.jsonl > /dev/null 2>>$W/err.log
  timeout 150 $B $A --only $P --qtypes q8_0,q4_K,q6_K,mxfp4 --qtokens 1,2,3,4,8,16 --json $W/r${r}_new.jsonl \
    > /dev/null 2>>$W/err.log
done
python3 $(dirname $0)/../s26/ab_table.py $W/r*_start.jsonl $W/r*_new.jsonl > $W/ab_table.txt 2>&1
tar cJf $OUT/call$RUN.tar.xz -C $W .
grep default $W/ab_table.txt; tail -3 $W/err.log
