#!/bin/bash
# Session 4: the streaming kernels with pair groups and the expert-major down phase.
#   PART=tests OUT=out bash bench/decode/run_s4.sh   # decode/quant C tests + compute-sanitizer on the new paths
#   PART=bench OUT=out bash bench/decode/run_s4.sh   # bench_decode, HEAD binary (before) and this tree side by side
# Binaries come gzipped in build-devbin/carry/ (built on the dev machine for sm_90a):
#   moe-tests.gz, bench_decode.gz (this tree), bench_decode_head.gz (1a2c6c3, before the session),
#   bench_decode_prev.gz (variant "prev": the previous commit of an A/B).
OUT=${OUT:-bench/decode/out}; mkdir -p "$OUT"
C=build-devbin/carry; mkdir -p /tmp/b
for f in $C/*.gz; do gunzip -c $f > /tmp/b/$(basename $f .gz); chmod +x /tmp/b/$(basename $f .gz); done
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv; } > "$OUT/gpu.txt" 2>&1
export MOE_TEST_SEED=${MOE_TEST_SEED:-12345}
if [ "${PART:-tests}" = tests ]; then
  ( timeout 250 /tmp/b/moe-tests cuda_decode; timeout 250 /tmp/b/moe-tests cuda_quant ) > "$OUT/tests.log" 2>&1
  # NO_SAN=1: no sanitizer; NO_SAN=some: racecheck on the small bad-ids test only
  [ "$NO_SAN" = 1 ] || ( timeout 60 compute-sanitizer --tool racecheck /tmp/b/moe-tests cuda_decode_bad_ids
    [ "$NO_SAN" = some ] && exit 0
    timeout 60 compute-sanitizer --tool memcheck /tmp/b/moe-tests cuda_decode_bad_ids
    timeout 60 compute-sanitizer --tool synccheck /tmp/b/moe-tests cuda_decode_bad_ids
    timeout 60 compute-sanitizer --tool memcheck /tmp/b/moe-tests cuda_decode_graph
    MOE_SV_DOWNE=1 timeout 120 compute-sanitizer --tool memcheck /tmp/b/moe-tests cuda_quant_cases_stream
    MOE_SV_DOWNE=1 timeout 120 compute-sanitizer --tool racecheck /tmp/b/moe-tests cuda_decode_cases_stream ) > "$OUT/sanitizer.log" 2>&1
  echo "== tests"; grep -E "^FAIL|FAILED|passed, |^skip|fail" "$OUT/tests.log" | head -40
  echo "== sanitizer"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed, " "$OUT/sanitizer.log"
else
  R=${REPS:-20}
  for v in ${VARIANTS:-head new}; do
    b=/tmp/b/bench_decode; [ $v = head ] && b=/tmp/b/bench_decode_head; [ $v = prev ] && b=/tmp/b/bench_decode_prev
    unset MOE_SV_DOWNE MOE_SV_PLAN MOE_DECODE_FUSED
    case $v in d0) export MOE_SV_DOWNE=0;; d1) export MOE_SV_DOWNE=1;; p0) export MOE_SV_PLAN=0;; f0) export MOE_DECODE_FUSED=0;; esac
    timeout 280 $b ${BENCH_ARGS:---dense --quant} --reps $R --json "$OUT/decode_$v.jsonl" > "$OUT/bench_$v.log" 2>&1
  done
  unset MOE_SV_DOWNE MOE_SV_PLAN MOE_DECODE_FUSED
  python3 - "$OUT" <<'PY'
import json, sys, collections
o = sys.argv[1]
rows = collections.OrderedDict()
import os
vs = os.environ.get("VARIANTS", "head new").split()
for v in vs:
    for l in open(f"{o}/decode_{v}.jsonl"):
        r = json.loads(l)
        rows.setdefault((r["preset"], r["wtype"], r["T"]), {})[f'{v}-{r["variant"]}'] = (r["median_us"], r["pct_read_bw"])
cols = [f"{v}-stream" for v in vs] + ["head-kdec"]
print("preset wtype T | " + " | ".join(cols) + " | best stream / best head")
for (p, w, t), d in rows.items():
    def g(k): return "%.1f (%.0f%%)" % d[k] if k in d else "-"
    hb = min([d[k][0] for k in ("head-stream", "head-kdec") if k in d] or [0])
    ns = min([d[k][0] for k in cols[1:-1] if k in d] or [0])
    print(f"{p} {w} {t} | " + " | ".join(g(k) for k in cols) + f" | {ns/hb if hb else 0:.2f}")
PY
fi
