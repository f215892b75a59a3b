#!/bin/bash
# Session 29, device calls 3-6 (RUN=3..6): one build each, the same script. Correctness: the decoders
# on the device, the quant and decode GPU tests, and again with MOE_SV_MXFP4_RB=4 (4-byte records
# everywhere: the other form), memcheck on the streaming tests. Then the A/B in one binary: the
# default (new) against MOE_SV_MXFP4_RB=4 (rb4: the unit loops before the session), the default
# layer and the streaming kernels forced, MXFP4 on every preset at T = 1-16, three rounds of 2
# routings, Q8_0 as a control; and the plans (--describe). The builds:
#   run 3: MXFP4's biased unit (qdot.cuh moe__mxfp4_wb_aw / moe__mxfp4_dotb) for passes of 1-4 tokens,
#          its 8-byte records only where the plan stays the same (decode.cu sv_plan);
#   run 4: the biased dot's 8 dp4a in two chains of 4;
#   run 5: the biased dot for passes of one token only (MOE_SV_MXFP4_PN 1);
#   run 6 (final): the 8-byte records only where passes of one token are the rule.
#   RUN=6 OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s29/call_ab.sh
W=/tmp/w$RUN; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version --format=csv,noheader > $W/gpu.txt
export MOE_TEST_SEED=290$RUN
/tmp/b/moe-qdot-test > $W/qdot.log 2>&1; echo "qdot: $(tail -n1 $W/qdot.log)"
for t in cuda_quant_cases cuda_quant_sweep_ cuda_quant_stream_ cuda_quant_graph_capture cuda_quant_i8_ cuda_decode_ cuda_stream_ decode_; do
  ( timeout 300 stdbuf -oL /tmp/b/moe-tests $t ) > $W/tests_$t.log 2>&1 &
done
for t in cuda_quant_cases cuda_quant_sweep_ cuda_quant_stream_; do
  ( MOE_SV_MXFP4_RB=4 timeout 300 stdbuf -oL /tmp/b/moe-tests $t ) > $W/tests_rb4_$t.log 2>&1 &
done
wait
echo "== tests"; for f in $W/tests_*.log; do echo "$(basename $f): $(tail -n1 $f)"; done
grep -hE "FAIL|error" $W/tests_*.log | head -20
timeout 240 compute-sanitizer --tool memcheck --print-limit 5 /tmp/b/moe-tests cuda_quant_stream_ > $W/memcheck.log 2>&1
echo "memcheck: $(grep -E 'ERROR SUMMARY' $W/memcheck.log | tail -1) $(tail -n1 $W/memcheck.log)"
P=qwen3-30b-a3b,gpt-oss-20b,mixtral-8x7b,deepseek-v3,gpt-oss-120b
B=/tmp/b/bench_decode
A="--quant --default --no-kdec --no-i8 --reps 10 --routings 2"
for r in 1 2 3; do
  for v in rb4 new; do
    E=; [ $v = rb4 ] && E="MOE_SV_MXFP4_RB=4"
    env $E timeout 150 $B $A --only $P --qtypes mxfp4 --qtokens 1,2,4,8,16 --json $W/r${r}a_$v.jsonl > /dev/null 2>>$W/err.log
    env $E timeout 60 $B $A --only deepseek-v3 --qtypes q8_0 --qtokens 1,16 --json $W/r${r}b_$v.jsonl > /dev/null 2>>$W/err.log
  done
done
python3 $(dirname $0)/../s26/ab_table.py $W/r*_rb4.jsonl $W/r*_new.jsonl > $W/ab_table.txt 2>&1
timeout 60 $B --quant --no-kdec --no-i8 --describe --reps 2 --routings 1 --only $P --qtypes mxfp4 \
  --qtokens 1,2,4,8,16 > $W/desc.log 2>&1
tar cJf $OUT/call$RUN.tar.xz -C $W .
grep default $W/ab_table.txt; tail -3 $W/err.log
grep -c "biased dot" $W/desc.log
