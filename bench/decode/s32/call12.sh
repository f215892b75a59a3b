#!/bin/bash
# Session 32, device call 12 (H200): run 11's profile has the dense consumers waiting on full stages (43% of
# the gate/up launch's samples, 26% of the down's): the gate/up ring holds 2 stages of 32.9 KB (8 rows of 4 KB),
# so about one stage is in flight a block. Finer stages through the measurement knobs: MOE_SV_STAGE=16384 /
# 8192 (rows in 2 / 4 column chunks, deeper rings), MOE_SV_NS=10 (ring depth cap 6 -> 10), forced streaming,
# plans, two rounds.
#   OUT=out CARRY=build-devbin/carryN bash bench/decode/s32/call12.sh
RUN=${RUN:-12}
W=/tmp/w$RUN
. $(dirname $0)/../s30/lib.sh
s30_unpack
A="--dense --no-kdec --reps 10 --only qwen3-30b-a3b,gpt-oss-20b,mixtral-8x7b --dtokens 1,2,3,4,8"
for r in 1 2; do
  for v in base st16 st8 ns10 st16ns10; do
    case $v in base) e="";; st16) e="MOE_SV_STAGE=16384";; st8) e="MOE_SV_STAGE=8192";; ns10) e="MOE_SV_NS=10";;
      st16ns10) e="MOE_SV_STAGE=16384 MOE_SV_NS=10";; esac
    env $e timeout 200 $B $A --json $W/r${r}_$v.jsonl > $W/out_r${r}_$v.log 2>>$W/err.log
  done
done
for v in st16 st16ns10; do
  case $v in st16) e="MOE_SV_STAGE=16384";; st16ns10) e="MOE_SV_STAGE=16384 MOE_SV_NS=10";; esac
  env $e timeout 100 $B --dense --no-kdec --describe --reps 2 --only qwen3-30b-a3b,gpt-oss-20b --dtokens 1,4 > $W/desc_$v.log 2>&1
done
python3 $(dirname $0)/../s26/ab_table.py $W/r*_base.jsonl $W/r*_st16.jsonl $W/r*_st8.jsonl $W/r*_ns10.jsonl $W/r*_st16ns10.jsonl \
  > $W/ab_table.txt 2>&1
tar cJf $OUT/call$RUN.tar.xz -C $W .
cat $W/gpu.txt
for v in st16 st16ns10; do echo "== $v"; grep -oE "T = [0-9]+|gate/up plan: [^;]*|down plan: [^;]*" $W/desc_$v.log | paste - - - | cut -c1-300; done
cat $W/ab_table.txt; tail -3 $W/err.log
