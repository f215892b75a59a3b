# Session 21 (no GPU in the session): a host model of gemm_sm90_qs's epilogue.
# The wgmma m64nNT accumulator layout (row 16 w + lane/4 + 8 ((i >> 1) & 1), token
# 8 (i >> 2) + 2 (lane % 4) + (i & 1)), stmatrix .x4 .trans as the PTX ISA gives it
# (lane 8 m + r addresses row r of matrix m; element (row c, column r) of a matrix
# comes from lane 4 c + r / 2), then the warp's copy-out: checks that every
# (token, output) of a tile lands exactly once, at the right place, and that each
# matrix's 8 rows fall in 8 different 16-byte bank groups; and that the tile list with
# tails covers every row of every expert exactly once.   python3 epilogue_model.py
# Host model of gemm_sm90_qs's epilogue (per warp): wgmma m64nNT accumulator layout,
# stmatrix .x4 .trans per the PTX ISA, the copy-out; checks every (token, output) lands once.
def run(GATED, NT, rows_in_tile=None):
    N = 4096; n0 = 0
    out = {}
    for cw in range(2):
        for w4 in range(4):
            smem = {}
            def stsm(addrs, regs):  # addrs[32], regs[32][4]: element = (row, col) of matrix i
                for i in range(4):
                    for r in range(8):
                        a = addrs[8*i + r]
                        assert a % 16 == 0
                        for c in range(8):
                            lane = 4*c + r//2
                            smem[a + 2*c] = regs[lane][i][r % 2]
            NG = NT // 8
            def acc(lane, idx):  # (output row in the warp's 16-row slab, token)
                gq, q = lane >> 2, lane & 3
                row = gq + 8*((idx >> 1) & 1); tok = 8*(idx >> 2) + 2*q + (idx & 1)
                return row, tok
            if GATED:
                for b in range(0, NG, 4):
                    regs = []; addrs = []
                    for lane in range(32):
                        gq, q = lane >> 2, lane & 3
                        rr = []
                        for i in range(4):
                            vals = []
                            for j in range(2):
                                rg, tg = acc(lane, 4*(b+i) + j); ru, tu = acc(lane, 4*(b+i) + 2 + j)
                                assert tg == tu and ru == rg + 8
                                o = n0 + 32*cw + 8*w4 + gq  # the output of the thread
                                vals.append(('v', tg, o))
                            rr.append(vals)
                        regs.append(rr)
                        mi, mr = lane >> 3, lane & 7
                        addrs.append(16*(8*(b + mi) + mr))
                    stsm(addrs, regs)
                for lane in range(32):
                    gq = lane >> 2
                    col = n0 + 32*cw + 8*w4
                    for j in range(NT//32):
                        tok = lane + 32*j
                        for e in range(8):
                            key = (tok, col + e)
                            assert key not in out
                            out[key] = smem[16*tok + 2*e]
            else:
                PT = min(NT, 128); GP = PT // 8
                for p in range(NT // PT):
                    smem.clear()
                    for b in range(0, GP, 2):
                        bg = GP*p + b
                        regs = []; addrs = []
                        for lane in range(32):
                            gq = lane >> 2
                            rr = []
                            for i in range(2):
                                for half in range(2):
                                    vals = []
                                    for j in range(2):
                                        row, tok = acc(lane, 4*(bg+i) + 2*half + j)
                                        vals.append(('v', tok, n0 + 64*cw + 16*w4 + row))
                                    rr.append(vals)
                            regs.append(rr)
                            mi, mr = lane >> 3, lane & 7
                            tok = 8*(b + (mi >> 1)) + mr
                            addrs.append(32*tok + 16*((mi & 1) ^ ((tok >> 2) & 1)))
                        # bank check: each matrix's 8 rows in distinct 16-byte bank groups
                        for i in range(4):
                            groups = {(addrs[8*i+r] % 128)//16 for r in range(8)}
                            assert len(groups) == 8, (i, [addrs[8*i+r] for r in range(8)])
                        stsm(addrs, regs)
                    for lane in range(32):
                        col0 = n0 + 64*cw + 16*w4
                        for j in range(PT // 16):
                            ch = lane + 32*j; tok = ch >> 1; part = ch & 1
                            col = col0 + 8*part; m = PT*p + tok
                            for e in range(8):
                                key = (m, col + e)
                                assert key not in out
                                out[key] = smem[32*tok + 16*(part ^ ((tok >> 2) & 1)) + 2*e]
    nout = 64 if GATED else 128
    assert len(out) == NT * nout, len(out)
    for (m, c), v in out.items():
        assert v == ('v', m, c), ((m, c), v)
    print('ok', 'gated' if GATED else 'plain', NT)
for g in (True, False):
    for nt in (256, 64):
        run(g, nt)

# The tile list with tails (layer.cu k_scan, gemm_common.cuh MOE_CUDA_TILE_*) and the
# rows the consumers' qs_tile<NTT> covers: every row of every expert exactly once,
# no tile of NTT tokens starting past its expert's rows.
import random
def tail(r): return 2 if r <= 64 else 1 if r <= 128 else 0
random.seed(5)
for trial in range(2000):
    E = random.randint(1, 40)
    cnt = [random.choice([0, random.randint(1, 600), random.randint(120, 140), 256, 512, 64, 65, 128, 129]) for _ in range(E)]
    bm = 256
    tiles = []
    for e, c in enumerate(cnt):
        nt = (c + bm - 1) // bm
        for j in range(nt):
            y = j * bm | (tail(c - j * bm) << 28)
            tiles.append((e, y))
    seen = [set() for _ in range(E)]
    for e, y in tiles:
        m0, code = y & 0x0fffffff, (y >> 28) & 3
        ntt = [256, 128, 64][code]
        assert m0 < cnt[e]
        assert code == 0 or cnt[e] - m0 <= ntt, (cnt[e], m0, code)
        for m in range(m0, min(m0 + ntt, cnt[e])):
            assert m not in seen[e]
            seen[e].add(m)
    for e in range(E):
        assert seen[e] == set(range(cnt[e]))
print('ok tile list with tails')
