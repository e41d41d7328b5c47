# inference_run.sh — sourced by the tests that run bench/shapes' `inference`
# worker under lmshim and read its report: `inference_run NAME RATIO STEPS
# WARMUP [VAR=VALUE...]` runs it with its trace at $dir/NAME.jsonl (the
# worker's output, stderr too, in $dir/NAME.out) and writes `lmshim report`
# of that trace to $dir/NAME.txt; `step NAME` prints its step in ms. The
# caller sets shapes, cli, lib (bench/shapes, lmshim, liblmshim.so) and
# dir, and defines fail MESSAGE.
inference_run() {
    local name=$1 ratio=$2 steps=$3 warmup=$4
    shift 4
    env SIMGPU_MEM=2048M SIMGPU_L2_MIB=0.625 LD_PRELOAD="$lib" LMS_LIMIT=1024M LMS_TRACE="$dir/$name.jsonl" "$@" \
        "$shapes" --worker --shape inference --ratio "$ratio" --budget-mib 1024 --steps "$steps" --warmup "$warmup" \
        --compute-scale 1 --seed 1 --alloc device >"$dir/$name.out" 2>&1 || fail "$name: the worker failed"
    grep -q '^RESULT ok=1' "$dir/$name.out" || { cat "$dir/$name.out"; fail "$name: no result"; }
    "$cli" report "$dir/$name.jsonl" >"$dir/$name.txt" 2>&1 || { cat "$dir/$name.txt"; fail "$name: report failed"; }
}
step() { sed -n 's/.*step_ms=\([0-9.]*\).*/\1/p' "$dir/$1.out"; }
