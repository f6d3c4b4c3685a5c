"""ctypes bindings of attnkit's C ABI (include/attnkit/c_api.h) for torch tensors, shared by the
CPU (bench/cpu/) and GPU (bench/peers.py, bench/gpu/) benchmarks.

Tensors are passed as views (pointer, dtype, shape, element strides): nothing is copied. Logical
shapes follow attnkit: q [B, Sq, Hq, D], k/v [B, Sk, Hkv, D], out [B, Sq, Hq, Dv], lse f32
[B, Hq, Sq]. A torch tensor laid out [B, H, S, D] is described by permuted strides, not copied.
"""
import ctypes
import os

DTYPE_CODES = {"float32": 0, "float16": 1, "bfloat16": 2, "int32": 6, "bool": 7}
CAUSAL = {None: 0, False: 0, "none": 0, "top_left": 1, True: 1, "bottom_right": 2}


class Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int32),
                ("device_type", ctypes.c_int32), ("device_index", ctypes.c_int32),
                ("rank", ctypes.c_int32), ("shape", ctypes.c_int64 * 4),
                ("stride", ctypes.c_int64 * 4)]


class Options(ctypes.Structure):
    _fields_ = [("scale", ctypes.c_double), ("softcap", ctypes.c_double),
                ("causal", ctypes.c_int32), ("window_left", ctypes.c_int64),
                ("window_right", ctypes.c_int64), ("dropout_p", ctypes.c_double),
                ("seed", ctypes.c_uint64), ("offset", ctypes.c_uint64),
                ("deterministic", ctypes.c_int32), ("stream", ctypes.c_void_p),
                ("backend", ctypes.c_char_p), ("mask", ctypes.POINTER(Tensor)),
                ("alibi_slopes", ctypes.POINTER(Tensor)), ("cu_seqlens_q", ctypes.POINTER(Tensor)),
                ("cu_seqlens_k", ctypes.POINTER(Tensor)), ("max_seqlen_q", ctypes.c_int64),
                ("max_seqlen_k", ctypes.c_int64)]


def tensor_of(t, dims=None):
    """attnkit_tensor for torch tensor t. dims: permutation giving the logical order (e.g. a
    [B, H, S, D] tensor viewed as logical [B, S, H, D] uses dims=(0, 2, 1, 3))."""
    dims = dims or tuple(range(t.dim()))
    x = Tensor()
    x.data = t.data_ptr()
    name = str(t.dtype).replace("torch.", "")
    if name not in DTYPE_CODES:
        raise ValueError(f"dtype {t.dtype} has no attnkit code")
    x.dtype = DTYPE_CODES[name]
    x.device_type = 1 if t.is_cuda else 0
    x.device_index = (t.device.index or 0) if t.is_cuda else 0
    x.rank = len(dims)
    for i, d in enumerate(dims):
        x.shape[i] = t.shape[d]
        x.stride[i] = t.stride(d)
    return x


class AttnkitC:
    """Loaded libattnkit_c.so."""

    def __init__(self, path):
        self.lib = ctypes.CDLL(os.path.abspath(path))
        L = self.lib
        L.attnkit_options_init.argtypes = [ctypes.POINTER(Options)]
        P = ctypes.POINTER(Tensor)
        L.attnkit_forward.argtypes = [P, P, P, P, P, ctypes.POINTER(Options), ctypes.c_char_p,
                                      ctypes.c_size_t]
        L.attnkit_forward.restype = ctypes.c_int
        L.attnkit_backward.argtypes = [P] * 9 + [ctypes.POINTER(Options), ctypes.c_char_p,
                                                 ctypes.c_size_t]
        L.attnkit_backward.restype = ctypes.c_int
        L.attnkit_version.restype = ctypes.c_char_p
        L.attnkit_last_backend.restype = ctypes.c_char_p
        L.attnkit_set_num_threads.argtypes = [ctypes.c_int]
        self.err = ctypes.create_string_buffer(4096)

    def version(self):
        return self.lib.attnkit_version().decode()

    def last_backend(self):
        """Canonical name of the backend the last successful call on this thread ran."""
        return self.lib.attnkit_last_backend().decode()

    def set_num_threads(self, n):
        self._check(self.lib.attnkit_set_num_threads(n), "set_num_threads")

    def options(self, backend, causal=None, stream=None, deterministic=False):
        o = Options()
        self.lib.attnkit_options_init(ctypes.byref(o))
        o.backend = backend.encode() if backend else None
        o.causal = CAUSAL[causal]
        o.stream = stream
        o.deterministic = 1 if deterministic else 0
        return o

    def _check(self, rc, what):
        if rc != 0:
            raise RuntimeError(f"attnkit_{what} failed (code {rc}): {self.err.value.decode()}")

    def forward(self, q, k, v, out, lse, opts):
        """q/k/v/out/lse: prepared Tensor structs (see tensor_of); opts: Options."""
        rc = self.lib.attnkit_forward(ctypes.byref(q), ctypes.byref(k), ctypes.byref(v),
                                      ctypes.byref(out), ctypes.byref(lse) if lse else None,
                                      ctypes.byref(opts), self.err, len(self.err))
        self._check(rc, "forward")

    def backward(self, dout, q, k, v, out, lse, dq, dk, dv, opts):
        args = [ctypes.byref(x) for x in (dout, q, k, v, out, lse, dq, dk, dv)]
        rc = self.lib.attnkit_backward(*args, ctypes.byref(opts), self.err, len(self.err))
        self._check(rc, "backward")
