#!/bin/bash
# Session 6: GGUF streaming consumers with several rows per warp (256 / SRS lanes a
# row) and 40 KB stages (src/cuda/decode_stream.cuh, decode.cu SV_STAGE_GGUF).
#   OUT=out bash bench/decode/run_s6.sh
# runs, in one device call: the decode/quant C tests and compute-sanitizer on the
# quant streaming cases (TESTS=0 skips), then bench_decode for each variant of
# VARIANTS side by side, and a table (last). A variant is name:binary[:ENV=V,...],
# binary "new" (this tree, build-devbin/carry/bench_decode.gz) or "head"
# (bench_decode_head.gz, the commit before the change); ENV pairs are set for its run.
OUT=${OUT:-bench/decode/out}; mkdir -p "$OUT"
C=build-devbin/carry; mkdir -p /tmp/b
for f in $C/*.gz; do gunzip -c $f > /tmp/b/$(basename $f .gz); chmod +x /tmp/b/$(basename $f .gz); done
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv; } > "$OUT/gpu.txt" 2>&1
export MOE_TEST_SEED=${MOE_TEST_SEED:-12345}
if [ "${TESTS:-1}" = 1 ]; then
  ( timeout 200 /tmp/b/moe-tests cuda_decode; timeout 200 /tmp/b/moe-tests cuda_quant ) > "$OUT/tests.log" 2>&1
  [ "$NO_SAN" = 1 ] || ( MOE_SV_DOWNE=1 timeout 120 compute-sanitizer --tool memcheck /tmp/b/moe-tests cuda_quant_cases_stream
    MOE_SV_DOWNE=0 timeout 120 compute-sanitizer --tool memcheck /tmp/b/moe-tests cuda_quant_cases_stream
    timeout 120 compute-sanitizer --tool racecheck /tmp/b/moe-tests cuda_quant_cases_stream_down_expert
    timeout 120 compute-sanitizer --tool synccheck /tmp/b/moe-tests cuda_quant_cases_stream ) > "$OUT/sanitizer.log" 2>&1
  echo "== tests"; grep -E "^FAIL|FAILED|passed, |fail" "$OUT/tests.log" | head -30
  echo "== sanitizer"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed, " "$OUT/sanitizer.log"
fi
[ "${BENCH:-1}" = 1 ] || exit 0
R=${REPS:-20}
VARIANTS=${VARIANTS:-"head:head new:new"}
for spec in $VARIANTS; do
  IFS=: read -r v bin envs <<< "$spec"
  b=/tmp/b/bench_decode; [ "$bin" = head ] && b=/tmp/b/bench_decode_head
  ( for kv in ${envs//,/ }; do export "$kv"; done
    timeout 200 $b ${BENCH_ARGS:---quant} --reps $R --json "$OUT/decode_$v.jsonl" > "$OUT/bench_$v.log" 2>&1 )
done
python3 - "$OUT" "$VARIANTS" <<'PY'
import json, sys, collections
o = sys.argv[1]
vs = [s.split(":")[0] for s in sys.argv[2].split()]
rows = collections.OrderedDict()
for v in vs:
    try: lines = open(f"{o}/decode_{v}.jsonl").readlines()
    except OSError: continue
    for l in lines:
        r = json.loads(l)
        if r["variant"] != "stream": continue
        rows.setdefault((r["preset"], r["wtype"], r["T"]), {})[v] = (r["median_us"], r["pct_read_bw"])
b = vs[0]
print("preset wtype T | " + " | ".join(f"{v} us (read%)" for v in vs) + " | " + " | ".join(f"{v}/{b}" for v in vs[1:]))
for (p, w, t), d in rows.items():
    g = lambda k: "%.1f (%.0f%%)" % d[k] if k in d else "-"
    h = d.get(b, (0, 0))[0]
    print(f"{p} {w} {t} | " + " | ".join(g(k) for k in vs) + " | " +
          " | ".join("%.3f" % (d[k][0] / h) if k in d and h else "-" for k in vs[1:]))
PY
