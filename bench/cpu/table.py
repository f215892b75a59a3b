#!/usr/bin/env python3
"""Markdown table from bench/cpu/results.json (moe-bench --json lines) and
bench/cpu/kbench.txt (kbench: thread-0 CPU time, 1 thread)."""
import json, re, sys
res = {}
for line in open('bench/cpu/results.json'):
    r = json.loads(line)
    res[(r['wtype'], r['T'])] = r
kb = {}
for line in open('bench/cpu/kbench.txt'):
    m = re.match(r'(\S+)\s+T=(\d+)\s+th=1.*thread0 cpu med\s+([\d.]+) us.*=\s+([\d.]+) GF/s', line)
    if m: kb[(m.group(1), int(m.group(2)))] = (float(m.group(3)), float(m.group(4)))
types = ['f32', 'f16', 'bf16', 'q8_0', 'q4_0', 'q2_K', 'q3_K', 'q4_K', 'q5_K', 'q6_K', 'mxfp4']
print('| weights | T | 2 threads wall median (us) | GFLOP/s | weight GB/s | probe GB/s | share of roofline | err | 1 thread CPU time (us) | 1-thread GFLOP/s | share of 1 core\'s peak |')
print('|---|---|---|---|---|---|---|---|---|---|---|')
for t in types:
    for T in (1, 8, 64, 512):
        r = res.get((t, T))
        k = kb.get((t, T))
        peak = 1960 if t not in ('f32', 'f16', 'bf16') else (400 if t == 'f32' else 900)
        cells = [t, str(T)]
        if r:
            cells += ['%.0f' % r['median_us'], '%.0f' % (r['tflops'] * 1e3), '%.1f' % r['weight_gbps'],
                      '%.1f' % r['mem_gbps_probe'], '%.0f%%' % (100 * r['roofline_fraction']), '%.1e' % r['max_rel_err']]
        else:
            cells += ['-'] * 6
        if k:
            cells += ['%.0f' % k[0], '%.0f' % k[1], '%.0f%%' % (100 * k[1] / (peak / 2))]
        else:
            cells += ['-'] * 3
        print('| ' + ' | '.join(cells) + ' |')
