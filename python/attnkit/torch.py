"""attnkit.torch: PyTorch integration.

- ``torch.ops.attnkit.attention_fwd`` / ``attention_bwd``: custom ops (torch.library) with fake
  implementations, so ``torch.compile(fullgraph=True)`` traces them without a graph break, and
  autograd through attnkit's own backward (register_autograd).
- ``sdpa``: the signature and semantics of ``torch.nn.functional.scaled_dot_product_attention``
  ([B, H, S, D], is_causal top-left, bool/float masks, scale, dropout_p, enable_gqa).
- ``attention`` / ``attention_varlen``: differentiable forms of attnkit.attention /
  attnkit.attention_varlen (window, softcap, ALiBi, bottom-right causal, layouts).
- ``patch_sdpa()`` / ``unpatch_sdpa()``: replace F.scaled_dot_product_attention globally.
- ``set_attention_backend(module, name)`` / ``reset_attention_backend(module)``: per-model
  backend selection (forward pre/post hooks open and close a backend scope around the module).

Backend choice: a call's ``backend=`` > the innermost scope of this thread (``attnkit.backend``
or a module's set_attention_backend) > the process default > auto. The name in force when the
forward runs is recorded and reused by the backward, which autograd may run on another thread.
Under torch.compile the scope is read while tracing and baked into the graph.
"""

from __future__ import annotations

import contextlib
from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor

import attnkit as _ak
from attnkit import _attnkit as _C

__all__ = [
    "attention",
    "attention_varlen",
    "sdpa",
    "patch_sdpa",
    "unpatch_sdpa",
    "set_attention_backend",
    "reset_attention_backend",
]


def _stream(t: Tensor) -> int:
    return torch.cuda.current_stream(t.device).cuda_stream if t.is_cuda else 0


def _dense(t: Optional[Tensor]) -> Optional[Tensor]:
    """attnkit takes any strides but no overlapping ones (expand() views): copy those."""
    if t is None:
        return None
    if any(st == 0 and n > 1 for st, n in zip(t.stride(), t.shape)):
        return t.contiguous()
    return t


def _out_like(q: Tensor, v: Tensor, bhsd: bool, varlen: bool) -> Tensor:
    """out in the caller's layout. BHSD results are stored [B, S, H, Dv] in memory (as
    PyTorch's fused SDPA kernels do), so ``out.transpose(1, 2).reshape(B, S, H * Dv)`` is free."""
    dv = v.shape[-1]
    if varlen:
        return q.new_empty((q.shape[0], q.shape[1], dv))
    if bhsd:
        b, h, s = q.shape[0], q.shape[1], q.shape[2]
        return q.new_empty((b, s, h, dv)).transpose(1, 2)
    return q.new_empty((q.shape[0], q.shape[1], q.shape[2], dv))


def _lse_like(q: Tensor, bhsd: bool, varlen: bool, need: bool) -> Tensor:
    if not need:
        return q.new_empty((0,), dtype=torch.float32)
    if varlen:
        return q.new_empty((q.shape[1], q.shape[0]), dtype=torch.float32)
    b, s, h = (q.shape[0], q.shape[2], q.shape[1]) if bhsd else (q.shape[0], q.shape[1], q.shape[2])
    return q.new_empty((b, h, s), dtype=torch.float32)


# ---- custom ops -------------------------------------------------------------------------------


@torch.library.custom_op("attnkit::attention_fwd", mutates_args=())
def attention_fwd(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    attn_mask: Optional[Tensor],
    alibi_slopes: Optional[Tensor],
    cu_seqlens_q: Optional[Tensor],
    cu_seqlens_k: Optional[Tensor],
    max_seqlen_q: int,
    max_seqlen_k: int,
    scale: Optional[float],
    softcap: float,
    causal: str,
    window_left: int,
    window_right: int,
    dropout_p: float,
    bhsd: bool,
    backend: str,
    return_lse: bool,
) -> tuple[Tensor, Tensor, Tensor]:
    """Returns (out, lse, seed): lse float32 ([0] when not return_lse), seed an int64 CPU scalar
    (the Philox seed of the dropout mask, drawn from torch's default generator; 0 without
    dropout)."""
    varlen = cu_seqlens_q is not None
    out = _out_like(q, v, bhsd, varlen)
    lse = _lse_like(q, bhsd, varlen, return_lse)
    if dropout_p > 0:
        seed = torch.randint(0, 2**62, (), dtype=torch.int64)
    else:
        seed = torch.zeros((), dtype=torch.int64)
    _ak._tls.last = _C.forward(
        _dense(q),
        _dense(k),
        _dense(v),
        out,
        lse if return_lse else None,
        mask=attn_mask,
        alibi_slopes=alibi_slopes,
        cu_seqlens_q=cu_seqlens_q,
        cu_seqlens_k=cu_seqlens_k,
        max_seqlen_q=max_seqlen_q,
        max_seqlen_k=max_seqlen_k,
        scale=scale,
        softcap=softcap,
        causal=causal,
        window_left=window_left,
        window_right=window_right,
        dropout_p=dropout_p,
        dropout_seed=int(seed),
        stream=_stream(q),
        backend=backend,
        bhsd=bhsd,
    )
    return out, lse, seed


@attention_fwd.register_fake
def _attention_fwd_fake(
    q, k, v, attn_mask, alibi_slopes, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
    scale, softcap, causal, window_left, window_right, dropout_p, bhsd, backend, return_lse,
):  # fmt: skip
    varlen = cu_seqlens_q is not None
    out = _out_like(q, v, bhsd, varlen)
    lse = _lse_like(q, bhsd, varlen, return_lse)
    return out, lse, torch.empty((), dtype=torch.int64, device="cpu")


@torch.library.custom_op("attnkit::attention_bwd", mutates_args=())
def attention_bwd(
    dout: Tensor,
    q: Tensor,
    k: Tensor,
    v: Tensor,
    out: Tensor,
    lse: Tensor,
    seed: Tensor,
    attn_mask: Optional[Tensor],
    alibi_slopes: Optional[Tensor],
    cu_seqlens_q: Optional[Tensor],
    cu_seqlens_k: Optional[Tensor],
    max_seqlen_q: int,
    max_seqlen_k: int,
    scale: Optional[float],
    softcap: float,
    causal: str,
    window_left: int,
    window_right: int,
    dropout_p: float,
    bhsd: bool,
    backend: str,
    deterministic: bool,
) -> tuple[Tensor, Tensor, Tensor]:
    """Returns (dq, dk, dv), allocated like q, k, v."""
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    if out.numel() > 0 and lse.numel() == 0:
        raise _ak.InvalidArgumentError(
            "attention_bwd: lse is empty; run attention_fwd with return_lse=True"
        )
    _ak._tls.last = _C.backward(
        _dense(dout),
        _dense(q),
        _dense(k),
        _dense(v),
        out,
        lse,
        dq,
        dk,
        dv,
        mask=attn_mask,
        alibi_slopes=alibi_slopes,
        cu_seqlens_q=cu_seqlens_q,
        cu_seqlens_k=cu_seqlens_k,
        max_seqlen_q=max_seqlen_q,
        max_seqlen_k=max_seqlen_k,
        scale=scale,
        softcap=softcap,
        causal=causal,
        window_left=window_left,
        window_right=window_right,
        dropout_p=dropout_p,
        dropout_seed=int(seed),
        stream=_stream(q),
        backend=backend,
        deterministic=deterministic,
        bhsd=bhsd,
    )
    return dq, dk, dv


@attention_bwd.register_fake
def _attention_bwd_fake(dout, q, k, v, out, lse, seed, *args):
    return torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)


_FWD_TENSORS = 7  # q, k, v, attn_mask, alibi_slopes, cu_seqlens_q, cu_seqlens_k
_FWD_ARGS = 18


def _setup_context(ctx, inputs, output):
    q, k, v, attn_mask, alibi_slopes, cu_seqlens_q, cu_seqlens_k = inputs[:_FWD_TENSORS]
    (max_seqlen_q, max_seqlen_k, scale, softcap, causal, window_left, window_right, dropout_p,
     bhsd, backend, _return_lse) = inputs[_FWD_TENSORS:]  # fmt: skip
    out, lse, seed = output
    ctx.save_for_backward(q, k, v, out, lse, seed, attn_mask, alibi_slopes, cu_seqlens_q,
                          cu_seqlens_k)  # fmt: skip
    ctx.options = (max_seqlen_q, max_seqlen_k, scale, softcap, causal, window_left,
                   window_right, dropout_p, bhsd, backend)  # fmt: skip
    ctx.mark_non_differentiable(lse, seed)


def _backward(ctx, dout, _dlse, _dseed):
    q, k, v, out, lse, seed, attn_mask, alibi, cu_q, cu_k = ctx.saved_tensors
    dq, dk, dv = torch.ops.attnkit.attention_bwd(
        dout, q, k, v, out, lse, seed, attn_mask, alibi, cu_q, cu_k, *ctx.options,
        torch.are_deterministic_algorithms_enabled(),
    )  # fmt: skip
    return (dq, dk, dv) + (None,) * (_FWD_ARGS - 3)


attention_fwd.register_autograd(_backward, setup_context=_setup_context)


# ---- front ends -------------------------------------------------------------------------------


def _scoped_backend(backend: Optional[str]) -> str:
    """The backend name this call runs under: the call's own, else this thread's innermost
    scope, else "" (process default / auto, resolved in C++)."""
    if backend is not None:
        return str(backend)
    scope = _ak.current_backend_scope()
    return "" if scope is None else scope


def _needs_grad(*tensors) -> bool:
    return torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors)


def _check_no_mask_grad(attn_mask: Optional[Tensor]) -> None:
    if attn_mask is not None and attn_mask.requires_grad and torch.is_grad_enabled():
        raise _ak.InvalidArgumentError(
            "attn_mask.requires_grad = True: attnkit computes no gradient for masks "
            "(detach the mask, or use a learnable bias outside attention)"
        )


def sdpa(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Optional[Tensor] = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: Optional[float] = None,
    enable_gqa: bool = False,
) -> Tensor:
    """Drop-in for ``torch.nn.functional.scaled_dot_product_attention`` running on attnkit.

    query ``[B, Hq, L, E]``, key ``[B, Hkv, S, E]``, value ``[B, Hkv, S, Ev]`` (3-D
    ``[B, L, E]`` inputs too); ``attn_mask`` bool (True = attend) or float (added to the
    scores), broadcastable to ``[B, Hq, L, S]``; ``is_causal`` top-left; ``scale`` default
    1/sqrt(E); ``dropout_p`` on the probabilities; ``enable_gqa`` allows Hq % Hkv == 0.
    Differences from PyTorch, by design: a row with no visible key gives 0 (not NaN), a mask
    together with is_causal means both (PyTorch raises), and masks get no gradient.
    """
    if query.dim() not in (3, 4) or key.dim() != query.dim() or value.dim() != query.dim():
        raise _ak.InvalidArgumentError(
            f"query.dim() = {query.dim()}, key.dim() = {key.dim()}, value.dim() = "
            f"{value.dim()}, expected all 4 ([B, H, S, E]) or all 3 ([B, S, E])"
        )
    three_d = query.dim() == 3
    if three_d:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if attn_mask is not None and attn_mask.dim() == 3:
            attn_mask = attn_mask.unsqueeze(1)  # [B, L, S] -> [B, 1, L, S]
    if attn_mask is not None and attn_mask.dim() == 1:
        attn_mask = attn_mask.unsqueeze(0)  # [S] -> [1, S]
    if not enable_gqa and query.shape[1] != key.shape[1]:
        raise _ak.InvalidArgumentError(
            f"query has {query.shape[1]} heads and key has {key.shape[1]}: pass enable_gqa=True "
            "for grouped-query attention"
        )
    _check_no_mask_grad(attn_mask)
    out, _, _ = torch.ops.attnkit.attention_fwd(
        query, key, value, attn_mask, None, None, None, -1, -1,
        None if scale is None else float(scale), 0.0, "top_left" if is_causal else "none",
        -1, -1, float(dropout_p), True, _scoped_backend(None),
        _needs_grad(query, key, value),
    )  # fmt: skip
    return out.squeeze(1) if three_d else out


def attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    attn_mask: Optional[Tensor] = None,
    is_causal: bool = False,
    causal: Optional[str] = None,
    scale: Optional[float] = None,
    dropout_p: float = 0.0,
    enable_gqa: bool = False,
    window: Optional[tuple] = None,
    softcap: Optional[float] = None,
    alibi_slopes: Optional[Tensor] = None,
    return_lse: bool = False,
    layout: str = "BSHD",
    backend: Optional[str] = None,
):
    """Differentiable attnkit.attention for torch tensors (same arguments and rules; dropout
    seeds come from torch's default generator). Returns out, or (out, lse)."""
    bhsd = _ak._bhsd(layout)
    _ak._check_gqa(q, k, bhsd, enable_gqa)
    if q.dim() != 4:
        raise _ak.InvalidArgumentError(
            f"q.dim() = {q.dim()}, expected 4 ([B, S, H, D] or [B, H, S, D]); packed inputs "
            "go through attention_varlen"
        )
    _check_no_mask_grad(attn_mask)
    left, right = _ak._window(window)
    out, lse, _ = torch.ops.attnkit.attention_fwd(
        q, k, v, attn_mask, alibi_slopes, None, None, -1, -1,
        None if scale is None else float(scale), 0.0 if softcap is None else float(softcap),
        _ak._causal(is_causal, causal, None), left, right, float(dropout_p), bhsd,
        _scoped_backend(backend), return_lse or _needs_grad(q, k, v),
    )  # fmt: skip
    return (out, lse) if return_lse else out


def attention_varlen(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    cu_seqlens_q: Tensor,
    cu_seqlens_k: Tensor,
    max_seqlen_q: Optional[int] = None,
    max_seqlen_k: Optional[int] = None,
    *,
    causal=False,
    scale: Optional[float] = None,
    dropout_p: float = 0.0,
    window: Optional[tuple] = None,
    softcap: Optional[float] = None,
    alibi_slopes: Optional[Tensor] = None,
    return_lse: bool = False,
    backend: Optional[str] = None,
):
    """Differentiable attnkit.attention_varlen (flash-attn style: causal=True is bottom-right)."""
    left, right = _ak._window(window)
    out, lse, _ = torch.ops.attnkit.attention_fwd(
        q, k, v, None, alibi_slopes, cu_seqlens_q, cu_seqlens_k,
        -1 if max_seqlen_q is None else int(max_seqlen_q),
        -1 if max_seqlen_k is None else int(max_seqlen_k),
        None if scale is None else float(scale), 0.0 if softcap is None else float(softcap),
        _ak._causal(False, causal, "bottom_right"), left, right, float(dropout_p), False,
        _scoped_backend(backend), return_lse or _needs_grad(q, k, v),
    )  # fmt: skip
    return (out, lse) if return_lse else out


# ---- global patch -----------------------------------------------------------------------------

_original_sdpa = None


class _Patch(contextlib.AbstractContextManager):
    def __exit__(self, *exc):
        unpatch_sdpa()
        return False


def patch_sdpa() -> contextlib.AbstractContextManager:
    """Replace ``torch.nn.functional.scaled_dot_product_attention`` with :func:`sdpa` for the
    whole process (code that looks F.scaled_dot_product_attention up at call time: transformers,
    timm, diffusers, nn.MultiheadAttention). Idempotent. Also usable as
    ``with attnkit.torch.patch_sdpa(): ...``, which unpatches on exit."""
    global _original_sdpa
    if _original_sdpa is None:
        _original_sdpa = F.scaled_dot_product_attention
        F.scaled_dot_product_attention = sdpa
    return _Patch()


def unpatch_sdpa() -> None:
    """Restore PyTorch's own scaled_dot_product_attention."""
    global _original_sdpa
    if _original_sdpa is not None:
        F.scaled_dot_product_attention = _original_sdpa
        _original_sdpa = None


def original_sdpa():
    """PyTorch's own scaled_dot_product_attention, patched or not."""
    return _original_sdpa if _original_sdpa is not None else F.scaled_dot_product_attention


# ---- per-module backend -----------------------------------------------------------------------

_HOOKS_ATTR = "_attnkit_backend_hooks"


def set_attention_backend(module: torch.nn.Module, name: str) -> None:
    """Run every attnkit.torch call made inside ``module``'s forward (its submodules included,
    patched SDPA included) with backend ``name``, as diffusers' ``set_attention_backend``.
    A forward pre-hook opens the scope and a forward hook (always called, also when forward
    raises) closes it; an inner module's own setting wins. Replaces an earlier setting."""
    _ak.canonical_backend_name(name)  # unknown names fail here
    reset_attention_backend(module)

    def enter(_mod, _args):
        _ak._scope_stack().append(name)

    def leave(_mod, _args, _output):
        _ak._scope_stack().pop()

    pre = module.register_forward_pre_hook(enter)
    post = module.register_forward_hook(leave, always_call=True)
    setattr(module, _HOOKS_ATTR, (name, pre, post))


def reset_attention_backend(module: torch.nn.Module) -> None:
    """Undo set_attention_backend on this module."""
    hooks = getattr(module, _HOOKS_ATTR, None)
    if hooks is not None:
        hooks[1].remove()
        hooks[2].remove()
        delattr(module, _HOOKS_ATTR)


def get_attention_backend(module: torch.nn.Module) -> Optional[str]:
    """The name set on this module by set_attention_backend, or None."""
    hooks = getattr(module, _HOOKS_ATTR, None)
    return None if hooks is None else hooks[0]
