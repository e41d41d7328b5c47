#!/bin/sh
# report_test.sh MODEL_TEST — SIMGPU_REPORT=1 prints each device's counters
# at exit; the fault test's numbers appear in it.
set -u
out=$(SIMGPU_REPORT=1 "$1" fault_3g_on_2g 2>&1 >/dev/null) || { echo "$out"; exit 1; }
echo "$out"
echo "$out" | grep -q 'simgpu: device 0: faults=1536 .*evictions=512 ' || exit 1
[ "$(echo "$out" | grep -c '^simgpu: device')" -eq 1 ] || exit 1
