#!/bin/bash
# Session 21's device plan (the session had no GPU): the branch s21-qs against the session's start.
#   OUT=out CARRY=dir TESTS="..." SAN="tool:test ..." VARIANTS="new new:MOE_SM90_QS_TAIL=0 c1 base" \
#     PARGS="--only qwen3-30b-a3b,mixtral-8x7b,deepseek-v3 --prefill-tokens 512,4096 --qtypes q4_K,q8_0 --reps 10" \
#     bash bench/decode/s21/run.sh
# CARRY holds *.tar.xz with moe-tests and bench_decode[_NAME] (stripped). TESTS: moe-tests filters, run side
# by side; SAN: compute-sanitizer runs (MOE_QUANT_PREFILL_T=0); then, per VARIANTS entry NAME[:VAR=VALUE],
# bench_decode_NAME (new: bench_decode) --prefill --prefill-nodeq PARGS with VAR=VALUE set; a table last.
OUT=${OUT:-bench/decode/out}; mkdir -p "$OUT"
# the archives, the tests and the sanitizers as session 20's script runs them
OUT=$OUT PARGS= bash "$(dirname "$0")/../s20/run.sh"
[ -n "$PARGS" ] || exit 0
for spec in ${VARIANTS:-new}; do
  IFS=: read -r v env <<< "$spec"
  b=/tmp/b/bench_decode; [ "$v" = new ] || b=/tmp/b/bench_decode_$v
  tag=$v${env:+_${env//[^A-Za-z0-9]/_}}
  env $env timeout ${BENCH_TIMEOUT:-300} $b --prefill --prefill-nodeq $PARGS --json "$OUT/prefill_$tag.jsonl" > "$OUT/prefill_$tag.log" 2>&1
  echo "== prefill $tag (rc $?)"
done
python3 - "$OUT" <<'PY'
import glob, json, os, sys
rows = {}
tags = []
for f in sorted(glob.glob(os.path.join(sys.argv[1], "prefill_*.jsonl"))):
    tag = os.path.basename(f)[8:-6]; tags.append(tag)
    for l in open(f):
        d = json.loads(l)
        if d.get("variant") == "prefill-gguf":
            rows.setdefault((d["preset"], d["wtype"], d["T"]), {})[tag] = (d["median_us"], d["ratio_to_bf16"])
print("x bf16 (same binary's bf16), us in brackets")
print("%-16s %-5s %5s " % ("preset", "type", "T") + " ".join("%18s" % t[:18] for t in tags))
for k in sorted(rows):
    print("%-16s %-5s %5d " % (k[0][:16], k[1], k[2]) +
          " ".join("%18s" % ("%.3f (%.0f)" % (rows[k][t][1], rows[k][t][0]) if t in rows[k] else "-") for t in tags))
PY
