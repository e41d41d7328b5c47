#!/bin/bash
# frameworks_env_test.sh LMSHIM — `lmshim run` against odd environments
# (cli/frameworks.c), seen through `lmshim run -- env`:
#  - an empty TF_FORCE_GPU_ALLOW_GROWTH / XLA_PYTHON_CLIENT_PREALLOCATE is
#    the frameworks' default (the whole arena at start): it is set;
#  - expandable_segments:True in any spelling PyTorch may take, at any
#    place, with spaces, is taken out; the other entries (lists in brackets,
#    empty entries) are kept in order; False stays.
set -u
lmshim=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "frameworks_env_test: $*" >&2; exit 1; }
clean() { env -u TF_FORCE_GPU_ALLOW_GROWTH -u XLA_PYTHON_CLIENT_PREALLOCATE \
              -u PYTORCH_CUDA_ALLOC_CONF -u PYTORCH_ALLOC_CONF "$@"; }
run() { clean "$@" "$lmshim" run -- env >"$tmp/out" 2>"$tmp/err" || fail "run -- env failed: $*"; }

run TF_FORCE_GPU_ALLOW_GROWTH= XLA_PYTHON_CLIENT_PREALLOCATE=
grep -qx 'TF_FORCE_GPU_ALLOW_GROWTH=true' "$tmp/out" || fail "an empty TF_FORCE_GPU_ALLOW_GROWTH stays empty"
grep -qx 'XLA_PYTHON_CLIENT_PREALLOCATE=false' "$tmp/out" || fail "an empty XLA_PYTHON_CLIENT_PREALLOCATE stays empty"
grep -q 'TF_FORCE_GPU_ALLOW_GROWTH=true' "$tmp/err" || fail "the line does not say it: $(cat "$tmp/err")"

# The user's non-empty values stay, whatever they are.
run TF_FORCE_GPU_ALLOW_GROWTH=false XLA_PYTHON_CLIENT_PREALLOCATE=0
grep -qx 'TF_FORCE_GPU_ALLOW_GROWTH=false' "$tmp/out" || fail "the user's TF value changed"
grep -qx 'XLA_PYTHON_CLIENT_PREALLOCATE=0' "$tmp/out" || fail "the user's XLA value changed"

check_torch() {   # VALUE EXPECTED ("-" : the variable is gone)
    run PYTORCH_CUDA_ALLOC_CONF="$1"
    if [ "$2" = - ]; then
        grep -q '^PYTORCH_CUDA_ALLOC_CONF=' "$tmp/out" && fail "[$1] left: $(grep PYTORCH "$tmp/out")"
    else
        grep -qxF "PYTORCH_CUDA_ALLOC_CONF=$2" "$tmp/out" || fail "[$1] gave: $(grep PYTORCH "$tmp/out")"
    fi
    return 0
}
check_torch 'expandable_segments:True' -
check_torch ' expandable_segments : True ' -
check_torch 'expandable_segments:true' -
check_torch 'expandable_segments:1' -
check_torch ',expandable_segments:True,' -
check_torch 'expandable_segments:True,expandable_segments:True' -
check_torch 'roundup_power2_divisions:[256:1,512:2,>:8],expandable_segments:True,max_split_size_mb:64' \
            'roundup_power2_divisions:[256:1,512:2,>:8],max_split_size_mb:64'
check_torch 'max_split_size_mb:64,expandable_segments:True' 'max_split_size_mb:64'
check_torch 'expandable_segments:False' 'expandable_segments:False'
check_torch 'expandable_segments:Truex' 'expandable_segments:Truex'
check_torch 'my_expandable_segments:True' 'my_expandable_segments:True'
echo "frameworks_env_test: ok"
