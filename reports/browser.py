"""Open a built report in headless Chromium (Debian's /usr/bin/chromium, driven by Playwright)
and say what rendered: sections, drawn plots, tables, console errors and warnings, and every
request made.

Used by the browser test and by the main job (which keeps a screenshot of the real report).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
WIDTH = 1400  # the window the page must fit: nothing wider is cut off or scrolls sideways
PHONE = (390, 844)  # a phone's viewport (CSS px): the page must not scroll sideways there either
# Console message types that mean something went wrong: plotly.js logs its warnings (an invalid
# colour, say) with console.trace, so "trace" counts as well as "warning" and "error".
PROBLEMS = ("error", "warning", "trace", "assert")
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]

_SECTION_STATS = """
() => Array.from(document.querySelectorAll('main > section')).map(s => ({
  id: s.id,
  visible: s.getBoundingClientRect().height > 0,
  plots: s.querySelectorAll('.plotly-graph-div').length,
  drawn: Array.from(s.querySelectorAll('.plotly-graph-div'))
           .filter(d => d.querySelector('.main-svg')
                        && d.getBoundingClientRect().height > 50).length,
  tables: s.querySelectorAll('table').length,
  images: Array.from(s.querySelectorAll('img')).filter(i => i.naturalWidth > 10).length,
  missing: s.querySelectorAll('.missing').length,
  errors: s.querySelectorAll('.error').length,
}))
"""

# Elements whose content is wider than their box (scrolls or is clipped sideways), and elements
# that reach past the right edge of the window; each as "section: tag.class (title) +N px".
_CUT_OFF = """
(width) => {
  const out = [];
  const label = e => {
    const sec = e.closest('main > section');
    const title = e.closest('.part') && e.closest('.part').querySelector('h3');
    return (sec ? sec.id : '?') + ': ' + e.tagName.toLowerCase()
      + (e.className && typeof e.className === 'string' ? '.' + e.className.split(' ')[0] : '')
      + (title ? ' (' + title.textContent.trim().slice(0, 60) + ')' : '');
  };
  for (const e of document.querySelectorAll('main *')) {
    if (e.closest('.plotly-graph-div') && !e.classList.contains('plotly-graph-div')) continue;
    const r = e.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) continue;
    if (e.closest('details:not([open])') && e.tagName !== 'SUMMARY') continue;
    if (r.right > width + 1) out.push(label(e) + ' +' + Math.round(r.right - width) + ' px');
    else if (e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflowX !== 'visible')
      out.push(label(e) + ' scrolls sideways +' + (e.scrollWidth - e.clientWidth) + ' px');
    else if (e.scrollHeight > e.clientHeight + 1 && getComputedStyle(e).overflowY !== 'visible'
             && !e.closest('details') && e.tagName !== 'PRE')
      out.push(label(e) + ' scrolls down +' + (e.scrollHeight - e.clientHeight) + ' px');
  }
  return Array.from(new Set(out));
}
"""


# Whether the document scrolls sideways, and how much of the window the navigation bar takes.
_LAYOUT = """
() => ({scroll_width: document.documentElement.scrollWidth, inner_width: window.innerWidth,
        inner_height: window.innerHeight,
        nav_height: document.querySelector('nav')
                      ? document.querySelector('nav').getBoundingClientRect().height : 0})
"""


@dataclass
class PageCheck:
    sections: dict[str, dict] = field(default_factory=dict)
    console_errors: list[str] = field(default_factory=list)
    console_warnings: list[str] = field(default_factory=list)  # warning, trace and assert
    requests: list[str] = field(default_factory=list)
    cut_off: list[str] = field(default_factory=list)  # wider than the window or their box
    layout: dict = field(default_factory=dict)  # scroll_width, inner_width, nav_height (px)
    screenshot: Path | None = None
    section_shots: dict[str, Path] = field(default_factory=dict)

    @property
    def console_problems(self) -> list[str]:
        """Every error and warning the page logged, errors first."""
        return self.console_errors + self.console_warnings

    @property
    def remote_requests(self) -> list[str]:
        return [u for u in self.requests if not u.startswith(("file:", "data:"))]


def unavailable() -> str | None:
    """Why the browser check cannot run here, or None if it can."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install -r requirements/lock.txt)"
    if not (Path(CHROMIUM).exists() or shutil.which("chromium")):
        return f"{CHROMIUM} not found (Debian: apt-get install chromium)"
    return None


def check_page(page_path: Path, screenshot: Path | None = None, timeout_ms: int = 60_000,
               sections_dir: Path | None = None, width: int = WIDTH,
               height: int = 900) -> PageCheck:
    """Load page_path in a window `width` x `height` px, wait until every plot is drawn, collect
    what happened; with sections_dir, also one screenshot per section (<id>.png)."""
    from playwright.sync_api import sync_playwright

    result = PageCheck()
    executable = CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, headless=True, args=FLAGS)
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            page.on("console", lambda m: _console(result, m.type, m.text))
            page.on("pageerror", lambda e: result.console_errors.append(f"pageerror: {e}"))
            page.on("request", lambda r: result.requests.append(r.url))
            page.goto(page_path.resolve().as_uri(), wait_until="load", timeout=timeout_ms)
            page.wait_for_function(
                "() => Array.from(document.querySelectorAll('.plotly-graph-div'))"
                ".every(d => d.querySelector('.main-svg'))", timeout=timeout_ms)
            result.sections = {s["id"]: s for s in page.evaluate(_SECTION_STATS)}
            result.cut_off = page.evaluate(_CUT_OFF, width)
            result.layout = page.evaluate(_LAYOUT)
            if sections_dir is not None:
                sections_dir.mkdir(parents=True, exist_ok=True)
                page.add_style_tag(content="nav { position: static !important; }")  # not on top
                for sid in result.sections:
                    shot = sections_dir / f"{sid}.png"
                    page.locator(f"main > section#{sid}").screenshot(path=str(shot))
                    result.section_shots[sid] = shot
            if screenshot is not None:
                screenshot.parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(screenshot), full_page=True)
                result.screenshot = screenshot
        finally:
            browser.close()
    return result


def _console(result: PageCheck, kind: str, text: str) -> None:
    """File one console message: errors and warnings kept (with their type), the rest ignored."""
    if kind == "error":
        result.console_errors.append(text)
    elif kind in PROBLEMS:
        result.console_warnings.append(f"{kind}: {text}")
