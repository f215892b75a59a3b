#!/bin/sh
# The CPU backend's table: every weight type x T in {1, 8, 64, 512}, Qwen3-30B-A3B
# expert shape (D 2048, I 768, E 128, K 8), f32 activations, 2 threads,
# weights from memory (--cold). Appends one JSON line per run to
# bench/cpu/results.json (moe-bench --json) and prints the summary lines.
# Then the same types through bench/cpu/kbench (CPU time of thread 0, 1 thread,
# E 128), which stays meaningful when other processes share the machine.
#   bench/cpu/run.sh [build dir, default build]
set -e
B=${1:-build}
OUT=bench/cpu/results.json
KOUT=bench/cpu/kbench.txt
: > "$OUT"
: > "$KOUT"
echo "# $(date -u +%FT%TZ) $(git rev-parse --short HEAD 2>/dev/null) load $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$KOUT"
for t in f32 f16 bf16 q8_0 q4_0 q2_K q3_K q4_K q5_K q6_K mxfp4; do
  for T in 1 8 64 512; do
    s=2; [ "$T" = 512 ] && s=4
    "$B/moe-bench" --preset qwen3-30b-a3b --tokens "$T" --wtype "$t" --backend cpu --threads 2 --cold \
      --seconds "$s" --check 4 --json "$OUT" > /tmp/moe-bench.$$.txt 2>&1 || true
    printf '%-6s T=%-4s %s | %s | %s\n' "$t" "$T" \
      "$(grep 'median per forward' /tmp/moe-bench.$$.txt | sed 's/  */ /g')" \
      "$(grep 'share of roofline' /tmp/moe-bench.$$.txt | sed 's/  */ /g')" \
      "$(grep 'memory probe' /tmp/moe-bench.$$.txt | sed 's/  */ /g')"
  done
done
rm -f /tmp/moe-bench.$$.txt
cc -O2 -Iinclude bench/cpu/kbench.c "$B/libmoe.a" -lpthread -lm -o "$B/kbench"
for t in f32 f16 bf16 q8_0 q4_0 q2_K q3_K q4_K q5_K q6_K mxfp4; do
  for T in 1 8 64 512; do
    it=100; [ "$T" = 64 ] && it=10; [ "$T" = 512 ] && it=3
    "$B/kbench" "$t" "$T" 1 128 "$it" | tee -a "$KOUT"
  done
done
