#!/bin/bash
# (Its test block became s30_run_tests in ../s30/lib.sh after the session's runs: the same lines.)
# Session 35, device call 6: the dense hand-over from the decode kernels to the grouped GEMM, re-measured
# after sessions 33-34 changed the GEMM's order of units (dynamic order, 2 x 1 units by first m-tile). Every
# dense preset at T = TOKENS: the streaming kernels ("stream"), the layer a user gets ("default"), cuda-sm90
# and cuda-jit forced ("gemm-sm90", "gemm-jit"), on the same routing per T; ROUNDS rounds, the table last.
# TESTS=1: the dense decode GPU tests first (runs 7-8, on the build with the new hand-over).
#   RUN=6 ROUNDS=2 OUT=out CARRY=build-gpu/carryN bash bench/decode/s35/call6.sh
#   RUN=7 TESTS=1 TOKENS=2,3,4,5,6,7,8 ROUNDS=2 OUT=out CARRY=build-gpu/carryN bash bench/decode/s35/call6.sh
RUN=${RUN:-6}
W=/tmp/w$RUN
. $(dirname $0)/../s30/lib.sh
s30_unpack
if [ "${TESTS:-0}" = 1 ]; then # the dense decode GPU tests and the host decode tests first
  export MOE_TEST_SEED=350$RUN
  ( timeout 100 /tmp/b/moe-tests decode_ ) > $W/tests_host_decode_.log 2>&1
  s30_run_tests "cuda_decode_ cuda_stream_" 300
fi
T=${TOKENS:-2,3,4,5,6,8}
for r in $(seq 1 ${ROUNDS:-2}); do
  timeout 280 $B --dense --cross --default --no-kdec --reps 10 --dtokens $T --ctokens $T --json $W/r${r}_x.jsonl \
    > $W/out_r$r.log 2>>$W/err.log
done
python3 - $W/r*_x.jsonl > $W/cross_table.txt <<'PY'
import collections, json, sys
t = collections.defaultdict(list)
for p in sys.argv[1:]:
    for line in open(p):
        r = json.loads(line)
        t[(r["preset"], r["T"], r["variant"])].append(r["median_us"])
vs = ["stream", "default", "gemm-sm90", "gemm-jit"]
print("| preset | T | " + " | ".join(vs) + " | default / best |")
print("|---" * (len(vs) + 3) + "|")
for pr, T in sorted({(k[0], k[1]) for k in t}):
    m = {v: sum(t[(pr, T, v)]) / len(t[(pr, T, v)]) for v in vs if t.get((pr, T, v))}
    best = min(m.values())
    print(f"| {pr} | {T} | " + " | ".join(f"{m[v]:.1f}" if v in m else "-" for v in vs) +
          f" | {m.get('default', float('nan')) / best:.3f} |")
PY
tar cJf $OUT/call$RUN.tar.xz -C $W .
cat $W/gpu.txt $W/cross_table.txt; tail -3 $W/err.log
