# Session 2, last device call: tests + sanitizers on the final streaming kernels, then the benchmark
B=build-devbin/bench_decode; TESTS=build-devbin/tests/moe-tests
export MOE_TEST_SEED=2468
(timeout 250 $TESTS cuda_decode; timeout 150 $TESTS cuda_quant) > $OUT/tests.log 2>&1
(timeout 100 compute-sanitizer --tool memcheck $TESTS cuda_quant_cases_stream
 timeout 60 compute-sanitizer --tool memcheck $TESTS cuda_decode_bad_ids
 timeout 60 compute-sanitizer --tool racecheck $TESTS cuda_decode_bad_ids) > $OUT/sanitizer.log 2>&1
timeout 200 $B --dense --quant --reps 15 --json $OUT/decode.jsonl > $OUT/bench.log 2>&1
echo "== tests"; grep -E "^FAIL|FAILED|passed, " $OUT/tests.log
echo "== sanitizer"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/sanitizer.log
grep -E " us " $OUT/bench.log | grep -E "T= *(1|2|4|8) " | sed 's/ GB\/s.*//; s/  */ /g' | head -80
