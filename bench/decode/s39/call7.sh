#!/bin/bash
# Session 39 run 7: the register-A kernel without the bias-less accumulator moves (the first wgmma's scale-d 0)
# and with GEMM 2's routing weights loaded after the first wgmmas: the GPU tests and sanitizers of run 4
# (call4.sh) on this build, then bench_decode --prefill, this build against the one before (OLD: its
# bench_decode alone, in an xz archive), ROUNDS rounds on SPECS.
#   OUT=out CARRY=dir OLD=dir [SPECS=..] [ROUNDS=n] bash bench/decode/s39/call7.sh
bash bench/decode/s39/call4.sh
mkdir -p $OUT/ab
RUN=7 TESTS=0 SAN=0 ROUNDS=${ROUNDS:-2} VARIANTS="old:old: new:new:" \
  SPECS=${SPECS:-"qwen3-30b-a3b:q4_K,q5_K,q8_0:512,4096 mixtral-8x7b:q4_K:512,4096 gpt-oss-20b:mxfp4:512,4096"} \
  OUT=$OUT/ab bash bench/decode/s37/call1.sh
cd $OUT && tar cJf run7.tar.xz tests_*.log san_*.log gpu.txt && rm -f tests_*.log san_*.log
