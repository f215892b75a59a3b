#!/bin/bash
# Session 27, device call 7: the new hand-overs (decode.cu sv_init, decode.h moe__dec_gemm_min_t,
# moe__dec_stream_pairs_qg, moe__dec_stream_max_t): the decode and quant GPU tests, then the default
# layer against the paths it chooses between, on the points the rules moved (dense qwen3 / mixtral T = 2;
# GGUF: mixtral Q8_0 T = 4-12 and Q4_K T = 4-8, deepseek-v3 Q4_K T = 4-32 and Q8_0 T = 48-96, gpt-oss
# Q8_0 T = 12-96), two rounds of 3 routings.
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s27/call7.sh
W=/tmp/w7; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
export MOE_TEST_SEED=2707
for t in cuda_decode_ cuda_stream_ cuda_quant_ decode_; do
  ( timeout 400 stdbuf -oL /tmp/b/moe-tests $t ) > $W/tests_$t.log 2>&1 &
done
wait
echo "== tests"; for f in $W/tests_*.log; do echo "$(basename $f): $(tail -n1 $f)"; done
grep -hE "FAIL|error" $W/tests_*.log | head -20
B=/tmp/b/bench_decode
Q="--quant --default --no-kdec --reps 12 --routings 3"
for r in 1 2; do
  timeout 100 $B --dense --default --cross --only qwen3-30b-a3b,mixtral-8x7b --dtokens 2,3 --ctokens 2,3 --reps 15 --routings 4 \
    --json $W/r${r}_d.jsonl > $W/out_r${r}_d.log 2>>$W/err.log
  timeout 100 $B $Q --only mixtral-8x7b --qtypes q8_0,q4_K --qtokens 4,5,6,7,8,10,12 --json $W/r${r}_a.jsonl > $W/out_r${r}_a.log 2>>$W/err.log
  timeout 150 $B $Q --only deepseek-v3 --qtypes q4_K,q8_0 --qtokens 4,5,6,8,12,16,32,48,64,96 --json $W/r${r}_b.jsonl > $W/out_r${r}_b.log 2>>$W/err.log
  timeout 100 $B $Q --only gpt-oss-20b,gpt-oss-120b --qtypes q8_0 --qtokens 12,16,20,24,64,96 --json $W/r${r}_c.jsonl > $W/out_r${r}_c.log 2>>$W/err.log
done
python3 $(dirname $0)/paths_table.py --variants stream,kdec,i8,gemm-sm90,gemm-jit,default $W/r*.jsonl > $W/paths.txt
tar cJf $OUT/call7.tar.xz -C $W .
cat $W/paths.txt; tail -3 $W/err.log
