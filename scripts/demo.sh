#!/usr/bin/env bash
# demo.sh — the main job: builds lmshim and shows it at work on the simulated
# GPU. A program whose working set (2 GiB) is twice the device (1 GiB) runs
# out of memory on its own, then runs to the end under `lmshim run`, with
# every result checked against the CPU and lmshim's summary printed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
[ -f build/build.ninja ] || meson setup build >/dev/null
meson compile -C build >/dev/null

echo "== without lmshim: SIMGPU_MEM=1G build/bench/oversub_demo"
if SIMGPU_MEM=1G LD_LIBRARY_PATH=build/sim build/bench/oversub_demo; then
    echo "demo: expected an out-of-memory failure without lmshim" >&2
    exit 1
fi
echo
echo "== with lmshim: build/cli/lmshim run --sim --sim-mem 1G --stats -- build/bench/oversub_demo"
build/cli/lmshim run --sim --sim-mem 1G --stats -- build/bench/oversub_demo 2>&1
