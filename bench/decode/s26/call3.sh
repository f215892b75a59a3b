#!/bin/bash
# Session 26, device call 3: T = 1 routing without the rank pass where pairs go one to a group (NT = 1,
# sv_route1), against the build before (bench_decode_base: carry26b's, the stealing code off, which
# routes as main did); and, on the new build, the down phase's forms at T = 1 re-measured: expert-major
# in two launches (the default), token-major (MOE_SV_DOWNE=0; GGUF: one cooperative launch where it
# fits), token-major as two launches (MOE_DECODE_FUSED=0), dense token-major fused (MOE_DECODE_FUSED=1).
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s26/call3.sh
W=/tmp/w3; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $W/gpu.txt
export MOE_TEST_SEED=2603
for t in cuda_quant_cases_stream cuda_decode_cases_stream cuda_stream_runtime_split cuda_quant_graph_capture \
         cuda_decode_graph_capture cuda_quant_sweep_T cuda_decode_sweep_T; do
  ( timeout 240 stdbuf -oL /tmp/b/moe-tests $t ) > $W/tests_$t.log 2>&1 &
done
wait
echo "== tests"; for f in $W/tests_*.log; do echo "$(basename $f): $(tail -n1 $f)"; done
grep -hE "FAIL|error" $W/tests_*.log | head -20
P=qwen3-30b-a3b,gpt-oss-20b,mixtral-8x7b,deepseek-v3,gpt-oss-120b
QA="--quant --no-kdec --no-i8 --only $P --qtypes q4_K,q8_0,mxfp4,q6_K --qtokens 1 --reps 20 --routings 2"
DA="--dense --no-kdec --only $P --dtokens 1 --reps 20 --routings 2"
one() { # variant binary env...
  local v=$1 b=$2; shift 2
  env "$@" timeout 200 $b $QA --json $W/r${r}q_$v.jsonl > /dev/null 2>>$W/ab_err.log
  env "$@" timeout 120 $b $DA --json $W/r${r}d_$v.jsonl > /dev/null 2>>$W/ab_err.log
}
for r in 1 2; do
  one base /tmp/b/bench_decode_base X=1
  one new /tmp/b/bench_decode X=1
  one tok /tmp/b/bench_decode MOE_SV_DOWNE=0
  one tok2 /tmp/b/bench_decode MOE_SV_DOWNE=0 MOE_DECODE_FUSED=0
  one tokf /tmp/b/bench_decode MOE_SV_DOWNE=0 MOE_DECODE_FUSED=1
  tar cJf $OUT/call3_partial.tar.xz -C $W .
done
python3 $(dirname $0)/ab_table.py $W/r*_base.jsonl $W/r*_new.jsonl $W/r*_tok.jsonl $W/r*_tok2.jsonl $W/r*_tokf.jsonl \
  > $W/ab_table.txt 2>&1
tar cJf $OUT/call3.tar.xz -C $W .
cat $W/ab_table.txt; tail -3 $W/ab_err.log
