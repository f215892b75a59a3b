B=build-devbin/bench_decode; TESTS=build-devbin/tests/moe-tests
export MOE_TEST_SEED=12345
timeout 200 $TESTS cuda_decode 2>&1 | grep -E "FAIL|passed|fail" | head
timeout 200 $TESTS cuda_quant_cases 2>&1 | grep -E "FAIL|passed|fail" | head
timeout 60 compute-sanitizer --tool memcheck $TESTS cuda_decode_bad_ids 2>&1 | grep -E "SUMMARY|passed"
timeout 60 $B --probe --dense --only none | grep -E "probe: read (25|50|75)|HBM"
for v in "" "MOE_DECODE_FUSED=0"; do
  echo "== variant [$v]"
  env MOE_DECODE_STREAM=1 $v timeout 60 $B --dense --only qwen3-30b-a3b --tokens 1 --reps 15 | grep -E " us "
  env MOE_DECODE_STREAM=1 $v timeout 60 $B --dense --only deepseek-v3 --tokens 1 --reps 15 | grep -E " us "
  env $v timeout 100 $B --quant --only qwen3-30b-a3b --tokens 1 --reps 15 | grep -E " us "
done 2>&1 | sed 's/ GB\/s.*//; s/  */ /g'
