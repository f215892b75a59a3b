"""Table of ncu_t1.sh's CSV files: kernel, duration, DRAM bytes read and throughput."""
import csv, lzma, sys
def num(s):
    try: return float(s.replace(',', ''))
    except ValueError: return float('nan')
for f in sys.argv[1:]:
    rows = [r for r in csv.reader(lzma.open(f, 'rt') if f.endswith('.xz') else open(f))]
    hi = [i for i, r in enumerate(rows) if r and r[0] == "ID"]
    print("==", f.split('/')[-1])
    if not hi: continue
    h = rows[hi[0]]; ix = {n: i for i, n in enumerate(h)}
    for r in rows[hi[0] + 2:]:
        if len(r) < 10: continue
        g = lambda n: r[ix[n]] if n in ix else "?"
        print(f"{g('Kernel Name')[:40]:40s} {num(g('gpu__time_duration.sum'))/1000:8.1f} us  read {num(g('dram__bytes_read.sum'))/1e6:7.1f} MB"
              f"  dram {g('dram__throughput.avg.pct_of_peak_sustained_elapsed'):>6s}%  sm {g('sm__throughput.avg.pct_of_peak_sustained_elapsed'):>6s}%"
              f"  warps {g('sm__warps_active.avg.pct_of_peak_sustained_active'):>6s}%  grid {g('launch__grid_size')}"
              + ("  SM active min/avg/max of elapsed %.2f / %.2f / %.2f" % tuple(num(g('sm__cycles_active.' + k)) / num(g('gpc__cycles_elapsed.max')) for k in ('min', 'avg', 'max'))
                 if 'gpc__cycles_elapsed.max' in ix else ""))
