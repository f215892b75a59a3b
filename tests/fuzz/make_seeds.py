"""Writes the GGUF fuzzer's seed corpus: tiny MoE model files of every
architecture and weight type libmoe reads, made by the builders of
tests/python/test_gguf.py (gguf-py's GGUFWriter and quantizers).

    python tests/fuzz/make_seeds.py OUT_DIR
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

from test_gguf import Model, Q  # noqa: E402


def main(out):
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(1234)
    seeds = [
        ("qwen3moe", Q.Q4_0, False), ("qwen3moe", Q.Q8_0, True), ("qwen3moe", Q.F16, False),
        ("qwen2moe", Q.BF16, False), ("llama", Q.Q8_0, False), ("llama", Q.F32, True),
        ("deepseek2", Q.Q4_0, False), ("gpt-oss", Q.MXFP4, False), ("gpt-oss", Q.F16, False),
    ]
    n = 0
    for arch, qt, fused in seeds:
        layers = (1,) if arch == "deepseek2" else (0,)
        E = 8 if arch == "deepseek2" else 2
        path = os.path.join(out, f"{arch}-{qt.name}{'-fused' if fused else ''}.gguf")
        Model(path, arch, E=E, D=32, I=32, K=2, qtype=qt, layers=layers, fused=fused, rng=rng)
        n += 1
    print(f"make_seeds.py: {n} seed files in {out}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
