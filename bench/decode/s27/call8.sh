#!/bin/bash
# Session 27, device call 8: (a) the quant GPU tests call 7 did not reach (T sweeps, streaming, int8,
# graph capture) on the new hand-overs; (b) bench_decode --place 8: one routing timed with the small
# buffers (x, out, ids, routing weights, workspace) at 8 offsets in their allocations, to see whether
# the 101-112 us jumps of gpt-oss-20b bf16 T = 2 (and others) follow where those buffers fall.
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s27/call8.sh
W=/tmp/w8; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
export MOE_TEST_SEED=2708
for t in cuda_quant_sweep_ cuda_quant_stream_ cuda_quant_i8_ cuda_quant_graph_capture; do
  ( timeout 300 stdbuf -oL /tmp/b/moe-tests $t ) > $W/tests_$t.log 2>&1 &
done
wait
echo "== tests"; for f in $W/tests_*.log; do echo "$(basename $f): $(tail -n1 $f)"; done
grep -hE "FAIL|error" $W/tests_*.log | head -20
B=/tmp/b/bench_decode
for r in 1 2; do
  timeout 120 $B --place 8 --dense --default --no-kdec --only gpt-oss-20b,qwen3-30b-a3b,mixtral-8x7b --dtokens 1,2 --reps 20 \
    --json $W/r${r}_d.jsonl > $W/out_r${r}_d.log 2>>$W/err.log
  timeout 120 $B --place 8 --quant --default --no-kdec --no-i8 --only gpt-oss-20b,qwen3-30b-a3b --qtypes q4_K,mxfp4 --qtokens 1,2 \
    --reps 20 --json $W/r${r}_q.jsonl > $W/out_r${r}_q.log 2>>$W/err.log
done
paste <(grep -h "^place" $W/out_r1_*.log) <(grep -h "^place" $W/out_r2_*.log | cut -d: -f2) > $W/place.txt
tar cJf $OUT/call8.tar.xz -C $W .
cat $W/place.txt; tail -3 $W/err.log
