"""A line plot as a plain SVG file (log-scaled axes), so that the bench scripts need no plotting
library."""
import math
from pathlib import Path

COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]


def line_plot(series, path, title, xticks, xlabel=str, yunit="s", style=None):
    """series: {name: [(x, y), ...]}, both axes log-scaled; ticks at `xticks`, labelled by
    `xlabel(x)`; `style(name)`: (colour index, SVG dash array or "") of a series, by default
    a colour each, solid."""
    w, h, pad, legend = 760, 440, 60, 220
    ys = [y for pts in series.values() for _, y in pts if y]
    lo, hi = math.log10(min(ys)) - 0.15, math.log10(max(ys)) + 0.15
    x0, x1 = math.log10(min(xticks)), math.log10(max(xticks))

    def x_of(x):
        return pad + (math.log10(x) - x0) / (x1 - x0) * (w - 2 * pad - legend)

    def y_of(y):
        return h - pad - (math.log10(y) - lo) / (hi - lo) * (h - 2 * pad)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
           f'font-family="Helvetica" font-size="11">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<text x="{pad}" y="20" font-size="13">{title}</text>']
    for x in xticks:
        out.append(f'<text x="{x_of(x):.0f}" y="{h - pad + 18}" text-anchor="middle">{xlabel(x)}</text>')
    for k in range(math.floor(lo * 3), math.ceil(hi * 3) + 1):  # 1, 2, 5 per decade
        e, m = divmod(k, 3)
        y = (1, 2, 5)[m] * 10.0 ** e
        if pad <= y_of(y) <= h - pad:
            out.append(f'<line x1="{pad}" x2="{w - pad - legend}" y1="{y_of(y):.0f}" y2="{y_of(y):.0f}" '
                       f'stroke="#ddd"/><text x="{pad - 6}" y="{y_of(y) + 4:.0f}" '
                       f'text-anchor="end">{y:g} {yunit}</text>')
    for i, (name, pts) in enumerate(sorted(series.items())):
        colour, dashes = style(name) if style else (i, "")
        c = COLORS[colour % len(COLORS)]
        dash = f' stroke-dasharray="{dashes}"' if dashes else ""
        d = " ".join(f"{x_of(x):.1f},{y_of(y):.1f}" for x, y in pts if y)
        out.append(f'<polyline points="{d}" fill="none" stroke="{c}" stroke-width="2"{dash}/>')
        y = pad + 16 * i
        out.append(f'<line x1="{w - legend + 10}" x2="{w - legend + 30}" y1="{y}" y2="{y}" stroke="{c}" '
                   f'stroke-width="2"{dash}/><text x="{w - legend + 35}" y="{y + 4}">{name}</text>')
    out.append("</svg>")
    Path(path).write_text("\n".join(out))
