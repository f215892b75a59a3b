# dense streaming kernels on tensor cores (mma from staged rows): tests, then speed at T <= 16
B=build-devbin/bench_decode; TESTS=build-devbin/tests/moe-tests
export MOE_TEST_SEED=12345
timeout 120 $TESTS cuda_decode 2>&1 | grep -E "FAIL|passed|fail" | head
timeout 60 compute-sanitizer --tool memcheck $TESTS cuda_decode_bad_ids 2>&1 | grep -E "SUMMARY|passed"
for p in qwen3-30b-a3b mixtral-8x7b deepseek-v3 gpt-oss-20b gpt-oss-120b; do timeout 60 $B --dense --only $p --reps 15 | grep -E " us |^    cuda" | grep -E "T= *(1|2|4|8|16) |^    " | sed -E "s/^(    .{0,60}).*(streaming kernels|mma.sync).*/\1 .. \2/"; done 2>&1 | sed 's/ GB\/s.*//; s/  */ /g'
