#!/bin/bash
# shapes_frac_test.sh SHAPES — bench/shapes --frac takes exactly the
# fractions lmshim takes for LMS_FRAC (digits and one point, at most 1):
# it hands the text to its workers as LMS_FRAC, and a value lmshim refuses
# would run those rows at the default 0.9 under a header naming another.
# A shape list naming no shape makes each call print its header and stop.
set -u
shapes=$1
fail() { echo "shapes_frac_test: $*" >&2; exit 1; }
for bad in .5 1. -0 +0.5 5e-1 ' 0.5' '0.5 ' 0x0.8 nan inf '' 0.5x 1.5 2; do
    out=$("$shapes" --frac "$bad" --shapes no-such-shape 2>&1)
    test $? = 2 || fail "--frac \"$bad\" taken (lmshim keeps 0.9 for it): $out"
    grep -q 'frac' <<<"$out" || fail "--frac \"$bad\": refused without a word on --frac: $out"
done
for good in 0 1 0.5 0.75 1.0 0.123456789; do
    out=$("$shapes" --frac "$good" --shapes no-such-shape 2>&1) || fail "--frac \"$good\" refused: $out"
    grep -q "LMS_FRAC=$good\$" <<<"$out" || fail "--frac \"$good\": the header does not name it: $out"
done
echo "shapes_frac_test: --frac ok"
# Options in the shell reach no row: a mode runs with exactly the options
# bench/shapes names (LMS_LIMIT_0 would change every lmshim row's budget,
# LMS_POLICY the defaults' policy); the log's options may pass.
a=$("$shapes" --quick --shapes transformer --ratios 1.5) || fail "the bench failed: $a"
b=$(LMS_LIMIT_0=64M LMS_POLICY=none LMS_FRAC=1 LMS_ON_OOM=fail LMS_LOG=error \
    "$shapes" --quick --shapes transformer --ratios 1.5) || fail "the bench failed under LMS_ options: $b"
! grep -q 'failed' <<<"$a$b" || fail "a mode failed:
$a
$b"
test "$a" = "$b" || fail "options in the shell changed the table:
$a
---
$b"
echo "shapes_frac_test: the shell's LMS_ options reach no row"
