set -o pipefail
OUT=${OUT:-out}; mkdir -p $OUT
export MOE_CACHE_DIR=/tmp/moe-jit-cache
LIB=build-devbin/libmoe.so.0.1.0
for s in "mixtral-8x7b 16384" "deepseek-v3 4096" "qwen3-30b-a3b 4096"; do
  echo "== ncu $s cuda-jit"; LIB=$LIB timeout 150 bash bench/cuda/ncu_probe.sh $s cuda-jit
done > $OUT/ncu.log 2>&1
PYTHONUNBUFFERED=1 timeout 250 python3 bench/cuda/bench_layer.py --lib $LIB \
  --backends cuda-sm90,cuda-sm90@MOE_SM90_CM=2,cuda-sm90@MOE_SM90_CN=2,cuda-sm90@MOE_SM90_CM=2+MOE_SM90_CN=2,cuda-jit \
  --presets mixtral-8x7b,gpt-oss-20b,qwen3-30b-a3b,deepseek-v3 --tokens 4096,16384 --reps 5 --ab 3 \
  --out $OUT/results_clusters_ab.json > $OUT/clusters.log 2>&1
cat $OUT/ncu.log | grep -v "^==PROF==" | head -150
grep -E "AB |^#" $OUT/clusters.log | sed 's/  */ /g'
