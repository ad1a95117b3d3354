"""make-logos.py — draws the kernelspec logos (logo-svg.svg, logo-32x32.png, logo-64x64.png) from one
description, with the standard library only.

A green rounded square (NVIDIA-ish) with a white 4x4 grid of blocks: a CUDA grid of thread blocks. The
geometry below is the one source: the SVG states it as shapes (Jupyter frontends prefer logo-svg.svg when
it is there), the PNGs sample it pixel by pixel. tests/frontends/test_logos.py checks that the committed
files are what this script writes.
Run: python3 scripts/make-logos.py share/jupyter/kernelspecs/cudalab
"""
import struct
import sys
import zlib

GREEN = (118, 185, 0)
WHITE = (255, 255, 255)
CELLS = 4            # blocks per side
FILL = 0.78          # a block's share of its pitch: the rest is the gap
SVG_SIZE = 64        # the SVG's viewBox, in the units of the 64x64 PNG


def geometry(size):
    """(corner radius, margin, pitch) of the square of side size: whole pixels where the PNG needs them."""
    corner = margin = size // 6
    return corner, margin, (size - 2 * margin) / CELLS


def png(size, pixels):
    raw = b"".join(b"\x00" + bytes(pixels[y * size * 4:(y + 1) * size * 4]) for y in range(size))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", size, size, 8, 6, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


def draw(size):
    r, margin, pitch = geometry(size)
    px = [0] * (size * size * 4)
    for y in range(size):
        for x in range(size):
            # rounded-square mask
            dx = max(r - x, x - (size - 1 - r), 0)
            dy = max(r - y, y - (size - 1 - r), 0)
            if dx * dx + dy * dy > r * r:
                continue
            color = GREEN
            gx, gy = (x - margin) / pitch, (y - margin) / pitch
            if 0 <= gx < CELLS and 0 <= gy < CELLS and (gx % 1) < FILL and (gy % 1) < FILL:
                color = WHITE
            i = (y * size + x) * 4
            px[i:i + 4] = (*color, 255)
    return png(size, px)


def svg():
    r, margin, pitch = geometry(SVG_SIZE)
    side = round(FILL * pitch, 3)
    hex_color = "#{:02x}{:02x}{:02x}".format
    blocks = "\n".join(
        f'    <rect x="{round(margin + i * pitch, 3):g}" y="{round(margin + j * pitch, 3):g}" '
        f'width="{side:g}" height="{side:g}"/>'
        for j in range(CELLS) for i in range(CELLS))
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {SVG_SIZE} {SVG_SIZE}" '
            f'width="{SVG_SIZE}" height="{SVG_SIZE}">\n'
            f'  <title>cudalab: a grid of thread blocks</title>\n'
            f'  <rect width="{SVG_SIZE}" height="{SVG_SIZE}" rx="{r}" fill="{hex_color(*GREEN)}"/>\n'
            f'  <g fill="{hex_color(*WHITE)}">\n{blocks}\n  </g>\n</svg>\n')


if __name__ == "__main__":
    out = sys.argv[1]
    with open(f"{out}/logo-svg.svg", "w") as f:
        f.write(svg())
    for s in (32, 64):
        with open(f"{out}/logo-{s}x{s}.png", "wb") as f:
            f.write(draw(s))
