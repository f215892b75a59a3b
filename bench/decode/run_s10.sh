#!/bin/bash
# Session 10 device calls (bench/decode/s10, src/cuda/NOTES_decode.md session 10).
#   CARRY=build-devbin/carryNN TESTS="..." SAN="tool:test ..." DARGS="..." OUT=out bash bench/decode/run_s10.sh
# The moe-tests filters of TESTS and the compute-sanitizer runs of SAN side by
# side (correctness only), then bench_decode --dense DARGS (the rows of every
# variant, a table last), optionally torch (TORCH="presets" TORCH_T="1,2,...").
OUT=${OUT:-bench/decode/out}; mkdir -p "$OUT"
C=${CARRY:-build-devbin/carry}; mkdir -p /tmp/b
for f in $C/*.gz; do gunzip -c $f > /tmp/b/$(basename $f .gz); chmod +x /tmp/b/$(basename $f .gz); done
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv; } > "$OUT/gpu.txt" 2>&1
export MOE_TEST_SEED=${MOE_TEST_SEED:-12345}
for t in $TESTS; do timeout ${TEST_TIMEOUT:-300} /tmp/b/moe-tests $t > "$OUT/tests_$t.log" 2>&1 || echo "exit $? $t" >> "$OUT/tests_$t.log" & done
for spec in $SAN; do
  IFS=: read -r tool t <<< "$spec"
  ( timeout 300 compute-sanitizer --tool $tool /tmp/b/moe-tests $t ) > "$OUT/san_${tool}_${t}.log" 2>&1 &
done
wait
[ -n "$TESTS" ] && { echo "== tests"; cat "$OUT"/tests_*.log | grep -E "^FAIL|FAILED|passed, |^exit|fail" | head -40; }
[ -n "$SAN" ] && { echo "== sanitizer"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|Hazard|Invalid" "$OUT"/san_*.log | head -20; }
if [ -n "$DARGS" ]; then
  timeout ${BENCH_TIMEOUT:-300} /tmp/b/bench_decode --dense $DARGS --json "$OUT/decode.jsonl" > "$OUT/bench.log" 2>&1
  grep -E "HBM read|^GPU" "$OUT/bench.log"
  python3 - "$OUT/decode.jsonl" <<'PY' | tee "$OUT/table.txt"
import json, sys, collections
rows = [json.loads(l) for l in open(sys.argv[1])]
by = collections.OrderedDict()
vs = []
for r in rows:
    by.setdefault((r["preset"], r["T"]), {})[r["variant"]] = r
    if r["variant"] not in vs: vs.append(r["variant"])
print("%-14s %4s " % ("preset", "T") + " ".join("%20s" % v for v in vs) + "   onepass/best-other")
for (p, T), d in by.items():
    cells = " ".join("%12.1f (%4.1f%%)" % (d[v]["median_us"], d[v]["pct_read_bw"]) if v in d else "%20s" % "-" for v in vs)
    others = [d[v]["median_us"] for v in d if v not in ("onepass", "default")]
    ratio = d["onepass"]["median_us"] / min(others) if "onepass" in d and others else float("nan")
    print("%-14s %4d %s   %.3f" % (p, T, cells, ratio))
PY
fi
tar czf /tmp/s10_all.tgz -C "$OUT" . && find "$OUT" -type f ! -name table.txt ! -name decode.jsonl -delete && mv /tmp/s10_all.tgz "$OUT/all.tgz"
