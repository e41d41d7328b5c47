#!/bin/bash
# breakers_test.sh CASE LMSHIM SIG_IGNORED CUDART PY_HOSTILE
# Traces and reports under hostile conditions (runs with liblmshim.so in
# LD_PRELOAD):
#   ignored_signals  a program that ignores SIGINT/SIGTERM before the trace
#                    opens keeps them ignored, also across exec
set -u
case_=$1 lmshim=$2 sigprog=$3 cudart=$4 pyfile=$5
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "breakers_test $case_: $*" >&2; exit 1; }

case $case_ in
ignored_signals)
    LMS_TRACE="$tmp/t.jsonl" "$sigprog" || fail "signals the program ignores were not ignored any more"
    grep -q '"type":"header"' "$tmp/t.jsonl" || fail "no trace written: the case tests nothing"
    ;;
*) fail "unknown case" ;;
esac
exit 0
