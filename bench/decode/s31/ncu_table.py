"""Table of s31/call1.sh's ncu CSV files (--page raw): per launch its time, DRAM read and share of peak,
L2 bytes, instructions, issue activity, warps an SM, the SMs' active share, and the three largest stall
reasons (warps stalled per issued instruction)."""
import csv, sys
def num(s):
    try: return float(s.replace(',', ''))
    except ValueError: return float('nan')
for f in sys.argv[1:]:
    rows = [r for r in csv.reader(open(f)) if len(r) > 10]
    rows = rows[next((i for i, r in enumerate(rows) if r[0] == "ID"), len(rows)):]  # bench lines with commas first
    print("==", f.split('/')[-1])
    if not rows: print("   no rows"); continue
    h = rows[0]; ix = {n: i for i, n in enumerate(h)}
    for r in rows[2:]:
        g = lambda n: num(r[ix[n]]) if n in ix else float('nan')
        st = sorted(((g(n), n.split('stalled_')[1].split('_per_issue')[0]) for n in ix if 'issue_stalled_' in n), reverse=True)[:4]
        print(f"{r[ix['Kernel Name']][:34]:34s} {g('gpu__time_duration.sum')/1e3:7.1f} us rd {g('dram__bytes_read.sum')/1e6:6.1f} MB"
              f" dram {g('dram__throughput.avg.pct_of_peak_sustained_elapsed'):5.1f}% L2 {g('lts__t_bytes.sum')/1e6:6.1f} MB"
              f" inst {g('sm__inst_executed.sum')/1e6:6.2f} M issue {g('smsp__issue_active.avg.pct_of_peak_sustained_active'):5.1f}%"
              f" warps {g('sm__warps_active.avg.per_cycle_active'):5.1f} act {g('sm__cycles_active.avg')/g('gpc__cycles_elapsed.max'):4.2f}"
              f" grid {g('launch__grid_size'):.0f}x{g('launch__block_size'):.0f} r{g('launch__registers_per_thread'):.0f} | "
              + " ".join(f"{n} {v:.2f}" for v, n in st))
