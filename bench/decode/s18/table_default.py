"""Session 18: the layer a user gets ("default" rows of bench_decode --quant --default),
us (% of read on the quantised bytes touched), presets x types by T.
    python3 bench/decode/s18/table_default.py FILE.jsonl [FILE.jsonl ...]"""
import json, sys
t = {}
for f in sys.argv[1:]:
    for l in open(f):
        r = json.loads(l)
        if r['variant'] == 'default':
            t[(r['preset'], r['wtype'], r['T'])] = (r['median_us'], r['pct_read_bw'])
Ts = sorted({k[2] for k in t})
print('| preset | type | ' + ' | '.join(f'T={T}' for T in Ts) + ' |')
print('|---|---|' + '---|' * len(Ts))
for p in ['mixtral-8x7b', 'deepseek-v3', 'gpt-oss-20b', 'qwen3-30b-a3b']:
    for w in ['q4_K', 'q5_K', 'q6_K', 'q8_0', 'mxfp4']:
        cells = [f'{t[(p, w, T)][0]:.0f} ({t[(p, w, T)][1]:.0f}%)' if (p, w, T) in t else '' for T in Ts]
        if any(cells):
            print(f'| {p} | {w} | ' + ' | '.join(cells) + ' |')
