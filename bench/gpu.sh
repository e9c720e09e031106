#!/usr/bin/env bash
# The GPU benchmark in one go: bench/gpu.sh [OUT_DIR]   (default: $OUT, else ./bench-gpu-out)
#
# 1. Prints the execution providers this onnxruntime offers and stops (exit 3) with one clear
#    line when CUDA is not among them: nothing is measured on a CPU-only build.
# 2. Otherwise runs the CUDA scenarios of bench/scenarios.toml with bench/run.py, writing
#    OUT_DIR/results.json (plus one JSON per scenario) and the log OUT_DIR/gpu.log.
# Needs FACEFUSE_TESTDATA (the test data folder) and the onnx package to build the stand-ins.
# REQUIRE names the provider to insist on (default CUDAExecutionProvider; the tests set another).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
out="${1:-${OUT:-$PWD/bench-gpu-out}}"
python="${PYTHON:-python3}"
mkdir -p "$out"
export PYTHONPATH="$root/core${PYTHONPATH:+:$PYTHONPATH}"

providers="$("$python" -c 'import onnxruntime as o; print(",".join(o.get_available_providers()))')"
echo "onnxruntime $("$python" -c 'import onnxruntime as o; print(o.__version__)') offers: $providers" | tee "$out/providers.txt"
require="${REQUIRE:-CUDAExecutionProvider}"
case ",$providers," in
  *,"$require",*) ;;
  *)
    echo "$require is not offered by this onnxruntime build: no GPU figures (install onnxruntime-gpu); stopping." | tee -a "$out/providers.txt"
    exit 3
    ;;
esac
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$out/gpu.txt"
"$python" "$here/run.py" --providers cuda --out "$out" --work "${WORK:-/tmp/facefuse-bench-work}" 2>&1 | tee "$out/gpu.log"
