#!/bin/bash
# Session 26, device call 10: the run-time split's routing step by step (call 8's stamped build with
# stamps after each of sv_route_dyn's barriers, after the split's range and after the proxy fence: TL2
# lines, us from the block's start; the medians over blocks by tl2_table.py). T = 4, two launches.
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s26/call10.sh
W=/tmp/w10; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
B=/tmp/b/bench_decode_tl
export MOE_SV_TIMELINE=1 MOE_DECODE_FUSED=0
run() { echo "== $1" >> $W/tl.log; shift; timeout 120 "$@" --reps 5 >> $W/tl.log 2>&1; }
run "qwen3-30b-a3b q4_K T=4" $B --quant --no-kdec --no-i8 --only qwen3-30b-a3b --qtypes q4_K --qtokens 4
run "qwen3-30b-a3b q8_0 T=8" $B --quant --no-kdec --no-i8 --only qwen3-30b-a3b --qtypes q8_0 --qtokens 8
run "gpt-oss-20b mxfp4 T=4" $B --quant --no-kdec --no-i8 --only gpt-oss-20b --qtypes mxfp4 --qtokens 4
run "mixtral-8x7b q4_K T=4" $B --quant --no-kdec --no-i8 --only mixtral-8x7b --qtypes q4_K --qtokens 4
run "deepseek-v3 q4_K T=4" $B --quant --no-kdec --no-i8 --only deepseek-v3 --qtypes q4_K --qtokens 4
python3 - $W/tl.log > $W/tl2_table.txt <<'PY'
import statistics, sys
name, rows = None, []
def show():
    if name and rows:
        cols = list(zip(*rows))
        print(f"{name}: blocks {len(rows)}, medians (us from the block's start): " +
              " ".join(f"{lab} {statistics.median(c):.2f}" for lab, c in zip(
                  ["zeroed", "counted", "scanned", "bases", "listed", "split", "fenced"], cols)))
for line in open(sys.argv[1]):
    p = line.split()
    if not p: continue
    if p[0] == "==": show(); name, rows = " ".join(p[1:]), []
    elif p[0] == "TL2": rows.append([float(x) for x in p[2:9]])
show()
PY
tar cJf $OUT/call10.tar.xz -C $W .
cat $W/tl2_table.txt
