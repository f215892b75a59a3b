"""The reference backend ("ref", forced) against an independent numpy float64
implementation of the layer (include/moe.h's formula):

    out[t] = sum_k w[t,k] * (down_e act(gate_e x_t + bg_e, up_e x_t + bu_e) + bd_e),  e = ids[t,k]

The reference accumulates in double and rounds once to act_type, so the only
difference from numpy is the order of the double sums: the result must be the
float64 value rounded to nearest in the output type: within half an ulp, plus
a sliver for the order of the double sums and for the f32 step that f16 and
bf16 outputs take."""
import math

import numpy as np
import pytest

import libmoe

# ---------------------------------------------------------------------------
# numpy side: dtype conversions and the layer in float64
# ---------------------------------------------------------------------------


def f32_to_bf16_bits(a):
    """float32 -> bf16 bits (uint16), round to nearest even, NaN kept NaN."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(nan, ((u >> 16) | 0x40).astype(np.uint16), r)


def bf16_bits_to_f64(b):
    return (np.asarray(b, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def to_dtype(a, dt):
    """(array handed to the library, its exact value as float64) for dt in f32/f16/bf16."""
    a = np.asarray(a, dtype=np.float64)
    if dt == "f32":
        v = a.astype(np.float32)
        return v, v.astype(np.float64)
    if dt == "f16":
        v = a.astype(np.float16)
        return v, v.astype(np.float64)
    bits = f32_to_bf16_bits(a.astype(np.float32))
    return bits, bf16_bits_to_f64(bits)


def from_out(out, dt):
    return bf16_bits_to_f64(out) if dt == "bf16" else np.asarray(out, dtype=np.float64)


SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_erf = np.frompyfunc(math.erf, 1, 1)


def erf(x):
    return _erf(x).astype(np.float64)


def gelu_tanh(v):
    return 0.5 * v * (1.0 + np.tanh(SQRT_2_OVER_PI * (v + 0.044715 * v ** 3)))


def act_np(act, g, u, alpha, limit):
    if act == "swiglu":
        return g / (1.0 + np.exp(-g)) * u
    if act == "geglu_tanh":
        return gelu_tanh(g) * u
    if act == "geglu_erf":
        return 0.5 * g * (1.0 + erf(g / math.sqrt(2.0))) * u
    if act == "swiglu_oai":
        g = np.minimum(g, limit)  # np.minimum/np.clip keep NaN, as the C comparisons do
        u = np.clip(u, -limit, limit)
        return g * (1.0 / (1.0 + np.exp(-alpha * g))) * (u + 1.0)
    if act == "silu":
        return u / (1.0 + np.exp(-u))
    if act == "gelu":
        return gelu_tanh(u)
    if act == "relu2":
        return np.where(u < 0, 0.0, u * u)
    raise ValueError(act)


def layer_np(x, ids, w, act, up, down, gate=None, bg=None, bu=None, bd=None, alpha=1.702, limit=7.0):
    """All float64. x [T, D], ids [T, K], w [T, K], gate/up [E, I, D], down [E, D, I]."""
    T, D = x.shape
    K = ids.shape[1]
    alpha, limit = float(np.float32(alpha)), float(np.float32(limit))  # the desc holds floats
    out = np.zeros((T, D))
    with np.errstate(all="ignore"):
        for t in range(T):
            for k in range(K):
                e = ids[t, k]
                u = up[e] @ x[t] + (bu[e] if bu is not None else 0.0)
                g = gate[e] @ x[t] + (bg[e] if bg is not None else 0.0) if gate is not None else None
                h = act_np(act, g, u, alpha, limit)
                out[t] += w[t, k] * (down[e] @ h + (bd[e] if bd is not None else 0.0))
    return out


def half_ulp(ref, dt):
    """Half the spacing of dt's values at |ref| (ref rounded to dt first)."""
    a = np.abs(ref)
    if dt == "f32":
        sp = np.spacing(a.astype(np.float32))
    elif dt == "f16":
        sp = np.spacing(a.astype(np.float16))
    else:  # bf16 keeps f32's exponent and 7 of its 23 fraction bits
        sp = np.spacing(bf16_bits_to_f64(f32_to_bf16_bits(a)).astype(np.float32)) * 65536.0
    return 0.5 * sp.astype(np.float64)


def assert_matches(out, ref, dt, what=""):
    """out (the library's, in dt) is ref (float64) rounded to nearest in dt:
    within half an ulp, plus a sliver for the order of the double sums and
    the f32 step before f16/bf16. A truncating or off-by-one-ulp rounding
    fails. NaN and Inf must be where ref has them."""
    got = from_out(out, dt)
    assert got.shape == ref.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref), err_msg="NaN pattern differs " + what)
    inf = np.isinf(ref)
    np.testing.assert_array_equal(got[inf], ref[inf], err_msg="Inf " + what)
    fin = np.isfinite(ref)
    g, r = got[fin], ref[fin]
    if r.size == 0:
        return
    err = np.abs(g - r)
    lim = half_ulp(r, dt) * (1 + 2.0 ** -10) + 1e-13 * np.abs(r).max()
    bad = err > lim
    if bad.any():
        i = np.argmax(err / lim)
        raise AssertionError("%s: %d of %d elements are not %s's nearest to the float64 result; worst got %r, "
                             "want %r (err %g, limit %g)" % (what, bad.sum(), bad.size, dt, g[i], r[i], err[i],
                                                             lim[i]))


# ---------------------------------------------------------------------------
# the cases
# ---------------------------------------------------------------------------

GATED = ["swiglu", "geglu_tanh", "geglu_erf", "swiglu_oai"]
PLAIN = ["silu", "gelu", "relu2"]


@pytest.fixture(scope="module")
def ctx():
    with libmoe.Context("cpu") as c:
        yield c


def make_weights(rng, E, D, I, biases, wdt="f32"):
    """dict of float64 weights rounded to wdt's values, and the arrays to hand over."""
    raw = {
        "gate": rng.standard_normal((E, I, D)) / math.sqrt(D),
        "up": rng.standard_normal((E, I, D)) / math.sqrt(D),
        "down": rng.standard_normal((E, D, I)) / math.sqrt(I),
    }
    if biases:
        raw["gate_bias"] = 0.5 * rng.standard_normal((E, I))
        raw["up_bias"] = 0.5 * rng.standard_normal((E, I))
        raw["down_bias"] = 0.5 * rng.standard_normal((E, D))
    arrs, vals = {}, {}
    for k, v in raw.items():
        arrs[k], vals[k] = to_dtype(v, wdt)
    return arrs, vals


def routing(rng, T, E, K):
    ids = np.stack([rng.choice(E, K, replace=False) for _ in range(T)]).astype(np.int32) if T else np.zeros(
        (0, K), np.int32)
    w = rng.uniform(0.1, 1.0, (T, K)).astype(np.float32)
    return ids, w


def run_case(ctx, rng, act, layout="separate", biases=False, wdt="f32", adt="f32", E=5, D=24, I=10, K=2, T=7,
             alpha=1.702, limit=7.0, ids=None, w=None, x=None, transform=None, edit=None):
    arrs, vals = make_weights(rng, E, D, I, biases, wdt)
    if edit:
        edit(arrs, vals)
    gated = act in GATED
    if x is None:
        x = rng.standard_normal((T, D))
    xa, xv = to_dtype(x, adt)
    if ids is None:
        ids, w = routing(rng, T, E, K)
    kw = {}
    if layout == "separate":
        kw["up"] = arrs["up"]
        if gated:
            kw["gate"] = arrs["gate"]
        if biases:
            kw["up_bias"] = arrs["up_bias"]
            if gated:
                kw["gate_bias"] = arrs["gate_bias"]
    else:
        gu = np.empty((E, 2 * I, D), dtype=arrs["up"].dtype)
        if layout == "concat":
            gu[:, :I], gu[:, I:] = arrs["gate"], arrs["up"]
        else:
            gu[:, 0::2], gu[:, 1::2] = arrs["gate"], arrs["up"]
        kw["gate_up"] = gu
        if biases:
            gb = np.empty((E, 2 * I), dtype=arrs["up"].dtype)
            if layout == "concat":
                gb[:, :I], gb[:, I:] = arrs["gate_bias"], arrs["up_bias"]
            else:
                gb[:, 0::2], gb[:, 1::2] = arrs["gate_bias"], arrs["up_bias"]
            kw["gate_up_bias"] = gb
    kw["down"] = arrs["down"]
    if biases:
        kw["down_bias"] = arrs["down_bias"]
    if transform:
        kw = {k: transform(k, v) for k, v in kw.items()}
    wtype = "bf16" if wdt == "bf16" else None
    layer = libmoe.Layer(ctx, E, D, I, K, act=act, layout=layout, alpha=alpha, limit=limit, act_type=adt,
                         backend="ref", wtype=wtype, bias_type=wtype, **kw)
    assert layer.backend == "ref"
    out = layer.forward(xa, ids, w)
    want = layer_np(xv, ids, w.astype(np.float64), act, vals["up"], vals["down"],
                    gate=vals["gate"] if gated else None, bg=vals.get("gate_bias") if gated else None,
                    bu=vals.get("up_bias"), bd=vals.get("down_bias"), alpha=alpha, limit=limit)
    layer.close()
    return out, want


@pytest.mark.parametrize("biases", [False, True], ids=["nobias", "bias"])
@pytest.mark.parametrize("act", GATED + PLAIN)
def test_ref_every_activation(ctx, rng, act, biases):
    kw = dict(alpha=1.702, limit=1.0) if act == "swiglu_oai" else {}  # a low limit: the clamps are exercised
    out, want = run_case(ctx, rng, act, biases=biases, **kw)
    assert_matches(out, want, "f32", act)


@pytest.mark.parametrize("biases", [False, True], ids=["nobias", "bias"])
@pytest.mark.parametrize("layout", ["separate", "concat", "interleaved"])
@pytest.mark.parametrize("act", GATED)
def test_ref_every_layout(ctx, rng, act, layout, biases):
    kw = dict(alpha=1.5, limit=0.75) if act == "swiglu_oai" else {}
    out, want = run_case(ctx, rng, act, layout=layout, biases=biases, **kw)
    assert_matches(out, want, "f32", "%s %s" % (act, layout))


def test_ref_layouts_agree(ctx, rng):
    """The same weights through the three layouts give the same bits."""
    E, D, I, K, T = 4, 16, 6, 2, 5
    arrs, _ = make_weights(rng, E, D, I, True)
    x = rng.standard_normal((T, D)).astype(np.float32)
    ids, w = routing(rng, T, E, K)
    outs = []
    for layout in ("separate", "concat", "interleaved"):
        if layout == "separate":
            kw = dict(gate=arrs["gate"], up=arrs["up"], gate_bias=arrs["gate_bias"], up_bias=arrs["up_bias"])
        elif layout == "concat":
            kw = dict(gate_up=np.concatenate([arrs["gate"], arrs["up"]], 1),
                      gate_up_bias=np.concatenate([arrs["gate_bias"], arrs["up_bias"]], 1))
        else:
            kw = dict(gate_up=np.stack([arrs["gate"], arrs["up"]], 2).reshape(E, 2 * I, D),
                      gate_up_bias=np.stack([arrs["gate_bias"], arrs["up_bias"]], 2).reshape(E, 2 * I))
        with libmoe.Layer(ctx, E, D, I, K, layout=layout, down=arrs["down"], down_bias=arrs["down_bias"],
                          backend="ref", **kw) as layer:
            outs.append(layer.forward(x, ids, w))
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_array_equal(outs[0], outs[2])


@pytest.mark.parametrize("adt", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("wdt", ["f32", "f16", "bf16"])
def test_ref_dtypes(ctx, rng, wdt, adt):
    out, want = run_case(ctx, rng, "swiglu", layout="concat", biases=True, wdt=wdt, adt=adt)
    if adt == "bf16":
        assert out.dtype == np.uint16
    else:
        assert out.dtype == {"f32": np.float32, "f16": np.float16}[adt]
    assert_matches(out, want, adt, "w %s, act %s" % (wdt, adt))


@pytest.mark.parametrize("wdt", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("layout", ["separate", "concat", "interleaved"])
def test_ref_strided_weights(ctx, rng, layout, wdt):
    """Weights handed over as transposed or sliced views: the element strides
    reach the library and it reads through them."""

    def transform(name, a):
        if a.ndim == 3 and name in ("gate", "down"):
            # transposed storage, [E, C, N] with N contiguous (torch._grouped_mm's layout)
            return np.ascontiguousarray(a.transpose(0, 2, 1)).transpose(0, 2, 1)
        if a.ndim == 3:
            # every other row of a bigger array, experts every other one too
            big = np.zeros((2 * a.shape[0], 2 * a.shape[1], a.shape[2] + 3), dtype=a.dtype)
            big[::2, ::2, 1:a.shape[2] + 1] = a
            v = big[::2, ::2, 1:a.shape[2] + 1]
            assert not v.flags.c_contiguous
            return v
        big = np.zeros((a.shape[0], 3 * a.shape[1]), dtype=a.dtype)  # a bias: every third element
        big[:, ::3] = a
        return big[:, ::3]

    out, want = run_case(ctx, rng, "geglu_tanh", layout=layout, biases=True, wdt=wdt, transform=transform)
    assert_matches(out, want, "f32", "strided %s %s" % (layout, wdt))


def test_ref_transposed_gate_up(ctx, rng):
    """gate_up [E, 2I, D] stored as [E, D, 2I] (2I contiguous): the CONCAT and
    INTERLEAVED row views must follow stride_n = 1."""
    for layout in ("concat", "interleaved"):
        out, want = run_case(ctx, rng, "swiglu", layout=layout, biases=True,
                             transform=lambda n, a: np.ascontiguousarray(a.transpose(0, 2, 1)).transpose(0, 2, 1)
                             if a.ndim == 3 else a)
        assert_matches(out, want, "f32", "transposed " + layout)


def test_ref_duplicate_ids(ctx, rng):
    """The same expert twice in one token: each slot contributes with its own weight."""
    E, K, T = 4, 3, 4
    ids = np.array([[1, 1, 2], [0, 0, 0], [3, 2, 3], [2, 1, 0]], dtype=np.int32)
    w = np.array([[0.25, 0.5, 0.125], [1, 2, 3], [0.5, 0.5, 0.5], [1, 1, 1]], dtype=np.float32)
    out, want = run_case(ctx, rng, "swiglu", E=E, K=K, T=T, ids=ids, w=w, biases=True)
    assert_matches(out, want, "f32", "duplicate ids")


def test_ref_k_equals_e_and_t1(ctx, rng):
    E = 6
    ids = np.array([rng.permutation(E)], dtype=np.int32)
    w = rng.uniform(0, 1, (1, E)).astype(np.float32)
    out, want = run_case(ctx, rng, "geglu_erf", E=E, K=E, T=1, ids=ids, w=w, biases=True)
    assert out.shape == (1, 24)
    assert_matches(out, want, "f32", "K = E, T = 1")


def test_ref_odd_sizes(ctx, rng):
    for E, D, I, K, T in [(1, 1, 1, 1, 1), (3, 7, 5, 3, 11), (7, 33, 17, 2, 3)]:
        out, want = run_case(ctx, rng, "swiglu_oai", E=E, D=D, I=I, K=K, T=T, biases=True, limit=1.25)
        assert_matches(out, want, "f32", "E %d D %d I %d K %d T %d" % (E, D, I, K, T))


def test_ref_t0_is_a_noop(ctx, rng):
    E, D, I, K = 4, 8, 4, 2
    arrs, _ = make_weights(rng, E, D, I, False)
    with libmoe.Layer(ctx, E, D, I, K, gate=arrs["gate"], up=arrs["up"], down=arrs["down"], backend="ref") as layer:
        out = layer.forward(np.zeros((0, D), np.float32), np.zeros((0, K), np.int32), np.zeros((0, K), np.float32))
        assert out.shape == (0, D)
        # the raw call with T = 0 and no buffers at all is valid too
        assert libmoe.lib().moe_layer_forward(layer._h, 0, None, None, None, None, None, 0) == 0


@pytest.mark.parametrize("act", GATED + PLAIN)
def test_ref_nan_propagation(ctx, rng, act):
    """NaN in x spoils its own token only; NaN in one expert's weight spoils the
    tokens routed to that expert only; Inf goes where IEEE arithmetic sends it."""
    E, D, I, K, T = 4, 8, 6, 2, 6
    x = rng.standard_normal((T, D))
    x[1, 3] = np.nan
    x[4, 0] = np.inf
    ids = np.array([[0, 1], [0, 1], [2, 3], [0, 2], [1, 0], [3, 0]], dtype=np.int32)
    w = rng.uniform(0.1, 1, (T, K)).astype(np.float32)

    def poison(arrs, vals):
        arrs["down"][3, 2, 1] = vals["down"][3, 2, 1] = np.nan  # expert 3, output column 2

    out, want = run_case(ctx, rng, act, E=E, D=D, I=I, K=K, T=T, x=x, ids=ids, w=w, edit=poison)
    assert np.isnan(want[1]).all()  # the numpy side agrees with the premise
    assert np.isnan(want[2, 2]) and np.isnan(want[5, 2]) and np.isfinite(want[0]).all()
    assert_matches(out, want, "f32", "NaN " + act)


def test_ref_quantized_weights_vs_gguf(ctx, rng):
    """Block-quantised weights: the reference dequantises them as GGUF defines
    it (checked against gguf-py's own dequantisation, independent of libmoe)."""
    pytest.importorskip("gguf", reason="gguf-py not installed")
    from gguf import GGMLQuantizationType as Q
    from gguf.quants import dequantize

    E, D, I, K, T = 3, 256, 256, 2, 3
    for qt, name in [(Q.Q8_0, "q8_0"), (Q.Q4_K, "q4_K"), (Q.Q6_K, "q6_K"), (Q.MXFP4, "mxfp4")]:
        if name == "mxfp4" and not hasattr(Q, "MXFP4"):
            continue
        raw = {"gate": rng.standard_normal((E, I, D)) / 16, "up": rng.standard_normal((E, I, D)) / 16,
               "down": rng.standard_normal((E, D, I)) / 16}
        arrs = {k: libmoe.quantize_row(name, v.astype(np.float32)) for k, v in raw.items()}
        vals = {k: dequantize(a, qt).astype(np.float64) for k, a in arrs.items()}
        x = rng.standard_normal((T, D)).astype(np.float32)
        ids, w = routing(rng, T, E, K)
        with libmoe.Layer(ctx, E, D, I, K, wtype=name, backend="ref", **arrs) as layer:
            out = layer.forward(x, ids, w)
        want = layer_np(x.astype(np.float64), ids, w.astype(np.float64), "swiglu", vals["up"], vals["down"],
                        gate=vals["gate"])
        assert_matches(out, want, "f32", name)
