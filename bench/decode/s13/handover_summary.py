# summary of bench_decode --quant --default output: per (type, preset, T) the forced streaming kernels, the forced mma kernels (kdec) and the default; <== where the default is > 2% behind the faster
# usage: python3 bench/decode/s13/handover_summary.py FILE...
import re,sys
rows={}
for f in sys.argv[1:]:
  for l in open(f):
    m=re.match(r'(\S+)\s+(\S+)\s+(stream|kdec|default)\s+T=\s*(\d+)\s+([\d.]+) us',l)
    if m:
        p,q,path,T,us=m.groups(); rows.setdefault((q,p,int(T)),{})[path]=float(us)
E={'mixtral-8x7b':(8,2),'qwen3-30b-a3b':(128,8),'deepseek-v3':(256,8),'gpt-oss-20b':(32,4),'gpt-oss-120b':(128,4)}
for k in sorted(rows):
    v=rows[k]; e,K=E[k[1]]
    s,kd,d=v.get('stream'),v.get('kdec'),v.get('default')
    if not (s and kd and d): continue
    best=min(s,kd)
    flag=' <==' if d/best>1.02 else ''
    print(f"{k[0]:5s} {k[1]:14s} T={k[2]:4d} pairs/exp={k[2]*K/e:5.1f} stream {s:8.1f} kdec {kd:8.1f} default {d:8.1f}  stream/kdec {s/kd:5.2f} default/best {d/best:5.3f}{flag}")
