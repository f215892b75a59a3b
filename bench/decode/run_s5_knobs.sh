#!/bin/bash
# Session 5: the streaming kernels' planning knobs at small T (decode.cu sv_plan),
# this tree's bench_decode under each setting, side by side:
#   OUT=out KNOBS="base b1 s8 s32" TOKENS="1" bash bench/decode/run_s5_knobs.sh
# base: defaults; b1: MOE_SV_BPS=1 (one block per SM, rows per block doubled);
# s8 / s32: MOE_SV_STAGE=8192 / 32768 (bytes per stage; default 16384 GGUF, 32768 dense);
# n4: MOE_SV_NS=4 (ring depth cap; default 6);
# c110 / c100 / c90: MOE_SV_BPS=1 MOE_SV_SMEM=110000 / 100000 / 90000: one block per SM
#   using under half of its shared memory, so that a block of the next launch (the
#   down phase, programmatic dependent launch) fits beside it and streams meanwhile.
# TOKENS="1 2 4": one bench run per T (BENCH_ARGS without --tokens).
OUT=${OUT:-bench/decode/out}; mkdir -p "$OUT" /tmp/b
gunzip -c build-devbin/carry/bench_decode.gz > /tmp/b/bench_decode; chmod +x /tmp/b/bench_decode
for k in ${KNOBS:-base b1 s8 s32}; do
  case $k in base) E=;; b1) E=MOE_SV_BPS=1;; s8) E=MOE_SV_STAGE=8192;; s32) E=MOE_SV_STAGE=32768;; n4) E=MOE_SV_NS=4;;
    c110) E="MOE_SV_BPS=1 MOE_SV_SMEM=110000";; c100) E="MOE_SV_BPS=1 MOE_SV_SMEM=100000";; c90) E="MOE_SV_BPS=1 MOE_SV_SMEM=90000";; esac
  for t in ${TOKENS:-1}; do
    env $E timeout 150 /tmp/b/bench_decode ${BENCH_ARGS:---dense --quant} --tokens $t --reps ${REPS:-20} --json "$OUT/knob_$k.jsonl" >> "$OUT/knob_$k.log" 2>&1
  done
done
python3 - "$OUT" <<'PY'
import json, sys, os, collections
o = sys.argv[1]; ks = os.environ.get("KNOBS", "base b1 s8 s32").split()
rows = collections.OrderedDict()
for k in ks:
    for l in open(f"{o}/knob_{k}.jsonl"):
        r = json.loads(l)
        if r["variant"] == "stream": rows.setdefault((r["preset"], r["wtype"], r["T"]), {})[k] = r["median_us"]
print("preset wtype T | " + " | ".join(ks) + " | best/base")
for key, d in rows.items():
    b = d.get("base")
    print(" ".join(map(str, key)) + " | " + " | ".join("%.1f" % d[k] if k in d else "-" for k in ks) +
          " | %.3f" % (min(d.values()) / b if b else 0))
PY
