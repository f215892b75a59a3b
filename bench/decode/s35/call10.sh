#!/bin/bash
# Session 35, device call 10 (H200): the state against issue 6 on the session's final build, the layer a
# user gets ("default"; "stream" is the streaming kernels forced): GGUF Q8_0 / Q4_K / Q6_K / MXFP4 at
# T = 1-16 and dense bf16 at T = 1-64 on the five presets, one process each, 2 routings; tables of the
# default's % of read last (runN/state_quant.txt, runN/state_dense.txt; state_table.py, which replaced two
# inline copies of it after the run).
#   RUN=10 OUT=out CARRY=build-gpu/carryN bash bench/decode/s35/call10.sh
RUN=${RUN:-10}
W=/tmp/w$RUN
. $(dirname $0)/../s30/lib.sh
s30_unpack
timeout 330 $B --quant --default --no-kdec --no-i8 --reps 10 --routings 2 --only $P --qtypes q8_0,q4_K,q6_K,mxfp4 \
  --qtokens 1,2,4,8,12,16 --json $W/quant.jsonl > $W/out_quant.log 2>>$W/err.log
timeout 200 $B --dense --default --no-kdec --reps 10 --dtokens 1,2,3,4,5,6,8,16,32,64 --json $W/dense.jsonl \
  > $W/out_dense.log 2>>$W/err.log
python3 $(dirname $0)/state_table.py $W/quant.jsonl > $W/state_quant.txt
python3 $(dirname $0)/state_table.py $W/dense.jsonl > $W/state_dense.txt
tar cJf $OUT/call$RUN.tar.xz -C $W .
cat $W/gpu.txt $W/state_quant.txt $W/state_dense.txt; tail -3 $W/err.log
