#!/bin/bash
# Session 23, device call 2: the prefill times of run 1 in one run against the session's start, to split
# the two changes: new (row groups + 16-byte copy-out stores), nostg (new with -DQS_STG=0: session 22's
# copy-out), base (main at 273508d). Two rounds, variants alternating; a table last (us, x the same
# binary's bf16).
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s23/call2.sh
W=/tmp/w; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $W/gpu.txt
A="--prefill --prefill-nodeq --prefill-tokens 512,4096 --qtypes q4_K,q8_0 --reps 10"
for r in 1 2; do
  for v in new nostg base; do
    b=/tmp/b/bench_decode; [ $v = new ] || b=/tmp/b/bench_decode_$v
    timeout 100 $b $A --only qwen3-30b-a3b,mixtral-8x7b,deepseek-v3 --json $W/p_${v}_$r.jsonl > $W/p_${v}_$r.log 2>&1
    echo "== $v round $r (rc $?)"
  done
done
for v in new nostg; do
  b=/tmp/b/bench_decode; [ $v = new ] || b=/tmp/b/bench_decode_$v
  timeout 60 $b $A --only gpt-oss-20b --json $W/oss_$v.jsonl > $W/oss_$v.log 2>&1
  echo "== gpt-oss $v (rc $?)"
done
python3 - $W <<'PY'
import glob, json, os, sys
rows, cols = {}, []
for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.jsonl"))):
    tag = os.path.basename(f)[:-6]
    tag = tag[2:] if tag.startswith("p_") else tag
    cols.append(tag)
    for l in open(f):
        d = json.loads(l)
        if d["variant"] == "prefill-gguf":
            rows.setdefault((d["preset"], d["wtype"], d["T"]), {})[tag] = (d["median_us"], d["ratio_to_bf16"])
print("%-14s %-5s %5s " % ("preset", "type", "T") + " ".join("%15s" % c for c in cols))
for k in sorted(rows):
    print("%-14s %-5s %5d " % (k[0][:14], k[1], k[2]) + " ".join(
        "%15s" % ("%.0f (%.3f)" % rows[k][c] if c in rows[k] else "-") for c in cols))
PY
tar cJf $OUT/call2.tar.xz -C $W .
