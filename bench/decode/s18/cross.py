"""Session 18: the streaming kernels against the int8 kernels by pairs an expert
(T K / E), from bench_decode --quant --default rows (stream, i8, default).
    python3 bench/decode/s18/cross.py FILE.jsonl [FILE.jsonl ...]"""
import json, sys, collections
KE = {'qwen3-30b-a3b': (8, 128), 'mixtral-8x7b': (2, 8), 'gpt-oss-20b': (4, 32), 'deepseek-v3': (8, 256)}
t = collections.defaultdict(dict)
for f in sys.argv[1:]:
    for l in open(f):
        r = json.loads(l)
        t[(r['preset'], r['wtype'], r['T'])][r['variant']] = r['median_us']
print('| preset | type | T | pairs/expert | stream us | i8 us | i8 / stream | default us |')
print('|---|---|---|---|---|---|---|---|')
for (p, w, T), v in sorted(t.items()):
    k, e = KE.get(p, (0, 1))
    if 'stream' in v and 'i8' in v:
        print(f"| {p} | {w} | {T} | {T * k / e:.2f} | {v['stream']:.1f} | {v['i8']:.1f} | {v['i8'] / v['stream']:.2f} | {v.get('default', float('nan')):.1f} |")
