#!/usr/bin/env python3
"""A/B of two bench_decode --quant JSONL files from one device call.
usage: ab.py NEW.jsonl BASE.jsonl [--variant i8]
Per (preset, type, T): the variant's median in each build, new / base, and
the streaming kernels' time (new build) for reference."""
import json, sys, math
args = [a for a in sys.argv[1:] if not a.startswith('--')]
var = sys.argv[sys.argv.index('--variant') + 1] if '--variant' in sys.argv else 'i8'
if var in args: args.remove(var)
def load(f):
    d = {}
    for l in open(f):
        r = json.loads(l)
        d[(r['preset'], r['wtype'], r['variant'], r['T'])] = r
    return d
n, b = load(args[0]), load(args[1])
print('| preset | type | T | %s base us | %s new us (%% read) | new / base | streaming us |' % (var, var))
print('|---|---|---|---|---|---|---|')
logs = []
for k in sorted(n, key=lambda k: (k[0], k[1], k[3])):
    if k[2] != var or k not in b: continue
    r, s = n[k], b[k]
    st = n.get((k[0], k[1], 'stream', k[3]))
    q = r['median_us'] / s['median_us']
    logs.append(math.log(q))
    print('| %s | %s | %d | %.1f | %.1f (%.0f%%) | %.3f | %s |' % (k[0], k[1], k[3], s['median_us'], r['median_us'],
          r['pct_read_bw'], q, '%.1f' % st['median_us'] if st else '-'))
if logs: print('\ngeometric mean new / base: %.3f over %d points' % (math.exp(sum(logs) / len(logs)), len(logs)))
