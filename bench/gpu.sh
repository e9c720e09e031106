#!/usr/bin/env bash
# The GPU benchmark in two stages: bench/gpu.sh [OUT_DIR]   (default: $OUT, else ./bench-gpu-out)
#
# 0. SITE (default /tmp/facefuse-gpu/site, what `bench/transfer.py install` fills) goes first on
#    PYTHONPATH where it exists, so its onnxruntime-gpu shadows a machine's CPU onnxruntime; the
#    CUDA libraries of the nvidia-* pip packages go on LD_LIBRARY_PATH.
# 1. Prints the execution providers this onnxruntime offers and stops (exit 3) with one clear
#    line when REQUIRE (default CUDAExecutionProvider; the tests set another) is not among them.
# 2. Stage 1, models only (onnxruntime-gpu, numpy, onnx): bench/gpu_models.py on PROVIDERS
#    (default cuda, plus tensorrt where its libraries are installed) -> OUT_DIR/models.json
#    (written after every model) and models.log, at most MODELS_TIMEOUT s.
#    MODELS_ARGS adds options (e.g. "--light --runs 3" for a quick look).
# 3. Stage 2, end to end, only where PyAV, OpenImageIO, OpenColorIO, platformdirs and
#    threadpoolctl import and FACEFUSE_TESTDATA is set: the SCENARIOS of bench/scenarios.toml
#    (default the 1080p one-face swap and GFPGAN stand-in runs; SCENARIOS=all: every cuda
#    scenario), each with the SWAP_WORKERS counts (default 1,2,4: pass 2's --swap-workers;
#    "" runs the provider's default once), with bench/run.py -> OUT_DIR/results.json and
#    e2e.log, at most E2E_TIMEOUT s. Otherwise one line says what is missing and the script
#    ends after stage 1 (exit 0).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
out="${1:-${OUT:-$PWD/bench-gpu-out}}"
python="${PYTHON:-python3}"
site="${SITE:-/tmp/facefuse-gpu/site}"
mkdir -p "$out"
export PYTHONPATH="$root/core${PYTHONPATH:+:$PYTHONPATH}"
if [ -d "$site" ]; then
  export PYTHONPATH="$site:$PYTHONPATH"
fi
nvlibs="$("$python" - <<'EOF' 2>/dev/null || true
import importlib.util, pathlib
spec = importlib.util.find_spec("nvidia")
roots = list(spec.submodule_search_locations) if spec and spec.submodule_search_locations else []
print(":".join(sorted({str(p.parent) for r in roots for p in pathlib.Path(r).glob("**/lib*.so*")})))
EOF
)"
if [ -n "$nvlibs" ]; then
  export LD_LIBRARY_PATH="$nvlibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi

providers="$("$python" -c 'import onnxruntime as o; print(",".join(o.get_available_providers()))')"
echo "onnxruntime $("$python" -c 'import onnxruntime as o; print(o.__version__, o.__file__)') offers: $providers" | tee "$out/providers.txt"
require="${REQUIRE:-CUDAExecutionProvider}"
case ",$providers," in
  *,"$require",*) ;;
  *)
    echo "$require is not offered by this onnxruntime build: no GPU figures (install onnxruntime-gpu); stopping." | tee -a "$out/providers.txt"
    exit 3
    ;;
esac
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$out/gpu.txt"
fi

# TensorRT only where its libraries are there (onnxruntime-gpu lists the provider either way);
# its engines are built last, inside the same time limit.
trt=""
if "$python" -c 'import tensorrt' 2>/dev/null || { command -v ldconfig >/dev/null && ldconfig -p | grep -q 'libnvinfer\.so'; }; then
  trt=",tensorrt"
fi
echo "stage 1: models only"
# shellcheck disable=SC2086  # MODELS_ARGS is a list of options
status=0
timeout "${MODELS_TIMEOUT:-240}" "$python" "$here/gpu_models.py" --providers "${PROVIDERS:-cuda$trt}" \
  --out "$out/models.json" --work "${WORK:-/tmp/facefuse-bench-work}/models" ${MODELS_ARGS:-} \
  2>&1 | tee "$out/models.log" || status=$?
if [ "$status" -ne 0 ]; then
  echo "stage 1 ended with exit $status (124: MODELS_TIMEOUT reached); going on" | tee -a "$out/models.log"
fi

missing="$("$python" -c '
import importlib.util
media = ("av", "OpenImageIO", "PyOpenColorIO", "platformdirs", "threadpoolctl")
print(" ".join(m for m in media if importlib.util.find_spec(m) is None))')"
why="${missing:+the media wheels are not installed (missing: $missing)}"
if [ -z "${FACEFUSE_TESTDATA:-}" ]; then
  why="${why:+$why; }FACEFUSE_TESTDATA is not set"
fi
if [ -n "$why" ]; then
  echo "stage 2 skipped: $why" | tee "$out/e2e.log"
  exit 0
fi
echo "stage 2: end to end"
scenarios="${SCENARIOS:-cuda-standin-1080p-1face-swap cuda-standin-1080p-1face-gfpgan}"
only=()
if [ "$scenarios" != "all" ]; then
  # shellcheck disable=SC2206  # a space-separated list of names
  only=(--only $scenarios)
fi
workers=()
if [ -n "${SWAP_WORKERS-1,2,4}" ]; then
  workers=(--swap-workers "${SWAP_WORKERS-1,2,4}")
fi
timeout "${E2E_TIMEOUT:-300}" "$python" "$here/run.py" --providers "${E2E_PROVIDERS:-cuda}" \
  --out "$out" --work "${WORK:-/tmp/facefuse-bench-work}" "${only[@]}" "${workers[@]}" 2>&1 \
  | tee "$out/e2e.log"
