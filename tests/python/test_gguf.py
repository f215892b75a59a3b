"""GGUF model files through libmoe: small MoE models written with gguf-py
(gguf.GGUFWriter) in each architecture's naming (qwen3moe, qwen2moe, llama
for Mixtral, deepseek2, gpt-oss), weights quantized by gguf.quants.quantize,
read back with moe_gguf_open + moe_layer_from_gguf; the routing
(moe_gguf_router_logits + moe_route_topk) and the forward must equal a numpy
implementation of the layer on the same weights, dequantized by
gguf.quants.dequantize. Then corrupt files (truncated at many offsets, bytes
flipped, counts and lengths set past the end) must give a clean error.

The builders here are also used by tests/fuzz/make_seeds.py to write the
fuzzer's seed corpus (and MOE_GGUF_SEED_DIR=dir makes this test keep them).
"""
import ctypes
import os
import shutil

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")
from gguf import GGMLQuantizationType as Q  # noqa: E402

c_i64, c_u64, c_int = ctypes.c_int64, ctypes.c_uint64, ctypes.c_int

# ---- the C API through ctypes -------------------------------------------------------------


class Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("type", c_int), ("mem", c_int),
                ("stride_e", c_i64), ("stride_n", c_i64), ("stride_c", c_i64)]


class RouteParams(ctypes.Structure):
    _fields_ = [("E", c_i64), ("K", c_i64), ("score", c_int), ("renormalize", c_int),
                ("score_bias", ctypes.c_void_p), ("n_group", c_i64), ("topk_group", c_i64),
                ("routed_scaling", ctypes.c_float)]


class Router(ctypes.Structure):
    _fields_ = [("route", RouteParams), ("weight", Tensor), ("bias", Tensor), ("D", c_i64)]


class TensorInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("type", c_int), ("type_name", ctypes.c_char_p),
                ("n_dims", c_int), ("ne", c_i64 * 4), ("n_elements", c_i64), ("offset", c_u64),
                ("size", c_u64), ("data", ctypes.c_void_p)]


class Value(ctypes.Structure):
    _fields_ = [("type", c_int), ("elem_type", c_int), ("n", c_u64), ("data", ctypes.c_void_p),
                ("u", c_u64), ("i", c_i64), ("f", ctypes.c_double), ("internal_", c_u64 * 2)]


class LayerParams(ctypes.Structure):
    _fields_ = [("act_type", c_int), ("backend", ctypes.c_char_p), ("K", c_i64)]


P = ctypes.POINTER
vp = ctypes.c_void_p


@pytest.fixture(scope="module")
def api(lib):
    sigs = {
        "moe_gguf_open": ([ctypes.c_char_p, P(vp)], c_int),
        "moe_gguf_open_memory": ([vp, ctypes.c_size_t, P(vp)], c_int),
        "moe_gguf_close": ([vp], None),
        "moe_gguf_last_error": ([vp], ctypes.c_char_p),
        "moe_gguf_n_kv": ([vp], c_i64),
        "moe_gguf_n_tensors": ([vp], c_i64),
        "moe_gguf_version": ([vp], ctypes.c_uint32),
        "moe_gguf_kv_at": ([vp, c_i64, P(ctypes.c_char_p), P(Value)], c_int),
        "moe_gguf_get": ([vp, ctypes.c_char_p, P(Value)], c_int),
        "moe_gguf_array_get": ([vp, P(Value), c_u64, P(Value)], c_int),
        "moe_gguf_get_u32": ([vp, ctypes.c_char_p, P(ctypes.c_uint32)], c_int),
        "moe_gguf_get_f32": ([vp, ctypes.c_char_p, P(ctypes.c_float)], c_int),
        "moe_gguf_get_string": ([vp, ctypes.c_char_p, P(ctypes.c_char_p), P(ctypes.c_size_t)], c_int),
        "moe_gguf_tensor_at": ([vp, c_i64, P(TensorInfo)], c_int),
        "moe_gguf_get_tensor": ([vp, ctypes.c_char_p, P(TensorInfo)], c_int),
        "moe_gguf_layer_desc": ([vp, c_int, P(LayerParams), vp, P(Router)], c_int),
        "moe_layer_from_gguf": ([vp, vp, c_int, P(LayerParams), P(vp), P(Router)], c_int),
        "moe_gguf_router_logits": ([P(Router), c_i64, vp, vp], c_int),
        "moe_route_topk": ([vp, P(RouteParams), c_i64, vp, vp, vp], c_int),
        "moe_ctx_create": ([vp, P(vp)], c_int),
        "moe_ctx_free": ([vp], None),
        "moe_ctx_last_error": ([vp], ctypes.c_char_p),
        "moe_layer_free": ([vp], None),
        "moe_layer_backend": ([vp], ctypes.c_char_p),
        "moe_layer_workspace_size": ([vp, c_i64, P(ctypes.c_size_t)], c_int),
        "moe_layer_forward": ([vp, c_i64, vp, vp, vp, vp, vp, ctypes.c_size_t], c_int),
        "moe_dequantize_row": ([c_int, vp, vp, c_i64], c_int),
        "moe_quantize_row": ([c_int, vp, vp, c_i64], c_int),
        "moe_status_name": ([c_int], ctypes.c_char_p),
    }
    for name, (args, res) in sigs.items():
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, res
    return lib


@pytest.fixture(scope="module")
def ctx(api):
    c = vp()
    assert api.moe_ctx_create(None, ctypes.byref(c)) == 0
    yield c
    api.moe_ctx_free(c)


def ptr(a):
    return a.ctypes.data_as(vp)


def status_name(api, s):
    return api.moe_status_name(s).decode('utf-8', 'replace')


# ---- model files ------------------------------------------------------------------------------

# Per architecture: the routing llama.cpp applies and the keys the converter writes.
ARCHS = {
    # name: (score, renormalize, act)
    "qwen3moe": ("softmax", True, "swiglu"),
    "qwen2moe": ("softmax", False, "swiglu"),
    "llama": ("softmax", True, "swiglu"),          # Mixtral
    "deepseek2": ("sigmoid", True, "swiglu"),      # V3-style: gating 2, norm, scale, groups, bias
    "gpt-oss": ("softmax", True, "swiglu_oai"),    # softmax over the chosen == softmax + renorm
}


def quantize(w, qtype, api=None):
    """(array to write, raw_dtype, dequantized f32 weights) for weights w. Types gguf-py
    cannot quantize (the K-quants) are quantized by libmoe's moe_quantize_row when api is
    given; the reference weights always come from gguf-py's dequantizer."""
    if qtype == Q.F32:
        return w.astype(np.float32), None, w.astype(np.float32)
    if qtype == Q.F16:
        h = w.astype(np.float16)
        return h, None, h.astype(np.float32)
    w = np.ascontiguousarray(w, np.float32)
    try:
        q = gguf.quants.quantize(w, qtype)
    except NotImplementedError:
        if api is None:
            raise
        bs, nb = gguf.GGML_QUANT_SIZES[qtype]
        rows = w.reshape(-1, w.shape[-1])
        q = np.zeros((rows.shape[0], rows.shape[1] // bs * nb), np.uint8)
        for r in range(rows.shape[0]):
            assert api.moe_quantize_row(int(qtype), ptr(rows[r]), ptr(q[r]), rows.shape[1]) == 0
        q = q.reshape(w.shape[:-1] + (q.shape[-1],))
    return q, qtype, gguf.quants.dequantize(q, qtype).astype(np.float32).reshape(w.shape)


class Model:
    """A small MoE model file and the (dequantized) weights of its MoE layers."""

    def __init__(self, path, arch, E=8, D=64, I=32, K=2, qtype=Q.F32, layers=(0,), fused=False,
                 rng=None, scale=2.5, n_group=4, topk_group=2, bias_type=Q.F32, router_type=Q.F32, api=None):
        rng = rng or np.random.default_rng(0)
        self.path, self.arch, self.E, self.D, self.I, self.K = path, arch, E, D, I, K
        self.score, self.renorm, self.act = ARCHS[arch]
        self.scale, self.n_group, self.topk_group = 1.0, 0, 0
        w = gguf.GGUFWriter(path, arch)
        a = arch
        n_blocks = max(layers) + 1
        w.add_uint32(f"{a}.block_count", n_blocks)
        w.add_uint32(f"{a}.expert_count", E)
        w.add_uint32(f"{a}.expert_used_count", K)
        w.add_uint32(f"{a}.embedding_length", D)
        w.add_string("general.name", f"tiny {arch} for libmoe tests")
        if arch == "llama":
            w.add_uint32(f"{a}.feed_forward_length", I)  # Mixtral files carry no expert_feed_forward_length
        else:
            w.add_uint32(f"{a}.expert_feed_forward_length", I)
        if arch == "qwen2moe":
            w.add_uint32(f"{a}.expert_shared_feed_forward_length", 2 * I)
        if arch == "deepseek2":
            w.add_uint32(f"{a}.leading_dense_block_count", min(layers))
            w.add_uint32(f"{a}.expert_gating_func", 2)
            w.add_bool(f"{a}.expert_weights_norm", True)
            w.add_float32(f"{a}.expert_weights_scale", scale)
            w.add_uint32(f"{a}.expert_group_count", n_group)
            w.add_uint32(f"{a}.expert_group_used_count", topk_group)
            w.add_uint32(f"{a}.expert_shared_count", 1)
            self.scale, self.n_group, self.topk_group = scale, n_group, topk_group
        # a few keys of other types, as real files have (tokenizer arrays, nested arrays)
        w.add_array("tokenizer.ggml.tokens", ["<s>", "</s>", "hello", "world", ""])
        w.add_array("tokenizer.ggml.scores", [0.0, -1.5, -2.25, 3.0, 0.5])
        w.add_array("test.nested", [[1, 2, 3], [4], [5, 6]])
        self.layers = {}
        for l in range(n_blocks):
            if l not in layers:  # a dense layer (DeepSeek's leading blocks)
                w.add_tensor(f"blk.{l}.ffn_gate.weight", rng.standard_normal((2 * I, D)).astype(np.float32))
                continue
            L = {}
            sc = 1.0 / np.sqrt(D)
            router = (rng.standard_normal((E, D)) * sc * 4).astype(np.float32)
            t, rt, L["router"] = quantize(router, router_type, api)
            w.add_tensor(f"blk.{l}.ffn_gate_inp.weight", t, raw_dtype=rt)
            gate = (rng.standard_normal((E, I, D)) * sc).astype(np.float32)
            up = (rng.standard_normal((E, I, D)) * sc).astype(np.float32)
            down = (rng.standard_normal((E, D, I)) / np.sqrt(I)).astype(np.float32)
            if fused:
                t, rt, gu = quantize(np.concatenate([gate, up], axis=1), qtype, api)
                w.add_tensor(f"blk.{l}.ffn_gate_up_exps.weight", t, raw_dtype=rt)
                L["gate"], L["up"] = gu[:, :I], gu[:, I:]
            else:
                for name, arr in (("gate", gate), ("up", up)):
                    t, rt, L[name] = quantize(arr, qtype, api)
                    w.add_tensor(f"blk.{l}.ffn_{name}_exps.weight", t, raw_dtype=rt)
            t, rt, L["down"] = quantize(down, qtype, api)
            w.add_tensor(f"blk.{l}.ffn_down_exps.weight", t, raw_dtype=rt)
            L["router_bias"] = L["score_bias"] = None
            L["gate_b"] = L["up_b"] = L["down_b"] = None
            if arch == "gpt-oss":
                for name, n in (("gate", I), ("up", I), ("down", D)):
                    b = (rng.standard_normal((E, n)) * 0.1).astype(np.float32)
                    t, rt, L[name + "_b"] = quantize(b, bias_type, api)
                    w.add_tensor(f"blk.{l}.ffn_{name}_exps.bias", t, raw_dtype=rt)
                b = (rng.standard_normal(E) * 0.5).astype(np.float32)
                w.add_tensor(f"blk.{l}.ffn_gate_inp.bias", b)
                L["router_bias"] = b
            if arch == "deepseek2":
                b = (rng.standard_normal(E) * 0.2).astype(np.float32)
                w.add_tensor(f"blk.{l}.exp_probs_b.bias", b)
                L["score_bias"] = b
            if arch in ("qwen2moe", "deepseek2"):  # shared expert tensors: present, not part of the layer
                w.add_tensor(f"blk.{l}.ffn_up_shexp.weight", rng.standard_normal((2 * I, D)).astype(np.float32))
            self.layers[l] = L
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()

    # -- numpy reference --------------------------------------------------------------------

    def route(self, l, x):
        L = self.layers[l]
        logits = x.astype(np.float64) @ L["router"].astype(np.float64).T
        if L["router_bias"] is not None:
            logits = logits + L["router_bias"]
        if self.score == "softmax":
            p = np.exp(logits - logits.max(axis=1, keepdims=True))
            p /= p.sum(axis=1, keepdims=True)
        else:
            p = 1.0 / (1.0 + np.exp(-logits))
        sel = p + (L["score_bias"] if L["score_bias"] is not None else 0)
        T, E = p.shape
        if self.n_group > 1:
            g = sel.reshape(T, self.n_group, E // self.n_group)
            if L["score_bias"] is not None:
                gs = np.sort(g, axis=2)[:, :, -2:].sum(axis=2)
            else:
                gs = g.max(axis=2)
            keep = np.argsort(-gs, axis=1, kind="stable")[:, : self.topk_group]
            mask = np.zeros((T, self.n_group), bool)
            np.put_along_axis(mask, keep, True, axis=1)
            sel = np.where(np.repeat(mask, E // self.n_group, axis=1), sel, -np.inf)
        ids = np.argsort(-sel, axis=1, kind="stable")[:, : self.K]
        wts = np.take_along_axis(p, ids, axis=1)
        if self.renorm:
            wts = wts / wts.sum(axis=1, keepdims=True)
        return logits, ids.astype(np.int32), (wts * self.scale).astype(np.float32)

    def forward(self, l, x, ids, wts):
        L = self.layers[l]
        x = x.astype(np.float64)
        out = np.zeros((x.shape[0], self.D))
        for t in range(x.shape[0]):
            for k in range(ids.shape[1]):
                e = ids[t, k]
                g = L["gate"][e].astype(np.float64) @ x[t]
                u = L["up"][e].astype(np.float64) @ x[t]
                if L["gate_b"] is not None:
                    g, u = g + L["gate_b"][e], u + L["up_b"][e]
                if self.act == "swiglu":
                    h = g / (1 + np.exp(-g)) * u
                else:  # swiglu_oai, alpha 1.702, limit 7
                    g = np.minimum(g, 7.0)
                    u = np.clip(u, -7.0, 7.0)
                    h = g / (1 + np.exp(-1.702 * g)) * (u + 1)
                o = L["down"][e].astype(np.float64) @ h
                if L["down_b"] is not None:
                    o = o + L["down_b"][e]
                out[t] += wts[t, k] * o
        return out


def can_dequantize(api, qtype):
    """libmoe dequantizes this type (the block formats land with src/quant)."""
    if qtype in (Q.F32, Q.F16, Q.BF16):
        return True
    bs, nb = gguf.GGML_QUANT_SIZES[qtype]
    src = np.zeros(nb, np.uint8)
    dst = np.zeros(bs, np.float32)
    return api.moe_dequantize_row(int(qtype), ptr(src), ptr(dst), bs) == 0


class Opened:
    def __init__(self, api, path):
        self.api = api
        self.f = vp()
        s = api.moe_gguf_open(path.encode(), ctypes.byref(self.f))
        assert s == 0, f"{status_name(api, s)}: {api.moe_gguf_last_error(None).decode('utf-8', 'replace')}"

    def close(self):
        self.api.moe_gguf_close(self.f)


def run_layer(api, ctx, model, path, layer, backend, T, rng):
    """Routing and forward through libmoe; returns (logits, ids, weights, out, backend name)."""
    f = Opened(api, path)
    try:
        params = LayerParams(0, backend.encode() if backend else None, 0)
        L = vp()
        r = Router()
        s = api.moe_layer_from_gguf(ctx, f.f, layer, ctypes.byref(params), ctypes.byref(L), ctypes.byref(r))
        if s != 0:
            raise RuntimeError(f"{status_name(api, s)}: {api.moe_ctx_last_error(ctx).decode('utf-8', 'replace')}")
        try:
            assert (r.route.E, r.route.K, r.D) == (model.E, model.K, model.D)
            assert r.route.score == (0 if model.score == "softmax" else 1)
            assert bool(r.route.renormalize) == model.renorm
            assert abs(r.route.routed_scaling - model.scale) < 1e-6
            assert (r.route.n_group, r.route.topk_group) == ((model.n_group, model.topk_group)
                                                             if model.n_group > 1 else (0, 0))
            assert bool(r.route.score_bias) == (model.layers[layer]["score_bias"] is not None)
            assert bool(r.bias.data) == (model.layers[layer]["router_bias"] is not None)
            x = rng.standard_normal((T, model.D)).astype(np.float32)
            logits = np.zeros((T, model.E), np.float32)
            assert api.moe_gguf_router_logits(ctypes.byref(r), T, ptr(x), ptr(logits)) == 0, \
                api.moe_gguf_last_error(None).decode('utf-8', 'replace')
            ids = np.zeros((T, model.K), np.int32)
            wts = np.zeros((T, model.K), np.float32)
            assert api.moe_route_topk(ctx, ctypes.byref(r.route), T, ptr(logits), ptr(ids), ptr(wts)) == 0, \
                api.moe_ctx_last_error(ctx).decode('utf-8', 'replace')
            ws = ctypes.c_size_t()
            assert api.moe_layer_workspace_size(L, T, ctypes.byref(ws)) == 0
            work = np.zeros(max(ws.value, 1), np.uint8)
            out = np.zeros((T, model.D), np.float32)
            s = api.moe_layer_forward(L, T, ptr(x), ptr(ids), ptr(wts), ptr(out), ptr(work), ws.value)
            assert s == 0, api.moe_ctx_last_error(ctx).decode('utf-8', 'replace')
            return x, logits, ids, wts, out, api.moe_layer_backend(L).decode('utf-8', 'replace')
        finally:
            api.moe_layer_free(L)
    finally:
        f.close()


def rel_err(a, b):
    """Normalised L2 error, as the C case table measures it."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def backend_tolerance(qtype):
    """The C case table's limits (tests/cases.c): backends other than the reference
    quantize activations to 8 bits for block weights and may round through f16/bf16."""
    if gguf.GGML_QUANT_SIZES[qtype][0] > 1:
        return 3e-2
    return {Q.BF16: 1e-2, Q.F16: 5e-3}.get(qtype, 1e-4)


CASES = [
    # arch, weight type, fused gate_up
    ("qwen3moe", Q.F32, False),
    ("qwen3moe", Q.BF16, True),
    ("qwen3moe", Q.Q8_0, False),
    ("qwen2moe", Q.F16, False),
    ("qwen2moe", Q.Q4_0, False),
    ("llama", Q.Q8_0, False),
    ("llama", Q.F32, True),
    ("deepseek2", Q.F32, False),
    ("deepseek2", Q.Q4_0, False),
    ("gpt-oss", Q.MXFP4, False),
    ("gpt-oss", Q.F16, False),
]


@pytest.fixture
def seed_dir():
    """Where to keep the generated files for the fuzzer (MOE_GGUF_SEED_DIR), or None."""
    d = os.environ.get("MOE_GGUF_SEED_DIR")
    if d:
        os.makedirs(d, exist_ok=True)
    return d


@pytest.mark.parametrize("backend", ["ref", None], ids=["ref", "auto"])
@pytest.mark.parametrize("arch,qtype,fused", CASES, ids=[f"{a}-{q.name}{'-fused' if f else ''}" for a, q, f in CASES])
def test_layer_from_file_matches_numpy(api, ctx, tmp_path, rng, seed_dir, arch, qtype, fused, backend):
    if not can_dequantize(api, qtype):
        pytest.skip(f"libmoe does not dequantize {qtype.name} yet (src/quant)")
    path = str(tmp_path / f"{arch}.gguf")
    layers = (1, 2) if arch == "deepseek2" else (0, 1)
    K = 3 if arch == "deepseek2" else 2
    model = Model(path, arch, E=8, D=64, I=32, K=K, qtype=qtype, layers=layers, fused=fused, rng=rng)
    if seed_dir:
        shutil.copy(path, os.path.join(seed_dir, f"{arch}-{qtype.name}{'-fused' if fused else ''}.gguf"))
    for layer in layers:
        T = 13
        x, logits, ids, wts, out, used = run_layer(api, ctx, model, path, layer, backend, T, rng)
        ref_logits, ref_ids, ref_wts = model.route(layer, x)
        assert rel_err(logits, ref_logits) < 1e-5
        np.testing.assert_array_equal(ids, ref_ids)
        np.testing.assert_allclose(wts, ref_wts, rtol=1e-5, atol=1e-6)
        ref = model.forward(layer, x, ids, wts)
        # the reference backend computes in f64 on the same dequantized weights
        tol = 1e-5 if used == "ref" else backend_tolerance(qtype)
        err = rel_err(out, ref)
        assert err < tol, f"layer {layer} on {used}: normalised max error {err:.3g} > {tol}"


@pytest.mark.parametrize("qtype", [Q.Q2_K, Q.Q3_K, Q.Q4_K, Q.Q5_K, Q.Q6_K], ids=lambda q: q.name)
def test_k_quant_files(api, ctx, tmp_path, rng, qtype):
    """K-quants: gguf-py only dequantizes them, so libmoe writes the blocks
    (moe_quantize_row), gguf-py's dequantizer gives the reference weights."""
    if not can_dequantize(api, qtype):
        pytest.skip(f"libmoe does not dequantize {qtype.name} yet (src/quant)")
    path = str(tmp_path / f"k-{qtype.name}.gguf")
    model = Model(path, "qwen3moe", E=4, D=256, I=256, K=2, qtype=qtype, rng=rng, api=api)
    for backend in ("ref", None):
        x, logits, ids, wts, out, used = run_layer(api, ctx, model, path, 0, backend, 5, rng)
        tol = 1e-5 if used == "ref" else backend_tolerance(qtype)
        assert rel_err(out, model.forward(0, x, ids, wts)) < tol, used


def test_metadata_read_back(api, tmp_path, rng):
    path = str(tmp_path / "m.gguf")
    Model(path, "deepseek2", E=8, D=32, I=32, K=2, layers=(1,), rng=rng)
    f = Opened(api, path)
    try:
        assert api.moe_gguf_version(f.f) == 3
        s = ctypes.c_char_p()
        n = ctypes.c_size_t()
        assert api.moe_gguf_get_string(f.f, b"general.architecture", ctypes.byref(s), ctypes.byref(n)) == 0
        assert s.value == b"deepseek2" and n.value == 9
        v = ctypes.c_float()
        assert api.moe_gguf_get_f32(f.f, b"deepseek2.expert_weights_scale", ctypes.byref(v)) == 0
        assert v.value == 2.5
        arr, el, el2 = Value(), Value(), Value()
        assert api.moe_gguf_get(f.f, b"tokenizer.ggml.tokens", ctypes.byref(arr)) == 0
        assert arr.n == 5 and arr.elem_type == 8
        assert api.moe_gguf_array_get(f.f, ctypes.byref(arr), 3, ctypes.byref(el)) == 0
        assert ctypes.string_at(el.data, el.n) == b"world"
        assert api.moe_gguf_get(f.f, b"test.nested", ctypes.byref(arr)) == 0
        assert arr.n == 3 and arr.elem_type == 9
        assert api.moe_gguf_array_get(f.f, ctypes.byref(arr), 0, ctypes.byref(el)) == 0
        assert el.n == 3
        assert api.moe_gguf_array_get(f.f, ctypes.byref(el), 2, ctypes.byref(el2)) == 0
        assert el2.i == 3
        # every tensor the writer wrote, with gguf-py's own reader as the judge
        rd = gguf.GGUFReader(path)
        assert api.moe_gguf_n_tensors(f.f) == len(rd.tensors)
        for t in rd.tensors:
            info = TensorInfo()
            assert api.moe_gguf_get_tensor(f.f, t.name.encode(), ctypes.byref(info)) == 0
            assert info.type == int(t.tensor_type)
            assert list(info.ne[: info.n_dims]) == [int(d) for d in t.shape]
            assert info.offset == t.data_offset and info.size == t.n_bytes
        # layer 0 is dense (leading_dense_block_count = 1)
        d = (ctypes.c_uint8 * 4096)()
        st = api.moe_gguf_layer_desc(f.f, 0, None, d, None)
        assert status_name(api, st) == "MOE_ERR_NOT_FOUND"
        assert b"dense" in api.moe_gguf_last_error(f.f)
    finally:
        f.close()


# ---- corrupt files ---------------------------------------------------------------------------


def open_bytes(api, data):
    buf = ctypes.create_string_buffer(bytes(data), len(data))
    f = vp()
    s = api.moe_gguf_open_memory(buf, len(data), ctypes.byref(f))
    msg = api.moe_gguf_last_error(None).decode('utf-8', 'replace')
    return s, f, msg, buf


def walk(api, f):
    """Reads every key and tensor of an opened file and tries its layers."""
    for i in range(api.moe_gguf_n_kv(f)):
        k, v = ctypes.c_char_p(), Value()
        assert api.moe_gguf_kv_at(f, i, ctypes.byref(k), ctypes.byref(v)) == 0
        if v.type == 9:
            e = Value()
            for j in range(min(v.n, 64)):
                assert api.moe_gguf_array_get(f, ctypes.byref(v), j, ctypes.byref(e)) == 0
    for i in range(api.moe_gguf_n_tensors(f)):
        t = TensorInfo()
        assert api.moe_gguf_tensor_at(f, i, ctypes.byref(t)) == 0
        if t.size:
            ctypes.string_at(t.data, t.size)
    d = (ctypes.c_uint8 * 4096)()
    r = Router()
    for layer in range(3):
        api.moe_gguf_layer_desc(f, layer, None, d, ctypes.byref(r))


@pytest.fixture(scope="module")
def small_file(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("gguf") / "small.gguf")
    Model(path, "gpt-oss", E=4, D=32, I=32, K=2, qtype=Q.Q8_0, rng=np.random.default_rng(7))
    with open(path, "rb") as fh:
        return path, fh.read()


def data_end(api, data):
    s, f, msg, keep = open_bytes(api, data)
    assert s == 0, msg
    end = 0
    for i in range(api.moe_gguf_n_tensors(f)):
        t = TensorInfo()
        api.moe_gguf_tensor_at(f, i, ctypes.byref(t))
        end = max(end, t.offset + t.size)
    api.moe_gguf_close(f)
    return end


def test_truncated_files(api, small_file):
    _, data = small_file
    end = data_end(api, data)
    cuts = sorted(set(list(range(0, 2048)) + list(range(2048, end, 97)) + [end - 1]))
    for n in cuts:
        s, f, msg, _ = open_bytes(api, data[:n])
        assert s != 0, f"truncated to {n} of {len(data)} bytes (data ends at {end}) but it opened"
        assert status_name(api, s) == "MOE_ERR_GGUF_FORMAT", (n, msg)
        assert msg and not f
    s, f, msg, _ = open_bytes(api, data[:end])  # the trailing padding is optional
    assert s == 0, msg
    api.moe_gguf_close(f)


def test_flipped_bytes(api, small_file, rng):
    _, data = small_file
    opened = failed = 0
    for it in range(1500):
        b = bytearray(data)
        for _ in range(int(rng.integers(1, 5))):
            at = int(rng.integers(0, 1500 if rng.integers(0, 2) else len(b)))
            b[at] = int(rng.integers(0, 256)) if rng.integers(0, 3) == 0 else b[at] ^ (1 << int(rng.integers(0, 8)))
        s, f, msg, keep = open_bytes(api, b)
        if s == 0:
            opened += 1
            walk(api, f)
            api.moe_gguf_close(f)
        else:
            failed += 1
            assert msg, f"iteration {it}: {status_name(api, s)} without a message"
    assert opened and failed


def test_counts_and_lengths_past_the_end(api, small_file):
    _, data = small_file
    import struct

    def patched(at, fmt, value):
        b = bytearray(data)
        struct.pack_into(fmt, b, at, value)
        return b

    for at, name in ((8, "n_tensors"), (16, "n_kv")):
        for v in (2**64 - 1, 2**63, 2**40, len(data)):
            s, f, msg, _ = open_bytes(api, patched(at, "<Q", v))
            assert status_name(api, s) == "MOE_ERR_GGUF_FORMAT" and f"{name} = {v}" in msg, msg
    # the first key's length, then its value's string length (general.architecture = "gpt-oss")
    s, f, msg, _ = open_bytes(api, patched(24, "<Q", 2**62))
    assert status_name(api, s) == "MOE_ERR_GGUF_FORMAT" and "length 4611686018427387904" in msg, msg
    klen = struct.unpack_from("<Q", data, 24)[0]
    vat = 24 + 8 + klen + 4
    s, f, msg, _ = open_bytes(api, patched(vat, "<Q", 2**64 - 8))
    assert status_name(api, s) == "MOE_ERR_GGUF_FORMAT" and "general.architecture" in msg, msg
    s, f, msg, _ = open_bytes(api, patched(4, "<I", 7))
    assert status_name(api, s) == "MOE_ERR_GGUF_FORMAT" and "version = 7" in msg
    s, f, msg, _ = open_bytes(api, b"GGML" + data[4:])
    assert status_name(api, s) == "MOE_ERR_GGUF_FORMAT" and "magic" in msg


def test_tensor_that_disagrees_with_metadata(api, tmp_path, rng):
    path = str(tmp_path / "bad.gguf")
    Model(path, "qwen3moe", E=4, D=32, I=32, K=2, rng=rng)
    # expert_count 4 -> 5: every expert tensor's last dimension disagrees
    with open(path, "rb") as fh:
        data = bytearray(fh.read())
    key = b"qwen3moe.expert_count"
    at = data.index(key) + len(key) + 4
    data[at:at + 4] = (5).to_bytes(4, "little")
    s, f, msg, keep = open_bytes(api, data)
    assert s == 0, msg
    try:
        d = (ctypes.c_uint8 * 4096)()
        st = api.moe_gguf_layer_desc(f, 0, None, d, None)
        msg = api.moe_gguf_last_error(f).decode('utf-8', 'replace')
        assert status_name(api, st) == "MOE_ERR_GGUF_FORMAT", msg
        assert "expert_count" in msg and "expected 5" in msg, msg
    finally:
        api.moe_gguf_close(f)


def test_open_errors(api, tmp_path):
    f = vp()
    s = api.moe_gguf_open(str(tmp_path / "missing.gguf").encode(), ctypes.byref(f))
    assert status_name(api, s) == "MOE_ERR_IO" and b"missing.gguf" in api.moe_gguf_last_error(None)
    s = api.moe_gguf_open(str(tmp_path).encode(), ctypes.byref(f))
    assert status_name(api, s) == "MOE_ERR_IO"
