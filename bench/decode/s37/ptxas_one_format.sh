#!/bin/bash
# Session 37: the register findings of the GGUF GEMMs (NOTES_decode.md session 37) in 10 s a try instead of a
# 9-minute build: a copy of src/cuda/gemm_sm90_q.cu with one format (FMT: Q4_K, Q8_0, MXFP4, Q6_K, Q5_K, Q4_0,
# Q2_K, Q3_K), bf16 activations, SwiGLU and GEMM 2's epilogue only, compiled for sm_90a with ptxas -v; prints the
# serialised wgmma (C7512), the injected fences (C7519) and the spills. Needs the build folder's nvcc options
# (build-gpu: cmake -B build-gpu with CUDA). Output in ${OUTDIR:-/tmp/qs_one}.
#   bash bench/decode/s37/ptxas_one_format.sh Q4_K
FMT=${1:-Q4_K}
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
O=${OUTDIR:-/tmp/qs_one}
mkdir -p $O
python3 - "$FMT" "$ROOT/src/cuda/gemm_sm90_q.cu" "$O/q_$FMT.cu" <<'PY'
import sys
fmt, src, dst = sys.argv[1:4]
s = open(src).read()
s = s.replace('MOE_CUDA_FOR_ACTS(MOE_ACT_CASE_)', 'MOE_ACT_CASE_(-1) MOE_ACT_CASE_(MOE_ACT_SWIGLU)')
s = s.replace('MOE_CUDA_FOR_ACTS(MOE_ACT_PREP_)', 'MOE_ACT_PREP_(-1) MOE_ACT_PREP_(MOE_ACT_SWIGLU)')
i = s.index('    switch (g->qfmt) {\n    case MOE_DF_Q8_0: return dispatch_f')
j = s.index('    }\n}', i)
s = s[:i] + '    return dispatch_f<SM90_QF_%s>(g, tm, tmB0, tmB1, sm_count, s);\n}' % fmt + s[j + 7:]
i = s.index('    static cudaError_t (*const prep[])(void) = {')
j = s.index('};', i)
s = s[:i] + '    static cudaError_t (*const prep[])(void) = {prepare_q<__nv_bfloat16, SM90_QF_%s>' % fmt + s[j:]
s = s.replace('return g->dtype == MOE_TYPE_F16 ? dispatch<__half, QF>(g, tm, b0, b1, sm_count, s)\n'
              '                                    : dispatch<__nv_bfloat16, QF>(g, tm, b0, b1, sm_count, s);',
              'return dispatch<__nv_bfloat16, QF>(g, tm, b0, b1, sm_count, s);')
open(dst, 'w').write(s)
PY
cd "$ROOT/build-gpu" && nvcc -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a \
  --options-file CMakeFiles/moe_obj.dir/includes_CUDA.rsp -I../src/cuda -Xptxas -v -c $O/q_$FMT.cu -o $O/q_$FMT.o \
  > $O/ptxas_$FMT.txt 2>&1
echo "$FMT: $(grep -c C7512 $O/ptxas_$FMT.txt) serialised (C7512), $(grep -c C7519 $O/ptxas_$FMT.txt) fences injected (C7519)"
grep -E "spill" $O/ptxas_$FMT.txt | grep -v " 0 bytes spill stores"
grep -E "error" $O/ptxas_$FMT.txt | head -3
