#!/bin/bash
# svg_render_test.sh LMSHIM GOLDEN — renders the report's SVG timeline in
# headless Chromium and checks the picture is not blank: enough pixels that
# are neither white nor one flat color. Skipped (77) without Chromium.
set -u
lmshim=$1 golden=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
LMS_LIMIT=1G LMS_FRAC=0.5 LMS_THRESHOLD=64M LMS_POLICY=lru SIMGPU_MEM=4G LMS_TRACE="$tmp/t.jsonl" "$golden" >/dev/null || exit 1
"$lmshim" report "$tmp/t.jsonl" --svg "$tmp/t.svg" >/dev/null || exit 1
"$(dirname "$0")/render_svg.sh" "$tmp/t.svg" 900 320 2000 4
