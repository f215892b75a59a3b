#!/bin/bash
# Session 27, device call 17: (a) the streaming kernels' plans on both sides of the jumps runs 5-6 and 14
# found (qwen3 Q4_K T = 32 / 40, gpt-oss-20b Q8_0 T = 16 / 20, mixtral Q8_0 T = 8 / 10; forced
# streaming, bench_decode --describe); (b) the state at the session's end: the default layer, dense
# T = 1..64 and GGUF T = 1..16, every preset, one round of 2 routings (as call 3 and call 9).
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s27/call17.sh
W=/tmp/w17; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
B=/tmp/b/bench_decode
A="--quant --no-kdec --no-i8 --describe --reps 5"
timeout 60 $B $A --only qwen3-30b-a3b --qtypes q4_K --qtokens 32,40 > $W/desc.log 2>&1
timeout 60 $B $A --only gpt-oss-20b --qtypes q8_0 --qtokens 16,20 >> $W/desc.log 2>&1
timeout 60 $B $A --only mixtral-8x7b --qtypes q8_0 --qtokens 8,10 >> $W/desc.log 2>&1
grep -E "^ +cuda-quant: T = (32|40|16|20|8|10)," $W/desc.log | grep -oE "T = [0-9]+( \(in chunks of tokens\))?|gate/up plan: [^;]*|down plan: [^;]*|pairs in groups of [0-9]+" | paste - - - - - > $W/plans.txt
W=$W OUT=/tmp CARRY=$CARRY bash $(dirname $0)/call9.sh > /dev/null 2>&1   # state.txt into $W
tar cJf $OUT/call17.tar.xz -C $W .
cat $W/plans.txt; cat $W/state.txt
