#!/usr/bin/env bash
# test.sh [BUILD_DIR [MESON_OPTIONS...]] — installs what is missing,
# configures BUILD_DIR (default: build) and runs every test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
dir=${1:-build}
shift || true
[ -f "$dir/build.ninja" ] || meson setup "$dir" "$@"
meson test -C "$dir" --print-errorlogs
