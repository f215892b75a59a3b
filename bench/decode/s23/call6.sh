#!/bin/bash
# Session 23, device call 6: MXFP4's decoding with fewer instructions (negative codes as 24 minus the
# positive table's byte; block 1's code bytes by 16-bit loads): the GGUF GEMM test and memcheck, then
# gpt-oss MXFP4 prefill, new against prev (the build of run 4), two alternating rounds.
#   OUT=out CARRY=build-devbin/carryNNN bash bench/decode/s23/call6.sh
W=/tmp/w; mkdir -p $W /tmp/b
for f in $CARRY/*.tar.xz; do xz -dc $f | tar xf - -C /tmp/b; done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $W/gpu.txt
export MOE_TEST_SEED=12345
timeout 200 /tmp/b/moe-tests cuda_quant_prefill_gguf_gemm > $W/tests_gguf_gemm.log 2>&1 &
( MOE_QUANT_PREFILL_T=0 timeout 280 compute-sanitizer --tool memcheck /tmp/b/moe-tests cuda_quant_prefill_gguf_gemm ) \
  > $W/san_memcheck.log 2>&1 &
wait
echo "== tests"; tail -n3 $W/tests_gguf_gemm.log; grep -hE "ERROR SUMMARY" $W/san_memcheck.log
for r in 1 2; do
  for v in prev new; do
    b=/tmp/b/bench_decode; [ $v = new ] || b=/tmp/b/bench_decode_$v
    timeout 100 $b --prefill --prefill-nodeq --only gpt-oss-20b,gpt-oss-120b --prefill-tokens 128,512,2048,4096 \
      --qtypes mxfp4 --reps 10 --json $W/p_${v}_$r.jsonl > $W/p_${v}_$r.log 2>&1
    echo "== $v $r: $(grep -E '^prefill.*mxfp4' $W/p_${v}_$r.log | sed -E 's/ +\(.*//; s/  +/ /g' | awk '{printf "%s T%s %s | ", $2, $6, $7}')"
  done
done
tar cJf $OUT/call6.tar.xz -C $W .
