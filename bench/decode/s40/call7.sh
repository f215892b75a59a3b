#!/bin/bash
# Session 40 run 7: the final tree on the device: every GPU test of moe-tests (the filters below, one process each,
# in parallel; the python tests are not run here) and compute-sanitizer on the register-A kernel in clusters,
# through bench/decode/s39/call4.sh.
#   OUT=out CARRY=dir bash bench/decode/s40/call7.sh
TESTS="cuda_quant_prefill cuda_quant_stream cuda_quant_sweep cuda_quant_i8 cuda_quant_cases cuda_quant_graph \
cuda_cases_sm90 cuda_cases_sm80 cuda_cases_jit cuda_decode cuda_sm90 cuda_jit cuda_bad cuda_stream cuda_route \
jit_" \
SAN=${SAN-"racecheck:cuda_quant_prefill_gguf_mc:gemm_sm90_qs memcheck:cuda_sm90_tn_tiles:gemm_sm90_qs"} \
  OUT=${OUT:-out} CARRY=$CARRY TT=${TT:-480} bash bench/decode/s39/call4.sh
grep -h "^ok\|^FAIL\|^skip" ${OUT:-out}/tests_*.log | awk '{print $1}' | sort | uniq -c
