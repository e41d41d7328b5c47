#!/bin/bash
# svg_render_test.sh LMSHIM GOLDEN — renders the report's SVG timeline in
# headless Chromium and checks the picture is not blank: enough pixels that
# are neither white nor one flat color. Skipped (77) without Chromium.
set -u
lmshim=$1 golden=$2
browser=$(command -v chromium || command -v chromium-browser || true)
[ -n "$browser" ] || { echo "no chromium: skipped"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
LMS_LIMIT=1G LMS_FRAC=0.5 LMS_THRESHOLD=64M LMS_POLICY=lru SIMGPU_MEM=4G LMS_TRACE="$tmp/t.jsonl" "$golden" >/dev/null || exit 1
"$lmshim" report "$tmp/t.jsonl" --svg "$tmp/t.svg" >/dev/null || exit 1
timeout 120 env -u LD_PRELOAD "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=900,320 \
    --screenshot="$tmp/t.png" "file://$tmp/t.svg" >/dev/null 2>&1
[ -s "$tmp/t.png" ] || { echo "no screenshot"; exit 1; }
env -u LD_PRELOAD python3 - "$tmp/t.png" <<'PY'
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n"
pos, idat, w = 8, b"", 0
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
        channels = {2: 3, 6: 4}[ctype]
    elif kind == b"IDAT":
        idat += body
    pos += 12 + n
raw = zlib.decompress(idat)
stride = w * channels
prev = bytearray(stride)
colored, colors = 0, set()
for y in range(h):
    f = raw[y * (stride + 1)]
    line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - channels] if i >= channels else 0
        b = prev[i]
        c = prev[i - channels] if i >= channels else 0
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    for x in range(0, stride, channels):
        px = tuple(line[x:x + 3])
        colors.add(px)
        if px != (255, 255, 255):
            colored += 1
    prev = line
print(f"screenshot {w}x{h}: {colored} non-white pixels, {len(colors)} colors")
assert colored > 2000 and len(colors) > 4, "blank"
PY
