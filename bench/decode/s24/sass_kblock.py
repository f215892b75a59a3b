#!/usr/bin/env python3
"""Instructions per k-block of gemm_sm90_qs (the GGUF GEMMs' register-A kernel), by format and tile.

A k-block is four HGMMAs (m64 n x k16 each); the count is of the SASS lines from the 4th HGMMA of the
k-loop to the 8th (one k-block's decoding and wgmmas), with the most frequent opcodes. Session 24's
numbers in src/cuda/NOTES_decode.md came from this on the sm_90a object of src/cuda/gemm_sm90_q.cu:

    cuobjdump -sass build-devbin/CMakeFiles/moe_obj.dir/src/cuda/gemm_sm90_q.cu.o > q.sass
    python3 bench/decode/s24/sass_kblock.py q.sass

(cuobjdump: the nvidia-cuda-cuobjdump wheel from PyPI where the toolkit has none.) Instances with
SwiGLU (ACT 0) and bf16 are listed; format numbers are decode.h's MOE_DF_* (3 Q8_0, 4 MXFP4,
7 Q4_K, 8 Q5_K, 9 Q6_K); the tile is 64 or 256 tokens.
"""
import re
import sys
from collections import Counter


def main(path):
    funcs, cur = {}, None
    for line in open(path):
        m = re.search(r'Function : (\S+)', line)
        if m:
            cur = m.group(1)
            funcs[cur] = []
        elif cur and re.search(r'/\*[0-9a-f]{4,5}\*/', line):
            funcs[cur].append(line)
    for name in sorted(funcs):
        m = re.search(r'gemm_sm90_qsILi0E13__nv_bfloat16Li(\d+)ELi(\d+)E', name)
        if not m:
            continue
        ins = funcs[name]
        h = [i for i, l in enumerate(ins) if 'HGMMA' in l]
        if len(h) < 8:
            continue
        ops = Counter()
        for l in ins[h[3]:h[7]]:
            o = re.search(r'\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)', l)
            if o:
                ops[o.group(1)] += 1
        top = ', '.join('%s %d' % kv for kv in ops.most_common(6))
        print('format %s, %s tokens: %d instructions a k-block (%s)' % (m.group(1), m.group(2), h[7] - h[3], top))


if __name__ == '__main__':
    main(sys.argv[1])
