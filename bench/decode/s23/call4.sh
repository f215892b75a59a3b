#!/bin/bash
# Session 23, device call 4: MXFP4 on the GGUF GEMMs (register-A kernel, 2-byte units, row groups of up to 8).
# Tests (GGUF GEMMs with MXFP4 on every case, forced prefill, quant cases, the T sweep), memcheck and racecheck
# of the GGUF GEMM test; then gpt-oss MXFP4 prefill: GGUF GEMMs / dequantising / decode kernels, x bf16.
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s23/call4.sh
W=/tmp/w; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $W/gpu.txt
export MOE_TEST_SEED=12345
for t in cuda_quant_prefill_gguf_gemm cuda_quant_prefill_forced cuda_quant_cases cuda_quant_sweep_T cuda_quant_graph_capture; do
  timeout 200 /tmp/b/moe-tests $t > $W/tests_$t.log 2>&1 & done
for tool in memcheck racecheck; do
  ( MOE_QUANT_PREFILL_T=0 timeout 280 compute-sanitizer --tool $tool /tmp/b/moe-tests cuda_quant_prefill_gguf_gemm ) \
    > $W/san_$tool.log 2>&1 &
done
wait
echo "== tests"; tail -qn1 $W/tests_*.log; grep -hE "^FAIL|FAILED|error|GGUF GEMMs against" $W/tests_*.log | head -20
echo "== sanitizer"; grep -hE "ERROR SUMMARY|RACECHECK SUMMARY|passed, " $W/san_*.log
B=/tmp/b/bench_decode
timeout 200 $B --prefill --prefill-decode --only gpt-oss-20b,gpt-oss-120b --prefill-tokens 64,128,256,512,2048,4096 \
  --qtypes mxfp4 --reps 10 --json $W/oss.jsonl > $W/oss.log 2>&1
echo "== gpt-oss (rc $?)"
grep -hE "^prefill" $W/oss.log | sed -E 's/ +\(.*//; s/  +/ /g; s/ TFLOP.s//; s/x the bf16 time/x/'
tar cJf $OUT/call4.tar.xz -C $W .
