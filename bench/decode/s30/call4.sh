#!/bin/bash
# Session 30, device call 4: the kept form (h quantised by the gate/up launch, shared blocks through
# counters; T = 1 only from K I = 16384: decode.cu sv_use_hq) after run 3's revert. Tests (the new
# cuda_quant_stream_hq with its rule check, the quant and decode GPU tests, MOE_SV_HQ=0 too), memcheck
# and racecheck on cuda_quant_stream_hq; then T = 1-2 with h quantised by phase 1 at every T
# (MOE_SV_HQ=2) or never (0), in one cooperative launch (MOE_DECODE_FUSED=1, the GGUF default) or two
# (0): is the single launch where T = 1 loses? Streaming kernels forced, three rounds of 2 routings.
#   OUT=out CARRY=build-devbin/carry4 bash bench/decode/s30/call4.sh
RUN=4
W=/tmp/w4
. $(dirname $0)/lib.sh
s30_unpack
s30_tests
s30_sanitize cuda_quant_stream_hq cuda_quant_stream_odd_units
A="--quant --no-kdec --no-i8 --reps 10 --routings 2"
for r in 1 2 3; do
  for f in 1 0; do
    for h in 0 2; do
      MOE_DECODE_FUSED=$f MOE_SV_HQ=$h timeout 100 $B $A --only $P --qtypes q8_0,q4_K,mxfp4 --qtokens 1,2 \
        --json $W/r${r}_f${f}h${h}.jsonl > /dev/null 2>>$W/err.log
    done
  done
done
python3 $(dirname $0)/../s26/ab_table.py $W/r*_f1h0.jsonl $W/r*_f1h2.jsonl $W/r*_f0h0.jsonl $W/r*_f0h2.jsonl > $W/fused_table.txt 2>&1
tar cJf $OUT/call4.tar.xz -C $W .
cat $W/fused_table.txt; tail -3 $W/err.log
