#!/bin/bash
# Session 31, device call 4 (H200): the run-time split weighted by the groups' pairs (moe_sv_args.dynw,
# decode.h moe__sv_split_range_w; MOE_SV_DYNW = A, a step costing A + pairs; 0 unweighted). Run 1's ncu had
# the qwen3 T = 16 launches' SMs active only 56-66% of the time: groups of 1-4 pairs, equal rows a block.
# Tests with the weights on (and the split at every T), memcheck; then in one binary the default (split at
# T = 3-8, unweighted) against A = 1, 2, 4 and the split at every T (MOE_SV_DYN=2) with and without A = 2,
# Q8_0 / Q4_K / MXFP4 on the five presets, T = 3-16, ROUNDS rounds of 2 routings.
#   RUN=4 ROUNDS=1 OUT=out CARRY=build-devbin/carryN bash bench/decode/s31/call4.sh
RUN=${RUN:-4}
W=/tmp/w$RUN
. $(dirname $0)/../s30/lib.sh
s30_unpack
export MOE_TEST_SEED=310$RUN
( timeout 100 /tmp/b/moe-tests decode_stream_split ) > $W/tests_host_split.log 2>&1
for v in "MOE_SV_DYNW=2" "MOE_SV_DYNW=2 MOE_SV_DYN=2" "MOE_SV_DYNW=1"; do
  n=$(echo $v | tr -d ' =_' | tr 'A-Z' 'a-z')
  for t in cuda_quant_stream_ cuda_quant_cases_stream cuda_quant_sweep_T; do
    ( env $v timeout 300 stdbuf -oL /tmp/b/moe-tests $t ) > $W/tests_${n}_$t.log 2>&1 &
  done
done
( timeout 300 stdbuf -oL /tmp/b/moe-tests cuda_quant_stream_copies ) > $W/tests_copies.log 2>&1 &
wait
echo "== tests"; for f in $W/tests_*.log; do echo "$(basename $f): $(tail -n1 $f)"; done
grep -hE "FAIL|error" $W/tests_*.log | cut -c1-300 | head -20
MOE_SV_DYNW=2 MOE_SV_DYN=2 timeout 200 compute-sanitizer --tool memcheck --print-limit 5 /tmp/b/moe-tests cuda_quant_cases_stream > $W/memcheck.log 2>&1
echo "memcheck: $(grep -E 'ERROR SUMMARY' $W/memcheck.log | tail -1) $(tail -n1 $W/memcheck.log)"
A="--quant --default --no-kdec --no-i8 --reps 10 --routings 2"
for r in $(seq 1 ${ROUNDS:-1}); do
  for v in -:base MOE_SV_DYNW=1:w1 MOE_SV_DYNW=2:w2 MOE_SV_DYNW=4:w4 "MOE_SV_DYN=2:d2" "MOE_SV_DYN=2 MOE_SV_DYNW=2:d2w2"; do
    IFS=: read -r e n <<< "$v"
    E=; [ "$e" != - ] && E="$e"
    env $E timeout 150 $B $A --only $P --qtypes q8_0,q4_K,mxfp4 --qtokens 3,4,6,8,12,16 \
      --json $W/r${r}_$n.jsonl > /dev/null 2>>$W/err.log
  done
done
python3 $(dirname $0)/../s26/ab_table.py $W/r*_base.jsonl $W/r*_w1.jsonl $W/r*_w2.jsonl $W/r*_w4.jsonl $W/r*_d2.jsonl $W/r*_d2w2.jsonl > $W/ab_table.txt 2>&1
tar cJf $OUT/call$RUN.tar.xz -C $W .
grep default $W/ab_table.txt | awk -F'|' '{print $2,$3,$4,$6,$12,$13,$14,$15,$16}'; tail -3 $W/err.log
