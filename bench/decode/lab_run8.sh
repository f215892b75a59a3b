# fused (one cooperative launch) vs two launches: tests, sanitizer, then T <= 4
B=build-devbin/bench_decode; TESTS=build-devbin/tests/moe-tests
export MOE_TEST_SEED=12345
timeout 200 $TESTS cuda_decode 2>&1 | grep -E "FAIL|passed|fail" | head
timeout 200 $TESTS cuda_quant_cases 2>&1 | grep -E "FAIL|passed|fail" | head
timeout 60 compute-sanitizer --tool memcheck $TESTS cuda_decode_bad_ids 2>&1 | grep -E "SUMMARY|passed"
timeout 60 compute-sanitizer --tool racecheck $TESTS cuda_decode_bad_ids 2>&1 | grep -E "SUMMARY|passed"
for v in "" "MOE_DECODE_FUSED=0"; do
  echo "== variant [$v]"
  for p in qwen3-30b-a3b mixtral-8x7b deepseek-v3 gpt-oss-20b gpt-oss-120b; do env MOE_DECODE_STREAM=1 $v timeout 60 $B --dense --only $p --reps 15 | grep -E "stream.* us " | grep -E "T= *(1|2|4) " ; done
  env $v timeout 100 $B --quant --reps 15 | grep -E " us " | grep -E "T= *(1|2|4) "
done 2>&1 | sed 's/ GB\/s.*//; s/  */ /g'
