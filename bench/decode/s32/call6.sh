#!/bin/bash
# Session 32, device call 6 (H200): the tree at 69f369a (one-wave dense down, dense rows of I < 2048 streamed
# to T = 4): the dense GPU tests (case tables, sweeps, graph capture, the new test) and the layer a user gets
# for the five dense presets at T = 1-64 beside both decode paths (the state table for issue 6's dense rows).
#   OUT=out CARRY=build-devbin/carryN bash bench/decode/s32/call6.sh
RUN=${RUN:-6}
W=/tmp/w$RUN
. $(dirname $0)/../s30/lib.sh
s30_unpack
export MOE_TEST_SEED=320$RUN
for t in cuda_decode_ cuda_stream_ cuda_quant_stream_split_rule cuda_quant_cases; do
  ( timeout 400 stdbuf -oL /tmp/b/moe-tests $t ) > $W/tests_$t.log 2>&1 &
done
wait
echo "== tests"; for f in $W/tests_*.log; do echo "$(basename $f): $(tail -n1 $f)"; done
grep -hE "FAIL|error" $W/tests_*.log | cut -c1-300 | head -20
timeout 300 $B --dense --default --reps 10 --dtokens 1,2,3,4,6,8,16,32,64 --json $W/dense.jsonl > $W/dense.txt 2>>$W/err.log
python3 - $W/dense.jsonl > $W/state.txt <<'PY'
import json, sys, collections
t = collections.defaultdict(dict); Ts = set()
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["variant"] != "default": continue
    t[r["preset"]][r["T"]] = (r["median_us"], r["pct_read_bw"]); Ts.add(r["T"])
Ts = sorted(Ts)
print("| preset | " + " | ".join(f"T={T}" for T in Ts) + " |"); print("|---" * (len(Ts) + 1) + "|")
for p in sorted(t): print(f"| {p} | " + " | ".join(f"{t[p][T][0]:.1f} ({t[p][T][1]:.0f}%)" for T in Ts) + " |")
PY
tar cJf $OUT/call$RUN.tar.xz -C $W .
cat $W/gpu.txt $W/state.txt; tail -3 $W/err.log
