#!/bin/bash
# Session 32, device call 2: the stream tests that call 1's 300 s limit cut (one process each), the split
# rule with MOE_SV_DYNORD's case; then the dense streaming kernels with a block's partial sums capped at
# 16 KB (default) / 32 KB / 64 KB (lab knob MOE_SV_PSUM): the cap holds the dense down launch at 128 rows
# a block for passes of 4 tokens (8 parts x 4 tokens x 4 B a row), two waves of blocks at qwen3 T = 4.
# Forced streaming (--dense, stream column), two rounds; plans at 16 / 64 KB.
#   OUT=out CARRY=build-devbin/carryN bash bench/decode/s32/call2.sh
RUN=${RUN:-2}
W=/tmp/w$RUN
. $(dirname $0)/../s30/lib.sh
s30_unpack
export MOE_TEST_SEED=320$RUN
for t in cuda_quant_stream_hq cuda_quant_stream_int8_mma cuda_quant_stream_odd_units cuda_quant_stream_split_rule cuda_stream_; do
  ( timeout 450 stdbuf -oL /tmp/b/moe-tests $t ) > $W/tests_$t.log 2>&1 &
done
wait
echo "== tests"; for f in $W/tests_*.log; do echo "$(basename $f): $(tail -n1 $f)"; done
grep -hE "FAIL|error" $W/tests_*.log | cut -c1-300 | head -20
A="--dense --no-kdec --reps 10 --only qwen3-30b-a3b,gpt-oss-20b --dtokens 1,2,3,4,6,8,12,16"
for r in 1 2; do
  for v in p16 p32 p64; do
    e=""; [ $v = p32 ] && e="MOE_SV_PSUM=32768"; [ $v = p64 ] && e="MOE_SV_PSUM=65536"
    env $e timeout 200 $B $A --json $W/r${r}_$v.jsonl > $W/out_r${r}_$v.log 2>>$W/err.log
  done
done
for v in 16384 65536; do
  MOE_SV_PSUM=$v timeout 100 $B --dense --no-kdec --describe --reps 2 --only qwen3-30b-a3b,gpt-oss-20b --dtokens 2,4,8,16 \
    > $W/desc_$v.log 2>&1
done
python3 $(dirname $0)/../s26/ab_table.py $W/r*_p16.jsonl $W/r*_p32.jsonl $W/r*_p64.jsonl > $W/ab_table.txt 2>&1
tar cJf $OUT/call$RUN.tar.xz -C $W .
for v in 16384 65536; do echo "== $v"; grep -oE "T = [0-9]+|down plan: [^;]*" $W/desc_$v.log | paste - - ; done
cat $W/ab_table.txt; tail -3 $W/err.log
