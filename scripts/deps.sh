#!/usr/bin/env bash
# deps.sh — installs the Debian packages the build and tests need, if missing.
set -euo pipefail
need=()
# build: meson ninja-build pkg-config gcc libunwind-dev libdw-dev (elfutils:
# the report's symbolization); tests: clang and
# libclang-rt-14-dev (libFuzzer), chromium (renders the SVG timeline),
# python3 (checks PNG and JSON outputs).
for pkg in meson ninja-build pkg-config gcc libunwind-dev libdw-dev clang libclang-rt-14-dev chromium python3; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
[ ${#need[@]} -eq 0 ] && exit 0
SUDO=
[ "$(id -u)" -ne 0 ] && SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq "${need[@]}" >/dev/null
