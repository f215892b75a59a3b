"""moe-bench, the main job: runs a preset and a GGUF file end to end, writes
the JSON fields the issue names, and checks its sample against the reference."""
import json
import os
import subprocess

import numpy as np
import pytest

from conftest import ROOT

FIELDS = ["preset", "T", "D", "I", "E", "K", "dtype", "wtype", "backend", "threads", "median_us", "tflops",
          "weight_gbps", "roofline_us", "roofline_fraction", "mem_gbps_probe", "max_rel_err"]


def bench_path():
    lib = os.environ.get("MOE_LIB", os.path.join(ROOT, "build", "libmoe.so"))
    path = os.path.join(os.path.dirname(lib), "moe-bench")
    if not os.path.exists(path):
        pytest.skip(f"moe-bench not built next to {lib}")
    return path


def run(args, tmp_path):
    out = tmp_path / "r.json"
    p = subprocess.run([bench_path(), "--seconds", "0.05", "--json", str(out)] + args, capture_output=True,
                       text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 1
    return rows[0], p.stdout


@pytest.mark.parametrize("wtype", ["bf16", "q4_K"])
def test_preset_json_and_check(tmp_path, wtype):
    r, text = run(["--preset", "qwen3-30b-a3b", "--tokens", "3", "--wtype", wtype, "--check", "3"], tmp_path)
    for f in FIELDS:
        assert f in r, f
    assert (r["D"], r["I"], r["E"], r["K"], r["T"]) == (2048, 768, 128, 8, 3)
    assert r["median_us"] > 0 and r["tflops"] > 0 and r["mem_gbps_probe"] > 0
    assert 0 <= r["max_rel_err"] < (3e-2 if wtype == "q4_K" else 1e-2)
    assert "check vs reference" in text and "OK" in text


def test_unknown_preset_fails(tmp_path):
    p = subprocess.run([bench_path(), "--preset", "nope"], capture_output=True, text=True)
    assert p.returncode != 0 and "unknown preset 'nope'" in p.stderr


def test_gguf_file(tmp_path):
    gguf = pytest.importorskip("gguf")
    import test_gguf

    path = str(tmp_path / "m.gguf")
    test_gguf.Model(path, "qwen3moe", E=8, D=64, I=32, K=2, qtype=gguf.GGMLQuantizationType.Q8_0,
                    rng=np.random.default_rng(3))
    r, text = run(["--gguf", path, "--tokens", "5", "--check", "5"], tmp_path)
    assert (r["D"], r["I"], r["E"], r["K"]) == (64, 32, 8, 2)
    assert r["wtype"] == "q8_0" and "qwen3moe" in r["preset"]
    assert r["max_rel_err"] < 3e-2
