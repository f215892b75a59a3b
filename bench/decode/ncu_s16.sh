#!/bin/bash
# Session 16: ncu on cuda-quant's int8 tensor-core kernels (k_qg) for the cases of
# CASES (name:preset:qtype:T), and their SASS instruction mix (cuobjdump).
#   OUT=out CARRY=dir CASES="..." bash bench/decode/ncu_s16.sh
OUT=${OUT:-bench/decode/out}; mkdir -p "$OUT" /tmp/b
C=${CARRY:-build-devbin/carry}
for f in $C/bench_decode*.gz; do [ -e "$f" ] && { gunzip -c $f > /tmp/b/$(basename $f .gz); chmod +x /tmp/b/$(basename $f .gz); }; done
for f in $C/*.tar.xz; do [ -e "$f" ] && xz -dc $f | tar xf - -C /tmp/b; done   # several binaries in one archive
for f in $C/bench_decode*.xz; do case $f in *.tar.xz) continue;; esac; [ -e "$f" ] && { xz -dc $f > /tmp/b/$(basename $f .xz); chmod +x /tmp/b/$(basename $f .xz); }; done
S="--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis"
st=""
for r in barrier long_scoreboard short_scoreboard mio_throttle wait math_pipe_throttle lg_throttle not_selected dispatch_stall no_instruction branch_resolving membar sleeping selected; do
  st="$st,smsp__average_warps_issue_stalled_${r}_per_issue_active.ratio"
done
M="--metrics smsp__inst_executed.sum,lts__t_sector_hit_rate.pct,lts__t_sectors_srcunit_tex_op_read.sum,dram__sectors_read.sum,sm__pipe_tensor_op_imma_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed_pipe_lsu.sum,smsp__inst_executed_op_ldgsts.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,dram__bytes_read.sum,sm__cycles_active.avg$st"
for cs in ${CASES:-mixtral_q80_t16:mixtral-8x7b:q8_0:16}; do
  for b in ${BINS:-bench_decode}; do
  IFS=: read -r cn preset qt T <<< "$cs"
  MOE_DECODE_STREAM=0 MOE_QUANT_PREFILL_T=-1 timeout 200 ncu --clock-control none $S $M --kernel-name-base demangled -k "regex:k_qg<" \
    --launch-skip ${SKIP:-0} --launch-count ${COUNT:-2} /tmp/b/$b --quant --only $preset --qtypes $qt --qtokens $T \
    --no-kdec --reps 1 > "$OUT/ncu_${cn}_$b.txt" 2>&1
  echo "== $cn $b"
  grep -E "k_qg<|lts__|dram__sectors|imma|pipe_lsu|ldgsts|L2 Hit|Mem Busy|Max Bandwidth|Duration|DRAM Throughput|Issued Warp Per|No Eligible|Warp Cycles Per Issued|Grid Size|Registers Per|Achieved Occupancy|Theoretical Occ|Block Limit|smsp__inst_executed.sum|wavefronts_mem_shared|bank_conflicts|dram__bytes|stalled_(long|short|wait|barrier|mio|math|not_sel|selected|no_inst|dispatch|branch|lg)" "$OUT/ncu_${cn}_$b.txt" | sed 's/smsp__average_warps_issue_stalled_//; s/_per_issue_active.ratio//; s/  */ /g' | head -70
  done
done
if command -v cuobjdump > /dev/null; then
  cuobjdump -sass /tmp/b/bench_decode 2>/dev/null | awk '/Function : .*k_qgILi3ELi0ELi1E/{f=1} f&&/Function : /&&!/k_qgILi3ELi0ELi1E/{f=0} f' > "$OUT/sass_q80_gu_nt1.txt"
  echo "== sass k_qg<Q8_0, GATE_UP, 1>: $(wc -l < "$OUT/sass_q80_gu_nt1.txt") lines"
  grep -oE "^ +/\*[0-9a-f]+\*/ +[A-Z0-9_.]+" "$OUT/sass_q80_gu_nt1.txt" | awk '{print $2}' | sed 's/\..*//' | sort | uniq -c | sort -rn | head -25
fi
