"""The PNG bar chart of bench/run_bench.py (no plotting library: a tiny
rasterizer, a 5x7 font and zlib)."""

import math
import struct
import zlib

from bench_config import MODELS

# ---------------------------------------------------------------------------
# Report: PNG bar chart (no plotting library: a tiny rasterizer, a 5x7 font, zlib).
# Glyphs are rows of 5 pixels, top to bottom; 7 rows sit on the baseline, and
# lowercase letters with descenders (g j p q y) have 2 more rows below it.

FONT_5X7 = {
    ' ': '.....|.....|.....|.....|.....|.....|.....',
    '0': '.###.|#...#|#..##|#.#.#|##..#|#...#|.###.',
    '1': '..#..|.##..|..#..|..#..|..#..|..#..|.###.',
    '2': '.###.|#...#|....#|...#.|..#..|.#...|#####',
    '3': '####.|....#|....#|.###.|....#|....#|####.',
    '4': '...#.|..##.|.#.#.|#..#.|#####|...#.|...#.',
    '5': '#####|#....|####.|....#|....#|#...#|.###.',
    '6': '..##.|.#...|#....|####.|#...#|#...#|.###.',
    '7': '#####|....#|...#.|..#..|.#...|.#...|.#...',
    '8': '.###.|#...#|#...#|.###.|#...#|#...#|.###.',
    '9': '.###.|#...#|#...#|.####|....#|...#.|.##..',
    'a': '.....|.....|.###.|....#|.####|#...#|.####',
    'b': '#....|#....|#.##.|##..#|#...#|#...#|####.',
    'c': '.....|.....|.###.|#....|#....|#...#|.###.',
    'd': '....#|....#|.##.#|#..##|#...#|#...#|.####',
    'e': '.....|.....|.###.|#...#|#####|#....|.###.',
    'f': '..##.|.#..#|.#...|###..|.#...|.#...|.#...',
    'g': '.....|.....|.####|#...#|#...#|#...#|.####|....#|.###.',
    'h': '#....|#....|#.##.|##..#|#...#|#...#|#...#',
    'i': '..#..|.....|.##..|..#..|..#..|..#..|.###.',
    'j': '...#.|.....|..##.|...#.|...#.|...#.|...#.|#..#.|.##..',
    'k': '#....|#....|#..#.|#.#..|##...|#.#..|#..#.',
    'l': '.##..|..#..|..#..|..#..|..#..|..#..|.###.',
    'm': '.....|.....|##.#.|#.#.#|#.#.#|#...#|#...#',
    'n': '.....|.....|#.##.|##..#|#...#|#...#|#...#',
    'o': '.....|.....|.###.|#...#|#...#|#...#|.###.',
    'p': '.....|.....|####.|#...#|#...#|#...#|####.|#....|#....',
    'q': '.....|.....|.####|#...#|#...#|#...#|.####|....#|....#',
    'r': '.....|.....|#.##.|##..#|#....|#....|#....',
    's': '.....|.....|.###.|#....|.###.|....#|####.',
    't': '.#...|.#...|###..|.#...|.#...|.#..#|..##.',
    'u': '.....|.....|#...#|#...#|#...#|#..##|.##.#',
    'v': '.....|.....|#...#|#...#|#...#|.#.#.|..#..',
    'w': '.....|.....|#...#|#...#|#.#.#|#.#.#|.#.#.',
    'x': '.....|.....|#...#|.#.#.|..#..|.#.#.|#...#',
    'y': '.....|.....|#...#|#...#|#...#|#...#|.####|....#|.###.',
    'z': '.....|.....|#####|...#.|..#..|.#...|#####',
    'A': '.###.|#...#|#...#|#####|#...#|#...#|#...#',
    'B': '####.|#...#|#...#|####.|#...#|#...#|####.',
    'C': '.###.|#...#|#....|#....|#....|#...#|.###.',
    'D': '###..|#..#.|#...#|#...#|#...#|#..#.|###..',
    'E': '#####|#....|#....|####.|#....|#....|#####',
    'F': '#####|#....|#....|####.|#....|#....|#....',
    'G': '.###.|#...#|#....|#.###|#...#|#...#|.####',
    'H': '#...#|#...#|#...#|#####|#...#|#...#|#...#',
    'I': '.###.|..#..|..#..|..#..|..#..|..#..|.###.',
    'J': '..###|...#.|...#.|...#.|...#.|#..#.|.##..',
    'K': '#...#|#..#.|#.#..|##...|#.#..|#..#.|#...#',
    'L': '#....|#....|#....|#....|#....|#....|#####',
    'M': '#...#|##.##|#.#.#|#.#.#|#...#|#...#|#...#',
    'N': '#...#|#...#|##..#|#.#.#|#..##|#...#|#...#',
    'O': '.###.|#...#|#...#|#...#|#...#|#...#|.###.',
    'P': '####.|#...#|#...#|####.|#....|#....|#....',
    'Q': '.###.|#...#|#...#|#...#|#.#.#|#..#.|.##.#',
    'R': '####.|#...#|#...#|####.|#.#..|#..#.|#...#',
    'S': '.####|#....|#....|.###.|....#|....#|####.',
    'T': '#####|..#..|..#..|..#..|..#..|..#..|..#..',
    'U': '#...#|#...#|#...#|#...#|#...#|#...#|.###.',
    'V': '#...#|#...#|#...#|#...#|#...#|.#.#.|..#..',
    'W': '#...#|#...#|#...#|#.#.#|#.#.#|#.#.#|.#.#.',
    'X': '#...#|#...#|.#.#.|..#..|.#.#.|#...#|#...#',
    'Y': '#...#|#...#|.#.#.|..#..|..#..|..#..|..#..',
    'Z': '#####|....#|...#.|..#..|.#...|#....|#####',
    '.': '.....|.....|.....|.....|.....|.##..|.##..',
    ',': '.....|.....|.....|.....|.##..|..#..|.#...',
    ':': '.....|.##..|.##..|.....|.##..|.##..|.....',
    '-': '.....|.....|.....|#####|.....|.....|.....',
    '_': '.....|.....|.....|.....|.....|.....|#####',
    '/': '.....|....#|...#.|..#..|.#...|#....|.....',
    '(': '...#.|..#..|..#..|..#..|..#..|..#..|...#.',
    ')': '.#...|..#..|..#..|..#..|..#..|..#..|.#...',
    '%': '##...|##..#|...#.|..#..|.#...|#..##|...##',
    '=': '.....|.....|#####|.....|#####|.....|.....',
    '>': '.#...|..#..|...#.|....#|...#.|..#..|.#...',
    '<': '...#.|..#..|.#...|#....|.#...|..#..|...#.',
    '+': '.....|..#..|..#..|#####|..#..|..#..|.....',
    ';': '.....|.##..|.##..|.....|.##..|.##..|.#...',
    '*': '.....|..#..|#.#.#|.###.|#.#.#|..#..|.....',
}


class Canvas:
    def __init__(self, width: int, height: int, bg=(255, 255, 255)):
        self.w, self.h = width, height
        self.px = bytearray(bytes(bg) * (width * height))

    def rect(self, x0, y0, x1, y1, color):
        x0, x1 = max(0, int(min(x0, x1))), min(self.w, int(max(x0, x1)))
        y0, y1 = max(0, int(min(y0, y1))), min(self.h, int(max(y0, y1)))
        if x1 <= x0 or y1 <= y0:
            return
        row = bytes(color) * (x1 - x0)
        for y in range(y0, y1):
            o = (y * self.w + x0) * 3
            self.px[o:o + len(row)] = row

    def text_width(self, s: str, scale: int = 1) -> int:
        return len(s) * 6 * scale - scale if s else 0

    def text(self, x, y, s: str, color=(0, 0, 0), scale: int = 1, anchor: str = 'left'):
        """Draws `s` with its top at y; anchor left/center/right at x."""
        if anchor == 'center':
            x -= self.text_width(s, scale) // 2
        elif anchor == 'right':
            x -= self.text_width(s, scale)
        for ch in s:
            glyph = FONT_5X7.get(ch) or FONT_5X7.get(ch.lower()) or FONT_5X7['*']
            for gy, row in enumerate(glyph.split('|')):
                for gx, c in enumerate(row):
                    if c == '#':
                        self.rect(x + gx * scale, y + gy * scale, x + (gx + 1) * scale, y + (gy + 1) * scale, color)
            x += 6 * scale

    def png(self) -> bytes:
        raw = bytearray()
        stride = self.w * 3
        for y in range(self.h):
            raw.append(0)
            raw += self.px[y * stride:(y + 1) * stride]

        def chunk(tag: bytes, data: bytes) -> bytes:
            return struct.pack('>I', len(data)) + tag + data + struct.pack('>I', zlib.crc32(tag + data) & 0xffffffff)
        return (b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', self.w, self.h, 8, 2, 0, 0, 0)) +
                chunk(b'IDAT', zlib.compress(bytes(raw), 9)) + chunk(b'IEND', b''))


THREAD_COLORS = [(76, 114, 176), (221, 132, 82), (85, 168, 104), (196, 78, 82)]


def render_chart(path: str, names, rows, geo, threads_list, peaks) -> None:
    """Grouped bars: kiln/ORT median-time ratio per model (one bar per thread count), on a log
    axis with bars growing from 1.0 (up: kiln slower, down: kiln faster), plus the geometric mean."""
    groups = [(MODELS[n][0], {r['threads']: r['ratio_median'] for r in rows if r['model'] == n}) for n in names]
    groups.append(('geo. mean', {t: geo[t]['ratio_median'] for t in threads_list}))
    values = [v for _, d in groups for v in d.values()] + [1.0]
    lo = min(values) / 1.25
    hi = max(values) * 1.25
    lo_exp, hi_exp = math.floor(math.log2(lo)), math.ceil(math.log2(hi))
    if hi_exp - lo_exp < 2:
        hi_exp = lo_exp + 2
    s = 2                                    # text scale
    bar_w = 34
    group_w = max(len(threads_list) * bar_w + 30, max(len(g[0]) for g in groups) * 6 * s + 16)
    left, right, top, bottom = 110, 30, 90, 80
    plot_h = 460
    title = 'kiln / ONNX Runtime, median time ratio (log scale; above 1: kiln is slower)'
    W = max(left + right + group_w * len(groups), len(title) * 6 * s + 40)
    group_w = (W - left - right) // len(groups)
    H = top + plot_h + bottom
    c = Canvas(W, H)

    def ypos(v: float) -> float:
        return top + plot_h * (hi_exp - math.log2(v)) / (hi_exp - lo_exp)

    c.text(W // 2, 14, title, scale=s, anchor='center')
    # legend
    lx = left
    for i, t in enumerate(threads_list):
        col = THREAD_COLORS[i % len(THREAD_COLORS)]
        c.rect(lx, 48, lx + 20, 62, col)
        label = '%d thread%s' % (t, '' if t == 1 else 's')
        c.text(lx + 28, 49, label, scale=s)
        lx += 28 + c.text_width(label, s) + 30
    # grid and y labels at powers of two
    for e in range(lo_exp, hi_exp + 1):
        y = int(ypos(2.0 ** e))
        c.rect(left, y, W - right, y + 1, (210, 210, 210) if e else (60, 60, 60))
        label = ('%g' % (2.0 ** e)) + 'x'
        c.text(left - 10, y - 7, label, scale=s, anchor='right')
    c.rect(left, top, left + 1, top + plot_h, (60, 60, 60))
    y1 = ypos(1.0)
    for gi, (label, d) in enumerate(groups):
        gx = left + gi * group_w
        x = gx + (group_w - len(threads_list) * bar_w) // 2
        for i, t in enumerate(threads_list):
            if t not in d:
                continue
            v = d[t]
            yv = ypos(v)
            c.rect(x + 3, min(y1, yv), x + bar_w - 3, max(y1, yv) + 1, THREAD_COLORS[i % len(THREAD_COLORS)])
            txt = '%.2f' % v if v < 10 else '%.1f' % v
            ty = yv - 12 if v >= 1 else yv + 4
            c.text(x + bar_w // 2, int(ty), txt, scale=1, anchor='center')
            x += bar_w
        c.text(gx + group_w // 2, top + plot_h + 14, label, scale=s, anchor='center')
    foot = 'FMA peak: ' + ', '.join('%d thr %.0f GFLOP/s' % (t, peaks[t]['gflops']) for t in threads_list)
    c.text(left, H - 26, foot, scale=s)
    with open(path, 'wb') as f:
        f.write(c.png())

