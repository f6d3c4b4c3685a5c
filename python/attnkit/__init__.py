"""attnkit: one dispatcher in front of many attention backends (Python front end).

Arrays come in through DLPack (numpy, torch, CuPy, JAX, ...) without copies; outputs are
allocated with the input's framework unless given (``out=``, ``lse=``). See docs/python.md.

Layouts: ``layout="BSHD"`` takes q ``[B, Sq, Hq, D]``, k ``[B, Sk, Hkv, D]``, v ``[B, Sk, Hkv, Dv]``
and returns out ``[B, Sq, Hq, Dv]``; ``layout="BHSD"`` takes and returns ``[B, H, S, D]`` (as
PyTorch's SDPA). lse is always float32 ``[B, Hq, Sq]`` (varlen: ``[Hq, total_q]``).

Causal alignment: ``is_causal=True`` is top-left as in PyTorch's SDPA (key j visible iff
j <= i); ``causal="bottom_right"`` is FlashAttention's (j <= i + Sk - Sq). ``attention_varlen``
follows flash-attn: ``causal=True`` means bottom-right.
"""

from __future__ import annotations

import contextlib
import random
import threading
from typing import Any, Iterator, Optional, Sequence

from . import _attnkit as _C
from ._errors import (
    AttnkitError,
    CudaError,
    InternalError,
    InvalidArgumentError,
    NotBuiltError,
    NumericalError,
    TooLargeError,
    UnknownBackendError,
    UnsupportedError,
    from_code as _from_code,
)

_C._set_error_factory(_from_code)

Explanation = _C.Explanation
BackendVerdict = _C.BackendVerdict

__version__ = _C.build_info()["version"]

__all__ = [
    "AttnkitError",
    "CudaError",
    "InternalError",
    "InvalidArgumentError",
    "NotBuiltError",
    "NumericalError",
    "TooLargeError",
    "UnknownBackendError",
    "UnsupportedError",
    "Explanation",
    "attention",
    "attention_varlen",
    "attention_backward",
    "backend",
    "canonical_backend_name",
    "current_backend_scope",
    "default_backend",
    "explain",
    "info",
    "last_backend",
    "list_backends",
    "list_devices",
    "num_threads",
    "set_default_backend",
    "set_num_threads",
]

# ---- backend selection --------------------------------------------------------------------

_tls = threading.local()


def _scope_stack() -> list:
    stack = getattr(_tls, "scopes", None)
    if stack is None:
        stack = _tls.scopes = []
    return stack


@contextlib.contextmanager
def backend(name: str) -> Iterator[str]:
    """``with attnkit.backend("flash"):`` — calls made by this thread inside the block use
    ``name`` (a canonical name or alias) unless a call names its own ``backend=``. Nests; other
    threads are not affected. Backed by the C++ thread-local ``attnkit::BackendGuard``.
    An unknown name raises UnknownBackendError on entry. Yields the canonical name."""
    scope = _C.BackendScope(name)
    scope.enter()  # validates the name; the guard lives on this thread
    stack = _scope_stack()
    stack.append(name)
    try:
        yield _C.canonical_backend_name(name)
    finally:
        stack.pop()
        scope.exit()


def current_backend_scope() -> Optional[str]:
    """The innermost backend scope of this thread (``attnkit.backend`` or a module's
    ``attnkit.torch.set_attention_backend``), as written, or None."""
    stack = getattr(_tls, "scopes", None)
    return stack[-1] if stack else None


def set_default_backend(name: Optional[str]) -> None:
    """Process-wide default backend (overrides env ATTNKIT_BACKEND). None or "auto" clears it."""
    _C.set_default_backend("" if name is None else name)


def default_backend() -> str:
    """The process default: set_default_backend's, else env ATTNKIT_BACKEND, else "auto"."""
    return _C.default_backend()


def canonical_backend_name(name: str) -> str:
    """Canonical name of a backend name or alias ("_native_flash" -> "flash")."""
    return _C.canonical_backend_name(name)


def last_backend() -> Optional[str]:
    """Canonical name of the backend that ran this thread's most recent attnkit call."""
    return getattr(_tls, "last", None)


def set_num_threads(n: int) -> None:
    """Threads of the CPU backends; 0 restores the default (ATTNKIT_NUM_THREADS, else all)."""
    _C.set_num_threads(int(n))


def num_threads() -> int:
    return _C.num_threads()


def list_backends() -> list:
    """Every known backend in auto's preference order: name, aliases, summary, built,
    not_built_reason and (when built) capabilities."""
    return _C.list_backends()


def list_devices() -> list:
    return _C.list_devices()


def info() -> dict:
    """Build, devices, backends and the current default, as one dict."""
    return {
        "version": __version__,
        "build": _C.build_info(),
        "devices": _C.list_devices(),
        "backends": _C.list_backends(),
        "default_backend": _C.default_backend(),
        "num_threads": _C.num_threads(),
    }


# ---- arrays of the caller's framework -------------------------------------------------------


def _framework(x: Any) -> str:
    mod = type(x).__module__.split(".")[0]
    if mod == "torch":
        return "torch"
    if mod == "numpy":
        return "numpy"
    if mod == "cupy":
        return "cupy"
    return "other"


def _empty(like: Any, shape: Sequence[int], float32: bool = False) -> Any:
    """An uninitialized array of `like`'s framework, device and dtype (or float32)."""
    fw = _framework(like)
    shape = tuple(int(s) for s in shape)
    if fw == "torch":
        import torch

        return torch.empty(shape, dtype=torch.float32 if float32 else like.dtype, device=like.device)
    if fw == "numpy":
        import numpy as np

        return np.empty(shape, dtype=np.float32 if float32 else like.dtype)
    if fw == "cupy":
        import cupy

        with cupy.cuda.Device(like.device.id):
            return cupy.empty(shape, dtype=cupy.float32 if float32 else like.dtype)
    if type(like).__module__.startswith("jax"):
        raise InvalidArgumentError(
            "JAX arrays are immutable: pass out= (and lse=) as writable arrays of another "
            "framework (torch, CuPy, NumPy) on the same device"
        )
    ns = getattr(like, "__array_namespace__", None)
    if ns is not None:
        xp = ns()
        return xp.empty(shape, dtype=xp.float32 if float32 else like.dtype, device=like.device)
    raise InvalidArgumentError(
        f"cannot allocate an output like a {type(like).__module__}.{type(like).__name__}: "
        "pass out= (and lse=) as writable arrays"
    )


def _stream(x: Any) -> int:
    """The caller framework's current CUDA stream for x's device (0 on the CPU)."""
    fw = _framework(x)
    if fw == "torch" and x.is_cuda:
        import torch

        return torch.cuda.current_stream(x.device).cuda_stream
    if fw == "cupy":
        import cupy

        return cupy.cuda.get_current_stream().ptr
    return 0


def _arg(x: Any) -> Any:
    """What goes to DLPack: torch tensors that require grad are exported detached (this API is
    not differentiable; use attnkit.torch for autograd)."""
    if x is not None and _framework(x) == "torch" and x.requires_grad:
        return x.detach()
    return x


def _bhsd(layout: str) -> bool:
    lay = str(layout).upper()
    if lay in ("BSHD", "NHD"):
        return False
    if lay in ("BHSD", "HND"):
        return True
    raise InvalidArgumentError(f"layout = '{layout}', expected 'BSHD' or 'BHSD'")


_CAUSAL = ("none", "top_left", "bottom_right")


def _causal(is_causal: bool, causal: Any, true_means: Optional[str]) -> str:
    """Resolve (is_causal, causal) to "none" | "top_left" | "bottom_right".
    true_means: what causal=True means for this front end (None: bool not accepted)."""
    if isinstance(causal, bool):
        if true_means is None:
            raise InvalidArgumentError(
                f"causal = {causal}: ambiguous here; use is_causal=True (top-left, as SDPA) or "
                "causal='top_left' / 'bottom_right'"
            )
        causal = true_means if causal else "none"
    if causal is None:
        return "top_left" if is_causal else "none"
    if causal not in _CAUSAL:
        raise InvalidArgumentError(
            f"causal = {causal!r}, expected one of 'none', 'top_left', 'bottom_right'"
        )
    if is_causal and causal != "top_left":
        raise InvalidArgumentError(
            f"is_causal=True (top-left) contradicts causal={causal!r}: pass only one of them"
        )
    return causal


def _window(window: Any) -> tuple:
    if window is None:
        return -1, -1
    try:
        left, right = window
    except (TypeError, ValueError):
        raise InvalidArgumentError(
            f"window = {window!r}, expected (left, right) with -1 or None for unbounded"
        ) from None
    return (-1 if left is None else int(left)), (-1 if right is None else int(right))


def _dropout_seed(dropout_p: float, seed: Optional[int]) -> int:
    if seed is not None:
        return int(seed)
    return random.getrandbits(63) if dropout_p > 0 else 0


def _check_gqa(q: Any, k: Any, bhsd: bool, enable_gqa: bool) -> None:
    qs, ks = getattr(q, "shape", None), getattr(k, "shape", None)
    if enable_gqa or qs is None or ks is None or len(qs) != 4 or len(ks) != 4:
        return
    h = 1 if bhsd else 2
    if q.shape[h] != k.shape[h]:
        raise InvalidArgumentError(
            f"q has {q.shape[h]} heads and k has {k.shape[h]} (shape[{h}]): pass "
            "enable_gqa=True for grouped-query attention (as in SDPA)"
        )


def _options(
    *,
    attn_mask=None,
    causal="none",
    scale=None,
    dropout_p=0.0,
    dropout_seed=0,
    dropout_offset=0,
    window=None,
    softcap=None,
    alibi_slopes=None,
    cu_seqlens_q=None,
    cu_seqlens_k=None,
    max_seqlen_q=None,
    max_seqlen_k=None,
    bhsd=False,
    backend=None,
    stream=0,
    allow_quantized=False,
    deterministic=False,
) -> dict:
    left, right = _window(window)
    return dict(
        mask=_arg(attn_mask),
        alibi_slopes=_arg(alibi_slopes),
        cu_seqlens_q=cu_seqlens_q,
        cu_seqlens_k=cu_seqlens_k,
        max_seqlen_q=-1 if max_seqlen_q is None else int(max_seqlen_q),
        max_seqlen_k=-1 if max_seqlen_k is None else int(max_seqlen_k),
        scale=None if scale is None else float(scale),
        softcap=0.0 if softcap is None else float(softcap),
        causal=causal,
        window_left=left,
        window_right=right,
        dropout_p=float(dropout_p),
        dropout_seed=int(dropout_seed),
        dropout_offset=int(dropout_offset),
        deterministic=bool(deterministic),
        stream=int(stream),
        backend="" if backend is None else str(backend),
        allow_quantized=bool(allow_quantized),
        bhsd=bool(bhsd),
    )


def _out_shapes(q, v, bhsd: bool, varlen: bool) -> tuple:
    """(out shape, lse shape) in the caller's layout."""
    if len(q.shape) < 3 or len(v.shape) < 3:
        raise InvalidArgumentError(
            f"q.ndim = {len(q.shape)}, v.ndim = {len(v.shape)}, expected 4 ([B, S, H, D] or "
            "[B, H, S, D]), or 3 for varlen ([total, H, D])"
        )
    dv = v.shape[-1]
    if varlen:
        total_q, hq = q.shape[0], q.shape[1]
        return (total_q, hq, dv), (hq, total_q)
    if len(q.shape) != 4:
        raise InvalidArgumentError(
            f"q.ndim = {len(q.shape)}, expected 4 ([B, S, H, D] or [B, H, S, D]); packed "
            "[total, H, D] inputs go through attention_varlen"
        )
    if bhsd:
        b, hq, sq = q.shape[0], q.shape[1], q.shape[2]
        return (b, hq, sq, dv), (b, hq, sq)
    b, sq, hq = q.shape[0], q.shape[1], q.shape[2]
    return (b, sq, hq, dv), (b, hq, sq)


def _forward(q, k, v, out, lse, return_lse: bool, opts: dict):
    if out is None or (lse is None and return_lse):
        varlen = opts["cu_seqlens_q"] is not None
        out_shape, lse_shape = _out_shapes(q, v, opts["bhsd"], varlen)
        if out is None:
            out = _empty(q, out_shape)
        if lse is None and return_lse:
            lse = _empty(q, lse_shape, float32=True)
    if not opts["stream"]:
        opts["stream"] = _stream(q)
    _tls.last = _C.forward(_arg(q), _arg(k), _arg(v), out, lse, **opts)
    return (out, lse) if return_lse else out


# ---- the calls ------------------------------------------------------------------------------


def attention(
    q,
    k,
    v,
    *,
    attn_mask=None,
    is_causal: bool = False,
    causal: Optional[str] = None,
    scale: Optional[float] = None,
    dropout_p: float = 0.0,
    dropout_seed: Optional[int] = None,
    dropout_offset: int = 0,
    enable_gqa: bool = False,
    window: Optional[tuple] = None,
    softcap: Optional[float] = None,
    alibi_slopes=None,
    return_lse: bool = False,
    layout: str = "BSHD",
    backend: Optional[str] = None,
    out=None,
    lse=None,
    stream: Optional[int] = None,
    allow_quantized: bool = False,
):
    """Attention forward: ``softmax(q kᵀ · scale + masks) v``.

    q, k, v: arrays of one framework (DLPack), any strides. ``layout`` "BSHD" (default) or
    "BHSD". ``attn_mask``: bool keep-mask (True = attend, as SDPA) or additive float mask,
    broadcastable to [B, Hq, Sq, Sk]. ``is_causal``: top-left (SDPA); ``causal``: "none",
    "top_left" or "bottom_right". ``window``: (left, right), -1/None unbounded, bottom-right
    aligned. ``enable_gqa``: allow Hq != Hkv (Hq % Hkv == 0), as SDPA. ``dropout_seed``: Philox
    seed of the dropout mask (random when None; pass it to reproduce the mask in
    attention_backward). ``out``/``lse``: write into these (writable, any strides) instead of
    allocating. ``stream``: CUDA stream (default: the framework's current stream).

    Returns out, or (out, lse) when ``return_lse``.
    """
    bhsd = _bhsd(layout)
    _check_gqa(q, k, bhsd, enable_gqa)
    opts = _options(
        attn_mask=attn_mask,
        causal=_causal(is_causal, causal, None),
        scale=scale,
        dropout_p=dropout_p,
        dropout_seed=_dropout_seed(dropout_p, dropout_seed),
        dropout_offset=dropout_offset,
        window=window,
        softcap=softcap,
        alibi_slopes=alibi_slopes,
        bhsd=bhsd,
        backend=backend,
        stream=stream or 0,
        allow_quantized=allow_quantized,
    )
    return _forward(q, k, v, out, lse, return_lse or lse is not None, opts)


def attention_varlen(
    q,
    k,
    v,
    cu_seqlens_q,
    cu_seqlens_k,
    max_seqlen_q: Optional[int] = None,
    max_seqlen_k: Optional[int] = None,
    *,
    causal: Any = False,
    scale: Optional[float] = None,
    dropout_p: float = 0.0,
    dropout_seed: Optional[int] = None,
    dropout_offset: int = 0,
    window: Optional[tuple] = None,
    softcap: Optional[float] = None,
    alibi_slopes=None,
    return_lse: bool = False,
    backend: Optional[str] = None,
    out=None,
    lse=None,
    stream: Optional[int] = None,
    allow_quantized: bool = False,
):
    """Packed variable-length attention, flash-attn style.

    q ``[total_q, Hq, D]``, k ``[total_k, Hkv, D]``, v ``[total_k, Hkv, Dv]``; ``cu_seqlens_q/k``
    int32 ``[B + 1]`` prefix sums on the tensors' device. Give the maxima to avoid a device-to-host
    read. ``causal=True`` is bottom-right aligned (flash-attn); "top_left" is accepted too. GQA is
    implicit (Hq % Hkv == 0). Returns out ``[total_q, Hq, Dv]``, or (out, lse ``[Hq, total_q]``).
    """
    opts = _options(
        causal=_causal(False, causal, "bottom_right"),
        scale=scale,
        dropout_p=dropout_p,
        dropout_seed=_dropout_seed(dropout_p, dropout_seed),
        dropout_offset=dropout_offset,
        window=window,
        softcap=softcap,
        alibi_slopes=alibi_slopes,
        cu_seqlens_q=cu_seqlens_q,
        cu_seqlens_k=cu_seqlens_k,
        max_seqlen_q=max_seqlen_q,
        max_seqlen_k=max_seqlen_k,
        backend=backend,
        stream=stream or 0,
        allow_quantized=allow_quantized,
    )
    return _forward(q, k, v, out, lse, return_lse or lse is not None, opts)


def attention_backward(
    dout,
    q,
    k,
    v,
    out,
    lse,
    *,
    attn_mask=None,
    is_causal: bool = False,
    causal: Optional[str] = None,
    scale: Optional[float] = None,
    dropout_p: float = 0.0,
    dropout_seed: int = 0,
    dropout_offset: int = 0,
    enable_gqa: bool = False,
    window: Optional[tuple] = None,
    softcap: Optional[float] = None,
    alibi_slopes=None,
    layout: str = "BSHD",
    cu_seqlens_q=None,
    cu_seqlens_k=None,
    max_seqlen_q: Optional[int] = None,
    max_seqlen_k: Optional[int] = None,
    backend: Optional[str] = None,
    deterministic: bool = False,
    dq=None,
    dk=None,
    dv=None,
    stream: Optional[int] = None,
):
    """Attention backward: (dout, q, k, v, out, lse) -> (dq, dk, dv).

    Takes the forward's options unchanged (same mask, causal, scale, window, softcap, ALiBi,
    dropout_p and dropout_seed; for varlen the same cu_seqlens, and ``causal="bottom_right"``
    where the forward used attention_varlen's ``causal=True``). ``lse`` is the forward's.
    dq/dk/dv are allocated like q/k/v unless given.
    """
    varlen = cu_seqlens_q is not None
    bhsd = _bhsd(layout)
    if not varlen:
        _check_gqa(q, k, bhsd, enable_gqa)
    opts = _options(
        attn_mask=attn_mask,
        causal=_causal(is_causal, causal, None),
        scale=scale,
        dropout_p=dropout_p,
        dropout_seed=dropout_seed,
        dropout_offset=dropout_offset,
        window=window,
        softcap=softcap,
        alibi_slopes=alibi_slopes,
        cu_seqlens_q=cu_seqlens_q,
        cu_seqlens_k=cu_seqlens_k,
        max_seqlen_q=max_seqlen_q,
        max_seqlen_k=max_seqlen_k,
        bhsd=bhsd,
        backend=backend,
        stream=stream or _stream(q),
        deterministic=deterministic,
    )
    if dq is None:
        dq = _empty(q, q.shape)
    if dk is None:
        dk = _empty(k, k.shape)
    if dv is None:
        dv = _empty(v, v.shape)
    _tls.last = _C.backward(
        _arg(dout), _arg(q), _arg(k), _arg(v), _arg(out), _arg(lse), dq, dk, dv, **opts
    )
    return dq, dk, dv


def explain(
    q,
    k,
    v,
    *,
    backward: bool = False,
    attn_mask=None,
    is_causal: bool = False,
    causal: Any = None,
    scale: Optional[float] = None,
    dropout_p: float = 0.0,
    enable_gqa: bool = False,
    window: Optional[tuple] = None,
    softcap: Optional[float] = None,
    alibi_slopes=None,
    return_lse: bool = False,
    layout: str = "BSHD",
    cu_seqlens_q=None,
    cu_seqlens_k=None,
    max_seqlen_q: Optional[int] = None,
    max_seqlen_k: Optional[int] = None,
    backend: Optional[str] = None,
    allow_quantized: bool = False,
) -> Explanation:
    """Which backend a call with these arguments would run, by which rule, and why every other
    backend can or cannot run it. Validates like the call (bad input raises). ``str()`` of the
    result is a table. With cu_seqlens, ``causal=True`` means bottom-right as in
    attention_varlen."""
    varlen = cu_seqlens_q is not None
    bhsd = _bhsd(layout)
    if not varlen:
        _check_gqa(q, k, bhsd, enable_gqa)
    opts = _options(
        attn_mask=attn_mask,
        causal=_causal(is_causal, causal, "bottom_right" if varlen else None),
        scale=scale,
        dropout_p=dropout_p,
        window=window,
        softcap=softcap,
        alibi_slopes=alibi_slopes,
        cu_seqlens_q=cu_seqlens_q,
        cu_seqlens_k=cu_seqlens_k,
        max_seqlen_q=max_seqlen_q,
        max_seqlen_k=max_seqlen_k,
        bhsd=bhsd,
        backend=backend,
        allow_quantized=allow_quantized,
    )
    out_shape, lse_shape = _out_shapes(q, v, bhsd, varlen)
    out = _empty(q, out_shape)
    lse = _empty(q, lse_shape, float32=True) if (return_lse or backward) else None
    return _C.explain(_arg(q), _arg(k), _arg(v), out, lse, backward, **opts)
