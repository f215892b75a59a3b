#!/bin/bash
# Session 5: GGUF decoders with aligned word loads and per-format dots (src/cuda/qdot.cuh).
#   OUT=out bash bench/decode/run_s5.sh
# runs, in one device call: the decode/quant C tests, the qdot host+GPU check,
# compute-sanitizer on the quant streaming cases, then bench_decode --quant
# for each binary of VARIANTS side by side, and a table (last).
# Binaries come gzipped in build-devbin/carry/ (built on the dev machine for sm_90a):
#   moe-tests.gz, moe-qdot-test.gz, bench_decode.gz (this tree, "new"),
#   bench_decode_head.gz ("head": the commit before the change),
#   bench_decode_<v>.gz (any other variant <v>; f0 / f1 are this tree's binary with
#   MOE_DECODE_FUSED=0 / 1; run 1's u2 was the unit loop of sv_row_dot
#   under `#pragma unroll 2`, a macro since removed: slower, s5/README.md).
OUT=${OUT:-bench/decode/out}; mkdir -p "$OUT"
C=build-devbin/carry; mkdir -p /tmp/b
for f in $C/*.gz; do gunzip -c $f > /tmp/b/$(basename $f .gz); chmod +x /tmp/b/$(basename $f .gz); done
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv; } > "$OUT/gpu.txt" 2>&1
export MOE_TEST_SEED=${MOE_TEST_SEED:-12345}
if [ "${TESTS:-1}" = 1 ]; then
  ( timeout 200 /tmp/b/moe-tests cuda_decode; timeout 200 /tmp/b/moe-tests cuda_quant; timeout 60 /tmp/b/moe-qdot-test | grep -E "^FAIL|gpu|passed" ) > "$OUT/tests.log" 2>&1
  [ "$NO_SAN" = 1 ] || ( MOE_SV_DOWNE=1 timeout 120 compute-sanitizer --tool memcheck /tmp/b/moe-tests cuda_quant_cases_stream
    MOE_SV_DOWNE=0 timeout 120 compute-sanitizer --tool memcheck /tmp/b/moe-tests cuda_quant_cases_stream
    timeout 120 compute-sanitizer --tool racecheck /tmp/b/moe-tests cuda_quant_cases_stream_down_expert
    timeout 60 compute-sanitizer --tool memcheck /tmp/b/moe-tests cuda_decode_bad_ids
    timeout 60 compute-sanitizer --tool racecheck /tmp/b/moe-tests cuda_decode_bad_ids
    timeout 60 compute-sanitizer --tool synccheck /tmp/b/moe-tests cuda_decode_bad_ids ) > "$OUT/sanitizer.log" 2>&1
  echo "== tests"; grep -E "^FAIL|FAILED|passed, |^skip|fail" "$OUT/tests.log" | head -30
  echo "== sanitizer"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed, " "$OUT/sanitizer.log"
fi
[ "${BENCH:-1}" = 1 ] || exit 0
R=${REPS:-20}
for v in ${VARIANTS:-head new}; do
  # f0 / f1: this tree with MOE_DECODE_FUSED=0 / 1 (two launches / one cooperative launch)
  b=/tmp/b/bench_decode; case $v in new|f0|f1) ;; *) b=/tmp/b/bench_decode_$v;; esac
  unset MOE_DECODE_FUSED
  case $v in f0) export MOE_DECODE_FUSED=0;; f1) export MOE_DECODE_FUSED=1;; esac
  timeout 200 $b ${BENCH_ARGS:---quant} --reps $R --json "$OUT/decode_$v.jsonl" > "$OUT/bench_$v.log" 2>&1
done
unset MOE_DECODE_FUSED
python3 - "$OUT" <<'PY'
import json, sys, collections, os
o = sys.argv[1]
vs = os.environ.get("VARIANTS", "head new").split()
rows = collections.OrderedDict()
for v in vs:
    for l in open(f"{o}/decode_{v}.jsonl"):
        r = json.loads(l)
        if r["variant"] != "stream": continue
        rows.setdefault((r["preset"], r["wtype"], r["T"]), {})[v] = (r["median_us"], r["pct_read_bw"])
print("preset wtype T | " + " | ".join(f"{v} us (read%)" for v in vs) + " | " + " | ".join(f"{v}/head" for v in vs[1:]))
for (p, w, t), d in rows.items():
    g = lambda k: "%.1f (%.0f%%)" % d[k] if k in d else "-"
    h = d.get("head", (0, 0))[0]
    print(f"{p} {w} {t} | " + " | ".join(g(k) for k in vs) + " | " +
          " | ".join("%.3f" % (d[k][0] / h) if k in d and h else "-" for k in vs[1:]))
PY
