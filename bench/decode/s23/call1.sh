#!/bin/bash
# Session 23, device call 1: Q8_0 rows in TMA groups (gpt-oss's 3060-byte rows on the GGUF GEMMs instead of
# the dequantising prefill) and the register-A kernel's copy-out as 16-byte stores. Tests (GGUF GEMMs with
# the new row-group cases, forced kernels, quant and sm90 case tables), memcheck and racecheck of the GGUF
# GEMM test, then the prefill times: gpt-oss Q8_0 on the GGUF GEMMs / dequantising / decode kernels, and
# the presets of session 22's run 1 (the copy-out change: compare the x-bf16 ratios with s22/run1).
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s23/call1.sh
W=/tmp/w; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $W/gpu.txt
export MOE_TEST_SEED=12345
for t in cuda_quant_prefill_gguf_gemm cuda_quant_prefill_forced cuda_quant_cases cuda_cases_sm90; do
  timeout 200 /tmp/b/moe-tests $t > $W/tests_$t.log 2>&1 & done
for tool in memcheck racecheck; do
  ( MOE_QUANT_PREFILL_T=0 timeout 240 compute-sanitizer --tool $tool /tmp/b/moe-tests cuda_quant_prefill_gguf_gemm ) \
    > $W/san_$tool.log 2>&1 &
done
wait
echo "== tests"; tail -qn1 $W/tests_*.log; grep -hE "^FAIL|FAILED|error" $W/tests_*.log | head -20
echo "== sanitizer"; grep -hE "ERROR SUMMARY|RACECHECK SUMMARY|passed, " $W/san_*.log
B=/tmp/b/bench_decode
timeout 150 $B --prefill --prefill-decode --only gpt-oss-20b,gpt-oss-120b --prefill-tokens 64,128,256,512,2048,4096 \
  --qtypes q8_0 --reps 10 --json $W/oss.jsonl > $W/oss.log 2>&1
echo "== gpt-oss (rc $?)"
timeout 150 $B --prefill --prefill-nodeq --only qwen3-30b-a3b,mixtral-8x7b,deepseek-v3 --prefill-tokens 512,4096 \
  --qtypes q4_K,q8_0 --reps 10 --json $W/presets.jsonl > $W/presets.log 2>&1
echo "== presets (rc $?)"
grep -hE "^prefill" $W/oss.log $W/presets.log | sed -E 's/ +\(.*//; s/  +/ /g; s/ TFLOP.s//; s/x the bf16 time/x/'
tar cJf $OUT/call1.tar.xz -C $W .
