#!/bin/bash
# Session 27, device call 13: the GGUF down phase's new rule (decode.h moe__sv_down_expert_gguf: expert-major
# also where a token-major down would read 300 MB again): the quant GPU tests, then the default layer against
# itself with the old form forced (MOE_SV_DOWNE=0: token-major, the old rule below T K = E) on deepseek-v3
# Q8_0 / Q6_K / MXFP4 and gpt-oss-120b Q8_0 around the new hand-overs; three rounds of 2 routings.
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s27/call13.sh
W=/tmp/w13; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
export MOE_TEST_SEED=2713
for t in cuda_quant_cases cuda_quant_sweep_ cuda_quant_stream_ cuda_decode_ cuda_stream_ decode_; do
  ( timeout 300 stdbuf -oL /tmp/b/moe-tests $t ) > $W/tests_$t.log 2>&1 &
done
wait
echo "== tests"; for f in $W/tests_*.log; do echo "$(basename $f): $(tail -n1 $f)"; done
grep -hE "FAIL|error" $W/tests_*.log | head -20
B=/tmp/b/bench_decode
A="--quant --default --no-kdec --no-i8 --reps 12 --routings 2"
for r in 1 2 3; do
  for v in old new; do
    e=""; [ $v = old ] && e="MOE_SV_DOWNE=0"
    env $e timeout 100 $B $A --only deepseek-v3 --qtypes q8_0,q6_K,mxfp4 --qtokens 12,14,16,20,24 \
      --json $W/r${r}a_$v.jsonl > $W/out_r${r}a_$v.log 2>>$W/err.log
    env $e timeout 100 $B $A --only gpt-oss-120b --qtypes q8_0 --qtokens 24,27,28,30 \
      --json $W/r${r}b_$v.jsonl > $W/out_r${r}b_$v.log 2>>$W/err.log
  done
done
python3 $(dirname $0)/../s26/ab_table.py $W/r*_old.jsonl $W/r*_new.jsonl > $W/ab_table.txt 2>&1
tar cJf $OUT/call13.tar.xz -C $W .
grep default $W/ab_table.txt; tail -3 $W/err.log
