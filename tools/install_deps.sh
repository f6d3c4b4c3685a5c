#!/usr/bin/env bash
# Installs what attnkit needs to build and test, only where it is missing (so it is a no-op on a
# prepared machine and on the offline GPU machine): Debian packages through apt-get, Python
# packages through pip. Optional pieces (DLPack header) only warn when they cannot be had.
set -uo pipefail

need_apt=()
command -v cmake >/dev/null || need_apt+=(cmake)
command -v ninja >/dev/null || need_apt+=(ninja-build)
command -v g++ >/dev/null || need_apt+=(g++)
[[ -f /usr/include/gtest/gtest.h || -f /usr/local/include/gtest/gtest.h ]] || need_apt+=(libgtest-dev)
[[ -f /usr/include/gmock/gmock.h || -f /usr/local/include/gmock/gmock.h ]] || need_apt+=(libgmock-dev)
opt_apt=()
[[ -f /usr/include/dlpack/dlpack.h ]] || opt_apt+=(libdlpack-dev)

if ((${#need_apt[@]} + ${#opt_apt[@]})); then
  if command -v apt-get >/dev/null; then
    SUDO=""
    [[ $(id -u) -ne 0 ]] && SUDO="sudo"
    echo "[deps] apt-get install ${need_apt[*]} ${opt_apt[*]}"
    $SUDO apt-get update -qq >/dev/null 2>&1 || echo "[deps] apt-get update failed (offline?)"
    if ((${#need_apt[@]})); then
      $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null ||
        { echo "[deps] could not install required packages: ${need_apt[*]}"; exit 1; }
    fi
    if ((${#opt_apt[@]})); then
      $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${opt_apt[@]}" >/dev/null ||
        echo "[deps] optional packages unavailable: ${opt_apt[*]} (DLPack import stays off)"
    fi
  else
    ((${#need_apt[@]})) && { echo "[deps] missing ${need_apt[*]} and no apt-get"; exit 1; }
  fi
fi

# cudnn-frontend (header-only, from the nvidia-cudnn-frontend wheel) for the cudnn backend; without
# it (offline) that backend reports "not built" and everything else still builds.
if [[ ! -f build-deps/cudnn_frontend/include/cudnn_frontend.h ]]; then
  src/backends/cudnn/get_frontend.sh ||
    echo "[deps] cudnn-frontend unavailable: the cudnn backend will not be built"
fi

# Python: the module (nanobind, scikit-build-core) and its tests (numpy, pytest).
PY=${PYTHON:-python3}
need_pip=()
for mod in nanobind:nanobind scikit_build_core:scikit-build-core numpy:numpy pytest:pytest; do
  "$PY" -c "import ${mod%%:*}" 2>/dev/null || need_pip+=("${mod##*:}")
done
if ((${#need_pip[@]})); then
  echo "[deps] pip install ${need_pip[*]}"
  "$PY" -m pip install -q "${need_pip[@]}" ||
    echo "[deps] pip install failed: the Python tests will be skipped"
fi
# torch (optional): the Python tests compare attnkit.torch with PyTorch's own SDPA on the CPU; they
# skip cleanly without it.
if ! "$PY" -c "import torch" 2>/dev/null; then
  echo "[deps] pip install torch (optional)"
  "$PY" -m pip install -q torch || echo "[deps] torch unavailable: the torch tests will be skipped"
fi
exit 0
