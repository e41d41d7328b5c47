#!/bin/sh
# one_line_each.sh PROG CASE N — runs a case and checks that it passed and
# wrote exactly N lines to stderr, each naming an LMS_ variable.
set -u
err=$("$1" "$2" 2>&1 >/dev/null) || { echo "$err"; exit 1; }
echo "$err"
[ "$(printf '%s\n' "$err" | grep -c 'LMS_[A-Z_0-9]*=.*is not a valid value; keeping')" -eq "$3" ] || exit 1
[ "$(printf '%s\n' "$err" | wc -l)" -eq "$3" ]
