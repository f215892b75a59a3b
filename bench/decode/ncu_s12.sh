#!/bin/bash
# Session 12: ncu on the two streaming kernels (gate/up, down) of one forward for the
# cases in CASES (name:preset:qtype:T), each variant of VARS (name:bin:ENV=V,...; bin new =
# bench_decode.gz, else bench_decode_NAME.gz): time, DRAM share, issue activity,
# instructions, occupancy and what the warps wait on (stalls per issued instruction).
#   OUT=out CARRY=dir CASES="..." VARS="..." bash bench/decode/ncu_s12.sh
OUT=${OUT:-bench/decode/out}; mkdir -p "$OUT" /tmp/b
C=${CARRY:-build-devbin/carry}
for f in $C/bench_decode*.gz; do gunzip -c $f > /tmp/b/$(basename $f .gz); chmod +x /tmp/b/$(basename $f .gz); done
S="--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats"
st=""
for r in barrier long_scoreboard short_scoreboard mio_throttle wait math_pipe_throttle lg_throttle not_selected dispatch_stall no_instruction branch_resolving membar sleeping selected; do
  st="$st,smsp__average_warps_issue_stalled_${r}_per_issue_active.ratio"
done
M="--metrics smsp__inst_executed.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,dram__bytes_read.sum,sm__cycles_active.avg$st"
for cs in ${CASES:-gptoss_mx_t1:gpt-oss-20b:mxfp4:1}; do
  IFS=: read -r cn preset qt T <<< "$cs"
  for spec in ${VARS:-base:new}; do
    IFS=: read -r v bin envs <<< "$spec"
    b=/tmp/b/bench_decode; [ "$bin" = new ] || b=/tmp/b/bench_decode_$bin
    ( for kv in ${envs//,/ }; do export "$kv"; done
      MOE_DECODE_FUSED=0 timeout 120 ncu --clock-control none $S $M --kernel-name-base demangled -k "regex:k_sv" \
        --launch-skip ${SKIP:-2} --launch-count ${COUNT:-2} $b --quant --only $preset --qtypes $qt --qtokens $T \
        --no-kdec --reps 1 > "$OUT/ncu_${cn}_$v.txt" 2>&1 )
    echo "== $cn $v ($envs)"
    grep -E "plan|k_sv<|Duration|DRAM Throughput|Issued Warp Per|No Eligible|Warp Cycles Per Issued|Grid Size|Registers Per|Achieved Occupancy|smsp__inst_executed.sum|wavefronts_mem_shared|bank_conflicts|stalled_(long|short|wait|barrier|mio|math|not_sel|selected|no_inst|dispatch|branch)" "$OUT/ncu_${cn}_$v.txt" | sed 's/smsp__average_warps_issue_stalled_//; s/_per_issue_active.ratio//; s/  */ /g' | head -60
  done
done
