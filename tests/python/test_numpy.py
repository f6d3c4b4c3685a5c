"""attnkit's Python entry points on NumPy arrays, against the float64 NumPy reference
(reference.py), for every CPU backend built (math always)."""

import threading

import numpy as np
import pytest

import attnkit
import reference as ref
from attnkit import _attnkit as _C
from conftest import cpu_backends

BACKENDS = cpu_backends()
TOL = {"math": 1e-6}  # others (cpu_flash): f32 accumulation
F32_TOL = 2e-5


def tol(backend):
    return TOL.get(backend, F32_TOL)


def rand(rng, *shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def call(backend, fn, *args, **kw):
    """Run fn with backend=...; a non-oracle backend that declares the case unsupported skips."""
    try:
        return fn(*args, backend=backend, **kw)
    except attnkit.UnsupportedError as e:
        if backend == "math":
            raise
        pytest.skip(f"{backend}: {e}")


# ---- forward against the reference ------------------------------------------------------------

CASES = {
    # name: (B, Sq, Sk, Hq, Hkv, D, Dv, options)
    "plain": (2, 7, 7, 2, 2, 16, 16, {}),
    "causal_tl_sq<sk": (1, 5, 11, 2, 2, 8, 8, {"is_causal": True}),
    "causal_br_sq<sk": (1, 5, 11, 2, 2, 8, 8, {"causal": "bottom_right"}),
    "causal_tl_sq>sk": (1, 11, 5, 2, 1, 8, 8, {"causal": "top_left", "enable_gqa": True}),
    "causal_br_sq>sk": (1, 11, 5, 2, 2, 8, 8, {"causal": "bottom_right"}),
    "gqa4_dv": (2, 9, 13, 8, 2, 32, 24, {"enable_gqa": True}),
    "scale": (1, 6, 6, 2, 2, 16, 16, {"scale": 0.37}),
    "window": (1, 13, 13, 2, 2, 8, 8, {"window": (3, 1)}),
    "window_causal": (1, 13, 17, 2, 2, 8, 8, {"window": (4, None), "causal": "bottom_right"}),
    "softcap": (1, 7, 9, 2, 2, 16, 16, {"softcap": 2.0}),
    "length1": (3, 1, 1, 1, 1, 4, 4, {}),
}


def ref_kwargs(opts):
    causal = opts.get("causal") or ("top_left" if opts.get("is_causal") else "none")
    w = opts.get("window") or (-1, -1)
    return dict(
        causal=causal,
        scale=opts.get("scale"),
        window=tuple(-1 if x is None else x for x in w),
        softcap=opts.get("softcap", 0.0),
        mask=opts.get("attn_mask"),
        alibi=opts.get("alibi_slopes"),
    )


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("layout", ["BSHD", "BHSD"])
def test_forward_matches_reference(case, layout, backend):
    b, sq, sk, hq, hkv, d, dv, opts = CASES[case]
    rng = np.random.default_rng(hash(case) % 2**32)
    q, k, v = rand(rng, b, sq, hq, d), rand(rng, b, sk, hkv, d), rand(rng, b, sk, hkv, dv)
    want_out, want_lse = ref.forward(q, k, v, **ref_kwargs(opts))
    args = (q, k, v)
    if layout == "BHSD":  # give [B, H, S, D] arrays; expect [B, H, S, Dv] back
        args = tuple(np.ascontiguousarray(t.transpose(0, 2, 1, 3)) for t in args)
    out, lse = call(backend, attnkit.attention, *args, return_lse=True, layout=layout, **opts)
    assert attnkit.last_backend() == backend
    assert isinstance(out, np.ndarray) and out.dtype == np.float32
    if layout == "BHSD":
        assert out.shape == (b, hq, sq, dv)
        out = out.transpose(0, 2, 1, 3)
    assert out.shape == (b, sq, hq, dv)
    assert lse.shape == (b, hq, sq) and lse.dtype == np.float32
    assert np.all(np.isfinite(out))
    assert ref.rel_err(out, want_out) < tol(backend)
    np.testing.assert_allclose(lse, want_lse, rtol=tol(backend), atol=tol(backend))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    "mask_kind", ["bool_full", "bool_broadcast_2d", "float_broadcast_heads", "float_neg_inf"]
)
def test_masks_match_reference(mask_kind, backend):
    rng = np.random.default_rng(7)
    b, sq, sk, h, d = 2, 6, 9, 3, 8
    q, k, v = rand(rng, b, sq, h, d), rand(rng, b, sk, h, d), rand(rng, b, sk, h, d)
    if mask_kind == "bool_full":
        mask = rng.random((b, h, sq, sk)) > 0.3
    elif mask_kind == "bool_broadcast_2d":
        mask = rng.random((sq, sk)) > 0.5
    elif mask_kind == "float_broadcast_heads":
        mask = rand(rng, b, 1, sq, sk)
    else:  # additive -inf hides keys; row 0 fully hidden -> out 0, lse -inf
        mask = np.zeros((1, 1, sq, sk), np.float32)
        mask[..., 0, :] = -np.inf
        mask[..., 2, 3:] = -np.inf
    want_out, want_lse = ref.forward(q, k, v, mask=mask)
    out, lse = call(backend, attnkit.attention, q, k, v, attn_mask=mask, return_lse=True)
    assert not np.any(np.isnan(out))
    assert ref.rel_err(out, want_out) < tol(backend)
    np.testing.assert_allclose(lse, want_lse, rtol=tol(backend), atol=tol(backend))
    if mask_kind == "float_neg_inf":
        assert np.all(out[:, 0] == 0) and np.all(np.isneginf(lse[:, :, 0]))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("per_batch", [False, True])
def test_alibi_matches_reference(per_batch, backend):
    rng = np.random.default_rng(3)
    b, sq, sk, h, d = 2, 5, 8, 4, 8
    q, k, v = rand(rng, b, sq, h, d), rand(rng, b, sk, h, d), rand(rng, b, sk, h, d)
    slopes = (rng.random((b, h) if per_batch else (h,)) * 0.5).astype(np.float32)
    want, _ = ref.forward(q, k, v, alibi=slopes, causal="bottom_right")
    out = call(backend, attnkit.attention, q, k, v, alibi_slopes=slopes, causal="bottom_right")
    assert ref.rel_err(out, want) < tol(backend)


def test_float16_inputs():
    rng = np.random.default_rng(5)
    q, k, v = (rand(rng, 1, 9, 2, 16, dtype=np.float16) for _ in range(3))
    want, _ = ref.forward(q, k, v, causal="top_left")
    out = attnkit.attention(q, k, v, is_causal=True, backend="math")
    assert out.dtype == np.float16
    assert ref.rel_err(out, want) < 2e-3  # rounding of the f16 output


# ---- varlen -----------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("causal", [False, True, "top_left"])
def test_varlen_matches_per_sequence_reference(causal, backend):
    rng = np.random.default_rng(11)
    lens_q, lens_k = [3, 0, 5, 1], [4, 2, 5, 6]  # includes an empty query sequence
    hq, hkv, d = 4, 2, 8
    cu_q = np.concatenate([[0], np.cumsum(lens_q)]).astype(np.int32)
    cu_k = np.concatenate([[0], np.cumsum(lens_k)]).astype(np.int32)
    q, k, v = rand(rng, cu_q[-1], hq, d), rand(rng, cu_k[-1], hkv, d), rand(rng, cu_k[-1], hkv, d)
    out, lse = call(
        backend, attnkit.attention_varlen, q, k, v, cu_q, cu_k, max(lens_q), max(lens_k),
        causal=causal, return_lse=True,
    )  # fmt: skip
    assert out.shape == (cu_q[-1], hq, d) and lse.shape == (hq, cu_q[-1])
    mode = {False: "none", True: "bottom_right", "top_left": "top_left"}[causal]
    for i in range(len(lens_q)):
        sq_, sk_ = slice(cu_q[i], cu_q[i + 1]), slice(cu_k[i], cu_k[i + 1])
        if lens_q[i] == 0:
            continue
        want, want_lse = ref.forward(q[None, sq_], k[None, sk_], v[None, sk_], causal=mode)
        assert ref.rel_err(out[sq_], want[0]) < tol(backend)
        np.testing.assert_allclose(lse[:, sq_], want_lse[0], rtol=1e-5, atol=1e-5)


def test_varlen_without_maxima_reads_them():
    rng = np.random.default_rng(12)
    cu = np.array([0, 2, 7], np.int32)
    q, k, v = (rand(rng, 7, 2, 8) for _ in range(3))
    a = attnkit.attention_varlen(q, k, v, cu, cu, causal=True, backend="math")
    b = attnkit.attention_varlen(q, k, v, cu, cu, 5, 5, causal=True, backend="math")
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("backend", BACKENDS)
def test_varlen_backward_matches_per_sequence_reference(backend):
    rng = np.random.default_rng(13)
    lens_q, lens_k = [4, 1, 6], [4, 7, 3]
    hq, hkv, d = 4, 2, 8
    cu_q = np.concatenate([[0], np.cumsum(lens_q)]).astype(np.int32)
    cu_k = np.concatenate([[0], np.cumsum(lens_k)]).astype(np.int32)
    q, k, v = rand(rng, cu_q[-1], hq, d), rand(rng, cu_k[-1], hkv, d), rand(rng, cu_k[-1], hkv, d)
    dout = rand(rng, cu_q[-1], hq, d)
    out, lse = attnkit.attention_varlen(q, k, v, cu_q, cu_k, max(lens_q), max(lens_k),
                                        causal=True, return_lse=True, backend="math")  # fmt: skip
    dq, dk, dv = call(
        backend, attnkit.attention_backward, dout, q, k, v, out, lse, causal="bottom_right",
        cu_seqlens_q=cu_q, cu_seqlens_k=cu_k, max_seqlen_q=max(lens_q), max_seqlen_k=max(lens_k),
    )  # fmt: skip
    assert (dq.shape, dk.shape, dv.shape) == (q.shape, k.shape, v.shape)
    for i in range(len(lens_q)):
        sq_, sk_ = slice(cu_q[i], cu_q[i + 1]), slice(cu_k[i], cu_k[i + 1])
        want = ref.backward(dout[None, sq_], q[None, sq_], k[None, sk_], v[None, sk_],
                            causal="bottom_right")  # fmt: skip
        for name, g, w in zip("qkv", (dq[sq_], dk[sk_], dv[sk_]), want):
            assert ref.rel_err(g, w[0]) < 10 * tol(backend), f"d{name} of sequence {i}"


# ---- backward ---------------------------------------------------------------------------------

BWD_CASES = {
    "plain": (2, 5, 7, 2, 2, 8, 8, {}),
    "causal_tl_gqa": (1, 7, 7, 4, 2, 8, 16, {"is_causal": True, "enable_gqa": True}),
    "causal_br": (1, 4, 9, 2, 2, 8, 8, {"causal": "bottom_right"}),
    "softcap_window": (1, 9, 9, 2, 1, 16, 16, {"softcap": 3.0, "window": (2, 2),
                                                "enable_gqa": True}),  # fmt: skip
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", list(BWD_CASES))
@pytest.mark.parametrize("layout", ["BSHD", "BHSD"])
def test_backward_matches_reference(case, layout, backend):
    b, sq, sk, hq, hkv, d, dv, opts = BWD_CASES[case]
    rng = np.random.default_rng(abs(hash(case)) % 2**32)
    q, k, v = rand(rng, b, sq, hq, d), rand(rng, b, sk, hkv, d), rand(rng, b, sk, hkv, dv)
    dout = rand(rng, b, sq, hq, dv)
    want = ref.backward(dout, q, k, v, **ref_kwargs(opts))
    tr = (lambda t: np.ascontiguousarray(t.transpose(0, 2, 1, 3))) if layout == "BHSD" else (
        lambda t: t)  # fmt: skip
    qq, kk, vv, dd = map(tr, (q, k, v, dout))
    out, lse = attnkit.attention(qq, kk, vv, return_lse=True, layout=layout, backend="math",
                                 **opts)  # fmt: skip
    grads = call(backend, attnkit.attention_backward, dd, qq, kk, vv, out, lse, layout=layout,
                 **opts)  # fmt: skip
    assert attnkit.last_backend() == backend
    for name, g, w in zip("qkv", grads, want):
        g = tr(g)  # back to BSHD (transpose is its own inverse here)
        assert g.shape == w.shape, name
        assert ref.rel_err(g, w) < 10 * tol(backend), f"d{name}"


def test_backward_of_dropout_matches_finite_differences():
    """The backward redraws the forward's dropout mask from (seed, offset): its gradient must
    be the gradient of that very forward."""
    rng = np.random.default_rng(21)
    q, k, v = (rand(rng, 1, 4, 1, 4).astype(np.float32) for _ in range(3))
    kw = dict(dropout_p=0.3, dropout_seed=1234, dropout_offset=7, backend="math")
    out, lse = attnkit.attention(q, k, v, return_lse=True, **kw)
    again = attnkit.attention(q, k, v, **kw)
    np.testing.assert_array_equal(out, again)  # same seed, same mask
    other = attnkit.attention(q, k, v, **{**kw, "dropout_seed": 99})
    assert not np.array_equal(out, other)
    w = rand(rng, *out.shape)  # loss = sum(w * out)
    dq, dk, dv = attnkit.attention_backward(w, q, k, v, out, lse, **kw)
    eps = 1e-2
    for x, g in ((q, dq), (k, dk), (v, dv)):
        idx = (0, 1, 0, 2)
        old = x[idx]
        x[idx] = old + eps
        up = float(np.sum(w * attnkit.attention(q, k, v, **kw)))
        x[idx] = old - eps
        down = float(np.sum(w * attnkit.attention(q, k, v, **kw)))
        x[idx] = old
        assert abs((up - down) / (2 * eps) - g[idx]) < 2e-2 * max(1.0, abs(g[idx]))


# ---- strides, views, DLPack -------------------------------------------------------------------


def test_transposed_and_strided_views_equal_contiguous_copies():
    rng = np.random.default_rng(31)
    base_q = rand(rng, 2, 3, 14, 8)  # [B, H, S, D] memory
    q = base_q.transpose(0, 2, 1, 3)  # logical BSHD view, non-contiguous
    big_k = rand(rng, 2, 10, 3, 16)
    k = big_k[..., ::2]  # every other element of D: stride 2
    v = rand(rng, 2, 20, 3, 8)[:, ::2]  # every other key
    assert not (q.flags.c_contiguous or k.flags.c_contiguous or v.flags.c_contiguous)
    got = attnkit.attention(q, k, v, is_causal=True, backend="math")
    want = attnkit.attention(*map(np.ascontiguousarray, (q, k, v)), is_causal=True,
                             backend="math")  # fmt: skip
    np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(got, ref.forward(q, k, v, causal="top_left")[0], rtol=1e-5,
                               atol=1e-6)  # fmt: skip


def test_out_and_lse_written_in_place_through_strided_views():
    rng = np.random.default_rng(32)
    q, k, v = rand(rng, 1, 5, 2, 8), rand(rng, 1, 6, 2, 8), rand(rng, 1, 6, 2, 8)
    big = np.full((1, 5, 2, 16), np.nan, np.float32)
    out_view = big[..., ::2]  # writes land on even columns only
    lse_big = np.full((1, 2, 5, 3), np.nan, np.float32)
    lse_view = lse_big[..., 1]
    ret, ret_lse = attnkit.attention(q, k, v, out=out_view, lse=lse_view, backend="math")
    assert ret is out_view and ret_lse is lse_view
    want, want_lse = ref.forward(q, k, v)
    np.testing.assert_allclose(big[..., ::2], want, rtol=1e-5, atol=1e-6)
    assert np.all(np.isnan(big[..., 1::2])), "wrote outside the out view"
    np.testing.assert_allclose(lse_big[..., 1], want_lse, rtol=1e-5, atol=1e-6)
    assert np.all(np.isnan(lse_big[..., 0])) and np.all(np.isnan(lse_big[..., 2]))


def test_read_only_inputs_are_accepted():
    rng = np.random.default_rng(33)
    q, k, v = (rand(rng, 1, 4, 1, 8) for _ in range(3))
    for t in (q, k, v):
        t.setflags(write=False)
    out = attnkit.attention(q, k, v, backend="math")
    np.testing.assert_allclose(out, ref.forward(q, k, v)[0], rtol=1e-5, atol=1e-6)


def test_read_only_out_is_rejected():
    q = np.ones((1, 2, 1, 4), np.float32)
    out = np.zeros_like(q)
    out.setflags(write=False)
    with pytest.raises(attnkit.InvalidArgumentError, match="out .*writable"):
        attnkit.attention(q, q, q, out=out)


def test_dlpack_only_object_is_accepted():
    """An object that only speaks DLPack (no buffer protocol) goes through zero-copy."""

    class DLPackOnly:
        def __init__(self, a):
            self.a = a

        def __dlpack__(self, **kw):
            return self.a.__dlpack__(**kw)

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()

    rng = np.random.default_rng(34)
    q, k, v = (rand(rng, 1, 3, 2, 8) for _ in range(3))
    out = np.empty_like(q)
    attnkit.attention(DLPackOnly(q), DLPackOnly(k), DLPackOnly(v), out=out, backend="math")
    np.testing.assert_allclose(out, ref.forward(q, k, v)[0], rtol=1e-5, atol=1e-6)


# ---- errors -----------------------------------------------------------------------------------


def test_bad_head_dim_raises_with_cpp_message_and_leaves_out_untouched():
    q = np.ones((1, 4, 2, 16), np.float32)
    k = np.ones((1, 4, 2, 8), np.float32)
    out = np.full((1, 4, 2, 16), 7.0, np.float32)
    with pytest.raises(attnkit.AttnkitError) as e:
        attnkit.attention(q, k, q, out=out)
    assert e.value.code == "invalid_argument"
    assert isinstance(e.value, ValueError) and isinstance(e.value, attnkit.InvalidArgumentError)
    assert "k.shape[3] = 8, expected 16" in str(e.value)
    assert np.all(out == 7.0)


@pytest.mark.parametrize(
    "kwargs, exc, text",
    [
        (dict(backend="no_such_backend"), attnkit.UnknownBackendError, "no_such_backend"),
        (dict(layout="SBHD"), attnkit.InvalidArgumentError, "layout"),
        (dict(causal="diagonal"), attnkit.InvalidArgumentError, "causal"),
        (dict(causal=True), attnkit.InvalidArgumentError, "ambiguous"),
        (dict(is_causal=True, causal="bottom_right"), attnkit.InvalidArgumentError, "contradicts"),
        (dict(scale=float("nan")), attnkit.InvalidArgumentError, "scale"),
        (dict(window=5), attnkit.InvalidArgumentError, "window"),
        (dict(dropout_p=1.5), attnkit.InvalidArgumentError, "dropout"),
    ],
)
def test_bad_options_raise(kwargs, exc, text):
    q = np.ones((1, 3, 2, 8), np.float32)
    with pytest.raises(exc, match=text):
        attnkit.attention(q, q, q, **kwargs)


def test_gqa_needs_enable_gqa_as_sdpa():
    q = np.ones((1, 3, 4, 8), np.float32)
    k = np.ones((1, 3, 2, 8), np.float32)
    with pytest.raises(attnkit.InvalidArgumentError, match="enable_gqa"):
        attnkit.attention(q, k, k)
    assert attnkit.attention(q, k, k, enable_gqa=True).shape == (1, 3, 4, 8)


def test_bad_dtypes_and_objects_raise():
    q = np.ones((1, 3, 2, 8), np.float32)
    with pytest.raises(attnkit.InvalidArgumentError, match="dtype"):
        attnkit.attention(q, q.astype(np.float16), q)
    with pytest.raises(attnkit.InvalidArgumentError, match="float64|DLPack"):
        attnkit.attention(q.astype(np.float64), q.astype(np.float64), q.astype(np.float64))
    with pytest.raises(attnkit.InvalidArgumentError, match="expected an array"):
        attnkit.attention(q, q, q, attn_mask=[[True]])
    with pytest.raises(attnkit.InvalidArgumentError, match="ndim"):
        attnkit.attention(q[None], q[None], q[None])
    with pytest.raises(attnkit.InvalidArgumentError, match="unknown option"):
        _C.forward(q, q, q, np.empty_like(q), bogus=1)


def test_mask_of_wrong_shape_raises():
    q = np.ones((1, 3, 2, 8), np.float32)
    with pytest.raises(attnkit.InvalidArgumentError, match="mask"):
        attnkit.attention(q, q, q, attn_mask=np.ones((4, 4), bool))


def test_not_built_backend_is_distinct_from_unknown():
    built = {b["name"] for b in attnkit.list_backends() if b["built"]}
    missing = [b for b in attnkit.list_backends() if not b["built"]]
    if not missing:
        pytest.skip("every backend is built here")
    q = np.ones((1, 3, 2, 8), np.float32)
    with pytest.raises(attnkit.NotBuiltError, match="not built") as e:
        attnkit.attention(q, q, q, backend=missing[0]["name"])
    assert e.value.code == "not_built" and missing[0]["name"] not in built


# ---- selection: names, scopes, threads, explain ------------------------------------------------


def test_canonical_names_and_aliases():
    assert attnkit.canonical_backend_name("_native_math") == "math"
    assert attnkit.canonical_backend_name("_native_flash") == "flash"
    assert attnkit.canonical_backend_name("xformers") == "efficient"
    assert attnkit.canonical_backend_name("_sdpa_cudnn") == "cudnn"
    assert attnkit.canonical_backend_name("_flash_varlen_3") == "flash3"
    with pytest.raises(attnkit.UnknownBackendError):
        attnkit.canonical_backend_name("flashy")


def _qkv():
    q = np.ones((1, 3, 2, 8), np.float32)
    return q, q, q


def test_backend_scope_nests_and_restores():
    q, k, v = _qkv()
    assert attnkit.explain(q, k, v).rule != "scoped guard"
    with attnkit.backend("_native_math") as name:
        assert name == "math"
        assert attnkit.current_backend_scope() == "_native_math"
        e = attnkit.explain(q, k, v)
        assert (e.selected, e.rule) == ("math", "scoped guard")
        with attnkit.backend("auto"):
            assert attnkit.current_backend_scope() == "auto"
            assert attnkit.explain(q, k, v).rule == "scoped guard"
        assert attnkit.current_backend_scope() == "_native_math"
        # A per-call backend beats the scope.
        assert attnkit.explain(q, k, v, backend="math").rule == "per-call"
    assert attnkit.current_backend_scope() is None
    assert attnkit.explain(q, k, v).rule != "scoped guard"


def test_backend_scope_closes_on_exception():
    q, k, v = _qkv()
    with pytest.raises(KeyError):
        with attnkit.backend("math"):
            raise KeyError("boom")
    assert attnkit.current_backend_scope() is None
    assert attnkit.explain(q, k, v).rule != "scoped guard"


def test_unknown_scope_name_fails_on_entry():
    with pytest.raises(attnkit.UnknownBackendError):
        with attnkit.backend("nope"):
            pass
    assert attnkit.current_backend_scope() is None


def test_backend_scope_does_not_leak_into_other_threads():
    q, k, v = _qkv()
    barrier = threading.Barrier(2, timeout=30)
    seen = {}

    def worker():
        with attnkit.backend("math"):
            barrier.wait()  # 1: the worker's scope is open
            seen["worker"] = attnkit.explain(q, k, v).rule
            barrier.wait()  # 2: main has looked while the worker's scope is open
        seen["worker_after"] = attnkit.explain(q, k, v).rule

    t = threading.Thread(target=worker)
    t.start()
    barrier.wait()
    seen["main"] = attnkit.explain(q, k, v).rule
    seen["main_scope"] = attnkit.current_backend_scope()
    barrier.wait()
    t.join()
    assert seen["worker"] == "scoped guard"
    assert seen["main"] != "scoped guard" and seen["main_scope"] is None
    assert seen["worker_after"] != "scoped guard"


def test_main_scope_does_not_leak_into_new_thread():
    q, k, v = _qkv()
    seen = []
    with attnkit.backend("math"):
        t = threading.Thread(target=lambda: seen.append(attnkit.explain(q, k, v).rule))
        t.start()
        t.join()
    assert seen and seen[0] != "scoped guard"


def test_cpp_scope_refuses_exit_on_another_thread():
    scope = _C.BackendScope("math")
    scope.enter()
    errors = []

    def other():
        try:
            scope.exit()
        except attnkit.InvalidArgumentError as e:
            errors.append(str(e))

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert errors and "another thread" in errors[0]
    assert scope.active
    scope.exit()
    assert not scope.active


def test_set_default_backend():
    q, k, v = _qkv()
    attnkit.set_default_backend("_native_math")
    assert attnkit.default_backend() == "_native_math"
    e = attnkit.explain(q, k, v)
    assert (e.selected, e.rule) == ("math", "process default")
    with attnkit.backend("math"):
        assert attnkit.explain(q, k, v).rule == "scoped guard"  # scope beats default
    attnkit.set_default_backend(None)
    assert attnkit.explain(q, k, v).rule != "process default"
    with pytest.raises(attnkit.UnknownBackendError):
        attnkit.set_default_backend("nope")


def test_explain_lists_every_known_backend():
    q, k, v = _qkv()
    e = attnkit.explain(q, k, v, is_causal=True)
    names = [b.name for b in e.backends]
    assert names == [b["name"] for b in attnkit.list_backends()]
    math = next(b for b in e.backends if b.name == "math")
    assert math.built and math.ok and not math.reasons
    assert e.selected in names
    text = str(e)
    assert "selected: " in text and "math" in text
    # explain validates like the call does
    with pytest.raises(attnkit.InvalidArgumentError, match="k.shape"):
        attnkit.explain(q, k[..., :4], v)


def test_info_describes_build_devices_and_backends():
    i = attnkit.info()
    assert i["version"] == attnkit.__version__ and i["build"]["version"] == attnkit.__version__
    assert i["devices"][0]["device"] == "cpu"
    math = next(b for b in i["backends"] if b["name"] == "math")
    assert math["built"] and "_native_math" in math["aliases"]
    assert "f32" in math["capabilities"]["dtypes"]
    assert i["default_backend"] == "auto" or isinstance(i["default_backend"], str)


def test_num_threads_round_trip():
    before = attnkit.num_threads()
    try:
        attnkit.set_num_threads(1)
        assert attnkit.num_threads() == 1
    finally:
        attnkit.set_num_threads(0)
    assert attnkit.num_threads() == before
