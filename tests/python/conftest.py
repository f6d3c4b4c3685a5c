"""pytest setup: import attnkit from an installed wheel (`pip install .`) or, failing that, from
the source tree's python/ (a CMake build with -DATTNKIT_BUILD_PYTHON=ON puts the module there)."""

import os
import sys

try:
    import attnkit  # noqa: F401
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
    import attnkit  # noqa: F401

import pytest


def cpu_backends():
    """Canonical names of the CPU backends built into this attnkit."""
    return [
        b["name"]
        for b in attnkit.list_backends()
        if b["built"] and b["capabilities"]["device"] == "cpu"
    ]


@pytest.fixture(autouse=True)
def _clean_selection():
    """Every test starts and ends with no process default and no open scope."""
    attnkit.set_default_backend(None)
    yield
    attnkit.set_default_backend(None)
    assert attnkit.current_backend_scope() is None, "a test leaked a backend scope"
