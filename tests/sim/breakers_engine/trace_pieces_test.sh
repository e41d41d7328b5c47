#!/bin/bash
# trace_pieces_test.sh LMSHIM PROG — a run whose chunks move in pieces
# (PROG two_devices, traced): every prefetch and evict line names a chunk
# the trace allocated, and `lmshim report` shows each device's peak at
# most its budget (a piece's fetch makes only its bytes resident).
set -u
lmshim=$1 prog=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
LMS_TRACE=$tmp/t.jsonl "$prog" two_devices || fail "the program failed"
"$lmshim" report "$tmp/t.jsonl" > "$tmp/out" || fail "report failed"
cat "$tmp/out" | head -5
python3 - "$tmp/t.jsonl" "$tmp/out" <<'PY' || fail "trace or report wrong"
import json, re, sys
ids, moved = set(), 0
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e["type"] == "alloc" and e["place"] == "managed":
        ids.add((e["dev"], e["id"]))
    if e["type"] in ("prefetch", "evict"):
        moved += 1
        assert (e["dev"], e["id"]) in ids, "a move of chunk %d, never allocated" % e["id"]
assert moved > 0, "nothing moved"
unit = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
def size(s):
    m = re.fullmatch(r"([0-9.]+)([KMGT]?)", s)
    return float(m.group(1)) * unit[m.group(2)]
peaks = re.findall(r"device (\d+): peak used (\S+) of budget (\S+)", open(sys.argv[2]).read())
assert len(peaks) == 2, peaks
for dev, peak, budget in peaks:
    assert size(peak) <= size(budget), "device %s: peak %s above budget %s" % (dev, peak, budget)
    assert size(peak) > 0, "device %s: nothing resident" % dev
print("ok:", moved, "moves", peaks)
PY
# A chunk of 2^31+1 bytes: at most 256 pieces (the largest move is a
# whole piece: the launch needs them all).
LMS_TRACE=$tmp/big.jsonl "$prog" one_big || fail "one_big failed"
python3 - "$tmp/big.jsonl" <<'PY' || fail "too many pieces"
import json, sys
size, piece = 2**31 + 1, 0
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e["type"] == "prefetch":
        piece = max(piece, e["bytes"])
assert piece > 0, "nothing moved"
n = -(-size // piece)
assert piece % (2 << 20) == 0 and n <= 256, "pieces of %d bytes: %d of them" % (piece, n)
print("pieces of", piece, "bytes:", n)
PY
# Half the room (40 MiB) moves whole; a byte more moves in 2 MiB pieces.
LMS_TRACE=$tmp/half.jsonl "$prog" threshold || fail "threshold failed"
python3 - "$tmp/half.jsonl" <<'PY' || fail "wrong pieces at the threshold"
import json, sys
size, moves = {}, {}
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e["type"] == "alloc" and e["place"] == "managed":
        size[e["id"]] = e["size"]
    if e["type"] == "prefetch":
        moves.setdefault(e["id"], set()).add(e["bytes"])
half = 20 << 20
whole = [i for i in size if size[i] == half][0]
cut = [i for i in size if size[i] == half + 1][0]
assert moves.get(whole) == {half}, moves.get(whole)
assert moves.get(cut) and max(moves[cut]) == 2 << 20, moves.get(cut)
print("at the threshold:", sorted(moves[whole]), sorted(moves[cut]))
PY
