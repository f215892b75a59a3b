#!/usr/bin/env python3
"""The innermost loops of a kernel in cuobjdump -sass output that hold dp4a
(IDP) or int8 mma (IMMA): for each, its instruction count and its mix, so that
a decoder change can be read in instructions a unit before a device run.
    cuobjdump -sass obj.o > x.sass; sass_loops.py x.sass FUNCTION_SUBSTRING..."""
import re, sys, collections

def functions(path):
    cur, body = None, []
    for line in open(path):
        m = re.search(r'Function : (\S+)', line)
        if m:
            if cur: yield cur, body
            cur, body = m.group(1), []
            continue
        m = re.match(r'\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;', line)
        if m and cur: body.append((int(m.group(1), 16), m.group(2)))
    if cur: yield cur, body

def loops(body):
    out = []
    addr = {a: i for i, (a, _) in enumerate(body)}
    for i, (a, ins) in enumerate(body):
        m = re.search(r'BRA\s+(?:`\(\.L_x_\d+\)|0x([0-9a-f]+))', ins)
        t = re.search(r'0x([0-9a-f]+)', ins) if 'BRA' in ins else None
        if 'BRA' in ins and t:
            ta = int(t.group(1), 16)
            if ta < a and ta in addr: out.append((addr[ta], i))
    return out

for path_fn in sys.argv[2:]:
    for name, body in functions(sys.argv[1]):
        if path_fn not in name: continue
        res = []
        for s, e in loops(body):
            seg = [ins for _, ins in body[s:e + 1]]
            n_idp = sum('IDP' in x for x in seg) + sum('IMMA' in x for x in seg)
            if n_idp == 0: continue
            # innermost: no other loop strictly inside
            res.append((s, e, len(seg), n_idp, seg))
        inner = [r for r in res if not any(o[0] >= r[0] and o[1] <= r[1] and o != r for o in res)]
        for s, e, n, k, seg in inner:
            ops = collections.Counter(re.sub(r'^@!?U?P\w+\s+', '', x).split()[0].split('.')[0] for x in seg)
            print(f"{name[:60]} loop [{s}..{e}] {n} insts, {k} IDP/IMMA: " +
                  ' '.join(f"{o}:{c}" for o, c in ops.most_common(14)))
