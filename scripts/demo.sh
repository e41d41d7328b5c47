#!/usr/bin/env bash
# demo.sh — the main job: builds everything and shows lmshim at work on the
# simulated GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
[ -f build/build.ninja ] || meson setup build >/dev/null
meson compile -C build >/dev/null
echo "== a CUDA runtime program over the simulated GPU (build/sim), model counters at exit"
SIMGPU_REPORT=1 LD_LIBRARY_PATH=build/sim build/tests/sim/runtime_client vector_math
echo "ok: results checked against the CPU"
