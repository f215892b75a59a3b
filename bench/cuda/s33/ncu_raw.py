"""Every launch of an ncu --csv --page raw file: the kernel's name and the metrics asked for (not
the device attributes), each with its unit."""
import csv, lzma, sys
for f in sys.argv[1:]:
    rows = [r for r in csv.reader(lzma.open(f, 'rt') if f.endswith('.xz') else open(f)) if len(r) > 10]
    rows = rows[next((i for i, r in enumerate(rows) if r[0] == "ID"), len(rows)):]
    print("==", f.split('/')[-1])
    if len(rows) < 3: print("   no rows"); continue
    h, u = rows[0], rows[1]
    ms = [i for i, n in enumerate(h) if '__' in n and not n.startswith(('device__', 'launch__', 'profiler__', 'nvlink__', 'numa__', 'pmsampling:', 'c2clink__', 'sm__maximum', 'smsp__maximum'))
          and '.max' not in n and '.min' not in n and not ('.avg' in n and 'pct' not in n and 'per_second' not in n)]
    for r in rows[2:]:
        print(f"  {r[h.index('Kernel Name')][:20]:20s} " + "  ".join(f"{h[i].split('.')[0]} {r[i]} {u[i]}" for i in ms))
