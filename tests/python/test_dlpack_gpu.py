"""Other frameworks' CUDA arrays through DLPack: CuPy (outputs allocated with CuPy, on CuPy's
current stream) and JAX (inputs only: JAX arrays are immutable, so out= comes from torch).
Checked against the float64 NumPy reference. Skips without CUDA, CuPy or JAX."""

import os

import numpy as np
import pytest

import attnkit
import reference as ref

if not attnkit.info()["build"]["cuda"]:
    pytest.skip("attnkit built without CUDA", allow_module_level=True)


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    shapes = [(2, 65, 4, 64), (2, 80, 2, 64), (2, 80, 2, 64)]
    return [rng.standard_normal(s).astype(np.float16) for s in shapes]


def test_cupy_in_cupy_out_on_current_stream():
    cp = pytest.importorskip("cupy")
    if cp.cuda.runtime.getDeviceCount() == 0:
        pytest.skip("no CUDA device")
    qn, kn, vn = inputs()
    want, want_lse = ref.forward(qn, kn, vn, causal="bottom_right")
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        q, k, v = (cp.asarray(a) for a in (qn, kn, vn))
        out, lse = attnkit.attention(q, k, v, causal="bottom_right", enable_gqa=True,
                                     return_lse=True)  # fmt: skip
        got, got_lse = cp.asnumpy(out), cp.asnumpy(lse)  # on `stream`: ordered after attnkit
    assert isinstance(out, cp.ndarray) and out.dtype == cp.float16 and out.shape == (2, 65, 4, 64)
    assert lse.dtype == cp.float32 and lse.shape == (2, 4, 65)
    assert ref.rel_err(got, want) < 1e-2
    np.testing.assert_allclose(got_lse, want_lse, rtol=1e-2, atol=1e-2)


def test_jax_inputs_torch_out():
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    jax = pytest.importorskip("jax")
    torch = pytest.importorskip("torch")
    if not any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("JAX sees no GPU")
    import jax.numpy as jnp

    qn, kn, vn = inputs(1)
    q, k, v = (jnp.asarray(a) for a in (qn, kn, vn))
    with pytest.raises(attnkit.InvalidArgumentError, match="JAX"):
        attnkit.attention(q, k, v, enable_gqa=True)
    out = torch.empty(2, 65, 4, 64, dtype=torch.float16, device="cuda")
    attnkit.attention(q, k, v, enable_gqa=True, out=out, stream=0)
    torch.cuda.synchronize()
    want, _ = ref.forward(qn, kn, vn)
    assert ref.rel_err(out.cpu().numpy(), want) < 1e-2
