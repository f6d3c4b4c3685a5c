"""Exceptions raised by attnkit: one class per attnkit::ErrorCode, all under AttnkitError.

The C++ message is kept verbatim ("k.shape[3] = 96, expected 128 (= q.shape[3])"); ``.code``
names the ErrorCode ("invalid_argument", "unsupported", ...).
"""

from __future__ import annotations


class AttnkitError(RuntimeError):
    """Any error reported by attnkit. ``code`` is the attnkit::ErrorCode name."""

    code = "internal"

    def __init__(self, message: str, code: str | None = None):
        super().__init__(message)
        if code is not None:
            self.code = code


class InvalidArgumentError(AttnkitError, ValueError):
    """Bad input: shapes, dtypes, devices, strides or options (ErrorCode::kInvalidArgument)."""

    code = "invalid_argument"


class UnsupportedError(AttnkitError):
    """A valid call that the chosen backend cannot run; the message lists every reason."""

    code = "unsupported"


class NotBuiltError(AttnkitError):
    """A known backend name that is not compiled into this build."""

    code = "not_built"


class UnknownBackendError(AttnkitError, ValueError):
    """A backend name that is neither a canonical name nor an alias."""

    code = "unknown_backend"


class TooLargeError(AttnkitError):
    """The call exceeds a memory cap (e.g. the math oracle's score matrix)."""

    code = "too_large"


class CudaError(AttnkitError):
    """A CUDA runtime, driver or library call failed; the message carries CUDA's."""

    code = "cuda_error"


class NumericalError(AttnkitError):
    """ATTNKIT_CHECKS=1 found NaN or Inf in an input or output."""

    code = "numerical_error"


class InternalError(AttnkitError):
    """A bug in attnkit."""

    code = "internal"


_BY_CODE = {
    cls.code: cls
    for cls in (
        InvalidArgumentError,
        UnsupportedError,
        NotBuiltError,
        UnknownBackendError,
        TooLargeError,
        CudaError,
        NumericalError,
        InternalError,
    )
}


def from_code(code: str, message: str) -> AttnkitError:
    """The exception instance for an attnkit::Error (called by the C++ exception translator)."""
    return _BY_CODE.get(code, AttnkitError)(message, code)
