"""attnkit.torch on CUDA against PyTorch's own SDPA, on real model code (transformers Llama and
a timm ViT with random weights), forward and gradients, plus torch.compile(fullgraph=True).
Every CUDA backend built is run by name. Skips visibly without torch, CUDA or a CUDA build.

Accuracy rule (DESIGN.md §5): in bf16/f16, attnkit's error against a float32 reference must stay
within 2x PyTorch's own same-precision error (plus a small floor)."""

import os

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

import attnkit  # noqa: E402
import attnkit.torch as akt  # noqa: E402

# ATTNKIT_GPU_TEST_DEVICE=cpu dry-runs this file on the CPU backends (to debug the test itself).
DEV = os.environ.get("ATTNKIT_GPU_TEST_DEVICE", "cuda")
if DEV == "cuda":
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device", allow_module_level=True)
    if not attnkit.info()["build"]["cuda"]:
        pytest.skip("attnkit built without CUDA", allow_module_level=True)

TORCH_SDPA = F.scaled_dot_product_attention
CUDA_BACKENDS = [
    b["name"]
    for b in attnkit.list_backends()
    if b["built"] and b["capabilities"]["device"] == DEV and b["capabilities"]["tier"] == "exact"
]


@pytest.fixture(autouse=True)
def _unpatched():
    yield
    akt.unpatch_sdpa()
    assert F.scaled_dot_product_attention is TORCH_SDPA


def rel(a, b):
    a, b = a.detach().double(), b.detach().double()
    return ((a - b).norm() / b.norm().clamp_min(1e-30)).item()


def within(err, torch_err, what):
    assert err == err, f"{what}: NaN"
    assert err <= 2 * torch_err + 2e-3, f"{what}: attnkit {err:.2e} vs torch {torch_err:.2e}"


def run_or_skip(backend, fn):
    try:
        return fn()
    except (attnkit.UnsupportedError, attnkit.NotBuiltError) as e:
        pytest.skip(f"{backend}: {e}")


def test_cuda_backends_are_built():
    assert CUDA_BACKENDS, "a CUDA build with no exact-tier CUDA backend"


SHAPES = {
    # name: (B, Hq, Hkv, Sq, Sk, D, kwargs)
    "d64_causal": (2, 8, 8, 257, 257, 64, {"is_causal": True}),
    "d128_gqa": (2, 8, 2, 193, 300, 128, {"enable_gqa": True}),
    "d64_causal_sq<sk": (1, 4, 4, 100, 333, 64, {"is_causal": True}),
    "d64_bool_mask": (2, 4, 4, 128, 160, 64, {"mask": "bool"}),
}


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "f16"])
@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("backend", CUDA_BACKENDS)
def test_sdpa_backend_vs_torch(backend, shape, dtype):
    b, hq, hkv, sq, sk, d, kw = SHAPES[shape]
    kw = dict(kw)
    g = torch.Generator(device=DEV).manual_seed(0)
    q = torch.randn(b, hq, sq, d, device=DEV, generator=g).to(dtype).requires_grad_()
    k = torch.randn(b, hkv, sk, d, device=DEV, generator=g).to(dtype).requires_grad_()
    v = torch.randn(b, hkv, sk, d, device=DEV, generator=g).to(dtype).requires_grad_()
    if kw.pop("mask", None) == "bool":
        kw["attn_mask"] = torch.rand(b, 1, sq, sk, device=DEV, generator=g) > 0.2
    dout = torch.randn(b, hq, sq, d, device=DEV, generator=g).to(dtype)

    def grads(fn, *xs):
        out = fn(*xs, **kw)
        return (out,) + torch.autograd.grad(out, xs, dout.to(out.dtype))

    theirs = grads(TORCH_SDPA, q, k, v)
    ref = grads(TORCH_SDPA, *(t.detach().float().requires_grad_() for t in (q, k, v)))
    with attnkit.backend(backend), torch.no_grad():  # inference: no lse needed
        out = run_or_skip(backend, lambda: akt.sdpa(q, k, v, **kw))
    assert attnkit.last_backend() == backend
    assert out.dtype == dtype and out.shape == theirs[0].shape
    within(rel(out, ref[0]), rel(theirs[0], ref[0]), f"{backend} out")
    with attnkit.backend(backend):  # training: the forward also writes lse
        out = run_or_skip(backend, lambda: akt.sdpa(q, k, v, **kw))
    within(rel(out, ref[0]), rel(theirs[0], ref[0]), f"{backend} out (with lse)")
    # The backward runs on the backend recorded at forward time (no scope needed here).
    ours = run_or_skip(backend, lambda: torch.autograd.grad(out, (q, k, v), dout))
    assert attnkit.last_backend() == backend
    for name, a, t, r in zip(["dq", "dk", "dv"], ours, theirs[1:], ref[1:]):
        assert a.dtype == dtype and a.shape == t.shape
        within(rel(a, r), rel(t, r), f"{backend} {name}")


@pytest.mark.skipif(DEV != "cuda", reason="CUDA streams")
def test_runs_on_the_callers_stream():
    """Inputs produced on a side stream and consumed right away on it, with no sync: attnkit
    must run on torch's current stream, or it races the producer."""
    side = torch.cuda.Stream()
    x = torch.randn(4096, 4096, device=DEV, dtype=torch.bfloat16)
    torch.cuda.synchronize()
    with torch.cuda.stream(side):
        y = x
        for _ in range(8):  # a few ms of work queued before q exists
            y = (y @ x) * 1e-2
        q = y[:2048].reshape(2, 8, 128, 4096)[..., :64].contiguous()
        out = akt.sdpa(q, q, q, is_causal=True)
    side.synchronize()
    want = TORCH_SDPA(q.float(), q.float(), q.float(), is_causal=True)
    assert rel(out, want) < 2e-2


# ---- real model code ------------------------------------------------------------------------


def _compare_model(make, inputs, loss_fn):
    """Same random weights, three runs: float32 torch SDPA (reference), bf16 torch SDPA,
    bf16 attnkit through patch_sdpa. Compares outputs and parameter gradients."""
    torch.manual_seed(0)
    model = make().to(DEV)
    results = {}
    for name, dtype, patch in [("ref", torch.float32, False), ("torch", torch.bfloat16, False),
                               ("ours", torch.bfloat16, True)]:  # fmt: skip
        m = model.to(dtype)
        m.zero_grad(set_to_none=True)
        if patch:
            akt.patch_sdpa()
            attnkit._tls.last = None
        try:
            out = loss_fn(m, inputs(dtype))
            out.float().square().mean().backward()
        finally:
            akt.unpatch_sdpa()
        if patch:
            assert attnkit.last_backend() is not None, "the model did not call F.sdpa"
        grads = [p.grad.detach().float().clone() for p in m.parameters() if p.grad is not None]
        results[name] = (out.detach().float(), grads)
    (r, rg), (t, tg), (o, og) = results["ref"], results["torch"], results["ours"]
    within(rel(o, r), rel(t, r), "output")
    assert len(og) == len(rg) and len(og) > 0
    worst = max(rel(a, b) - 2 * rel(c, b) for a, b, c in zip(og, rg, tg))
    assert worst <= 2e-3, f"parameter gradients: worst excess {worst:.2e}"


def test_transformers_llama_causal_with_padding():
    transformers = pytest.importorskip("transformers")
    cfg = transformers.LlamaConfig(
        vocab_size=512, hidden_size=512, intermediate_size=1024, num_hidden_layers=2,
        num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=512,
        attn_implementation="sdpa",
    )  # fmt: skip
    ids = torch.randint(0, 512, (2, 96), device=DEV)
    pad = torch.ones(2, 96, dtype=torch.long, device=DEV)
    pad[1, :17] = 0  # left padding: a real (bool) mask reaches SDPA

    def run(m, _):
        return m(input_ids=ids, attention_mask=pad).logits[:, 17:]  # rows with a visible key

    _compare_model(lambda: transformers.LlamaForCausalLM(cfg), lambda dt: None, run)


def test_timm_vit():
    timm = pytest.importorskip("timm")
    x = torch.randn(2, 3, 224, 224, device=DEV)
    _compare_model(
        lambda: timm.create_model("vit_tiny_patch16_224", pretrained=False, num_classes=10),
        lambda dt: x.to(dt),
        lambda m, inp: m(inp),
    )


def test_compile_fullgraph_timm_vit_no_graph_break():
    timm = pytest.importorskip("timm")
    torch.manual_seed(0)
    model = timm.create_model("vit_tiny_patch16_224", pretrained=False, num_classes=10)
    model = model.to(DEV, torch.bfloat16)
    x = torch.randn(2, 3, 224, 224, device=DEV, dtype=torch.bfloat16)
    with akt.patch_sdpa():
        explanation = torch._dynamo.explain(model)(x)
        assert explanation.graph_break_count == 0, explanation.break_reasons
        eager = model(x)
        eager_grad = torch.autograd.grad(eager.float().square().mean(), model.head.weight)[0]
        compiled = torch.compile(model, fullgraph=True)
        got = compiled(x)
        got_grad = torch.autograd.grad(got.float().square().mean(), model.head.weight)[0]
    assert rel(got, eager) < 2e-2
    assert rel(got_grad, eager_grad) < 5e-2


def test_set_attention_backend_on_a_model():
    timm = pytest.importorskip("timm")
    torch.manual_seed(0)
    model = timm.create_model("vit_tiny_patch16_224", pretrained=False).to(DEV, torch.bfloat16)
    x = torch.randn(1, 3, 224, 224, device=DEV, dtype=torch.bfloat16)
    want = model(x)
    with akt.patch_sdpa():
        for name in CUDA_BACKENDS:
            akt.set_attention_backend(model, name)
            try:
                got = model(x)
            except attnkit.UnsupportedError:
                continue
            assert attnkit.last_backend() == name
            assert rel(got, want) < 2e-2, name
        akt.reset_attention_backend(model)
