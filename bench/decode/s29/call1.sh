#!/bin/bash
# Session 29, device call 1: MXFP4's biased unit (qdot.cuh moe__mxfp4_wb_aw / moe__mxfp4_dotb: 64 + v
# by two prmt, the complements as IMADs; records {scale, -64 sum}; passes of 1-4 tokens) and its
# scale in 4 instructions (moe__e8m0_half_f). Correctness: the decoders on the device, the quant and
# decode GPU tests, memcheck on the streaming tests; then the state of the default layer and of the
# streaming kernels forced, MXFP4 on every preset at T = 1-16 (one round of 2 routings; the A/B
# against the build before is call 2: both benches and moe-tests exceed the carry's size).
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s29/call1.sh
W=/tmp/w1; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version --format=csv,noheader > $W/gpu.txt
export MOE_TEST_SEED=2901
/tmp/b/moe-qdot-test > $W/qdot.log 2>&1; echo "qdot: $(tail -n1 $W/qdot.log)"
for t in cuda_quant_cases cuda_quant_sweep_ cuda_quant_stream_ cuda_quant_graph_capture cuda_quant_i8_ cuda_decode_ cuda_stream_ decode_; do
  ( timeout 300 stdbuf -oL /tmp/b/moe-tests $t ) > $W/tests_$t.log 2>&1 &
done
wait
echo "== tests"; for f in $W/tests_*.log; do echo "$(basename $f): $(tail -n1 $f)"; done
grep -hE "FAIL|error" $W/tests_*.log | head -20
timeout 240 compute-sanitizer --tool memcheck --print-limit 5 /tmp/b/moe-tests cuda_quant_stream_ > $W/memcheck.log 2>&1
echo "memcheck: $(grep -E 'ERROR SUMMARY' $W/memcheck.log | tail -1) $(tail -n1 $W/memcheck.log)"
P=qwen3-30b-a3b,gpt-oss-20b,mixtral-8x7b,deepseek-v3,gpt-oss-120b
timeout 200 /tmp/b/bench_decode --quant --default --no-kdec --no-i8 --only $P --qtypes mxfp4 --qtokens 1,2,4,6,8,12,16 \
  --reps 15 --routings 2 --json $W/quant.jsonl > $W/quant.log 2>>$W/err.log
python3 $(dirname $0)/../s27/state_table.py $W/quant.jsonl > $W/state.txt
tar cJf $OUT/call1.tar.xz -C $W .
cat $W/state.txt; tail -3 $W/err.log
