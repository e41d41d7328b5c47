#!/bin/bash
# install_test.sh BUILD_ROOT PREFIX BINDIR LIBDIR — `meson install` into a
# DESTDIR, then, with no library path pointing into the build tree:
#  - the installed `lmshim info --sim` finds the installed simulated GPU;
#  - the installed demo (<libdir>/lmshim/oversub_demo) fails alone on a
#    device half its working set and runs to the end, checked, under the
#    installed `lmshim run --sim`, with the installed liblmshim.so preloaded.
set -u
build=$1 prefix=$2 bindir=$3 libdir=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "install_test: $*" >&2; exit 1; }
command -v meson >/dev/null || { echo "no meson command: skipped"; exit 77; }

meson install -C "$build" --no-rebuild --quiet --destdir "$tmp/root" >"$tmp/install.log" 2>&1 ||
    { cat "$tmp/install.log"; fail "meson install failed"; }
case $bindir in /*) bin=$tmp/root$bindir ;; *) bin=$tmp/root$prefix/$bindir ;; esac
case $libdir in /*) lib=$tmp/root$libdir ;; *) lib=$tmp/root$prefix/$libdir ;; esac
for f in "$bin/lmshim" "$lib/liblmshim.so" "$lib/lmshim/sim/libcuda.so.1" "$lib/lmshim/sim/libcudart.so.13" \
         "$lib/lmshim/oversub_demo"; do
    [ -e "$f" ] || fail "not installed: ${f#$tmp/root}"
done

unset LD_LIBRARY_PATH LD_PRELOAD
cd "$tmp"
info=$("$bin/lmshim" info --sim 2>&1) || fail "installed info --sim: $info"
echo "$info" | grep -q '^device 0: lmshim simulated GPU' || fail "installed info --sim: $info"

out=$(SIMGPU_MEM=128M "$bin/lmshim" run --sim --disable -- "$lib/lmshim/oversub_demo" 4 64 2>&1) &&
    fail "the demo passed without lmshim on a device half its working set: $out"
out=$("$bin/lmshim" run --sim --sim-mem 128M --stats -- "$lib/lmshim/oversub_demo" 4 64 2>&1) ||
    fail "the installed demo under the installed lmshim failed: $out"
echo "$out" | grep -q '^ok: ' || fail "the demo did not check its results: $out"
echo "$out" | grep -q '^  managed ' || fail "no lmshim summary (was the installed liblmshim.so preloaded?): $out"
grep -q "$lib/liblmshim.so" <("$bin/lmshim" run --sim -- sh -c 'echo "$LD_PRELOAD"') ||
    fail "LD_PRELOAD does not name the installed library"
echo "ok"
