# all activation rows staged in one loop (was a loop per row): tests, then T <= 16
B=build-devbin/bench_decode; TESTS=build-devbin/tests/moe-tests
export MOE_TEST_SEED=999
(timeout 200 $TESTS cuda_decode; timeout 200 $TESTS cuda_quant_cases) 2>&1 | grep -E "FAIL|passed, |fail"
for v in "" "MOE_DECODE_FUSED=1"; do
  echo "== variant [$v]"
  for p in qwen3-30b-a3b deepseek-v3 gpt-oss-20b mixtral-8x7b; do env MOE_DECODE_STREAM=1 $v timeout 60 $B --dense --only $p --reps 15 2>&1 | grep -E " us " | grep -E "T= *(1|2|4|8|16) "; done
done 2>&1 | sed 's/ GB\/s.*//; s/  */ /g'
timeout 100 $B --quant --reps 15 2>&1 | grep -E " us " | grep -E "T= *(1|2|4|8|16) " | sed 's/ GB\/s.*//; s/  */ /g'
