"""The memory section's figure: panels stacked one per question, each with its own legend beside
it, so a series is named where it is drawn. Draws only the traces it is given.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import plotly.graph_objects as go

from .figures import new_figure, to_div

# One colour per instrument, the same in every panel.
COLORS = {"RSS": "#1f77b4", "traced heap": "#2ca02c", "traced peak": "#ff7f0e",
          "memray heap": "#9467bd", "malloc in use": "#d62728", "other": "#8c564b"}
PANEL_PX = 250
LEGEND_PX = 330  # right margin that holds the legends


@dataclass
class Trace:
    """One line. style: "main" (solid), "raw" (faded dots: the reading the main line
    summarises) or "fit" (dashed least-squares line)."""

    name: str
    xs: list[float]
    ys: list[float]
    color: str
    style: str = "main"


@dataclass
class Panel:
    title: str
    y_title: str
    traces: list[Trace] = field(default_factory=list)
    min_span: float = 0.0  # the y axis shows at least this range, so a flat line looks flat


_STYLES = {"main": {"width": 2}, "raw": {"width": 1}, "fit": {"width": 2, "dash": "dash"}}


def _y_range(panel: Panel) -> list[float] | None:
    ys = [y for t in panel.traces for y in t.ys if y is not None]
    if not ys or max(ys) - min(ys) >= panel.min_span:
        return None
    mid = (max(ys) + min(ys)) / 2
    return [mid - panel.min_span / 2, mid + panel.min_span / 2]


def question_panels(panels: list[Panel]) -> str:
    """One row per panel, x = step, each panel's legend to its right at the panel's top."""
    n = len(panels)
    fig = new_figure(rows=n, cols=1, subplot_titles=[p.title for p in panels],
                     vertical_spacing=min(0.3 / n, 0.08))
    for i, panel in enumerate(panels, start=1):
        legend = "legend" if i == 1 else f"legend{i}"
        for t in panel.traces:
            raw = t.style == "raw"
            fig.add_trace(go.Scatter(x=t.xs, y=t.ys, name=t.name, legend=legend,
                                     mode="markers" if raw else "lines",
                                     opacity=0.4 if raw else 1.0,
                                     marker={"color": t.color, "size": 3},
                                     line={"color": t.color, **_STYLES[t.style]}),
                          row=i, col=1)
        fig.update_yaxes(title_text=panel.y_title, range=_y_range(panel), row=i, col=1)
        fig.update_xaxes(title_text="step" if i == n else None, row=i, col=1)
        top = fig.get_subplot(i, 1).yaxis.domain[1]
        fig.update_layout({legend: {"x": 1.02, "xanchor": "left", "y": top, "yanchor": "top",
                                    "orientation": "v", "font": {"size": 11},
                                    "bgcolor": "rgba(255,255,255,0.8)"}})
    fig.update_layout(height=PANEL_PX * n + 80,
                      margin={"l": 70, "r": LEGEND_PX, "t": 40, "b": 50})
    return to_div(fig, "memory")
