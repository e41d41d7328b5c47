#!/bin/sh
# lmshim replay charges managed chunks in 2 MiB pages like the live engine,
# and costs the bytes read over the link (the `none` row) at link speed.
# usage: replay_test.sh LMSHIM
set -eu
lmshim=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
t=$dir/t.jsonl
MiB=1048576
{
  echo '{"type":"header","format":1,"lmshim":"0.1.0","pid":1,"rank":0,"t":1}'
  echo "{\"type\":\"device\",\"t\":2,\"dev\":0,\"physical\":$((64*MiB)),\"budget\":$((20*MiB))}"
  for i in 0 1 2 3; do
    echo "{\"type\":\"alloc\",\"t\":3,\"dev\":0,\"ptr\":\"0x7f00${i}0000000\",\"size\":$((9*MiB)),\"charge\":0,\"place\":\"managed\",\"id\":$i,\"fallback\":false,\"site\":-1}"
  done
  seq=1
  for step in 1 2; do
    for i in 0 1 2 3; do
      echo "{\"type\":\"launch\",\"t\":4,\"dev\":0,\"seq\":$seq,\"fn\":\"0x5$i\",\"name\":\"k\",\"stream\":\"0x0\",\"chunks\":[$i]}"
      seq=$((seq + 1))
    done
  done
} > "$t"
"$lmshim" replay --policy all "$t" > "$dir/out"
cat "$dir/out"
row() { awk -v p="$1" '$1 == p' "$dir/out"; }
# A 9 MiB chunk occupies five 2 MiB pages: 10 MiB per fetch, 8 fetches by lru.
row lru | awk '{ if ($2 != "80.0") { print "lru fetched " $2 ", expected 80.0"; exit 1 } }'
# none fetches nothing and reads all 80 MiB over the link: 80 MiB / 55 GB/s.
row none | awk '{
  if ($2 != "0.0") { print "none fetched " $2; exit 1 }
  if ($5 != "80.0") { print "none remote " $5 ", expected 80.0"; exit 1 }
  if ($6 != "1.525") { print "none transfer_ms " $6 ", expected 1.525"; exit 1 }
  if ($7 + 0 <= 1.0) { print "none vs_MIN " $7 ", expected above 1"; exit 1 }
}'
echo ok
