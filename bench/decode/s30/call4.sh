#!/bin/bash
# Session 30, device call 4: the kept form (h quantised by the gate/up launch, shared blocks through
# counters; T = 1 only from K I = 16384: decode.cu sv_use_hq) after run 3's revert. Tests (the new
# cuda_quant_stream_hq with its rule check, the quant and decode GPU tests, MOE_SV_HQ=0 too), memcheck
# and racecheck on cuda_quant_stream_hq; then T = 1-2 with h quantised by phase 1 at every T
# (MOE_SV_HQ=2) or never (0), in one cooperative launch (MOE_DECODE_FUSED=1, the GGUF default) or two
# (0): is the single launch where T = 1 loses? Streaming kernels forced, three rounds of 2 routings.
#   OUT=out CARRY=build-devbin/carry4 bash bench/decode/s30/call4.sh
W=/tmp/w4; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version --format=csv,noheader > $W/gpu.txt
export MOE_TEST_SEED=3004
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
A="--quant --no-kdec --no-i8 --reps 10 --routings 2"
for r in 1 2 3; do
  for f in 1 0; do
    for h in 0 2; do
      MOE_DECODE_FUSED=$f MOE_SV_HQ=$h timeout 100 $B $A --only $P --qtypes q8_0,q4_K,mxfp4 --qtokens 1,2 \
        --json $W/r${r}_f${f}h${h}.jsonl > /dev/null 2>>$W/err.log
    done
  done
done
python3 $(dirname $0)/../s26/ab_table.py $W/r*_f1h0.jsonl $W/r*_f1h2.jsonl $W/r*_f0h0.jsonl $W/r*_f0h2.jsonl > $W/fused_table.txt 2>&1
tar cJf $OUT/call4.tar.xz -C $W .
cat $W/fused_table.txt; tail -3 $W/err.log
