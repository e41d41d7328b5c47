#!/usr/bin/env bash
# run.sh — the one-call check on a machine with an NVIDIA GPU (sm_90), in
# under five minutes. It builds liblmshim.so there with the C compiler alone
# (no meson needed) and the test program with nvcc, then runs:
#   (a) oversub.cu (static cudart) with buffers twice LMS_LIMIT=2G, checked
#       on the CPU, with and without lmshim;
#   (b) a PyTorch step needing ~6 GiB under LMS_LIMIT=3G, its losses
#       compared with the run without lmshim (skipped without torch);
# and prints one table: case, placements, time with / without lmshim.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-$(mktemp -d)}
CUDA=${CUDA_HOME:-/usr/local/cuda}
NVCC=$CUDA/bin/nvcc
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
[ -x "$NVCC" ] || NVCC=$(command -v nvcc) || { echo "no nvcc: skipped"; exit 77; }

echo "== build"
cc -shared -fPIC -O2 -std=c17 -D_GNU_SOURCE -DLMSHIM_VERSION='"0.1.0"' -fvisibility=hidden \
   -Isrc -Iinclude -Ipreload -I"$CUDA/include" \
   preload/init.c preload/lookup.c preload/memory.c preload/api.c src/engine/dlsym_override.c \
   src/options.c src/log.c src/units.c src/driver.c src/chunks.c src/account.c src/place.c \
   src/stats.c src/engine.c src/elf_symbol.c \
   -Wl,--version-script=src/dlsym.map -Wl,-z,nodelete -ldl -lpthread -o "$out/liblmshim.so" || exit 1
"$NVCC" -O2 -arch=sm_90 -o "$out/oversub" tests/gpu/oversub.cu || exit 1
have_cudnn=0
"$NVCC" -O2 -arch=sm_90 -o "$out/convnet" bench/convnet.cu -lcudnn 2>/dev/null && have_cudnn=1

# Runs a command, prints its stdout; stderr (lmshim's summary) goes to $2.
with_shim() { local log=$1; shift; LD_PRELOAD=$out/liblmshim.so LMS_STATS=1 "$@" 2>"$log"; }
# "device=N managed=M" from an lmshim summary.
placements() {
    awk '/^  device /{d=$2} /^  managed /{m=$2} END{printf "device=%d managed=%d", d, m}' "$1"
}

rows=()
echo "== (a) static cudart, 8 x 512 MiB under LMS_LIMIT=2G"
base=$("$out/oversub" 8 512) || { echo "without lmshim: $base"; exit 1; }
shim=$(LMS_LIMIT=2G with_shim "$out/a.log" "$out/oversub" 8 512) || { echo "$shim"; cat "$out/a.log"; exit 1; }
echo "without: $base; with: $shim"; cat "$out/a.log"
grep -q '^  managed ' "$out/a.log" || { echo "FAIL: nothing left the device under a 2G budget"; exit 1; }
rows+=("static-cudart 4G/2G|$(placements "$out/a.log")|$(awk '{print $2}' <<<"$shim")|$(awk '{print $2}' <<<"$base")")

echo "== (b) PyTorch step under LMS_LIMIT=3G"
if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
    tb=$(timeout 150 python3 tests/gpu/torch_step.py) || { echo "torch without lmshim failed: $tb"; exit 1; }
    ts=$(LMS_LIMIT=3G timeout 150 with_shim "$out/b.log" python3 tests/gpu/torch_step.py) ||
        { echo "torch with lmshim failed: $ts"; tail -20 "$out/b.log"; exit 1; }
    echo "without: $tb"; echo "with: $ts"; cat "$out/b.log"
    python3 - "$tb" "$ts" <<'PY' || exit 1
import sys
a = [float(v) for v in sys.argv[1].split("\n")[0].split()[1:]]
b = [float(v) for v in sys.argv[2].split("\n")[0].split()[1:]]
ok = len(a) == len(b) and all(abs(x - y) <= 1e-5 * max(1.0, abs(x)) for x, y in zip(a, b))
print("losses match" if ok else f"FAIL: losses differ {a} {b}")
sys.exit(0 if ok else 1)
PY
    rows+=("torch 6G/3G|$(placements "$out/b.log")|$(awk '/^seconds/{print $2}' <<<"$ts")|$(awk '/^seconds/{print $2}' <<<"$tb")")
else
    rows+=("torch 6G/3G|skipped (no torch)|-|-")
fi

echo "== (c) cuDNN convnet, batch 4 x 3 x 1200 x 1200, under LMS_LIMIT = half its footprint"
if [ $have_cudnn -eq 1 ]; then
    cb=$(timeout 90 "$out/convnet" 4 1200 1200 2) || { echo "convnet failed: $cb"; exit 1; }
    echo "in-memory: $cb"
    half=$(( $(awk '{print $2}' <<<"$cb") / 2 ))M
    for p in lookahead lru none; do
        cs=$(LMS_LIMIT=$half LMS_POLICY=$p timeout 90 with_shim "$out/c-$p.log" "$out/convnet" 4 1200 1200 2) ||
            { echo "convnet under lmshim ($p) failed: $cs"; tail -5 "$out/c-$p.log"; exit 1; }
        echo "$p: $cs"
        # images/s: with / without is a slowdown, so print seconds for the ratio column
        rows+=("convnet $p|$(placements "$out/c-$p.log")|$(awk '{print $6}' <<<"$cs")|$(awk '{print $6}' <<<"$cb")")
    done
else
    rows+=("convnet|skipped (no cuDNN)|-|-")
fi

echo
printf '%-22s %-26s %10s %10s %8s\n' case placements with_s without_s ratio
for r in "${rows[@]}"; do
    IFS='|' read -r c p w b <<<"$r"
    ratio=$(awk -v w="$w" -v b="$b" 'BEGIN{ if (b > 0) printf "%.2f", w / b; else print "-" }')
    printf '%-22s %-26s %10s %10s %8s\n' "$c" "$p" "$w" "$b" "$ratio"
done
