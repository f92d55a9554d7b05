"""Building blocks of a report section: tables, plots, images, notes, and the tolerant readers
that turn loosely shaped JSON into rows and series.

A part is a plain dict with a `kind`; the template renders each kind one way. Only plot HTML
made here by plotly is marked safe; every other string is escaped by the template.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Iterable, Iterator
from typing import Any

from markupsafe import Markup

# ---------------------------------------------------------------- formatting


def fmt(x: Any) -> str:
    """A number as a short string (3-4 significant digits), None as an em dash."""
    if x is None:
        return "—"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return f"{x:,}"
    if isinstance(x, float):
        if math.isnan(x):
            return "nan"
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        if x == 0:
            return "0"
        if abs(x) < 1e-3 or abs(x) >= 1e5:
            return f"{x:.2e}"
        return f"{x:.4g}"
    if isinstance(x, (list, tuple)) and len(x) <= 8 and all(_is_scalar(v) for v in x):
        return "[" + ", ".join(fmt(v) for v in x) + "]"
    if isinstance(x, dict) and len(x) <= 6 and all(_is_scalar(v) for v in x.values()):
        return ", ".join(f"{k}={fmt(v)}" for k, v in x.items())
    text = str(x)
    return text if len(text) <= 300 else text[:297] + "..."


def fmt_tol(tol: Any) -> str:
    """A tolerance as written by the suites: a number, {"atol":..,"rtol":..}, or a string."""
    if isinstance(tol, dict):
        return " ".join(f"{k} {fmt(v)}" for k, v in tol.items())
    return fmt(tol)


def cell(text: Any, cls: str = "", title: str = "") -> dict:
    """A table cell with a CSS class (pass, fail, warn, num) and a hover title."""
    return {"text": text if isinstance(text, str) else fmt(text), "cls": cls, "title": title}


def _is_scalar(v: Any) -> bool:
    return v is None or isinstance(v, (bool, int, float, str))


def is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def as_float(v: Any) -> float | None:
    """v as a finite-or-infinite float, or None if it is not a number."""
    if is_number(v):
        return float(v)
    if isinstance(v, str):
        try:
            return float(v)
        except ValueError:
            return None
    return None


# ---------------------------------------------------------------- parts


def table(title: str, columns: list[str], rows: list[list[Any]], note: str = "",
          collapsed: bool = False, limit: int = 5000, style: str = "") -> dict:
    """A table part; cells may be plain values or `cell(...)` dicts. Rows past `limit` are cut
    (and the note says so) to keep the page usable. style "grid": compact cells, for a matrix
    that must fit the window."""
    cut = len(rows) - limit
    rows = rows[:limit]
    if cut > 0:
        note = f"{note} ({cut} more rows not shown)".strip()
    body = [[c if isinstance(c, dict) else cell(c) for c in row] for row in rows]
    return {"kind": "table", "title": title, "columns": columns, "rows": body, "note": note,
            "collapsed": collapsed, "style": style}


def plot(title: str, html: str, note: str = "") -> dict:
    return {"kind": "plot", "title": title, "html": Markup(html), "note": note}


def missing(title: str, text: str) -> dict:
    """Says what is missing and how to produce it."""
    return {"kind": "missing", "title": title, "text": text}


def error(title: str, text: str) -> dict:
    """Says that an input exists but could not be used, and why."""
    return {"kind": "error", "title": title, "text": text}


def note(title: str, text: str) -> dict:
    return {"kind": "note", "title": title, "text": text}


def pre(title: str, text: str, note: str = "") -> dict:
    return {"kind": "pre", "title": title, "text": text, "note": note}


def kv(title: str, items: Iterable[tuple[str, Any]], note: str = "",
       collapsed: bool = False) -> dict:
    return {"kind": "kv", "title": title, "note": note, "collapsed": collapsed,
            "items": [(str(k), v if isinstance(v, str) else fmt(v)) for k, v in items]}


def cards(items: list[dict]) -> dict:
    """Headline figures: each item {label, value, cls, sub}."""
    return {"kind": "cards", "title": "", "items": items}


def card(label: str, value: Any, cls: str = "", sub: str = "",
         lines: list[str] | None = None) -> dict:
    """One headline figure; `lines` (several short statements) replaces the single value."""
    return {"label": label, "value": value if isinstance(value, str) else fmt(value),
            "cls": cls, "sub": sub, "lines": lines or []}


def image(title: str, png: bytes, alt: str, note: str = "") -> dict:
    src = "data:image/png;base64," + base64.b64encode(png).decode()
    return {"kind": "image", "title": title, "src": src, "alt": alt, "note": note}


def row_of(parts: list[dict]) -> dict:
    """Parts shown side by side (two columns on a wide screen)."""
    return {"kind": "row", "title": "", "parts": parts}


# ---------------------------------------------------------------- tolerant readers


def walk(obj: Any, path: tuple = ()) -> Iterator[tuple[tuple, Any]]:
    """Every (path, value) in nested dicts/lists, depth first, lists of scalars kept whole."""
    yield path, obj
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from walk(v, path + (str(k),))
    elif isinstance(obj, list) and not all(_is_scalar(v) for v in obj):
        for i, v in enumerate(obj):
            yield from walk(v, path + (str(i),))


def dict_lists(obj: Any) -> list[tuple[str, list[dict]]]:
    """Every outermost list of dicts inside obj, named by its dotted path ("" at the top)."""
    found: list[tuple[tuple, list[dict]]] = []
    for path, value in walk(obj):
        if any(path[: len(p)] == p for p, _ in found):
            continue  # inside a list already taken whole
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            found.append((path, value))
    return [(".".join(p), v) for p, v in found]


def numeric_series(obj: Any, min_len: int = 5) -> list[tuple[str, list[float]]]:
    """Every list of at least `min_len` numbers inside obj, named by its dotted path."""
    out = []
    for path, value in walk(obj):
        if (isinstance(value, list) and len(value) >= min_len
                and all(is_number(v) or v is None for v in value)
                and any(is_number(v) for v in value)):
            out.append((".".join(path), [float(v) if v is not None else math.nan for v in value]))
    return out


def scalars(obj: Any, skip_lists: bool = True) -> list[tuple[str, Any]]:
    """Every scalar leaf (number, string, bool) not inside a list, by dotted path."""
    out = []
    for path, value in walk(obj):
        if not path or (skip_lists and any(p.isdigit() for p in path)):
            continue
        if _is_scalar(value) and value is not None:
            out.append((".".join(path), value))
    return out


def flat_row(d: dict, prefix: str = "") -> dict:
    """A dict with nested dicts flattened to dotted keys (lists kept as values)."""
    out: dict = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flat_row(v, key + "."))
        else:
            out[key] = v
    return out


def generic_table(title: str, rows: list[dict], note: str = "", collapsed: bool = False,
                  max_cols: int = 14) -> dict:
    """A table of dict rows with the union of their (flattened) keys as columns; long numeric
    lists are summarised by their length so that a table never carries a whole series."""
    flat = [flat_row(r) for r in rows]
    columns: list[str] = []
    for r in flat:
        for k in r:
            if k not in columns:
                columns.append(k)
    hidden = columns[max_cols:]
    columns = columns[:max_cols]
    if hidden:
        note = f"{note} (columns not shown: {', '.join(hidden)})".strip()
    body = []
    for r in flat:
        line = []
        for c in columns:
            v = r.get(c)
            if isinstance(v, list) and len(v) > 8:
                v = f"[{len(v)} values]"
            line.append(cell(v, _status_class(c, v)))
        body.append(line)
    return table(title, columns, body, note=note, collapsed=collapsed)


def _status_class(column: str, value: Any) -> str:
    if not isinstance(value, (str, bool)):
        return "num" if is_number(value) else ""
    text = str(value).lower()
    if column.lower() in ("status", "verdict", "passed", "ok", "result", "outcome", "killed"):
        if text in ("pass", "passed", "ok", "true", "yes", "killed"):
            return "pass"
        if text in ("fail", "failed", "false", "no", "survived", "error"):
            return "fail"
        if text in ("xfail", "xfailed", "skipped", "timeout"):
            return "warn"
    return ""


def lookup(d: Any, *names: str, default: Any = None) -> Any:
    """The first of `names` present in dict d (case-insensitive), else default."""
    if not isinstance(d, dict):
        return default
    lower = {str(k).lower(): v for k, v in d.items()}
    for n in names:
        if n.lower() in lower:
            return lower[n.lower()]
    return default
