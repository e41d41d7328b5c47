#!/bin/bash
# record_entries.sh — regenerates driver_entries.txt: every driver entry
# point (name, CUDA version, cuGetProcAddress flags) that the toolkit's
# libcudart.so.13, libcudart_static.a, and the cudart copies inside cuBLAS,
# cuDNN and NCCL ask cuGetProcAddress for. They run in front of recorder.c,
# a fake libcuda.so.1 that logs each query and answers with a stub; with no
# device they resolve their whole table and stop.
#
#   tests/conformance/record_entries.sh [CUDA_HOME]   (default /usr/local/cuda)
#
# Needs gcc and the toolkit's libraries; no GPU, no driver. A library the
# toolkit lacks is skipped with a note. Queries with an empty name (cudart
# probes one) are left out of the list.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cuda=${1:-/usr/local/cuda}
lib=$cuda/lib64
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

gcc -shared -fPIC -fvisibility=hidden -O1 -I"$cuda/include" -Wl,-soname,libcuda.so.1 \
    -o "$work/libcuda.so.1" "$here/recorder.c"
gcc -I"$cuda/include" -o "$work/cudart" "$here/progs/cudart_count.c" \
    -L"$lib" -lcudart -Wl,-rpath,"$lib"
gcc -I"$cuda/include" -o "$work/cudart_static" "$here/progs/cudart_count.c" \
    -L"$lib" -lcudart_static -ldl -lpthread -lrt
gcc -o "$work/init_libs" "$here/progs/init_libs.c" -ldl

run() {   # run NAME PROGRAM [ARGS]: its queries go to $work/NAME.log
    local name=$1; shift
    REC_LOG="$work/$name.log" LD_LIBRARY_PATH="$work:$lib" timeout 300 "$@" >&2 || true
    if [ -s "$work/$name.log" ]; then
        echo "$name: $(grep -c . "$work/$name.log") queries" >&2
    else
        echo "$name: no queries recorded (library missing?)" >&2
        rm -f "$work/$name.log"
    fi
}
run cudart "$work/cudart"
run cudart_static "$work/cudart_static"
for l in cublas cudnn nccl; do run "$l" "$work/init_libs" "$l"; done

# name version flags asked-by (comma-separated), sorted by name.
{
    echo "# Driver entry points asked for through cuGetProcAddress, one ABI query a line:"
    echo "# name  CUDA version  flags (0 default, 1 legacy stream, 2 per-thread stream)  asked by"
    echo "# Regenerate with tests/conformance/record_entries.sh ($(basename "$(readlink -f "$lib/libcudart.so.13")"))."
    for f in "$work"/*.log; do
        n=$(basename "$f" .log)
        awk -v n="$n" 'NF == 3 && $1 != "" { print $1, $2, $3, n }' "$f"
    done | sort -k1,1 -k2,2n -k3,3n -k4,4 |
        awk '{ k = $1 " " $2 " " $3; if (k == last) { by = by "," $4 } else { if (last != "") print last, by; last = k; by = $4 } }
             END { if (last != "") print last, by }'
} > "$here/driver_entries.txt"
echo "wrote $here/driver_entries.txt: $(grep -vc '^#' "$here/driver_entries.txt") entries" >&2
