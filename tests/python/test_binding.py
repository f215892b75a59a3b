"""The Python binding's own behaviour: loading, enums and structs mirroring
moe.h, errors carrying the library's messages, borrowed weights kept alive,
workspace caching, dtype/shape/stride checks, quantisation helpers, logging,
and torch tensors when torch is installed."""
import ctypes
import gc
import os
import subprocess
import sys

import numpy as np
import pytest

import libmoe
from libmoe import MoeError, Status, Type

PYDIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "python")


@pytest.fixture(scope="module")
def ctx():
    with libmoe.Context("cpu", n_threads=2) as c:
        yield c


def weights(rng, E, D, I, dtype=np.float32):
    return dict(gate=(rng.standard_normal((E, I, D)) / np.sqrt(D)).astype(dtype),
                up=(rng.standard_normal((E, I, D)) / np.sqrt(D)).astype(dtype),
                down=(rng.standard_normal((E, D, I)) / np.sqrt(I)).astype(dtype))


def swiglu_np(x, ids, w, gate, up, down):
    x = x.astype(np.float64)
    out = np.zeros(x.shape)
    for t in range(x.shape[0]):
        for k in range(ids.shape[1]):
            e = ids[t, k]
            g, u = gate[e].astype(np.float64) @ x[t], up[e].astype(np.float64) @ x[t]
            out[t] += w[t, k] * (down[e].astype(np.float64) @ (g / (1 + np.exp(-g)) * u))
    return out


def inputs(rng, T, D, E, K):
    x = rng.standard_normal((T, D)).astype(np.float32)
    ids = np.stack([rng.choice(E, K, replace=False) for _ in range(T)]).astype(np.int32)
    w = rng.uniform(0.1, 1, (T, K)).astype(np.float32)
    return x, ids, w


# ---------------------------------------------------------------------------
# library, enums, structs
# ---------------------------------------------------------------------------


def test_version_and_loading(lib):
    v = libmoe.version()
    major, minor, patch = (int(p) for p in v.split("."))
    assert libmoe.version_number() == major * 10000 + minor * 100 + patch
    lib.moe_version.restype = ctypes.c_char_p
    assert lib.moe_version().decode() == v  # the fixture's library is the one the package loaded
    assert os.path.exists(libmoe.lib_path())


def test_library_search_order(tmp_path):
    """MOE_LIB wins, and a wrong one is an error that names it."""
    code = "import libmoe; print(libmoe.lib_path())"
    env = dict(os.environ, PYTHONPATH=PYDIR, MOE_LIB=str(tmp_path / "nope.so"))
    r = subprocess.run([sys.executable, "-c", "import libmoe; libmoe.version()"], env=env, capture_output=True,
                       text=True)
    assert r.returncode != 0 and "nope.so" in r.stderr
    env["MOE_LIB"] = libmoe.lib_path()
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert os.path.samefile(r.stdout.strip(), libmoe.lib_path())


def test_struct_layouts():
    libmoe.check_layout()  # ctypes' layout equals the offsets gcc reports (see _ffi.py)
    from libmoe import _ffi
    assert ctypes.sizeof(_ffi.moe_layer_desc) == 384
    # the defaults the library fills come back through the by-value structs intact
    d = libmoe.lib().moe_layer_desc_default()
    assert (d.act, d.layout, d.act_type, d.backend) == (0, 0, 0, None)
    assert d.alpha == pytest.approx(1.702) and d.limit == 7.0
    assert d.down.data is None and d.down.type == 0 and d.down.stride_e == 0
    p = libmoe.lib().moe_ctx_default_params()
    assert (p.device, p.cuda_device, p.cuda_stream, p.n_threads, p.log_level) == (0, 0, None, 0, 2)


def test_enums_mirror_the_header():
    for s in Status:
        assert libmoe.status_name(s) == "MOE_" + s.name
        assert libmoe.status_string(s) != "unknown status"
    assert libmoe.status_name(99) == "MOE_STATUS_UNKNOWN"
    assert libmoe.MOE_ERR_EXPERT_ID_OUT_OF_RANGE == 4 and libmoe.MOE_TYPE_Q4_K == 12
    assert libmoe.MOE_GATE_UP_INTERLEAVED == 2 and libmoe.MOE_ACT_RELU2 == 6 and libmoe.MOE_SCORE_SIGMOID == 1
    for t in Type:
        assert libmoe.type_block_size(t) > 0
        assert libmoe.as_type(libmoe.type_name(t)) == t
    assert (libmoe.type_block_size("q4_K"), libmoe.type_block_bytes("q4_K")) == (256, 144)
    assert libmoe.type_row_bytes("q8_0", 64) == 68 and libmoe.type_row_bytes("q8_0", 33) == -1
    assert libmoe.act_is_gated("swiglu_oai") and not libmoe.act_is_gated("relu2")
    assert libmoe.as_type(np.float16) == Type.F16


# ---------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------


def test_errors_carry_messages(ctx, rng):
    w = weights(rng, 4, 8, 6)
    with pytest.raises(MoeError) as ei:
        libmoe.Layer(ctx, 4, 8, 6, 5, **w)
    e = ei.value
    assert e.status == Status.ERR_TOPK_EXCEEDS_EXPERTS and isinstance(e.status, Status)
    assert e.name == "MOE_ERR_TOPK_EXCEEDS_EXPERTS"
    assert e.message == "K = 5 but E = 4: expected K <= E" == ctx.last_error
    assert str(e) == "MOE_ERR_TOPK_EXCEEDS_EXPERTS: " + e.message
    assert e.args == (e.status, e.name, e.message)
    with pytest.raises(MoeError, match=r"desc\.up\.data is NULL") as ei:
        libmoe.Layer(ctx, 4, 8, 6, 2, gate=w["gate"], down=w["down"])
    assert ei.value.status == Status.ERR_NULL_POINTER
    with pytest.raises(MoeError, match="limit = -1") as ei:
        libmoe.Layer(ctx, 4, 8, 6, 2, act="swiglu_oai", limit=-1, **w)
    assert ei.value.status == Status.ERR_INVALID_ARGUMENT
    with pytest.raises(MoeError, match="needs a gated activation") as ei:
        libmoe.Layer(ctx, 4, 8, 6, 2, act="silu", layout="concat", gate_up=np.concatenate([w["gate"], w["up"]], 1),
                     down=w["down"])
    assert ei.value.status == Status.ERR_UNSUPPORTED
    with pytest.raises(MoeError) as ei:
        libmoe.Layer(ctx, 4, 8, 6, 2, backend="ref", act_type="q4_0", **w)
    assert ei.value.status == Status.ERR_UNSUPPORTED and "act_type = q4_0" in ei.value.message
    with pytest.raises(MoeError, match="n_threads = -1") as ei:
        libmoe.Context(n_threads=-1)
    assert ei.value.status == Status.ERR_INVALID_ARGUMENT


def test_bad_ids_name_token_slot_value_and_leave_out_untouched(ctx, rng):
    E, D, I, K, T = 4, 8, 6, 2, 5
    with libmoe.Layer(ctx, E, D, I, K, backend="ref", **weights(rng, E, D, I)) as layer:
        x, ids, w = inputs(rng, T, D, E, K)
        for bad, value in [((2, 1), 7), ((4, 0), -1), ((0, 1), E)]:
            ids2 = ids.copy()
            ids2[bad] = value
            out = np.full((T, D), 1234.5, np.float32)
            with pytest.raises(MoeError) as ei:
                layer.forward(x, ids2, w, out=out)
            e = ei.value
            assert e.status == Status.ERR_EXPERT_ID_OUT_OF_RANGE
            assert e.message == "topk_ids[%d][%d] = %d but E = %d" % (bad[0], bad[1], value, E)
            assert layer.last_error == e.message
            assert (out == 1234.5).all(), "a failed forward wrote to out"
        # the layer still works afterwards
        out = layer.forward(x, ids, w)
        np.testing.assert_allclose(out, swiglu_np(x, ids, w, **layer.weights), rtol=1e-5, atol=1e-6)


def test_log_callback(rng):
    lines = []
    with libmoe.Context(log=lambda level, msg: lines.append((level, msg)), log_level="info") as c:
        E, D, I = 4, 8, 6
        with libmoe.Layer(c, E, D, I, 2, backend="ref", **weights(rng, E, D, I)):
            pass
        with pytest.raises(MoeError):
            libmoe.route_topk(c, np.zeros((1, 4), np.float32), 5)
    assert (libmoe.LogLevel.INFO, "backend ref (forced by desc.backend)") in lines
    assert (libmoe.LogLevel.ERROR, "route: K = 5 but E = 4: expected K <= E") in lines
    assert all(isinstance(lv, libmoe.LogLevel) for lv, _ in lines)


# ---------------------------------------------------------------------------
# forward mechanics
# ---------------------------------------------------------------------------


def test_borrowed_weights_are_kept_alive(ctx, rng):
    E, D, I, K, T = 4, 16, 8, 2, 3
    ref = weights(rng, E, D, I)
    # the layer gets copies that nothing else references
    layer = libmoe.Layer(ctx, E, D, I, K, backend="ref", **{k: v.copy() for k, v in ref.items()})
    gc.collect()
    junk = [np.full((E, I, D), np.nan, np.float32) for _ in range(20)]  # reuse freed memory, if any was freed
    x, ids, w = inputs(rng, T, D, E, K)
    out = layer.forward(x, ids, w)
    np.testing.assert_allclose(out, swiglu_np(x, ids, w, **ref), rtol=1e-5, atol=1e-6)
    assert set(layer.weights) == {"gate", "up", "down"}
    del junk
    layer.close()
    assert layer.weights == {}


def test_workspace_is_cached_per_t(ctx, rng):
    E, D, I, K = 4, 8, 6, 2
    with libmoe.Layer(ctx, E, D, I, K, backend="ref", **weights(rng, E, D, I)) as layer:
        assert layer.workspace_size(3) > 0 and layer.workspace_size(0) == 0
        x, ids, w = inputs(rng, 3, D, E, K)
        a = layer.forward(x, ids, w)
        ws = layer._ws[3]
        b = layer.forward(x, ids, w)
        assert layer._ws[3] is ws  # reused, not reallocated
        assert ws.ctypes.data % 64 == 0
        np.testing.assert_array_equal(a, b)
        x5, ids5, w5 = inputs(rng, 5, D, E, K)
        layer.forward(x5, ids5, w5)
        assert set(layer._ws) == {3, 5}
        np.testing.assert_array_equal(layer.forward(x, ids, w), a)
        layer.clear_workspace()
        assert layer._ws == {}
        # a workspace of one's own; too small is the library's error
        own = np.zeros(layer.workspace_size(3), np.uint8)
        np.testing.assert_array_equal(layer.forward(x, ids, w, workspace=own), a)
        with pytest.raises(MoeError) as ei:
            layer.forward(x, ids, w, workspace=own[:-1])
        assert ei.value.status == Status.ERR_WORKSPACE_TOO_SMALL and "needs" in ei.value.message


def test_out_argument(ctx, rng):
    E, D, I, K, T = 4, 8, 6, 2, 3
    with libmoe.Layer(ctx, E, D, I, K, backend="ref", **weights(rng, E, D, I)) as layer:
        x, ids, w = inputs(rng, T, D, E, K)
        out = np.full((T, D), np.nan, np.float32)
        assert layer.forward(x, ids, w, out=out) is out
        np.testing.assert_array_equal(out, layer(x, ids, w))
        with pytest.raises(TypeError, match="out"):
            layer.forward(x, ids, w, out=np.zeros((T, D), np.float64))
        with pytest.raises(ValueError, match="out"):
            layer.forward(x, ids, w, out=np.zeros((T, D + 1), np.float32))
        with pytest.raises(ValueError, match="contiguous"):
            layer.forward(x, ids, w, out=np.zeros((T, 2 * D), np.float32)[:, ::2])
        with pytest.raises(TypeError, match="topk_ids"):
            layer.forward(x, ids.astype(np.int64), w)
        with pytest.raises(ValueError, match="topk_weights"):
            layer.forward(x, ids, w[:, :1].copy())
        with pytest.raises(TypeError, match="x"):
            layer.forward(x.astype(np.float64), ids, w)
        # non-contiguous host inputs and lists are copied, not refused
        xs = np.zeros((T, 2 * D), np.float32)
        xs[:, ::2] = x
        np.testing.assert_array_equal(layer.forward(xs[:, ::2], ids.tolist(), w.tolist()), out)
        assert layer.describe(7).startswith("ref:") and "T = 7" in layer.describe(7)


def test_dtype_and_shape_checks(ctx, rng):
    E, D, I, K = 4, 8, 6, 2
    w = weights(rng, E, D, I)
    bits = np.zeros((E, I, D), np.uint16)
    with pytest.raises(TypeError, match="bf16"):
        libmoe.Layer(ctx, E, D, I, K, gate=bits, up=w["up"], down=w["down"])
    with pytest.raises(TypeError, match="q4_K"):
        libmoe.Layer(ctx, E, D, I, K, gate=bits.view(np.uint8), up=w["up"], down=w["down"])
    with pytest.raises(TypeError, match="float64"):
        libmoe.Layer(ctx, E, D, I, K, gate=w["gate"].astype(np.float64), up=w["up"], down=w["down"])
    with pytest.raises(TypeError, match="cannot hold"):
        libmoe.Layer(ctx, E, D, I, K, wtype="f16", **w)
    with pytest.raises(ValueError, match="shape"):
        libmoe.Layer(ctx, E, D, I, K, gate=w["gate"][:, :-1], up=w["up"], down=w["down"])
    with pytest.raises(ValueError, match="negative"):
        libmoe.Layer(ctx, E, D, I, K, gate=w["gate"][:, ::-1], up=w["up"], down=w["down"])
    with pytest.raises(ValueError, match="broadcast"):
        libmoe.Layer(ctx, E, D, I, K, gate=np.broadcast_to(np.float32(1), (E, I, D)), up=w["up"], down=w["down"])
    with pytest.raises(TypeError, match="numpy array or a torch tensor"):
        libmoe.Layer(ctx, E, D, I, K, gate=w["gate"].tolist(), up=w["up"], down=w["down"])
    # an expert-broadcast weight (stride_e = 0) is fine: every expert the same
    g0 = np.broadcast_to(w["gate"][:1], (E, I, D))
    with libmoe.Layer(ctx, E, D, I, K, gate=g0, up=w["up"], down=w["down"], backend="ref") as layer:
        x, ids, tw = inputs(rng, 3, D, E, K)
        np.testing.assert_allclose(layer.forward(x, ids, tw),
                                   swiglu_np(x, ids, tw, np.repeat(w["gate"][:1], E, 0), w["up"], w["down"]),
                                   rtol=1e-5, atol=1e-6)


def test_bf16_and_per_weight_types(ctx, rng):
    """uint16 bits with wtype='bf16'; a dict of types per weight."""
    E, D, I, K, T = 3, 8, 4, 2, 4
    w = weights(rng, E, D, I)
    bf = {k: (v.view(np.uint32) >> 16).astype(np.uint16) for k, v in w.items()}  # truncation: exact bf16 values
    vals = {k: (b.astype(np.uint32) << 16).view(np.float32) for k, b in bf.items()}
    x, ids, tw = inputs(rng, T, D, E, K)
    want = swiglu_np(x, ids, tw, **vals)
    with libmoe.Layer(ctx, E, D, I, K, wtype="bf16", backend="ref", **bf) as layer:
        assert layer.wtypes == {"gate": Type.BF16, "up": Type.BF16, "down": Type.BF16}
        np.testing.assert_allclose(layer.forward(x, ids, tw), want, rtol=1e-5, atol=1e-6)
    mixed = dict(gate=bf["gate"], up=vals["up"], down=vals["down"].astype(np.float16).view(np.uint16))
    with libmoe.Layer(ctx, E, D, I, K, wtype={"gate": "bf16", "down": Type.F16}, backend="ref", **mixed) as layer:
        assert layer.wtypes == {"gate": Type.BF16, "up": Type.F32, "down": Type.F16}
        want = swiglu_np(x, ids, tw, vals["gate"], vals["up"], vals["down"].astype(np.float16))
        np.testing.assert_allclose(layer.forward(x, ids, tw), want, rtol=1e-5, atol=1e-6)


def test_quantized_weights_and_strides(ctx, rng):
    E, D, I, K, T = 3, 64, 32, 2, 4
    raw = weights(rng, E, D, I)
    q = {k: libmoe.quantize_row("q8_0", v) for k, v in raw.items()}
    assert q["gate"].shape == (E, I, D // 32 * 34) and q["down"].shape == (E, D, I // 32 * 34)
    deq = {k: libmoe.dequantize_row("q8_0", v) for k, v in q.items()}
    x, ids, tw = inputs(rng, T, D, E, K)
    want = swiglu_np(x, ids, tw, **deq)
    with libmoe.Layer(ctx, E, D, I, K, wtype="q8_0", backend="ref", **q) as layer:
        a = layer.forward(x, ids, tw)
    np.testing.assert_allclose(a, want, rtol=1e-5, atol=1e-6)
    # every other row of a bigger byte array, and a flat contiguous buffer
    big = np.zeros((E, 2 * I, q["up"].shape[2]), np.uint8)
    big[:, ::2] = q["up"]
    args = dict(gate=q["gate"].reshape(-1), up=big[:, ::2], down=q["down"].reshape(E, -1))
    with libmoe.Layer(ctx, E, D, I, K, wtype="q8_0", backend="ref", **args) as layer:
        np.testing.assert_array_equal(layer.forward(x, ids, tw), a)
    # a dimension that is not a multiple of the block: the library's own error
    with pytest.raises(MoeError) as ei:
        libmoe.Layer(ctx, E, 48, I, K, wtype="q8_0", gate=np.zeros((E, I, 51), np.uint8),
                     up=np.zeros((E, I, 51), np.uint8), down=np.zeros((E, 48, 34), np.uint8))
    assert ei.value.status == Status.ERR_BLOCK_SHAPE and "D = 48" in ei.value.message


def test_quantize_helpers(rng):
    v = rng.standard_normal((3, 256)).astype(np.float32)
    for t in ("f32", "f16", "bf16"):
        b = libmoe.quantize_row(t, v)
        assert b.dtype == np.uint8 and b.shape == (3, libmoe.type_row_bytes(t, 256))
    np.testing.assert_array_equal(libmoe.quantize_row("f16", v).view(np.float16), v.astype(np.float16))
    np.testing.assert_array_equal(libmoe.dequantize_row("f16", v.astype(np.float16)), v.astype(np.float16))
    np.testing.assert_array_equal(libmoe.dequantize_row("f32", libmoe.quantize_row("f32", v)), v)
    for t in ("q4_0", "q8_0", "q2_K", "q3_K", "q4_K", "q5_K", "q6_K", "mxfp4"):
        b = libmoe.quantize_row(t, v)
        back = libmoe.dequantize_row(t, b)
        assert back.shape == v.shape
        assert np.abs(back - v).max() < 1.5, t  # coarse: the formats' own tests live in C
    with pytest.raises(MoeError) as ei:
        libmoe.quantize_row("q4_K", v[:, :100])
    assert ei.value.status == Status.ERR_BLOCK_SHAPE
    with pytest.raises(ValueError):
        libmoe.dequantize_row("q8_0", np.zeros(34, np.uint8), n=64)


def test_quantize_matches_gguf(rng):
    """Q8_0 / Q4_0 bytes equal gguf-py's (moe.h: 'made the way GGUF's reference quantizers make them')."""
    gguf = pytest.importorskip("gguf", reason="gguf-py not installed")
    from gguf.quants import dequantize, quantize
    v = rng.standard_normal((4, 256)).astype(np.float32)
    for t, gt in (("q8_0", gguf.GGMLQuantizationType.Q8_0), ("q4_0", gguf.GGMLQuantizationType.Q4_0)):
        np.testing.assert_array_equal(libmoe.quantize_row(t, v), quantize(v, gt))
    b = libmoe.quantize_row("q6_K", v)
    np.testing.assert_array_equal(libmoe.dequantize_row("q6_K", b), dequantize(b, gguf.GGMLQuantizationType.Q6_K))


def test_context_lifecycle(rng):
    c = libmoe.Context(n_threads=3)
    assert c.n_threads == 3 and c.device == libmoe.Device.CPU and c.last_error == ""
    E, D, I = 4, 8, 6
    layer = libmoe.Layer(c, E, D, I, 2, backend="ref", **weights(rng, E, D, I))
    assert "backend=ref" in repr(layer)
    c.close()  # closes the layer first
    assert layer.closed and c.closed
    with pytest.raises(ValueError, match="closed"):
        layer.forward(*inputs(rng, 1, D, E, 2))
    with pytest.raises(ValueError, match="closed"):
        c.n_threads
    c.close()  # twice is fine
    with pytest.raises(ValueError, match="device"):
        libmoe.Context("tpu")


def test_device_buffers_refused_on_cpu_context(ctx, rng):
    """A buffer claiming to be CUDA memory must not reach a CPU forward (the
    library cannot tell and would read it as host memory)."""
    E, D, I, K = 4, 8, 6, 2

    class FakeDevice:
        def __init__(self, a):
            self.a = a
            self.__cuda_array_interface__ = dict(shape=a.shape, typestr=a.dtype.str, data=(a.ctypes.data, False),
                                                 strides=None, version=3)

    with libmoe.Layer(ctx, E, D, I, K, backend="ref", **weights(rng, E, D, I)) as layer:
        x, ids, w = inputs(rng, 2, D, E, K)
        with pytest.raises(MoeError) as ei:
            layer.forward(FakeDevice(x), ids, w)
        assert ei.value.status == Status.ERR_MEMORY_SPACE and "CPU context" in ei.value.message
    with pytest.raises(MoeError) as ei:
        libmoe.Layer(ctx, E, D, I, K, backend="ref", gate=FakeDevice(weights(rng, E, D, I)["gate"]),
                     up=np.zeros((E, I, D), np.float32), down=np.zeros((E, D, I), np.float32))
    assert ei.value.status == Status.ERR_MEMORY_SPACE  # the library's own check on desc.gate.mem


def test_backend_choice(rng):
    E, D, I = 4, 8, 6
    lines = []
    with libmoe.Context(log=lambda lv, m: lines.append(m), log_level="warn") as c:
        with libmoe.Layer(c, E, D, I, 2, backend="ref", **weights(rng, E, D, I)) as layer:
            assert layer.backend == "ref"
        with libmoe.Layer(c, E, D, I, 2, **weights(rng, E, D, I)) as auto:
            auto_name = auto.backend  # whichever this build prefers
            assert auto_name
        # a name not in this build: a warning, then the automatic choice
        with libmoe.Layer(c, E, D, I, 2, backend="no-such-backend", **weights(rng, E, D, I)) as layer:
            assert layer.backend == auto_name
        assert any("no-such-backend" in m and "no such backend" in m for m in lines), lines


# ---------------------------------------------------------------------------
# torch
# ---------------------------------------------------------------------------


def _torch():
    try:
        import torch
    except ImportError:
        pytest.skip("torch is not installed: the torch-tensor paths of the binding are not exercised")
    return torch


def test_torch_cpu_tensors(ctx, rng):
    torch = _torch()
    E, D, I, K, T = 4, 16, 8, 2, 5
    w = weights(rng, E, D, I)
    x, ids, tw = inputs(rng, T, D, E, K)
    with libmoe.Layer(ctx, E, D, I, K, backend="ref", **w) as layer:
        want = layer.forward(x, ids, tw)
    tws = {k: torch.from_numpy(v) for k, v in w.items()}
    # down handed over transposed: the strides travel
    tws["down"] = torch.from_numpy(np.ascontiguousarray(w["down"].transpose(0, 2, 1))).transpose(1, 2)
    with libmoe.Layer(ctx, E, D, I, K, backend="ref", **tws) as layer:
        out = layer.forward(torch.from_numpy(x), torch.from_numpy(ids), torch.from_numpy(tw))
        assert isinstance(out, torch.Tensor) and out.dtype == torch.float32
        np.testing.assert_array_equal(out.numpy(), want)
    # bf16 weights and activations as torch.bfloat16
    tb = {k: torch.from_numpy(v).to(torch.bfloat16) for k, v in w.items()}
    with libmoe.Layer(ctx, E, D, I, K, backend="ref", act_type="bf16", **tb) as layer:
        xb = torch.from_numpy(x).to(torch.bfloat16)
        out = layer.forward(xb, torch.from_numpy(ids), torch.from_numpy(tw))
        assert out.dtype == torch.bfloat16
        vals = {k: v.float().double().numpy() for k, v in tb.items()}
        ref = swiglu_np(xb.float().numpy(), ids, tw, **vals)
        np.testing.assert_allclose(out.float().numpy(), ref, rtol=2.0 ** -7, atol=1e-6)
    ids_t, w_t = libmoe.route_topk(ctx, torch.from_numpy(rng.standard_normal((T, E)).astype(np.float32)), K)
    assert isinstance(ids_t, torch.Tensor) and ids_t.dtype == torch.int32 and w_t.shape == (T, K)


def test_torch_cuda_tensors(rng):
    """bf16 torch tensors on the GPU: route on the device, forward on the
    automatically chosen CUDA backend, compared with numpy on the same bf16
    values. Skips only where torch has no GPU or libmoe was built without CUDA."""
    torch = _torch()
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA device")
    E, D, I, K, T = 8, 128, 64, 2, 37
    try:
        ctx = libmoe.Context("cuda")
        w = {k: torch.from_numpy(v).to(torch.bfloat16).cuda() for k, v in weights(rng, E, D, I).items()}
        layer = libmoe.Layer(ctx, E, D, I, K, act_type="bf16", **w)
    except MoeError as e:
        if e.status == Status.ERR_NO_DEVICE:
            pytest.skip("this libmoe build cannot run on CUDA: %s" % e)
        raise
    x, ids, tw = inputs(rng, T, D, E, K)
    xb = torch.from_numpy(x).to(torch.bfloat16).cuda()
    logits = torch.from_numpy(rng.standard_normal((T, E)).astype(np.float32)).cuda()
    ids_t, w_t = libmoe.route_topk(ctx, logits, K, renormalize=True)
    ids_h, w_h = libmoe.route_topk(libmoe.Context("cpu"), logits.cpu(), K, renormalize=True)
    torch.cuda.synchronize()
    assert torch.equal(ids_t.cpu(), ids_h) and torch.allclose(w_t.cpu(), w_h, rtol=1e-6, atol=1e-7)
    out = layer.forward(xb, ids_t, w_t)
    torch.cuda.synchronize()
    assert out.is_cuda and out.shape == (T, D) and out.dtype == torch.bfloat16
    vals = {k: v.float().cpu().double().numpy() for k, v in w.items()}
    want = swiglu_np(xb.float().cpu().numpy(), ids_t.cpu().numpy(), w_t.cpu().numpy(), **vals)
    got = out.float().cpu().numpy()
    err = np.linalg.norm(got - want) / np.linalg.norm(want)
    assert err < 1e-2, (err, layer.backend)
    with pytest.raises(MoeError) as ei:
        layer.forward(xb.cpu(), ids_t, w_t)  # host x on a CUDA context
    assert ei.value.status == Status.ERR_MEMORY_SPACE
    ctx.close()
