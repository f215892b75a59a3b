#!/bin/bash
# ncu on the GEMM kernels of one forward per shape (cuda-sm90's gemm_sm90 or
# cuda-jit's moe_jit_gemm*), from the repository root.
#   LIB=build-gpu/libmoe.so bash bench/cuda/ncu_probe.sh PRESET T BACKEND
ncu --clock-control none --kernel-name regex:'gemm' --launch-count 4 \
  --metrics gpu__time_duration.sum,sm__pipe_tensor_op_hgmma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sectors_srcunit_tex.avg.pct_of_peak_sustained_elapsed,lts__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,lts__t_sector_hit_rate.pct,sm__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum \
  python3 bench/cuda/bench_layer.py --lib ${LIB:-build-gpu/libmoe.so} --probe --presets $1 --tokens $2 --backends $3 2>&1 | \
  grep -E "gemm|gpu__time|hgmma|dram__|lts__|sm__throughput" | sed -E 's/\(int, int, int\)|moe_cuda_gemm//g' | cut -c1-150
