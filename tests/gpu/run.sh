#!/usr/bin/env bash
# run.sh [--dry] [BUILD_DIR] — the one-call check on a machine with an
# NVIDIA GPU (sm_90), in under eight minutes on an H200.
#
# Build: lmshim is the meson build CI uses, never a second list of sources.
# With BUILD_DIR (e.g. a build directory carried to the GPU machine) that
# build is used as it is; without, build-gpu/ is configured (release) and
# built with meson. The build must hold liblmshim.so exporting every hook of
# preload/hooks.def, the lmshim command, the simulated GPU and the demo; the
# CUDA programs (tests/gpu/oversub, tests/gpu/prefetch_fresh, bench/convnet)
# are built by meson when nvcc (and cuDNN) are there.
#
# Cases, each under its own timeout, each with and without lmshim (but one):
#   static-cudart  oversub.cu (nvcc's static cudart), 8 x 512 MiB under LMS_LIMIT=2G, checked on the CPU
#   fresh-prefetch prefetch_fresh.cu, no lmshim: the first prefetches of 2 x 2 GiB of managed memory
#                  nobody touched (the table's "with" column) and of 2 x 2 GiB the host wrote
#                  ("without"), in s; its ratio is fresh over touched
#   torch-step     torch_step.py, ~6 GiB under LMS_LIMIT=3G, losses equal to the run without lmshim
#   torch-graph    torch_graph.py, the step captured in a CUDA graph and replayed with managed chunks alive
#   jax-step       jax_step.py under `lmshim run`, losses equal
#   cupy-pool      cupy_pool.py, CuPy's memory pool, 8 x 512 MiB under LMS_LIMIT=2G
#   torch-ipc      torch_ipc.py, torch.multiprocessing shares a CUDA tensor with a child
#   convnet        bench/convnet (cuDNN) under half its footprint, each policy
# A case whose framework is missing is "skipped"; a case that could not end
# (all its timeouts) within the time budget (GPU_CHECK_BUDGET_S, default
# 460 s) is skipped, so the whole script ends within it.
#
# --dry: what needs no GPU, so that this script cannot rot: the build check,
# the Python scripts compiled, compare.py's self-test, the static-cudart case's
# flow over the simulated GPU (bench/oversub_demo), and the table. Nothing is
# compiled with nvcc.
#
# Writes table.txt and every case's raw stdout/stderr under $OUT (default: a
# new temporary directory). Exit status: 0 all passed or skipped, 1 a case
# failed, 2 the build is missing or incomplete, 77 no GPU (without --dry).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
here=$root/tests/gpu
dry=0
build=
for a in "$@"; do
    case $a in
        --dry) dry=1 ;;
        -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0"; exit 0 ;;   # the header, however long
        -*) echo "run.sh: unknown flag $a (run.sh [--dry] [BUILD_DIR])" >&2; exit 2 ;;
        *) build=$a ;;
    esac
done
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
budget_s=${GPU_CHECK_BUDGET_S:-460}
start_s=$SECONDS
echo "raw outputs: $out"

have_gpu=0
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
    have_gpu=1
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
fi
if [ $dry -eq 0 ] && [ $have_gpu -eq 0 ]; then
    echo "no NVIDIA GPU here: skipped (run.sh --dry checks what needs none)"
    exit 77
fi

# ---- build ---------------------------------------------------------------
echo "== build"
if [ -z "$build" ]; then
    command -v meson >/dev/null || { echo "run.sh: no meson here: give a build directory (run.sh BUILD_DIR)"; exit 2; }
    build=$root/build-gpu
    if [ ! -f "$build/build.ninja" ]; then
        meson setup "$build" "$root" --buildtype=release >"$out/meson-setup.log" 2>&1 ||
            { tail -20 "$out/meson-setup.log"; echo "run.sh: meson setup failed"; exit 2; }
    fi
    meson compile -C "$build" >"$out/meson-compile.log" 2>&1 ||
        { tail -30 "$out/meson-compile.log"; echo "run.sh: the build failed"; exit 2; }
fi
build=$(cd "$build" 2>/dev/null && pwd) || { echo "run.sh: no build directory $build"; exit 2; }
lib=$build/preload/liblmshim.so
lmshim=$build/cli/lmshim
missing=()
for f in "$lib" "$lmshim" "$build/sim/libcuda.so.1" "$build/sim/libcudart.so.13" "$build/bench/oversub_demo"; do
    [ -e "$f" ] || missing+=("${f#$build/}")
done
[ ${#missing[@]} -eq 0 ] || { echo "run.sh: the build $build lacks: ${missing[*]}"; exit 2; }
# Every hook of hooks.def is defined and exported (a library that lacks one
# kills every process it is preloaded into).
if command -v nm >/dev/null; then
    nm -D --defined-only "$lib" | awk '{print $NF}' | sed 's/@.*//' | sort -u >"$out/exported.txt"
    sed -n 's/^LMS_HOOK(\([A-Za-z0-9_]*\),.*/\1/p' "$root/preload/hooks.def" | sort -u >"$out/hooks.txt"
    absent=$(comm -23 "$out/hooks.txt" "$out/exported.txt" | tr '\n' ' ')
    [ -z "$absent" ] || { echo "run.sh: liblmshim.so does not export: $absent"; exit 2; }
    echo "liblmshim.so exports all $(wc -l <"$out/hooks.txt") hooks of hooks.def"
else
    echo "(no nm: the export check is skipped)"
fi
# A library the build links that this machine lacks (a build carried from
# another machine: libunwind.so.8, libdw.so.1) would make the loader skip
# the preload with a warning, and every case would run without lmshim.
if command -v ldd >/dev/null; then
    absent=$(ldd "$lib" "$lmshim" 2>/dev/null | awk '/not found/ {print $1}' | sort -u | tr '\n' ' ')
    [ -z "$absent" ] || { echo "run.sh: not found here: $absent(put them on LD_LIBRARY_PATH)"; exit 2; }
fi
"$lmshim" --help >/dev/null || { echo "run.sh: $lmshim does not run"; exit 2; }

# ---- helpers -------------------------------------------------------------
rows=()
failed=0
# Adds a row: case | status | placements | seconds with lmshim | without.
row() { rows+=("$1|$2|$3|$4|$5"); [ "$2" = FAIL ] && failed=1; return 0; }
# in_time NAME WORST_S — true when a case that may take WORST_S seconds
# still ends within the time budget; else adds a skipped row.
in_time() {
    if [ $((SECONDS - start_s + $2)) -gt "$budget_s" ]; then
        row "$1" "skipped (time budget)" - - -
        return 1
    fi
}
# run_case NAME TIMEOUT cmd... — stdout to $out/NAME.out, stderr to NAME.err.
run_case() {
    local name=$1 limit=$2; shift 2
    timeout --kill-after=10 "$limit" "$@" >"$out/$name.out" 2>"$out/$name.err"
    local rc=$?
    [ $rc -eq 124 ] && echo "$name: timed out after ${limit}s" >>"$out/$name.err"
    return $rc
}
# with_shim NAME TIMEOUT cmd... — the same under liblmshim.so with its summary.
with_shim() {
    local name=$1 limit=$2; shift 2
    run_case "$name" "$limit" env LD_PRELOAD="$lib${LD_PRELOAD:+:$LD_PRELOAD}" LMS_STATS=1 "$@"
}
cmp_py() { python3 "$here/compare.py" "$@"; }
seconds_of() { cmp_py field "$out/$1.out" "$2" 2>/dev/null || true; }   # prints "-" when absent
places() { cmp_py placements "$out/$1.err"; }
show_fail() { echo "FAIL $1:"; tail -n 15 "$out/$1.out" "$out/$1.err" 2>/dev/null; }
py_has() { python3 -c "import $1" >/dev/null 2>&1; }

# Prints the table to stdout and $out/table.txt.
print_table() {
    {
        printf '%-22s %-22s %-26s %9s %9s %7s\n' case status placements with_s without_s ratio
        local r c s p w b ratio
        for r in "${rows[@]}"; do
            IFS='|' read -r c s p w b <<<"$r"
            ratio=$(awk -v w="$w" -v b="$b" 'BEGIN{ if (w + 0 > 0 && b + 0 > 0) printf "%.2f", w / b; else print "-" }')
            printf '%-22s %-22s %-26s %9s %9s %7s\n' "$c" "$s" "$p" "$w" "$b" "$ratio"
        done
    } | tee "$out/table.txt"
}

# A case's verdict from two runs that print "losses": equal losses, and
# (when managed is required) some memory placed in managed chunks.
losses_case() {
    local name=$1 need_managed=$2
    local st=pass
    cmp_py losses "$out/$name-without.out" "$out/$name-with.out" >"$out/$name.compare" || st=FAIL
    if [ "$need_managed" = 1 ] && ! grep -q '^  managed  *[1-9]' "$out/$name-with.err"; then
        echo "nothing was placed in managed memory" >>"$out/$name.compare"
        st=FAIL
    fi
    [ $st = FAIL ] && { cat "$out/$name.compare"; show_fail "$name-with"; }
    row "$name" $st "$(places "$name-with")" "$(seconds_of "$name-with" seconds)" "$(seconds_of "$name-without" seconds)"
}

# losses_pair NAME LIMIT SECONDS NEED_MANAGED SCRIPT.py: the script without
# lmshim, then with it under LMS_LIMIT=LIMIT, each in SECONDS; then losses_case.
losses_pair() {
    local name=$1 limit=$2 secs=$3 need_managed=$4 script=$5
    run_case "$name-without" "$secs" python3 "$script"
    LMS_LIMIT=$limit with_shim "$name-with" "$secs" python3 "$script"
    losses_case "$name" "$need_managed"
}

# ---- dry: what needs no GPU ---------------------------------------------
if [ $dry -eq 1 ]; then
    echo "== dry: Python scripts compile, compare.py self-test"
    st=pass
    for f in "$here"/*.py; do
        python3 -c 'import sys; compile(open(sys.argv[1]).read(), sys.argv[1], "exec")' "$f" 2>>"$out/py.err" ||
            { echo "does not compile: $f"; st=FAIL; }
    done
    for f in torch_step torch_graph jax_step cupy_pool torch_ipc compare; do
        [ -f "$here/$f.py" ] || { echo "missing: tests/gpu/$f.py"; st=FAIL; }
    done
    [ -f "$here/oversub.cu" ] && [ -f "$here/prefetch_fresh.cu" ] && [ -f "$here/cuda_try.h" ] &&
        [ -f "$root/bench/convnet.cu" ] ||
        { echo "missing: a .cu source"; st=FAIL; }
    cmp_py selftest >"$out/selftest.out" 2>&1 || { cat "$out/selftest.out"; st=FAIL; }
    row "python-scripts" $st - - -
    echo "== dry: the static-cudart flow over the simulated GPU (oversub_demo, 8 x 64 MiB under LMS_LIMIT=256M)"
    export LD_LIBRARY_PATH=$build/sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    st=pass
    run_case sim-without 60 "$build/bench/oversub_demo" 8 64 || { show_fail sim-without; st=FAIL; }
    LMS_LIMIT=256M with_shim sim-with 60 "$build/bench/oversub_demo" 8 64 || { show_fail sim-with; st=FAIL; }
    grep -q '^ok: ' "$out/sim-with.out" || st=FAIL
    grep -q '^  managed  *[1-9]' "$out/sim-with.err" || { echo "nothing left the device under a 256M budget"; st=FAIL; }
    row "sim-oversub (model ms)" $st "$(places sim-with)" "$(seconds_of sim-with time)" "$(seconds_of sim-without time)"
    for c in static-cudart fresh-prefetch torch-step torch-graph jax-step cupy-pool torch-ipc convnet; do
        row "$c" "skipped (dry)" - - -
    done
    print_table
    exit $failed
fi

# ---- on the GPU ----------------------------------------------------------
# A program of tests/gpu built by meson, else here with nvcc, else empty
# (no nvcc, or it failed: $out/nvcc-NAME.log).
gpu_program() {
    local name=$1
    if [ -x "$build/tests/gpu/$name" ]; then
        echo "$build/tests/gpu/$name"
        return
    fi
    local nvcc=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
    [ -x "$nvcc" ] || nvcc=$(command -v nvcc || true)
    [ -n "$nvcc" ] && "$nvcc" -O2 -arch=sm_90 -o "$out/$name" "$here/$name.cu" >"$out/nvcc-$name.log" 2>&1 &&
        echo "$out/$name"
}

gpu_oversub=$(gpu_program oversub)

echo "== static-cudart: 8 x 512 MiB under LMS_LIMIT=2G"
if [ -z "$gpu_oversub" ]; then
    row static-cudart "skipped (no nvcc/build)" - - -
elif in_time static-cudart 140; then
    st=pass
    run_case static-cudart-without 60 "$gpu_oversub" 8 512 || st=FAIL
    LMS_LIMIT=2G with_shim static-cudart-with 60 "$gpu_oversub" 8 512 || st=FAIL
    grep -q '^ok ' "$out/static-cudart-with.out" || st=FAIL
    grep -q '^  managed  *[1-9]' "$out/static-cudart-with.err" || st=FAIL
    [ $st = FAIL ] && { show_fail static-cudart-without; show_fail static-cudart-with; }
    row static-cudart $st "$(places static-cudart-with)" "$(seconds_of static-cudart-with ok)" \
        "$(seconds_of static-cudart-without ok)"
fi

echo "== fresh-prefetch: 2 x 2 GiB of managed memory nobody touched, 2 x 2 GiB the host wrote (no lmshim)"
prefetch_fresh=$(gpu_program prefetch_fresh)
if [ -z "$prefetch_fresh" ]; then
    row fresh-prefetch "skipped (no nvcc/build)" - - -
elif in_time fresh-prefetch 60; then
    st=measured
    run_case fresh-prefetch 60 "$prefetch_fresh" 2048 || { st=FAIL; show_fail fresh-prefetch; }
    row fresh-prefetch $st - "$(seconds_of fresh-prefetch fresh_s)" "$(seconds_of fresh-prefetch touched_s)"
fi

torch_ok=0
py_has torch && python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null && torch_ok=1
echo "== torch-step: ~6 GiB under LMS_LIMIT=3G"
if [ $torch_ok -eq 0 ]; then
    row torch-step "skipped (no torch)" - - -
elif in_time torch-step 260; then
    losses_pair torch-step 3G 120 1 "$here/torch_step.py"
fi

echo "== torch-graph: the step captured in a CUDA graph, replayed under LMS_LIMIT=1536M"
if [ $torch_ok -eq 0 ]; then
    row torch-graph "skipped (no torch)" - - -
elif in_time torch-graph 200; then
    losses_pair torch-graph 1536M 90 1 "$here/torch_graph.py"
fi

echo "== jax-step: under lmshim run --limit 8G"
if ! py_has jax; then
    row jax-step "skipped (no jax)" - - -
elif in_time jax-step 200; then
    run_case jax-step-without 90 python3 "$here/jax_step.py"
    run_case jax-step-with 90 "$lmshim" run --limit 8G --stats -- python3 "$here/jax_step.py"
    losses_case jax-step 0
fi

echo "== cupy-pool: 8 x 512 MiB through CuPy's pool under LMS_LIMIT=2G"
if ! py_has cupy; then
    row cupy-pool "skipped (no cupy)" - - -
elif in_time cupy-pool 140; then
    losses_pair cupy-pool 2G 60 1 "$here/cupy_pool.py"
fi

echo "== torch-ipc: a CUDA tensor shared with a spawned child"
if [ $torch_ok -eq 0 ]; then
    row torch-ipc "skipped (no torch)" - - -
elif in_time torch-ipc 140; then
    st=pass
    run_case torch-ipc-without 60 python3 "$here/torch_ipc.py" || st=FAIL
    with_shim torch-ipc-with 60 python3 "$here/torch_ipc.py" || st=FAIL
    grep -q '^shared ok' "$out/torch-ipc-with.out" || st=FAIL
    [ $st = FAIL ] && { show_fail torch-ipc-without; show_fail torch-ipc-with; }
    row torch-ipc $st "$(places torch-ipc-with)" "$(seconds_of torch-ipc-with seconds)" \
        "$(seconds_of torch-ipc-without seconds)"
fi

echo "== convnet (cuDNN): batch 4 x 3 x 1200 x 1200 under half its footprint"
# A machine whose loader cannot find libcudnn.so.9 may still hold it in
# Python's nvidia-cudnn package (PyTorch's wheels bring it): use that.
if [ -x "$build/bench/convnet" ] && ldd "$build/bench/convnet" 2>/dev/null | grep -q 'libcudnn.*not found'; then
    cudnn_dir=$(python3 -c 'import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], "lib"))' 2>/dev/null)
    [ -n "$cudnn_dir" ] && [ -d "$cudnn_dir" ] && export LD_LIBRARY_PATH=$cudnn_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    echo "libcudnn.so.9 from ${cudnn_dir:-nowhere}"
fi
if [ ! -x "$build/bench/convnet" ]; then
    row convnet "skipped (no cuDNN build)" - - -
elif in_time convnet 70; then
    if run_case convnet-without 60 "$build/bench/convnet" 4 1200 1200 2 &&
       footprint=$(cmp_py field "$out/convnet-without.out" footprint_mib) && [ "$footprint" -gt 1 ] 2>/dev/null; then
        half=$((footprint / 2))M
        for p in lookahead lru none; do
            in_time "convnet $p" 70 || continue
            st=pass
            LMS_LIMIT=$half LMS_POLICY=$p with_shim "convnet-$p" 60 "$build/bench/convnet" 4 1200 1200 2 || st=FAIL
            [ $st = FAIL ] && show_fail "convnet-$p"
            row "convnet $p" $st "$(places "convnet-$p")" "$(seconds_of "convnet-$p" seconds)" \
                "$(seconds_of convnet-without seconds)"
        done
    else
        show_fail convnet-without
        row convnet FAIL - - -
    fi
fi

echo
echo "total $((SECONDS - start_s)) s"
print_table
exit $failed
