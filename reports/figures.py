"""Plotly figures for the report, embedded as <div>s without plotly.js (the page inlines it once).

Each helper returns HTML for `parts.plot`. Figures use only data passed in; nothing is fetched.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

_ids = itertools.count()
_CONFIG = {"displaylogo": False, "responsive": True}
_LAYOUT = {"template": "plotly_white", "margin": {"l": 60, "r": 20, "t": 40, "b": 50},
           "height": 380, "legend": {"orientation": "h", "y": -0.2}}


def plotly_js() -> str:
    """The whole plotly.js bundle, to be inlined once in the page head."""
    from plotly.offline import get_plotlyjs

    return get_plotlyjs()


def new_figure(**subplots) -> go.Figure:
    """A figure (or a subplot grid when given make_subplots arguments) with the report's style."""
    fig = make_subplots(**subplots) if subplots else go.Figure()
    fig.update_layout(**_LAYOUT)
    return fig


def to_div(fig: go.Figure, kind: str = "fig") -> str:
    return fig.to_html(include_plotlyjs=False, full_html=False, div_id=f"{kind}-{next(_ids)}",
                       config=_CONFIG)


def lines(series: Sequence[tuple[str, Sequence[float], Sequence[float]]], x_title: str,
          y_title: str, log_y: bool = False, title: str = "", height: int = 380,
          markers: bool = False) -> str:
    """One trace per (name, xs, ys). Non-positive values are dropped on a log axis."""
    fig = new_figure()
    for name, xs, ys in series:
        if log_y:
            pts = [(x, y) for x, y in zip(xs, ys, strict=False)
                   if y is not None and y > 0 and math.isfinite(y)]
            xs, ys = [p[0] for p in pts], [p[1] for p in pts]
        fig.add_trace(go.Scatter(x=list(xs), y=list(ys), name=name,
                                 mode="lines+markers" if markers else "lines"))
    fig.update_layout(title=title, xaxis_title=x_title, yaxis_title=y_title, height=height)
    if log_y:
        fig.update_yaxes(type="log", exponentformat="power")
    return to_div(fig, "lines")


def bars(categories: Sequence[str], groups: dict[str, Sequence[float | None]], y_title: str,
         title: str = "", ref: float | None = None, ref_label: str = "",
         spreads: dict[str, Sequence] | None = None) -> str:
    """Grouped bars, one group per key, with an optional horizontal reference line and optional
    [low, high] whiskers per bar (spreads[key][i])."""
    fig = new_figure()
    for name, ys in groups.items():
        error_y = None
        lows_highs = (spreads or {}).get(name)
        if lows_highs and all(isinstance(s, (list, tuple)) and len(s) == 2 and y is not None
                              for s, y in zip(lows_highs, ys, strict=True)):
            error_y = {"type": "data", "symmetric": False,
                       "array": [s[1] - y for s, y in zip(lows_highs, ys, strict=True)],
                       "arrayminus": [y - s[0] for s, y in zip(lows_highs, ys, strict=True)]}
        fig.add_trace(go.Bar(x=list(categories), y=list(ys), name=name, error_y=error_y,
                             text=[f"{y:.2f}" if y is not None else "" for y in ys],
                             textposition="inside", insidetextanchor="end"))
    if ref is not None:
        fig.add_hline(y=ref, line_dash="dash", line_color="#888",
                      annotation_text=ref_label, annotation_position="top left")
    fig.update_layout(title=title, yaxis_title=y_title, barmode="group")
    return to_div(fig, "bars")


def memory_grid(panels: list[tuple[str, list[tuple[str, list[float], list[float], dict | None]]]],
                cols: int, y_title: str) -> str:
    """A grid of panels (title, [(name, steps, values, fit)]), filled row by row: each series
    with its least-squares line (fit = {"slope", "intercept", "x0", "x1"}) dashed over the
    fitted window."""
    rows = (len(panels) + cols - 1) // cols
    fig = new_figure(rows=rows, cols=cols, subplot_titles=[p[0] for p in panels],
                     horizontal_spacing=0.08, vertical_spacing=0.14)
    palette = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]
    for i, (_, series) in enumerate(panels):
        row, col = i // cols + 1, i % cols + 1
        for j, (name, xs, ys, fit) in enumerate(series):
            color = palette[j % len(palette)]
            fig.add_trace(go.Scatter(x=xs, y=ys, name=name, mode="lines", legendgroup=name,
                                     line={"color": color}), row=row, col=col)
            if fit:
                x0, x1 = fit["x0"], fit["x1"]
                fig.add_trace(go.Scatter(
                    x=[x0, x1], y=[fit["intercept"] + fit["slope"] * x for x in (x0, x1)],
                    name=f"fit {fit['slope']:.3g} MB/step", mode="lines", legendgroup=name,
                    showlegend=False, hovertemplate=f"{name}<br>slope {fit['slope']:.4g} "
                                                    "MB/step<extra></extra>",
                    line={"color": color, "dash": "dash", "width": 1}), row=row, col=col)
        fig.update_xaxes(title_text="step", row=row, col=col)
        fig.update_yaxes(title_text=y_title, row=row, col=col)
    fig.update_layout(height=340 * rows + 120, legend={"orientation": "h", "y": -0.12})
    return to_div(fig, "memory")


def heatmap_grid(mats: list[tuple[int, int, list[list[float]]]], tokens: list[str] | None,
                 title: str = "") -> str:
    """Attention probabilities: one square heatmap per (layer, head), rows = query, cols = key.
    Layers are rows of the grid and heads its columns; with one head, layers sit side by side."""
    layers = sorted({m[0] for m in mats})
    heads = sorted({m[1] for m in mats})
    one_head = len(heads) == 1
    rows, cols = (1, len(layers)) if one_head else (len(layers), len(heads))

    def where(layer: int, head: int) -> tuple[int, int]:
        return (1, layers.index(layer) + 1) if one_head else (
            layers.index(layer) + 1, heads.index(head) + 1)

    order = sorted(mats, key=lambda m: where(m[0], m[1]))
    fig = new_figure(rows=rows, cols=cols,
                     subplot_titles=[f"layer {m[0]} · head {m[1]}" for m in order],
                     horizontal_spacing=0.06 if cols <= 4 else 0.02,
                     vertical_spacing=min(0.08, 0.3 / rows))
    for i, (layer, head, m) in enumerate(order):
        n = len(m)
        labels = tokens if tokens and len(tokens) == n else [str(j) for j in range(n)]
        ticks = [f"{j}:{t}" for j, t in enumerate(labels)]
        r, c = where(layer, head)
        fig.add_trace(go.Heatmap(z=m, x=ticks, y=ticks, zmin=0, zmax=1, colorscale="Blues",
                                 showscale=i == 0, colorbar={"title": "p", "len": 0.6},
                                 hovertemplate="query %{y}<br>key %{x}<br>p=%{z:.3f}"
                                               "<extra></extra>"), row=r, col=c)
        axis = "" if i == 0 else str(i + 1)
        # every character on both axes (array ticks: plotly thins automatic ones), the
        # position only in the hover text
        chars = {"tickmode": "array", "tickvals": ticks, "ticktext": labels, "tickangle": 0,
                 "tickfont": {"size": 9, "family": "ui-monospace, monospace"},
                 "showgrid": False}
        fig.update_layout({f"yaxis{axis}": {**chars, "scaleanchor": f"x{axis}",
                                            "autorange": "reversed", "title": {
                                                "text": "query" if c == 1 else ""}},
                           f"xaxis{axis}": {**chars, "side": "bottom",
                                            "title": {"text": "key"}}})
    width_px = 1280
    cell = (width_px - 140) / cols
    fig.update_layout(title=title, height=int(max(340, (cell + 50) * rows + 60)),
                      margin={"l": 70, "r": 20, "t": 50, "b": 40})
    return to_div(fig, "attention")


def loglog_panels(panels: list[tuple[str, list[tuple[str, list[float], list[float]]]]],
                  y_title: str) -> str:
    """Side-by-side log-log panels (title, [(name, xs, ys)]): how a time grows with a size."""
    fig = new_figure(rows=1, cols=len(panels), subplot_titles=[p[0] for p in panels],
                     horizontal_spacing=0.05)
    palette = ["#1f77b4", "#d62728", "#2ca02c"]
    seen: set[str] = set()
    for col, (title, series) in enumerate(panels, start=1):
        for i, (name, xs, ys) in enumerate(series):
            fig.add_trace(go.Scatter(x=xs, y=ys, name=name, mode="lines+markers",
                                     legendgroup=name, showlegend=name not in seen,
                                     line={"color": palette[i % len(palette)]}), row=1, col=col)
            seen.add(name)
        fig.update_xaxes(type="log", title_text=title, row=1, col=col)
        fig.update_yaxes(type="log", row=1, col=col, title_text=y_title if col == 1 else None)
    fig.update_layout(height=360)
    return to_div(fig, "scaling")


def hbars(labels: Sequence[str], stacks: dict[str, Sequence[float]], x_title: str) -> str:
    """Horizontal stacked bars, largest at the top."""
    fig = new_figure()
    for name, xs in stacks.items():
        fig.add_trace(go.Bar(y=list(labels), x=list(xs), name=name, orientation="h"))
    fig.update_layout(barmode="stack", xaxis_title=x_title, height=max(300, 22 * len(labels) + 120),
                      yaxis={"autorange": "reversed"}, margin={"l": 200, "r": 20, "t": 30, "b": 50})
    return to_div(fig, "hbars")
