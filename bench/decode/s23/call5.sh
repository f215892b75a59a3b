#!/bin/bash
# Session 23, device call 5: MXFP4's tile rule. The register-A kernel forced to 64 and 256 tokens a tile
# (MOE_SM90_QS) for gpt-oss MXFP4 and Q8_0 at 16-256 pairs an expert; run 4 had MXFP4 at 64 pairs 1.25x
# Q8_0's time on the 256-token kernel.
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s23/call5.sh
W=/tmp/w; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $W/gpu.txt
B=/tmp/b/bench_decode
for qs in 64 256; do
  MOE_SM90_QS=$qs timeout 120 $B --prefill --prefill-nodeq --only gpt-oss-20b,gpt-oss-120b --prefill-tokens 512,1024,2048,4096 \
    --qtypes mxfp4,q8_0 --reps 10 --json $W/qs$qs.jsonl > $W/qs$qs.log 2>&1
  echo "== MOE_SM90_QS=$qs (rc $?)"
done
python3 - $W <<'PY'
import json, os, sys
r = {}
for qs in (64, 256):
    for l in open(os.path.join(sys.argv[1], "qs%d.jsonl" % qs)):
        d = json.loads(l)
        if d["variant"] == "prefill-gguf":
            r.setdefault((d["preset"], d["wtype"], d["T"]), {})[qs] = (d["median_us"], d["ratio_to_bf16"])
print("%-13s %-6s %5s %5s %16s %16s" % ("preset", "type", "T", "ppe", "64 tokens", "256 tokens"))
for k in sorted(r):
    E, K = (32, 4) if k[0] == "gpt-oss-20b" else (128, 4)
    print("%-13s %-6s %5d %5d %16s %16s" % (k[0], k[1], k[2], k[2] * K // E,
          *["%.0f (%.2f)" % r[k][q] if q in r[k] else "-" for q in (64, 256)]))
PY
tar cJf $OUT/call5.tar.xz -C $W .
