#!/bin/sh
# config_test.sh DRIVER_TEST — bad SIMGPU_* values print exactly one line
# naming the variable and the value, and the simulator keeps its default.
set -u
prog=$1
err=$(mktemp)
trap 'rm -f "$err"' EXIT
fail() { echo "config_test: $*" >&2; cat "$err" >&2; exit 1; }

# SIMGPU_MEM=banana: default 4 GiB kept (device_query checks 4 GiB).
SIMGPU_MEM=banana "$prog" device_query 2>"$err" || fail "SIMGPU_MEM=banana broke the program"
[ "$(wc -l <"$err")" -eq 1 ] || fail "expected one line for SIMGPU_MEM=banana"
grep -q 'SIMGPU_MEM=banana' "$err" || fail "the line does not name SIMGPU_MEM=banana"

# SIMGPU_DEVICES=0: one line, then cuInit answers CUDA_ERROR_NO_DEVICE.
SIMGPU_DEVICES=0 "$prog" no_devices 2>"$err" || fail "SIMGPU_DEVICES=0 did not give NO_DEVICE"
[ "$(wc -l <"$err")" -eq 1 ] || fail "expected one line for SIMGPU_DEVICES=0"

# Garbage device count and link speed: defaults kept, one line each.
SIMGPU_DEVICES=many SIMGPU_LINK_GBPS=-3 "$prog" device_query 2>"$err" ||
    fail "bad SIMGPU_DEVICES/SIMGPU_LINK_GBPS broke the program"
[ "$(wc -l <"$err")" -eq 2 ] || fail "expected two lines"
grep -q 'SIMGPU_DEVICES=many' "$err" || fail "SIMGPU_DEVICES not named"
grep -q 'SIMGPU_LINK_GBPS=-3' "$err" || fail "SIMGPU_LINK_GBPS not named"
exit 0
