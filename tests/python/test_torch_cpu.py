"""attnkit.torch on CPU tensors: sdpa against PyTorch's own SDPA (forward and gradients), the
custom ops (opcheck, torch.compile fullgraph), patch_sdpa, per-module backends, and the
differentiable attention/attention_varlen against the float64 NumPy reference.
Skips when torch is not installed."""

import threading

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

import attnkit  # noqa: E402
import attnkit.torch as akt  # noqa: E402
import reference as ref  # noqa: E402

TORCH_SDPA = F.scaled_dot_product_attention  # PyTorch's, captured before any patch


@pytest.fixture(autouse=True)
def _unpatched():
    yield
    akt.unpatch_sdpa()
    assert F.scaled_dot_product_attention is TORCH_SDPA


def rel(a, b):
    return ((a.double() - b.double()).norm() / b.double().norm().clamp_min(1e-30)).item()


def leaves(*shapes, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(s, generator=g, dtype=torch.float64).to(dtype).requires_grad_()
            for s in shapes]  # fmt: skip


def sdpa_both(q, k, v, dout, **kw):
    """(out, grads) of attnkit.torch.sdpa and of PyTorch's SDPA in float64."""
    out = akt.sdpa(q, k, v, **kw)
    grads = torch.autograd.grad(out, (q, k, v), dout)
    q64, k64, v64 = (t.detach().double().requires_grad_() for t in (q, k, v))
    kw64 = dict(kw)
    if kw.get("attn_mask") is not None and kw["attn_mask"].is_floating_point():
        kw64["attn_mask"] = kw["attn_mask"].double()
    want = TORCH_SDPA(q64, k64, v64, **kw64)
    want_grads = torch.autograd.grad(want, (q64, k64, v64), dout.double())
    return out, grads, want, want_grads


SDPA_CASES = {
    # name: (q shape, k shape, v shape, kwargs builder)
    "plain": ((2, 3, 7, 16), (2, 3, 9, 16), (2, 3, 9, 16), lambda: {}),
    "causal_sq<sk": ((1, 2, 5, 8), (1, 2, 11, 8), (1, 2, 11, 8), lambda: {"is_causal": True}),
    "causal_square": ((2, 2, 9, 8), (2, 2, 9, 8), (2, 2, 9, 8), lambda: {"is_causal": True}),
    "gqa_dv": ((2, 8, 6, 32), (2, 2, 10, 32), (2, 2, 10, 24), lambda: {"enable_gqa": True}),
    "scale": ((1, 2, 6, 16), (1, 2, 6, 16), (1, 2, 6, 16), lambda: {"scale": 0.3}),
    "bool_mask": ((2, 2, 6, 8), (2, 2, 9, 8), (2, 2, 9, 8),
                  lambda: {"attn_mask": torch.rand(2, 1, 6, 9, generator=torch.Generator()
                                                   .manual_seed(1)) > 0.2}),
    "float_mask_2d": ((2, 2, 6, 8), (2, 2, 9, 8), (2, 2, 9, 8),
                      lambda: {"attn_mask": torch.randn(6, 9, generator=torch.Generator()
                                                        .manual_seed(2))}),
    "3d_input": ((3, 7, 8), (3, 5, 8), (3, 5, 4), lambda: {}),
}  # fmt: skip


@pytest.mark.parametrize("case", list(SDPA_CASES))
def test_sdpa_matches_torch_forward_and_grads(case):
    qs, ks, vs, kw = SDPA_CASES[case]
    q, k, v = leaves(qs, ks, vs, seed=len(case))
    kw = kw()
    dout = torch.randn(qs[:-1] + (vs[-1],), dtype=torch.float32)
    out, grads, want, want_grads = sdpa_both(q, k, v, dout, **kw)
    assert out.shape == want.shape and out.dtype == torch.float32
    assert rel(out, want) < 1e-5
    for name, g, w in zip("qkv", grads, want_grads):
        assert g.shape == w.shape, name
        assert rel(g, w) < 1e-4, f"d{name}"


def test_sdpa_bf16_close_to_torch_float64():
    q, k, v = leaves((1, 4, 33, 64), (1, 2, 33, 64), (1, 2, 33, 64), dtype=torch.bfloat16)
    dout = torch.randn(1, 4, 33, 64, dtype=torch.bfloat16)
    out, grads, want, want_grads = sdpa_both(q, k, v, dout, is_causal=True, enable_gqa=True)
    assert out.dtype == torch.bfloat16
    assert rel(out, want) < 1e-2
    for g, w in zip(grads, want_grads):
        assert rel(g, w) < 2e-2


def test_sdpa_output_layout_and_noncontiguous_inputs():
    q, k, v = leaves((2, 5, 3, 8), (2, 7, 3, 8), (2, 7, 3, 8))
    # BSHD memory seen as [B, H, S, D], as models produce after .view().transpose(1, 2)
    qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))
    out = akt.sdpa(qt, kt, vt, is_causal=True)
    assert out.shape == (2, 3, 5, 8)
    assert out.transpose(1, 2).is_contiguous()  # stored [B, S, H, D]: the reshape back is free
    want = TORCH_SDPA(qt, kt, vt, is_causal=True)
    assert rel(out, want) < 1e-5
    # expanded (stride-0) K/V as repeat_kv-by-expand produces
    k1, v1 = (t[:, :, :1].expand(-1, -1, 3, -1).transpose(1, 2) for t in (k, v))
    assert rel(akt.sdpa(qt, k1, v1), TORCH_SDPA(qt, k1, v1)) < 1e-5


def test_sdpa_errors():
    q = torch.randn(1, 4, 5, 8)
    k = torch.randn(1, 2, 5, 8)
    with pytest.raises(attnkit.InvalidArgumentError, match="enable_gqa"):
        akt.sdpa(q, k, k)
    with pytest.raises(attnkit.InvalidArgumentError, match="k.shape\\[3\\] = 4, expected 8"):
        akt.sdpa(q, q[..., :4], q)
    mask = torch.zeros(5, 5, requires_grad=True)
    with pytest.raises(attnkit.InvalidArgumentError, match="requires_grad"):
        akt.sdpa(q, q, q, attn_mask=mask)
    with pytest.raises(attnkit.InvalidArgumentError, match="dim"):
        akt.sdpa(q[None], q[None], q[None])


def test_opcheck_custom_ops():
    q, k, v = (torch.randn(s) for s in ((1, 6, 4, 8), (1, 9, 2, 8), (1, 9, 2, 8)))
    mask = torch.rand(1, 1, 6, 9) > 0.3
    for args in [
        (q, k, v, None, None, None, None, -1, -1, None, 0.0, "top_left", -1, -1, 0.0, False, "",
         True),
        (q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), mask, None, None, None, -1, -1,
         0.5, 0.0, "bottom_right", 3, -1, 0.0, True, "math", True),
    ]:  # fmt: skip
        args = tuple(a.requires_grad_() if isinstance(a, torch.Tensor) and a.is_floating_point()
                     else a for a in args)  # fmt: skip
        torch.library.opcheck(torch.ops.attnkit.attention_fwd.default, args)


class Block(torch.nn.Module):
    """A small attention block in the style of transformers/timm: projections + F.sdpa."""

    def __init__(self, dim=32, heads=4, kv_heads=2):
        super().__init__()
        self.h, self.hkv, self.d = heads, kv_heads, dim // heads
        self.q = torch.nn.Linear(dim, heads * self.d)
        self.kv = torch.nn.Linear(dim, 2 * kv_heads * self.d)
        self.o = torch.nn.Linear(heads * self.d, dim)

    def forward(self, x):
        b, s, _ = x.shape
        q = self.q(x).view(b, s, self.h, self.d).transpose(1, 2)
        k, v = self.kv(x).view(b, s, 2, self.hkv, self.d).unbind(2)
        o = F.scaled_dot_product_attention(q, k.transpose(1, 2), v.transpose(1, 2),
                                           is_causal=True, enable_gqa=True)  # fmt: skip
        return self.o(o.transpose(1, 2).reshape(b, s, -1))


def test_patch_sdpa_routes_models_through_attnkit():
    torch.manual_seed(0)
    block = Block()
    x = torch.randn(2, 11, 32)
    want = block(x)
    attnkit._tls.last = None
    with akt.patch_sdpa():
        assert F.scaled_dot_product_attention is akt.sdpa
        got = block(x)
        assert attnkit.last_backend() is not None  # attnkit ran it
    assert F.scaled_dot_product_attention is TORCH_SDPA
    assert rel(got, want) < 1e-5
    akt.patch_sdpa()
    akt.patch_sdpa()  # idempotent
    assert akt.original_sdpa() is TORCH_SDPA
    akt.unpatch_sdpa()
    assert F.scaled_dot_product_attention is TORCH_SDPA


def test_compile_fullgraph_no_graph_break_and_same_grads():
    torch.manual_seed(0)
    block = Block()
    x = torch.randn(2, 9, 32, requires_grad=True)
    akt.patch_sdpa()
    try:
        explanation = torch._dynamo.explain(block)(x)
        assert explanation.graph_break_count == 0
        assert explanation.graph_count == 1
        compiled = torch.compile(block, fullgraph=True, backend="aot_eager")
        got = compiled(x)
        g_got = torch.autograd.grad(got.square().sum(), (x, block.q.weight))
        eager = block(x)
        g_eager = torch.autograd.grad(eager.square().sum(), (x, block.q.weight))
    finally:
        akt.unpatch_sdpa()
    want = block(x)  # PyTorch's SDPA
    g_want = torch.autograd.grad(want.square().sum(), (x, block.q.weight))
    assert rel(got, want) < 1e-5 and rel(eager, want) < 1e-5
    for a, b, c in zip(g_got, g_eager, g_want):
        assert rel(a, c) < 1e-4 and rel(b, c) < 1e-4


def test_set_attention_backend_scopes_module_tree():
    torch.manual_seed(0)
    outer = torch.nn.Sequential(Block(), Block())
    x = torch.randn(1, 5, 32)
    with akt.patch_sdpa():
        with pytest.raises(attnkit.UnknownBackendError):
            akt.set_attention_backend(outer, "bogus")
        # A backend that cannot run CPU tensors: the name must reach the call.
        akt.set_attention_backend(outer, "flash")
        assert akt.get_attention_backend(outer) == "flash"
        with pytest.raises(attnkit.AttnkitError, match="flash"):
            outer(x)
        assert attnkit.current_backend_scope() is None  # closed although forward raised
        # An inner module's own setting wins over the outer one.
        akt.set_attention_backend(outer[0], "math")
        akt.set_attention_backend(outer[1], "_native_math")
        outer(x)
        assert attnkit.last_backend() == "math"
        akt.reset_attention_backend(outer[0])
        akt.reset_attention_backend(outer[1])
        with pytest.raises(attnkit.AttnkitError, match="flash"):
            outer(x)
        akt.reset_attention_backend(outer)
        assert akt.get_attention_backend(outer) is None
        outer(x)  # no scope: auto


def test_set_attention_backend_under_compile():
    torch.manual_seed(0)
    block = Block()
    x = torch.randn(1, 5, 32)
    akt.set_attention_backend(block, "flash")
    with akt.patch_sdpa():
        compiled = torch.compile(block, fullgraph=True, backend="aot_eager")
        with pytest.raises(Exception, match="flash"):
            compiled(x)
        akt.set_attention_backend(block, "math")
        assert rel(compiled(x), block(x)) < 1e-6
    assert attnkit.current_backend_scope() is None


def test_backward_reuses_the_forward_backend():
    """The name in force at forward time is recorded for the backward (which autograd may run
    on another thread, outside the caller's scope)."""
    q, k, v = leaves((1, 2, 5, 8), (1, 2, 5, 8), (1, 2, 5, 8))
    with attnkit.backend("math"):
        out = akt.sdpa(q, k, v)
    attnkit.set_default_backend("flash")  # would fail if the backward looked it up anew
    out.sum().backward()
    assert attnkit.last_backend() == "math"
    assert q.grad is not None and torch.all(torch.isfinite(q.grad))


def test_backward_on_other_thread():
    q, k, v = leaves((1, 2, 5, 8), (1, 2, 5, 8), (1, 2, 5, 8))
    with attnkit.backend("math"):
        out = akt.sdpa(q, k, v, is_causal=True)
    box = {}

    def run():
        out.sum().backward()
        box["last"] = attnkit.last_backend()

    t = threading.Thread(target=run)
    t.start()
    t.join()
    assert box["last"] == "math"
    want = TORCH_SDPA(*(t.detach().requires_grad_() for t in (q, k, v)), is_causal=True)
    assert q.grad.shape == q.shape and torch.all(torch.isfinite(q.grad))
    del want


def test_dropout_reproducible_and_backward_consistent():
    q, k, v = leaves((1, 2, 6, 8), (1, 2, 6, 8), (1, 2, 6, 8), seed=3)
    torch.manual_seed(123)
    a = akt.sdpa(q, k, v, dropout_p=0.25)
    torch.manual_seed(123)
    b = akt.sdpa(q, k, v, dropout_p=0.25)
    assert torch.equal(a, b)
    torch.manual_seed(124)
    assert not torch.equal(a, akt.sdpa(q, k, v, dropout_p=0.25))
    assert not torch.equal(a, akt.sdpa(q, k, v))
    # directional derivative of sum(w * out) along d, with the same dropout mask throughout
    w = torch.randn(a.shape)
    torch.manual_seed(7)
    gq, gk, gv = torch.autograd.grad((w * akt.sdpa(q, k, v, dropout_p=0.25)).sum(), (q, k, v))
    dirs = [torch.randn(t.shape) for t in (q, k, v)]
    eps = 1e-2

    def f(sign):
        torch.manual_seed(7)
        with torch.no_grad():
            args = [t + sign * eps * d for t, d in zip((q, k, v), dirs)]
            return (w * akt.sdpa(*args, dropout_p=0.25)).sum().item()

    numeric = (f(1) - f(-1)) / (2 * eps)
    analytic = sum((g * d).sum().item() for g, d in zip((gq, gk, gv), dirs))
    assert abs(numeric - analytic) < 2e-2 * max(1.0, abs(analytic))


@pytest.mark.parametrize(
    "opts",
    [
        {"causal": "bottom_right"},
        {"window": (2, 1)},
        {"softcap": 2.5, "is_causal": True},
        {"alibi": True, "causal": "bottom_right"},
    ],
    ids=["bottom_right", "window", "softcap", "alibi"],
)
@pytest.mark.parametrize("layout", ["BSHD", "BHSD"])
def test_torch_attention_against_reference(opts, layout):
    b, sq, sk, hq, hkv, d = 2, 5, 8, 4, 2, 8
    q, k, v = leaves((b, sq, hq, d), (b, sk, hkv, d), (b, sk, hkv, d), seed=9)
    slopes = torch.rand(hq) * 0.5 if opts.get("alibi") else None
    kw = {kk: vv for kk, vv in opts.items() if kk != "alibi"}
    tr = (lambda t: t.transpose(1, 2)) if layout == "BHSD" else (lambda t: t)
    out, lse = akt.attention(tr(q), tr(k), tr(v), alibi_slopes=slopes, return_lse=True,
                             enable_gqa=True, layout=layout, **kw)  # fmt: skip
    out = tr(out)
    dout = torch.randn(out.shape)
    grads = torch.autograd.grad(out, (q, k, v), dout)
    rk = dict(
        causal=kw.get("causal") or ("top_left" if kw.get("is_causal") else "none"),
        window=kw.get("window", (-1, -1)),
        softcap=kw.get("softcap", 0.0),
        alibi=None if slopes is None else slopes.numpy(),
    )
    npy = [t.detach().numpy() for t in (q, k, v)]
    want, want_lse = ref.forward(*npy, **rk)
    assert ref.rel_err(out.detach().numpy(), want) < 1e-5
    assert np.allclose(lse.numpy(), want_lse, rtol=1e-5, atol=1e-5)
    want_grads = ref.backward(dout.numpy(), *npy, **rk)
    for g, w in zip(grads, want_grads):
        assert ref.rel_err(g.numpy(), w) < 1e-4


def test_torch_attention_varlen_against_reference():
    lens = [3, 5, 1]
    cu = torch.tensor([0, 3, 8, 9], dtype=torch.int32)
    q, k, v = leaves((9, 2, 8), (9, 1, 8), (9, 1, 8), seed=4)
    out = akt.attention_varlen(q, k, v, cu, cu, max(lens), max(lens), causal=True)
    dout = torch.randn(out.shape)
    grads = torch.autograd.grad(out, (q, k, v), dout)
    for i in range(len(lens)):
        s = slice(int(cu[i]), int(cu[i + 1]))
        npy = [t.detach().numpy()[None, s] for t in (q, k, v)]
        want, _ = ref.forward(*npy, causal="bottom_right")
        assert ref.rel_err(out.detach().numpy()[s], want[0]) < 1e-5
        wg = ref.backward(dout.numpy()[None, s], *npy, causal="bottom_right")
        for g, w in zip(grads, wg):
            assert ref.rel_err(g.numpy()[s], w[0]) < 1e-4


def test_generic_api_allocates_torch_outputs():
    q, k, v = leaves((1, 4, 2, 8), (1, 4, 2, 8), (1, 4, 2, 8))
    out, lse = attnkit.attention(q, k, v, return_lse=True, layout="BSHD")
    assert isinstance(out, torch.Tensor) and out.shape == (1, 4, 2, 8)
    assert lse.dtype == torch.float32 and lse.shape == (1, 2, 4)
    assert not out.requires_grad  # the generic API is not differentiable
    want = TORCH_SDPA(*(t.detach().transpose(1, 2) for t in (q, k, v))).transpose(1, 2)
    assert rel(out, want) < 1e-5
    mask = torch.ones(4, 4, dtype=torch.bool).tril()
    got = attnkit.attention(q, k, v, attn_mask=mask)
    assert rel(got, attnkit.attention(q, k, v, is_causal=True)) < 1e-7
