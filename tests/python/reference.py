"""NumPy float64 reference of attention forward and backward (DESIGN.md §2 semantics), written
independently of attnkit's C++ oracle so the bindings are checked against a second reference.

Tensors are BSHD: q [B, Sq, Hq, D], k [B, Sk, Hkv, D], v [B, Sk, Hkv, Dv]; lse [B, Hq, Sq].
"""

from __future__ import annotations

import numpy as np


def _visible(sq, sk, causal, window):
    i = np.arange(sq)[:, None]
    j = np.arange(sk)[None, :]
    vis = np.ones((sq, sk), dtype=bool)
    if causal == "top_left":
        vis &= j <= i
    elif causal == "bottom_right":
        vis &= j <= i + sk - sq
    left, right = window
    if left >= 0:
        vis &= j >= i + sk - sq - left
    if right >= 0:
        vis &= j <= i + sk - sq + right
    return vis


def _scores(q, k, *, mask, causal, scale, window, softcap, alibi):
    """Returns (s [B,H,Sq,Sk] with -inf where invisible, capped-derivative factor or None)."""
    b, sq, hq, d = q.shape
    sk, hkv = k.shape[1], k.shape[2]
    kk = np.repeat(k, hq // hkv, axis=2)
    if scale is None:
        scale = 1.0 / np.sqrt(d)
    x = np.einsum("bihd,bjhd->bhij", q, kk) * scale
    dcap = None
    if softcap:
        t = np.tanh(x / softcap)
        dcap = 1.0 - t * t
        x = softcap * t
    if alibi is not None:
        slopes = np.asarray(alibi, dtype=np.float64)
        slopes = slopes.reshape((1, hq) if slopes.ndim == 1 else (b, hq))[:, :, None, None]
        i = np.arange(sq)[:, None]
        j = np.arange(sk)[None, :]
        x = x - slopes * np.abs(i + sk - sq - j)
    vis = np.broadcast_to(_visible(sq, sk, causal, window), x.shape).copy()
    if mask is not None:
        m = np.asarray(mask)
        if m.dtype == bool:
            vis &= np.broadcast_to(m, x.shape)
        else:
            x = x + np.broadcast_to(m.astype(np.float64), x.shape)  # -inf hides a key
    s = np.where(vis, x, -np.inf)
    return s, dcap, scale


def forward(q, k, v, *, mask=None, causal="none", scale=None, window=(-1, -1), softcap=0.0,
            alibi=None):  # fmt: skip
    """Returns (out [B, Sq, Hq, Dv] float64, lse [B, Hq, Sq] float64)."""
    q, k, v = (np.asarray(t, dtype=np.float64) for t in (q, k, v))
    hq, hkv = q.shape[2], k.shape[2]
    s, _, _ = _scores(q, k, mask=mask, causal=causal, scale=scale, window=window,
                      softcap=softcap, alibi=alibi)  # fmt: skip
    m = np.max(s, axis=-1, keepdims=True)
    m_safe = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(s - m_safe)
    z = e.sum(axis=-1, keepdims=True)
    with np.errstate(divide="ignore"):
        lse = np.where(z > 0, np.log(np.where(z > 0, z, 1.0)) + m_safe, -np.inf)[..., 0]
    p = np.where(z > 0, e / np.where(z > 0, z, 1.0), 0.0)
    vv = np.repeat(v, hq // hkv, axis=2)
    out = np.einsum("bhij,bjhd->bihd", p, vv)
    return out, lse


def backward(dout, q, k, v, *, mask=None, causal="none", scale=None, window=(-1, -1),
             softcap=0.0, alibi=None):  # fmt: skip
    """Returns (dq, dk, dv) float64 (no dropout)."""
    q, k, v, dout = (np.asarray(t, dtype=np.float64) for t in (q, k, v, dout))
    b, sq, hq, d = q.shape
    sk, hkv = k.shape[1], k.shape[2]
    g = hq // hkv
    s, dcap, scale = _scores(q, k, mask=mask, causal=causal, scale=scale, window=window,
                             softcap=softcap, alibi=alibi)  # fmt: skip
    m = np.max(s, axis=-1, keepdims=True)
    m_safe = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(s - m_safe)
    z = e.sum(axis=-1, keepdims=True)
    p = np.where(z > 0, e / np.where(z > 0, z, 1.0), 0.0)  # [B,H,Sq,Sk]
    kk = np.repeat(k, g, axis=2)
    vv = np.repeat(v, g, axis=2)
    dvv = np.einsum("bhij,bihd->bjhd", p, dout)
    dp = np.einsum("bihd,bjhd->bhij", dout, vv)
    ds = p * (dp - np.sum(p * dp, axis=-1, keepdims=True))
    if dcap is not None:
        ds = ds * dcap
    dq = np.einsum("bhij,bjhd->bihd", ds, kk) * scale
    dkk = np.einsum("bhij,bihd->bjhd", ds, q) * scale
    dk = dkk.reshape(b, sk, hkv, g, d).sum(axis=3)
    dv = dvv.reshape(b, sk, hkv, g, v.shape[3]).sum(axis=3)
    return dq, dk, dv


def rel_err(a, ref) -> float:
    a = np.asarray(a, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    den = np.linalg.norm(ref)
    return float(np.linalg.norm(a - ref) / (den if den > 0 else 1.0))
