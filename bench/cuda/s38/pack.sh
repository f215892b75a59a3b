#!/bin/bash
# Session 38: the carry for the device calls. nvcc compresses the fatbins, which xz then cannot shrink: the
# register-A kernels' objects (gemm_sm90_q.cu, gemm_sm90_qd.cu) are compiled again with -no-compress (CMake's
# command for them, build-gpu/CMakeFiles/moe_obj.dir/build.make, plus the flag), then libmoe.so, moe-tests and
# libmoe_internal.a are linked and libmoe.so, moe-tests and bench_decode stripped into one xz archive.
#   bash bench/cuda/s38/pack.sh build-gpu/carryNN      (from the repository root; build-gpu configured by CMake)
# NOQ=1: those two objects are already the -no-compress ones (no header of theirs changed since): link only.
set -e
DST=${1:?carry folder}
B=build-gpu
ROOT=$(pwd)
cd $B
F=$(sed -n 's/^CUDA_FLAGS = //p' CMakeFiles/moe_obj.dir/flags.make)
D=$(sed -n 's/^CUDA_DEFINES = //p' CMakeFiles/moe_obj.dir/flags.make)
for s in $([ "$NOQ" = 1 ] || echo gemm_sm90_q gemm_sm90_qd); do
  /usr/local/cuda/bin/nvcc -forward-unknown-to-host-compiler $D --options-file CMakeFiles/moe_obj.dir/includes_CUDA.rsp \
    $F -no-compress -x cu -c $ROOT/src/cuda/$s.cu -o CMakeFiles/moe_obj.dir/src/cuda/$s.cu.o &
done
wait
[ "$NOQ" = 1 ] || touch CMakeFiles/moe_obj.dir/src/cuda/gemm_sm90_q.cu.o CMakeFiles/moe_obj.dir/src/cuda/gemm_sm90_qd.cu.o
make -j2 moe moe-tests moe_internal > /dev/null
nvcc -O2 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I$ROOT/include $ROOT/bench/decode/bench_decode.cu \
  libmoe_internal.a -lcuda -lnvrtc -o bench_decode
rm -rf /tmp/pk && mkdir -p /tmp/pk
cp libmoe.so.0.1.0 /tmp/pk/libmoe.so && cp tests/moe-tests bench_decode /tmp/pk/
strip /tmp/pk/libmoe.so /tmp/pk/moe-tests /tmp/pk/bench_decode
mkdir -p $ROOT/$DST
tar cf - -C /tmp/pk . | xz --lzma2=preset=9e,dict=256MiB -T2 > $ROOT/$DST/bins.tar.xz
ls -la $ROOT/$DST/bins.tar.xz
