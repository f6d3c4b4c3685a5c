#!/usr/bin/env bash
# Unpacks cudnn-frontend's C++ headers (header-only, MIT) from the nvidia-cudnn-frontend wheel into
# build-deps/cudnn_frontend/include, where src/backends/cudnn/CMakeLists.txt finds them
# (build-deps/ is git-ignored). The wheel is pinned; its include/ tree is Python-independent.
#
#   src/backends/cudnn/get_frontend.sh              # downloads the wheel with pip (needs PyPI)
#   src/backends/cudnn/get_frontend.sh WHEEL.whl    # offline: unpack a wheel already here
set -euo pipefail
VERSION=1.32.0
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
DEST="$ROOT/build-deps/cudnn_frontend"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
if [[ $# -ge 1 ]]; then
  WHEEL=$1
else
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.11 \
    --platform manylinux_2_28_x86_64 -d "$TMP" "nvidia-cudnn-frontend==$VERSION"
  WHEEL=$(ls "$TMP"/nvidia_cudnn_frontend-*.whl)
fi
python3 - "$WHEEL" "$DEST" <<'PY'
import sys, zipfile, pathlib, shutil
wheel, dest = sys.argv[1], pathlib.Path(sys.argv[2])
shutil.rmtree(dest / "include", ignore_errors=True)
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist() if n.startswith("include/") and not n.endswith("/")]
    if not any(n == "include/cudnn_frontend.h" for n in names):
        sys.exit(f"{wheel}: no include/cudnn_frontend.h in this wheel")
    for n in names:
        z.extract(n, dest)
print(f"cudnn-frontend headers: {len(names)} files in {dest / 'include'}")
PY
