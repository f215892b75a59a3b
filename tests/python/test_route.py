"""moe_route_topk on a CPU context against a numpy implementation of the
documented router (include/moe.h, src/core/route.c):

    p    = softmax(logits) or sigmoid(logits)            (double)
    sel  = p + score_bias                                (selection only)
    grouped: group score = best sel in the group, or, when score_bias is
             given, the sum of its two best (DeepSeek-V3); the topk_group best
             groups are kept (ties: lower group index)
    ids  = the K best sel among the kept experts, best first, ties to the
           lower expert index, NaN last
    w    = p[ids] (/ sum p[ids] when renormalize) * routed_scaling, as float32
"""
import ctypes
import math

import numpy as np
import pytest

import libmoe
from libmoe import MoeError, Status


@pytest.fixture(scope="module")
def ctx():
    with libmoe.Context("cpu") as c:
        yield c


def _rank(vals, idx):
    """idx sorted best first: larger value, NaN last, lower index on ties."""
    return sorted(idx, key=lambda i: (math.isnan(vals[i]), -vals[i] if not math.isnan(vals[i]) else 0.0, i))


def route_np(logits, K, score="softmax", renormalize=False, score_bias=None, n_group=0, topk_group=0,
             routed_scaling=1.0):
    T, E = logits.shape
    ids = np.zeros((T, K), np.int32)
    w = np.zeros((T, K), np.float32)
    for t in range(T):
        l = logits[t].astype(np.float64)
        with np.errstate(all="ignore"):
            if score == "softmax":
                m = np.nanmax(l) if not np.isnan(l).all() else -np.inf
                p = np.exp(l - m)
                p = p / p.sum()
            else:
                p = 1.0 / (1.0 + np.exp(-l))
        sel = p + (score_bias.astype(np.float64) if score_bias is not None else 0.0)
        allowed = list(range(E))
        if n_group > 1:
            gs = E // n_group
            gscore = []
            for g in range(n_group):
                best = _rank(sel, range(g * gs, (g + 1) * gs))
                gscore.append(sel[best[0]] + sel[best[1]] if score_bias is not None and gs >= 2 else sel[best[0]])
            keep = _rank(gscore, range(n_group))[:topk_group]
            allowed = [e for g in sorted(keep) for e in range(g * gs, (g + 1) * gs)]
        chosen = _rank(sel, allowed)[:K]
        ids[t] = chosen
        pv = p[chosen]
        if renormalize:
            pv = pv / pv.sum()
        w[t] = (pv * np.float64(np.float32(routed_scaling))).astype(np.float32)
    return ids, w


def check(ctx, logits, K, **kw):
    ids, w = libmoe.route_topk(ctx, logits, K, **kw)
    want_ids, want_w = route_np(logits, K, **kw)
    assert ids.dtype == np.int32 and w.dtype == np.float32
    assert ids.shape == w.shape == (logits.shape[0], K)
    np.testing.assert_array_equal(ids, want_ids)
    # float32 of the same double up to the order of a K-term sum: at most 1 ulp apart
    np.testing.assert_allclose(w, want_w, rtol=2.0 ** -23, atol=0)
    return ids, w


@pytest.mark.parametrize("renormalize", [False, True])
@pytest.mark.parametrize("score", ["softmax", "sigmoid"])
def test_route_scores(ctx, rng, score, renormalize):
    for T, E, K in [(1, 1, 1), (9, 8, 2), (5, 16, 4), (3, 7, 7), (2, 64, 6)]:
        logits = (2 * rng.standard_normal((T, E))).astype(np.float32)
        check(ctx, logits, K, score=score, renormalize=renormalize)


def test_route_softmax_weights_sum_to_one_when_renormalized(ctx, rng):
    logits = rng.standard_normal((16, 32)).astype(np.float32)
    _, w = check(ctx, logits, 5, renormalize=True)
    np.testing.assert_allclose(w.sum(1), 1.0, rtol=1e-6)
    _, w = check(ctx, logits, 32, renormalize=False)  # K = E: all of the softmax
    np.testing.assert_allclose(w.sum(1), 1.0, rtol=1e-6)


@pytest.mark.parametrize("score", ["softmax", "sigmoid"])
def test_route_score_bias_selects_only(ctx, rng, score):
    T, E, K = 6, 8, 2
    logits = rng.standard_normal((T, E)).astype(np.float32)
    bias = np.zeros(E, np.float32)
    bias[5] = 10.0  # expert 5 always chosen first...
    ids, w = check(ctx, logits, K, score=score, score_bias=bias)
    assert (ids[:, 0] == 5).all()
    # ...but weighted by its unbiased score
    with np.errstate(all="ignore"):
        l = logits.astype(np.float64)
        p = np.exp(l - l.max(1, keepdims=True))
        p = p / p.sum(1, keepdims=True) if score == "softmax" else 1 / (1 + np.exp(-l))
    np.testing.assert_allclose(w[:, 0], p[:, 5].astype(np.float32), rtol=2.0 ** -23)
    assert (w[:, 0] < 1.0).all()
    # random biases too, with renormalisation and scaling
    bias = rng.standard_normal(E).astype(np.float32) * 0.3
    check(ctx, logits, K, score=score, score_bias=bias, renormalize=True, routed_scaling=2.5)


@pytest.mark.parametrize("with_bias", [False, True])
def test_route_grouped_random(ctx, rng, with_bias):
    for T, E, n_group, topk_group, K in [(7, 16, 4, 2, 4), (5, 32, 8, 3, 6), (3, 12, 3, 1, 4), (4, 8, 8, 4, 3),
                                         (6, 256, 8, 4, 8)]:
        logits = rng.standard_normal((T, E)).astype(np.float32)
        bias = (0.1 * rng.standard_normal(E)).astype(np.float32) if with_bias else None
        check(ctx, logits, K, score="sigmoid", score_bias=bias, n_group=n_group, topk_group=topk_group,
              renormalize=True, routed_scaling=2.5)
        check(ctx, logits, K, score="softmax", score_bias=bias, n_group=n_group, topk_group=topk_group)


def test_route_group_score_convention(ctx):
    """Group score: the best member without score_bias, the sum of the two best
    with it (even an all-zero bias). Group 0 = {0, 1, 2}: best 0.9, two best
    0.9 + 0.1; group 1 = {3, 4, 5}: best 0.8, two best 0.8 + 0.7."""
    p = np.array([0.9, 0.1, 0.05, 0.8, 0.7, 0.02])
    logits = np.log(p / (1 - p)).astype(np.float32)[None, :]  # sigmoid(logits) = p
    ids, _ = check(ctx, logits, 2, score="sigmoid", n_group=2, topk_group=1)
    assert ids.tolist() == [[0, 1]]  # max: group 0 wins (0.9 > 0.8)
    ids, _ = check(ctx, logits, 2, score="sigmoid", n_group=2, topk_group=1, score_bias=np.zeros(6, np.float32))
    assert ids.tolist() == [[3, 4]]  # top-2 sum: group 1 wins (1.5 > 1.0)


def test_route_groups_with_one_expert(ctx, rng):
    """gs = 1: with score_bias the group score is its one member (no second best)."""
    logits = rng.standard_normal((4, 6)).astype(np.float32)
    check(ctx, logits, 3, score="sigmoid", n_group=6, topk_group=3, score_bias=np.zeros(6, np.float32))


def test_route_routed_scaling(ctx, rng):
    logits = rng.standard_normal((5, 10)).astype(np.float32)
    _, w1 = check(ctx, logits, 3, renormalize=True)
    _, w2 = check(ctx, logits, 3, renormalize=True, routed_scaling=2.5)
    np.testing.assert_allclose(w2, w1 * 2.5, rtol=2e-7)
    _, w3 = check(ctx, logits, 3, score="sigmoid", routed_scaling=-0.5)
    assert (w3 <= 0).all()


def test_route_ties_to_lower_index(ctx):
    logits = np.array([[1, 3, 3, 0, 3],
                       [2, 2, 2, 2, 2],
                       [0, 5, 0, 5, 1]], dtype=np.float32)
    for score in ("softmax", "sigmoid"):
        ids, w = check(ctx, logits, 3, score=score)
        assert ids.tolist() == [[1, 2, 4], [0, 1, 2], [1, 3, 4]]
        assert w[0, 0] == w[0, 1] == w[0, 2]
    # ties made by the bias: 0 + 0.5 and 1 + ... exact in binary
    logits = np.zeros((1, 4), np.float32)  # sigmoid = 0.5 everywhere
    ids, _ = check(ctx, logits, 2, score="sigmoid", score_bias=np.array([0.25, 0.5, 0.5, 0.25], np.float32))
    assert ids.tolist() == [[1, 2]]
    # tied groups: lower group index first
    logits = np.array([[1, 0, 1, 0, 1, 0]], np.float32)
    ids, _ = check(ctx, logits, 2, score="sigmoid", n_group=3, topk_group=1)
    assert ids.tolist() == [[0, 1]]
    ids, _ = check(ctx, logits, 3, score="sigmoid", n_group=3, topk_group=2, score_bias=np.zeros(6, np.float32))
    assert ids.tolist() == [[0, 2, 1]]


def test_route_nan_ranks_last(ctx):
    logits = np.array([[np.nan, 1.0, -1.0, 0.5]], np.float32)
    ids, w = check(ctx, logits, 3, score="sigmoid")
    assert ids.tolist() == [[1, 3, 2]]
    ids, w = check(ctx, logits, 4, score="sigmoid")
    assert ids[0, 3] == 0 and np.isnan(w[0, 3])
    # softmax: one NaN spoils the normaliser, every score is NaN: order by index
    ids, w = check(ctx, logits, 2, score="softmax")
    assert ids.tolist() == [[0, 1]] and np.isnan(w).all()


def test_route_extreme_logits(ctx):
    logits = np.array([[1e30, -1e30, 0, 88], [-np.inf, 0, np.inf, 1]], np.float32)
    check(ctx, logits, 2, score="sigmoid")
    check(ctx, logits[:1], 2, score="softmax")


def test_route_t0(ctx):
    ids, w = libmoe.route_topk(ctx, np.zeros((0, 8), np.float32), 2)
    assert ids.shape == w.shape == (0, 2)


# ---------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------


def expect_error(status, fn, *args, match=None, **kw):
    with pytest.raises(MoeError) as ei:
        fn(*args, **kw)
    e = ei.value
    assert e.status == status, str(e)
    assert e.name == "MOE_" + status.name
    assert e.message, "the library gave no message"
    if match:
        assert match in e.message, e.message
    return e


def test_route_bad_inputs(ctx, rng):
    logits = rng.standard_normal((3, 8)).astype(np.float32)
    expect_error(Status.ERR_TOPK_EXCEEDS_EXPERTS, libmoe.route_topk, ctx, logits, 9, match="K = 9 but E = 8")
    expect_error(Status.ERR_INVALID_DIM, libmoe.route_topk, ctx, logits, 0)
    expect_error(Status.ERR_INVALID_ARGUMENT, libmoe.route_topk, ctx, logits, 2, n_group=3, topk_group=1,
                 match="not a multiple of n_group = 3")
    for tg in (0, 5, -1):
        expect_error(Status.ERR_INVALID_ARGUMENT, libmoe.route_topk, ctx, logits, 2, n_group=4, topk_group=tg,
                     match="topk_group = %d" % tg)
    expect_error(Status.ERR_INVALID_ARGUMENT, libmoe.route_topk, ctx, logits, 5, n_group=4, topk_group=2,
                 match="exceeds")
    expect_error(Status.ERR_INVALID_ARGUMENT, libmoe.route_topk, ctx, logits, 2, n_group=-2)
    for s in (math.nan, math.inf, -math.inf, None):
        expect_error(Status.ERR_NONFINITE_PARAM, libmoe.route_topk, ctx, logits, 2, routed_scaling=s,
                     match="routed_scaling")
    # n_group 0 and 1 both mean "no groups", whatever topk_group says
    check(ctx, logits, 2, n_group=1, topk_group=7)


def test_route_error_leaves_outputs_untouched(ctx, rng):
    logits = rng.standard_normal((3, 8)).astype(np.float32)
    ids = np.full((3, 9), -7, np.int32)
    w = np.full((3, 9), 42.0, np.float32)
    expect_error(Status.ERR_TOPK_EXCEEDS_EXPERTS, libmoe.route_topk, ctx, logits, 9, out_ids=ids, out_weights=w)
    assert (ids == -7).all() and (w == 42.0).all()
    ids, w = ids[:, :2].copy(), w[:, :2].copy()
    expect_error(Status.ERR_NONFINITE_PARAM, libmoe.route_topk, ctx, logits, 2, routed_scaling=math.nan,
                 out_ids=ids, out_weights=w)
    assert (ids == -7).all() and (w == 42.0).all()


def test_route_null_and_raw_params(ctx, lib):
    """What the Python wrapper cannot express: NULL pointers and bad enum values,
    through the C function itself."""
    L = libmoe.lib()
    p = L.moe_route_params_default()
    assert (p.score, p.renormalize, p.score_bias, p.n_group, p.routed_scaling) == (0, 0, None, 0, 1.0)
    p.E, p.K = 8, 2
    logits = np.zeros((2, 8), np.float32)
    ids = np.zeros((2, 2), np.int32)
    w = np.zeros((2, 2), np.float32)
    ptr = lambda a: a.ctypes.data  # noqa: E731
    h = ctx._h
    assert L.moe_route_topk(h, ctypes.byref(p), 2, ptr(logits), ptr(ids), ptr(w)) == 0
    assert L.moe_route_topk(h, None, 2, ptr(logits), ptr(ids), ptr(w)) == Status.ERR_NULL_POINTER
    assert "params is NULL" in libmoe.lib().moe_ctx_last_error(h).decode()
    for i, name in enumerate(["logits", "topk_ids", "topk_weights"]):
        args = [ptr(logits), ptr(ids), ptr(w)]
        args[i] = None
        assert L.moe_route_topk(h, ctypes.byref(p), 2, *args) == Status.ERR_NULL_POINTER
        assert name + " is NULL" in L.moe_ctx_last_error(h).decode()
    # T = 0 needs no buffers
    assert L.moe_route_topk(h, ctypes.byref(p), 0, None, None, None) == 0
    assert L.moe_route_topk(h, ctypes.byref(p), -1, ptr(logits), ptr(ids), ptr(w)) == Status.ERR_INVALID_DIM
    # a NULL context reports through moe_ctx_last_error(NULL)
    assert L.moe_route_topk(None, ctypes.byref(p), 2, ptr(logits), ptr(ids), ptr(w)) == Status.ERR_NULL_POINTER
    assert "ctx is NULL" in L.moe_ctx_last_error(None).decode()
    p.score = 7
    assert L.moe_route_topk(h, ctypes.byref(p), 2, ptr(logits), ptr(ids), ptr(w)) == Status.ERR_UNSUPPORTED
    assert "score = 7" in L.moe_ctx_last_error(h).decode()
    # the fixture's independent handle on the same library agrees on the status values
    lib.moe_status_name.restype = ctypes.c_char_p
    assert lib.moe_status_name(int(Status.ERR_NONFINITE_PARAM)) == b"MOE_ERR_NONFINITE_PARAM"


def test_route_score_bias_shape_checked(ctx, rng):
    logits = rng.standard_normal((3, 8)).astype(np.float32)
    with pytest.raises(ValueError, match="score_bias"):
        libmoe.route_topk(ctx, logits, 2, score_bias=np.zeros(7, np.float32))
    with pytest.raises(TypeError, match="logits"):
        libmoe.route_topk(ctx, logits.astype(np.float64), 2)
