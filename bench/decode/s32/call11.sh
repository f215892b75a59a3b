#!/bin/bash
# Session 32, device call 11 (H200): where the dense down launch waits now (one-wave plan, qwen3 T = 4:
# 36 us for 94.5 MB, DRAM 56%, run 7): ncu's warp-stall samples per SASS instruction (SourceCounters) of
# that launch and of the gate/up launch, tables by src_top.py.
#   OUT=out CARRY=build-devbin/carryN bash bench/decode/s32/call11.sh
RUN=${RUN:-11}
W=/tmp/w$RUN
. $(dirname $0)/../s30/lib.sh
s30_unpack
for k in "k_sv<.int.0, .int.3, .int.4:down" "k_sv<.int.0, .int.0, .int.4:gateup"; do
  IFS=: read -r kn tag <<< "$k"
  timeout 300 ncu --clock-control none --section SourceCounters --section WarpStateStats --kernel-name-base demangled \
    -k "regex:$kn" --launch-count 1 -o /tmp/rep_$tag $B --dense --no-kdec --only qwen3-30b-a3b --dtokens 4 --reps 1 \
    > $W/ncu_log_$tag.txt 2>&1
  ncu -i /tmp/rep_$tag.ncu-rep --page source --csv --print-source sass > $W/src_$tag.csv 2>&1
  ncu -i /tmp/rep_$tag.ncu-rep --page details --csv > $W/details_$tag.csv 2>&1
  python3 $(dirname $0)/src_top.py $W/src_$tag.csv 25 > $W/top_$tag.txt 2>&1
done
xz -9 $W/src_*.csv
tar cJf $OUT/call$RUN.tar.xz -C $W .
cat $W/gpu.txt; for t in down gateup; do echo "== $t"; cut -c1-220 $W/top_$t.txt; done
