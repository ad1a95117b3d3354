"""make-logos.py — draws the kernelspec logos (32x32, 64x64 PNG) with the standard library only.

A green rounded square (NVIDIA-ish) with a white 4x4 grid of blocks: a CUDA grid of thread blocks.
Run: python3 scripts/make-logos.py share/jupyter/kernelspecs/cudalab
"""
import struct
import sys
import zlib


def png(size, pixels):
    raw = b"".join(b"\x00" + bytes(pixels[y * size * 4:(y + 1) * size * 4]) for y in range(size))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", size, size, 8, 6, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


def draw(size):
    px = [0] * (size * size * 4)
    r = size // 6
    cells, margin = 4, size // 6
    pitch = (size - 2 * margin) / cells
    for y in range(size):
        for x in range(size):
            # rounded-square mask
            dx = max(r - x, x - (size - 1 - r), 0)
            dy = max(r - y, y - (size - 1 - r), 0)
            if dx * dx + dy * dy > r * r:
                continue
            color = (118, 185, 0, 255)
            gx, gy = (x - margin) / pitch, (y - margin) / pitch
            if 0 <= gx < cells and 0 <= gy < cells and (gx % 1) < 0.78 and (gy % 1) < 0.78:
                color = (255, 255, 255, 255)
            i = (y * size + x) * 4
            px[i:i + 4] = color
    return png(size, px)


if __name__ == "__main__":
    out = sys.argv[1]
    for s in (32, 64):
        with open(f"{out}/logo-{s}x{s}.png", "wb") as f:
            f.write(draw(s))
