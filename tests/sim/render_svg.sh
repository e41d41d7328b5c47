#!/bin/bash
# render_svg.sh SVG WIDTH HEIGHT MIN_PIXELS MIN_COLORS [red] — renders SVG in
# headless Chromium at WIDTHxHEIGHT and checks the picture is not blank: at
# least MIN_PIXELS non-white pixels and MIN_COLORS colors; with "red", also a
# strongly red pixel. Exit 0 when it passes, 1 when not, 77 without Chromium.
# The screenshot goes next to SVG (same name, .png).
set -u
svg=$1 width=$2 height=$3 min_pixels=$4 min_colors=$5 red=${6:-}
browser=$(command -v chromium || command -v chromium-browser || true)
[ -n "$browser" ] || { echo "no chromium: render skipped"; exit 77; }
png=${svg%.svg}.png
timeout 120 env -u LD_PRELOAD "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --window-size="$width,$height" --screenshot="$png" "file://$svg" >/dev/null 2>&1
[ -s "$png" ] || { echo "no screenshot"; exit 1; }
env -u LD_PRELOAD python3 - "$png" "$min_pixels" "$min_colors" "$red" <<'PY'
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
min_pixels, min_colors, want_red = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "red"
assert data[:8] == b"\x89PNG\r\n\x1a\n"
pos, idat, w = 8, b"", 0
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
        ch = {2: 3, 6: 4}[ctype]
    elif kind == b"IDAT":
        idat += body
    pos += 12 + n
raw, stride = zlib.decompress(idat), w * ch
prev, colored, colors = bytearray(stride), 0, set()
for y in range(h):
    f = raw[y * (stride + 1)]
    line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - ch] if i >= ch else 0
        b, c = prev[i], (prev[i - ch] if i >= ch else 0)
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    for x in range(0, stride, ch):
        px = tuple(line[x:x + 3])
        colors.add(px)
        colored += px != (255, 255, 255)
    prev = line
red = any(r > 180 and g < 90 and b < 90 for r, g, b in colors)
print(f"render {w}x{h}: {colored} non-white pixels, {len(colors)} colors")
assert colored > min_pixels and len(colors) > min_colors, "blank"
assert red or not want_red, "no red line"
PY
