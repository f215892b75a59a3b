#!/bin/bash
# Session 30, device calls 2-3 (RUN=2, 3): h quantised by the gate/up launch (decode_stream.cuh sv_hq_quantise);
# run 2: shared blocks through counters; run 3: shared blocks flagged and quantised by the down blocks.
# Tests (the new bitwise check against MOE_SV_HQ=0, the quant and decode GPU tests in both forms),
# memcheck and racecheck on the streaming tests, then the A/B in one binary: the default against
# MOE_SV_HQ=0 (every down block quantising the f32 h rows it stages, as before), the default layer and
# the streaming kernels forced, GGUF Q8_0 / Q4_K / Q6_K / MXFP4 on the five presets, T = 1-16,
# three rounds of 2 routings; the plans (--describe).
#   RUN=2 OUT=out CARRY=build-devbin/carryN bash bench/decode/s30/call_hq.sh   # (run 2 was call2.sh, the same)
RUN=${RUN:-2}
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
grep -hE "FAIL|error" $W/tests_*.log | head -20
timeout 200 compute-sanitizer --tool memcheck --print-limit 5 /tmp/b/moe-tests cuda_quant_stream_${SAN:-odd_units} > $W/memcheck.log 2>&1
echo "memcheck: $(grep -E 'ERROR SUMMARY' $W/memcheck.log | tail -1) $(tail -n1 $W/memcheck.log)"
timeout 200 compute-sanitizer --tool racecheck --print-limit 5 /tmp/b/moe-tests cuda_quant_stream_${SAN:-odd_units} > $W/racecheck.log 2>&1
echo "racecheck: $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' $W/racecheck.log | tail -1) $(tail -n1 $W/racecheck.log)"
P=qwen3-30b-a3b,gpt-oss-20b,mixtral-8x7b,deepseek-v3,gpt-oss-120b
B=/tmp/b/bench_decode
A="--quant --default --no-kdec --no-i8 --reps 10 --routings 2"
for r in 1 2 3; do
  for v in hq0 new; do
    E=; [ $v = hq0 ] && E="MOE_SV_HQ=0"
    env $E timeout 150 $B $A --only $P --qtypes q8_0,q4_K,q6_K,mxfp4 --qtokens 1,2,3,4,8,16 --json $W/r${r}_$v.jsonl > /dev/null 2>>$W/err.log
  done
done
python3 $(dirname $0)/../s26/ab_table.py $W/r*_hq0.jsonl $W/r*_new.jsonl > $W/ab_table.txt 2>&1
timeout 60 $B --quant --no-kdec --no-i8 --describe --reps 2 --routings 1 --only $P --qtypes q4_K,mxfp4 \
  --qtokens 1,4,16 > $W/desc.log 2>&1
tar cJf $OUT/call$RUN.tar.xz -C $W .
grep default $W/ab_table.txt; tail -3 $W/err.log
grep -c "h quantised once" $W/desc.log
