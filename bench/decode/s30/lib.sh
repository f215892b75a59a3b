#!/bin/bash
# The common parts of session 30's device calls (sourced by callN.sh; W, CARRY and RUN set by the caller).
# The calls ran these lines inline; they were moved here after the session's runs, unchanged.
P=qwen3-30b-a3b,gpt-oss-20b,mixtral-8x7b,deepseek-v3,gpt-oss-120b
B=/tmp/b/bench_decode

# the binaries from the carried xz archives into /tmp/b, the GPU into $W/gpu.txt
s30_unpack() {
  mkdir -p $W /tmp/b
  for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
  nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version --format=csv,noheader > $W/gpu.txt
}

# the quant and decode GPU tests (one filter a process, in parallel), and the quant ones again with
# MOE_SV_HQ=0 (every down block quantising h, the form before)
s30_tests() {
  export MOE_TEST_SEED=300$RUN
  for t in cuda_quant_stream_hq cuda_quant_cases cuda_quant_sweep_ cuda_quant_stream_ cuda_quant_graph_capture cuda_quant_i8_ cuda_decode_ cuda_stream_ decode_; do
    ( timeout 300 stdbuf -oL /tmp/b/moe-tests $t ) > $W/tests_$t.log 2>&1 &
  done
  for t in cuda_quant_cases cuda_quant_sweep_T cuda_quant_stream_; do
    ( MOE_SV_HQ=0 timeout 300 stdbuf -oL /tmp/b/moe-tests $t ) > $W/tests_hq0_$t.log 2>&1 &
  done
  wait
  echo "== tests"; for f in $W/tests_*.log; do echo "$(basename $f): $(tail -n1 $f)"; done
  grep -hE "FAIL|error" $W/tests_*.log | cut -c1-300 | head -20
}

# compute-sanitizer: memcheck on test filter $1, racecheck on $2
s30_sanitize() {
  timeout 240 compute-sanitizer --tool memcheck --print-limit 5 /tmp/b/moe-tests $1 > $W/memcheck.log 2>&1
  echo "memcheck: $(grep -E 'ERROR SUMMARY' $W/memcheck.log | tail -1) $(tail -n1 $W/memcheck.log)"
  timeout 240 compute-sanitizer --tool racecheck --print-limit 5 /tmp/b/moe-tests $2 > $W/racecheck.log 2>&1
  echo "racecheck: $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' $W/racecheck.log | tail -1) $(tail -n1 $W/racecheck.log)"
}

# the GPU tests of the filters in $1 (one filter a process, in parallel, each under timeout $2, default
# 300 s), then a line a filter and the failures (session 35's calls; the calls above inline the same)
s30_run_tests() {
  for t in $1; do
    ( timeout ${2:-300} stdbuf -oL /tmp/b/moe-tests $t ) > $W/tests_$t.log 2>&1 &
  done
  wait
  echo "== tests"; for f in $W/tests_*.log; do echo "$(basename $f): $(tail -n1 $f)"; done
  grep -hE "FAIL|error" $W/tests_*.log | cut -c1-300 | head -20
}
