#!/usr/bin/env bash
# One command on the GPU machine: configure + build everything, GPU tests, compute-sanitizer
# (memcheck + racecheck on a small gtest subset), the peer benchmark; JSON + logs into OUTDIR and
# a short summary table printed LAST (docs/gpu_workflow.md).
#
#   tools/gpu/run_all.sh OUTDIR [--quick] [--backends LIST] [--no-tests] [--no-sanitizer]
#                               [--no-bench] [--bench-args "ARGS"] [--python]
#
#   --python         also build the Python module and run pytest tests/python (GPU tests
#                    against PyTorch's SDPA on real model code, torch.compile) -> pytest.log
#   --quick          head dims 64;128 only, a reduced benchmark (bench/peers.py --quick)
#   --backends LIST  GPU backends to build, test and benchmark, comma-separated (default:
#                    cuda_math,flash,flash3,cudnn; math, the oracle, is always built)
# Environment:
#   ATTNKIT_SANITIZER_FILTER  gtest filter for the sanitizer runs
#                             (default: a handful of small cases, see below)
#   ATTNKIT_GPU_BUILD_DIR     build directory (default build-gpu)
#   ATTNKIT_COMMIT            commit id recorded in bench.json when the tree has no .git (the lent
#                             machine gets a copy of the working tree without it)
#   ATTNKIT_TEST_TIMEOUT / ATTNKIT_SANITIZER_TIMEOUT / ATTNKIT_BENCH_TIMEOUT  seconds per phase
# At most 8 files are written to OUTDIR (the lent machine returns no more): build.log (with
# `attnkit info` and its --markdown feature matrix at the end), ctest.log, pytest.log,
# sanitizer.log, bench.log, bench.json, bench.md, summary.txt.
set -uo pipefail

usage() { sed -n '2,20p' "$0"; exit 2; }
[[ $# -ge 1 ]] || usage
OUTDIR=$1
shift
QUICK=0
BACKENDS="cuda_math,flash,flash3,cudnn"
DO_TESTS=1 DO_SAN=1 DO_BENCH=1 DO_PY=0
BENCH_ARGS=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) QUICK=1 ;;
    --backends) BACKENDS=$2; shift ;;
    --no-tests) DO_TESTS=0 ;;
    --no-sanitizer) DO_SAN=0 ;;
    --no-bench) DO_BENCH=0 ;;
    --python) DO_PY=1 ;;
    --bench-args) BENCH_ARGS=$2; shift ;;
    -h|--help) usage ;;
    *) echo "run_all.sh: unknown argument '$1'" >&2; usage ;;
  esac
  shift
done

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
mkdir -p "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
BUILD=${ATTNKIT_GPU_BUILD_DIR:-build-gpu}
JOBS=$(nproc)
SUMMARY="$OUTDIR/summary.txt"
: >"$SUMMARY"
note() { printf '%-12s %s\n' "$1" "$2" | tee -a "$SUMMARY" >/dev/null; }
phase() { echo "==== [$(date -u +%H:%M:%S)] $*"; }

HEAD_DIMS="64;96;128;192;256"
[[ $QUICK == 1 ]] && HEAD_DIMS="64;128"
CMAKE_BACKENDS="math;${BACKENDS//,/;}"

# ---- environment facts (first lines of build.log) ------------------------------------------
{
  phase "environment"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 || true
  nvcc --version | tail -1
  cmake --version | head -1
  python3 -c 'import torch; print("torch", torch.__version__, "cudnn", torch.backends.cudnn.version())' 2>&1 || true
  git rev-parse --short HEAD 2>/dev/null || true
} >"$OUTDIR/build.log" 2>&1

# ---- configure + build -----------------------------------------------------------------------
phase "configure + build ($CMAKE_BACKENDS; head dims $HEAD_DIMS; -j$JOBS)"
BUILD_OK=0
if cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTNKIT_CUDA=ON \
     -DATTNKIT_CUDA_ARCHS="80;90a" -DATTNKIT_HEAD_DIMS="$HEAD_DIMS" \
     -DATTNKIT_BACKENDS="$CMAKE_BACKENDS" -DATTNKIT_BUILD_PYTHON=$([[ $DO_PY == 1 ]] && echo ON || echo OFF) \
     -DPython_EXECUTABLE="$(command -v python3)" >>"$OUTDIR/build.log" 2>&1 &&
   cmake --build "$BUILD" -j "$JOBS" >>"$OUTDIR/build.log" 2>&1; then
  BUILD_OK=1
  note build "ok ($CMAKE_BACKENDS)"
else
  # A failed full build still leaves whatever targets compiled; keep going with those.
  note build "FAILED (see build.log)"
  # Which objects failed (names the backend at fault), then the first compiler errors.
  grep -E '^FAILED: ' "$OUTDIR/build.log" | head -8 | cut -c1-160 | sed 's/^/    /' >>"$SUMMARY"
  grep -E "error" "$OUTDIR/build.log" | head -20
  cmake --build "$BUILD" -j "$JOBS" -- -k 0 >>"$OUTDIR/build.log" 2>&1 || true
fi
phase "build done (ok=$BUILD_OK)"
if [[ -x "$BUILD/tools/cli/attnkit" ]]; then
  { echo "==== attnkit info"; "$BUILD/tools/cli/attnkit" info;
    echo "==== attnkit info --markdown"; "$BUILD/tools/cli/attnkit" info --markdown; } >>"$OUTDIR/build.log" 2>&1
fi

# ---- GPU tests (ctest runs every test binary; one GPU, so serially) -------------------------
if [[ $DO_TESTS == 1 ]]; then
  # GPU tests only: the core tests and one binary per GPU backend asked for.
  TEST_RE="^test_(core|${BACKENDS//,/|})\$"
  phase "ctest -R $TEST_RE"
  if timeout "${ATTNKIT_TEST_TIMEOUT:-900}" ctest --test-dir "$BUILD" -V -R "$TEST_RE" \
       >"$OUTDIR/ctest.log" 2>&1; then
    note ctest "ok: $(grep -E 'tests passed' "$OUTDIR/ctest.log" | tail -1)"
  else
    note ctest "FAILED: $(grep -E 'tests passed|tests failed' "$OUTDIR/ctest.log" | tail -1)"
    grep -E '^\s*[0-9]+ - |\(Failed\)|Timeout' "$OUTDIR/ctest.log" | head -10 | sed 's/^/    /' >>"$SUMMARY"
  fi
  # Per binary: how many gtest cases ran / passed / skipped (ctest -V shows each binary's output).
  grep -E '^[0-9]+: \[(==========|  PASSED  |  SKIPPED |  FAILED  )\] [0-9]+ test' "$OUTDIR/ctest.log" |
    sed 's/^/    /' >>"$SUMMARY"
  # gtest's own skip lines (visible skips) and failures, one line each, for the summary.
  grep -cE '^[0-9]+: \[  SKIPPED \]' "$OUTDIR/ctest.log" | sed 's/^/    gtest skipped lines: /' >>"$SUMMARY"
  grep -E '^[0-9]+: \[  FAILED  \]' "$OUTDIR/ctest.log" | sort -u | head -15 | sed 's/^/    /' >>"$SUMMARY"
fi

# ---- Python: pytest (CPU tests and the GPU tests against PyTorch SDPA / torch.compile) --------
if [[ $DO_PY == 1 ]]; then
  phase "pytest tests/python"
  if PYTHONPATH="$ROOT/python" timeout "${ATTNKIT_PYTEST_TIMEOUT:-600}" python3 -m pytest tests/python \
       -q -rs >"$OUTDIR/pytest.log" 2>&1; then
    note pytest "ok: $(tail -1 "$OUTDIR/pytest.log")"
  else
    note pytest "FAILED: $(tail -1 "$OUTDIR/pytest.log")"
    grep -E '^FAILED|^ERROR' "$OUTDIR/pytest.log" | head -10 | sed 's/^/    /' >>"$SUMMARY"
  fi
fi

# ---- compute-sanitizer: memcheck + racecheck on a small subset --------------------------------
if [[ $DO_SAN == 1 ]]; then
  phase "compute-sanitizer"
  FILTER=${ATTNKIT_SANITIZER_FILTER:-"*Hostile*bf16_bshd_b2_sq31_sk67_h2x1_d64_causalBR_fwd:*Hostile*bf16_bshd_b2_sq13_sk13_h2x1_d64_causalTL_bwd:*Hostile*plain*f32*:*Hostile*varlen_empty*bf16*:*Hostile*causal_br_sq61*f16*:*Hostile*gqa2*f32*:CudaWorkspace*:CudaDtype*:*len1*"}
  : >"$OUTDIR/sanitizer.log"
  SAN_FAIL=0
  for b in ${BACKENDS//,/ }; do
    bin="$BUILD/tests/test_$b"
    [[ -x $bin ]] || { echo "(no $bin)" >>"$OUTDIR/sanitizer.log"; continue; }
    for tool in memcheck racecheck; do
      echo "==== $tool $bin --gtest_filter=$FILTER" >>"$OUTDIR/sanitizer.log"
      rc=0
      timeout "${ATTNKIT_SANITIZER_TIMEOUT:-300}" compute-sanitizer --tool "$tool" \
        --error-exitcode 99 "$bin" --gtest_filter="$FILTER" --gtest_brief=1 \
        >>"$OUTDIR/sanitizer.log" 2>&1 || rc=$?
      if [[ $rc == 0 ]]; then
        note "$tool" "ok: test_$b: $(grep -E '^\[  PASSED  \]' "$OUTDIR/sanitizer.log" | tail -1)"
      else
        SAN_FAIL=1
        note "$tool" "FAILED: test_$b (exit $rc; see sanitizer.log)"
      fi
    done
  done
  grep -E 'ERROR SUMMARY' "$OUTDIR/sanitizer.log" | sort | uniq -c | sed 's/^/    /' >>"$SUMMARY"
fi

# ---- peer benchmark ---------------------------------------------------------------------------
if [[ $DO_BENCH == 1 ]]; then
  phase "bench/peers.py"
  QB=""
  [[ $QUICK == 1 ]] && QB="--quick"
  # shellcheck disable=SC2086
  if PYTHONUNBUFFERED=1 timeout "${ATTNKIT_BENCH_TIMEOUT:-1800}" python3 bench/peers.py \
       --lib "$BUILD/libattnkit_c.so" --backends "$BACKENDS" --json "$OUTDIR/bench.json" \
       --md "$OUTDIR/bench.md" --commit "${ATTNKIT_COMMIT:-}" \
       $QB $BENCH_ARGS 2>&1 | tee "$OUTDIR/bench.log" | grep -E '^\[|^ *(impl|attnkit|torch)' | tail -n 400 >/dev/null; then
    note bench "ok (bench.json, bench.log)"
  else
    note bench "FAILED or cut short (see bench.log; bench.json holds the rows measured so far)"
  fi
fi

# ---- summary LAST -----------------------------------------------------------------------------
echo
echo "================ summary ($(date -u +%FT%TZ), $OUTDIR) ================"
cat "$SUMMARY"
if [[ -s "$OUTDIR/bench.json" ]]; then
  python3 bench/peers.py --summarize "$OUTDIR/bench.json" 2>&1 | tail -n 60
fi
