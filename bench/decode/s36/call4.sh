#!/bin/bash
# Session 36, device call 4: cuda-quant's prefill hand-over from the GGUF GEMMs back to dequantising
# (decode.cu qp_fused_max_pairs) re-measured after the GGUF GEMMs took the dynamic order (this session)
# and the bf16 GEMMs (the dequantising path's) took it in sessions 33-34. ROUNDS rounds of bench_decode
# --prefill --prefill-rule (the GGUF GEMMs forced, dequantising forced, the layer's rule) on the
# points around each type's bound: qwen3 (pairs an expert T / 16), mixtral (T / 4), gpt-oss-20b (T / 8);
# SPECS names other points (run 5: the bounds this session set, on the build with them).
# The table last (runN/rule_table.txt): us a path, the faster forced path, the rule's pick against it.
#   RUN=4 ROUNDS=2 OUT=out CARRY=build-gpu/carryN bash bench/decode/s36/call4.sh
RUN=${RUN:-4}
W=/tmp/w$RUN
. $(dirname $0)/../s30/lib.sh
s30_unpack
A="--prefill --prefill-rule --reps 10"
# SPECS: preset:qtypes:tokens, space-separated (the default is run 4's; run 4 ran these lines inline, its logs
# named out_rN_qwen3 / _mixtral / _oss)
SPECS=${SPECS:-"qwen3-30b-a3b:q4_K,q8_0,q6_K,q5_K:2048,4096,8192,16384 mixtral-8x7b:q4_K,q8_0,q6_K,q5_K:1024,2048,4096,8192 gpt-oss-20b:q8_0,mxfp4:4096,8192,16384"}
for r in $(seq 1 ${ROUNDS:-2}); do
  for sp in $SPECS; do
    IFS=: read p q t <<< "$sp"
    timeout 250 $B $A --only $p --qtypes $q --prefill-tokens $t --json $W/r${r}_rule.jsonl >> $W/out_r${r}_$p.log 2>>$W/err.log
  done
done
python3 $(dirname $0)/rule_table.py $W/r*_rule.jsonl > $W/rule_table.txt 2>&1
tar cJf $OUT/call$RUN.tar.xz -C $W .
cat $W/gpu.txt; cat $W/rule_table.txt; tail -3 $W/err.log
