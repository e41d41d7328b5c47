#!/bin/bash
# frameworks_test.sh LMSHIM — what `lmshim run` sets for the frameworks'
# allocators (cli/frameworks.c), seen through `lmshim run -- env`:
#  - unset: TF_FORCE_GPU_ALLOW_GROWTH=true, XLA_PYTHON_CLIENT_PREALLOCATE=false,
#    PYTORCH_CUDA_ALLOC_CONF=expandable_segments:False, in one stderr line;
#  - the user's values are kept, except expandable_segments:True, which is
#    taken out of a PyTorch setting with the rest kept in order, and said;
#  - nothing to set: no line.
set -u
lmshim=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "frameworks_test: $*" >&2; exit 1; }
clean() { env -u TF_FORCE_GPU_ALLOW_GROWTH -u XLA_PYTHON_CLIENT_PREALLOCATE \
              -u PYTORCH_CUDA_ALLOC_CONF -u PYTORCH_ALLOC_CONF "$@"; }

clean "$lmshim" run -- env >"$tmp/out" 2>"$tmp/err" || fail "run -- env failed"
grep -qx 'TF_FORCE_GPU_ALLOW_GROWTH=true' "$tmp/out" || fail "TF_FORCE_GPU_ALLOW_GROWTH not set"
grep -qx 'XLA_PYTHON_CLIENT_PREALLOCATE=false' "$tmp/out" || fail "XLA_PYTHON_CLIENT_PREALLOCATE not set"
grep -qx 'PYTORCH_CUDA_ALLOC_CONF=expandable_segments:False' "$tmp/out" ||
    fail "PYTORCH_CUDA_ALLOC_CONF not set: $(grep PYTORCH "$tmp/out")"
[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "expected one line on stderr, got: $(cat "$tmp/err")"
for v in TF_FORCE_GPU_ALLOW_GROWTH=true XLA_PYTHON_CLIENT_PREALLOCATE=false \
         PYTORCH_CUDA_ALLOC_CONF=expandable_segments:False; do
    grep -q "$v" "$tmp/err" || fail "the line does not name $v: $(cat "$tmp/err")"
done

# The user's values stay; expandable_segments:True alone goes, and is named.
clean TF_FORCE_GPU_ALLOW_GROWTH=false \
    PYTORCH_CUDA_ALLOC_CONF='max_split_size_mb:128, expandable_segments : True,garbage_collection_threshold:0.6' \
    "$lmshim" run -- env >"$tmp/out" 2>"$tmp/err" || fail "run -- env failed"
grep -qx 'TF_FORCE_GPU_ALLOW_GROWTH=false' "$tmp/out" || fail "the user's TF_FORCE_GPU_ALLOW_GROWTH changed"
grep -qx 'PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128,garbage_collection_threshold:0.6' "$tmp/out" ||
    fail "PYTORCH_CUDA_ALLOC_CONF: $(grep PYTORCH "$tmp/out")"
[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "expected one line, got: $(cat "$tmp/err")"
grep -q 'expandable_segments:True out of PYTORCH_CUDA_ALLOC_CONF' "$tmp/err" ||
    fail "the removal is not said: $(cat "$tmp/err")"
grep -q 'XLA_PYTHON_CLIENT_PREALLOCATE=false' "$tmp/err" || fail "the line misses what was set"

# expandable_segments:True alone: the variable goes; PYTORCH_ALLOC_CONF too.
clean PYTORCH_ALLOC_CONF=expandable_segments:True "$lmshim" run -- env >"$tmp/out" 2>"$tmp/err" ||
    fail "run -- env failed"
grep -q '^PYTORCH' "$tmp/out" && fail "PyTorch variables left: $(grep PYTORCH "$tmp/out")"

# Everything set by the user: not a word.
clean TF_FORCE_GPU_ALLOW_GROWTH=false XLA_PYTHON_CLIENT_PREALLOCATE=true \
    PYTORCH_CUDA_ALLOC_CONF=expandable_segments:False "$lmshim" run -- env >"$tmp/out" 2>"$tmp/err" ||
    fail "run -- env failed"
[ -s "$tmp/err" ] && fail "nothing was set, yet: $(cat "$tmp/err")"
grep -qx 'XLA_PYTHON_CLIENT_PREALLOCATE=true' "$tmp/out" || fail "the user's XLA setting changed"
echo "frameworks_test: ok"
