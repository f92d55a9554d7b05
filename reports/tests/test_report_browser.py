"""The built report in a real browser (headless Chromium via Playwright, 1,400 px wide): every
section renders with its plots and tables, nothing is cut off or scrolls sideways, nothing is
logged as an error or a warning (plotly.js warns of a colour it cannot read), nothing is fetched
from the network. At a phone's width (390 px) the page
does not scroll sideways and the navigation bar stays one short line.

Screenshots go to reports/out/browser-test/ (ignored by git) for people and CI to look at.
"""

from __future__ import annotations

from collections import Counter

import pytest

from artifacts import ROOT
from reports import browser, figures
from reports.build import build_report
from reports.tests.fixtures import write_fixture_artifacts

pytestmark = pytest.mark.browser

SHOTS = ROOT / "reports" / "out" / "browser-test"
SECTIONS = ["summary", "job", "verification", "performance", "memory", "training", "provenance"]
# Plots each section draws from the fixture: optimizer error per step; step-time ratios, scaling,
# per-op profile and asv history; memory pair; loss curves and attention heatmaps.
FIXTURE_PLOTS = {"verification": 1, "performance": 4, "memory": 1, "training": 2}


def _listed(messages: list[str]) -> str:
    """Each distinct console message once, with how many times it was logged."""
    counts = Counter(messages)
    return f"{len(messages)} console error(s)/warning(s):\n" + "\n".join(
        f"{n}x {m}" for m, n in counts.items())


@pytest.fixture(scope="module")
def needs_browser():
    reason = browser.unavailable()
    if reason:
        pytest.skip(f"browser test needs Chromium and Playwright: {reason}")


@pytest.mark.slow
def test_report_renders_in_chromium_with_every_plot_and_table(tmp_path, monkeypatch,
                                                              needs_browser):
    dirs = write_fixture_artifacts(tmp_path)
    monkeypatch.setenv("MINITORCH_ARTIFACTS", str(dirs["artifacts"]))
    page = build_report(tmp_path / "out", dirs["artifacts"], None, dirs["asv_results"])
    shot = SHOTS / "fixture.png"
    result = browser.check_page(page, shot, sections_dir=SHOTS / "fixture-sections")
    assert result.cut_off == [], result.cut_off
    assert set(result.section_shots) == set(SECTIONS)
    assert list(result.sections) == SECTIONS
    for sid, stats in result.sections.items():
        assert stats["visible"], sid
        assert stats["drawn"] == stats["plots"] == FIXTURE_PLOTS.get(sid, 0), (sid, stats)
        assert stats["errors"] == 0 and stats["missing"] == 0, (sid, stats)
        if sid != "summary":
            assert stats["tables"] >= 1, (sid, stats)
    assert result.console_problems == [], _listed(result.console_problems)
    assert result.requests and result.remote_requests == [], result.remote_requests
    assert shot.stat().st_size > 50_000


@pytest.mark.slow
def test_report_fits_a_phone_screen(tmp_path, monkeypatch, needs_browser):
    """390 px: no horizontal overflow of the page (a wide table scrolls inside its own box), and
    the sticky navigation takes under a tenth of the screen (it wrapped to 3 lines, 120 px)."""
    dirs = write_fixture_artifacts(tmp_path)
    monkeypatch.setenv("MINITORCH_ARTIFACTS", str(dirs["artifacts"]))
    page = build_report(tmp_path / "out", dirs["artifacts"], None, dirs["asv_results"])
    width, height = browser.PHONE
    result = browser.check_page(page, SHOTS / "phone.png", width=width, height=height)
    layout = result.layout
    assert layout["inner_width"] == width, layout
    assert layout["scroll_width"] <= layout["inner_width"], layout
    assert 0 < layout["nav_height"] < height / 10, layout
    assert all(s["drawn"] == s["plots"] for s in result.sections.values()), result.sections
    assert result.console_problems == [], _listed(result.console_problems)


@pytest.mark.slow
def test_page_check_catches_a_page_wider_than_a_phone(tmp_path, needs_browser):
    """Negative control: a 600 px wide block at 390 px makes the page scroll sideways."""
    wide = tmp_path / "wide.html"
    wide.write_text('<html><head><meta name="viewport" content="width=device-width, '
                    'initial-scale=1"></head><body><nav>a</nav><main><section id="s">'
                    '<div style="width:600px">wide</div></section></main></body></html>')
    result = browser.check_page(wide, width=browser.PHONE[0], height=browser.PHONE[1])
    assert result.layout["scroll_width"] > result.layout["inner_width"] == 390, result.layout


@pytest.mark.slow
def test_empty_report_renders_its_notes_without_errors(tmp_path, monkeypatch, needs_browser):
    art = tmp_path / "empty"
    art.mkdir()
    monkeypatch.setenv("MINITORCH_ARTIFACTS", str(art))
    page = build_report(tmp_path / "out", art, None, tmp_path / "no-asv")
    result = browser.check_page(page, SHOTS / "empty.png")
    assert list(result.sections) == SECTIONS
    for sid in ("verification", "performance", "memory", "training"):
        stats = result.sections[sid]
        assert stats["visible"] and stats["missing"] >= 1 and stats["errors"] == 0, (sid, stats)
        assert stats["plots"] == 0
    assert result.console_problems == [], _listed(result.console_problems)
    assert result.remote_requests == []


@pytest.mark.slow
def test_page_check_catches_a_remote_request_and_a_script_error(tmp_path, needs_browser):
    """Negative control: a page that loads a CDN script and throws is reported as such."""
    bad = tmp_path / "bad.html"
    bad.write_text('<html><head><script src="https://cdn.example.invalid/x.js"></script></head>'
                   '<body><main><section id="s"><div class="plotly-graph-div"><svg '
                   'class="main-svg" height="100" width="100"></svg></div></section></main>'
                   '<script>undefinedFunction()</script></body></html>')
    result = browser.check_page(bad)
    assert result.remote_requests == ["https://cdn.example.invalid/x.js"]
    assert any("undefinedFunction" in e for e in result.console_errors)


@pytest.mark.slow
def test_page_check_catches_a_table_wider_than_the_window(tmp_path, needs_browser):
    """Negative control: a table that scrolls sideways at 1,400 px is reported as cut off."""
    wide = tmp_path / "wide.html"
    cells = "".join(f"<td>column-{i:03d}-wide</td>" for i in range(60))
    wide.write_text('<html><body><main><section id="s"><div class="part"><h3>Wide</h3>'
                    '<div class="table-wrap" style="overflow-x:auto"><table><tr>'
                    f'{cells}</tr></table></div></div></section></main></body></html>')
    result = browser.check_page(wide)
    assert any(c.startswith("s: div.table-wrap (Wide) scrolls sideways") for c in
               result.cut_off), result.cut_off


@pytest.mark.slow
def test_page_check_catches_a_plotly_colour_warning_and_a_console_warning(tmp_path,
                                                                          needs_browser):
    """Negative control: hatched bars with one colour per bar and no pattern background (the
    Performance plot before issue 36) make plotly.js warn "Invalid color specifier" on every
    redraw; a console.warn is caught too. Neither is an error, so both count as warnings."""
    import plotly.graph_objects as go

    fig = figures.new_figure()
    fig.add_trace(go.Bar(x=["a", "b"], y=[1, 2], marker={
        "color": ["#c4c9d0", "#1f77b4"], "pattern": {"shape": ["/", ""], "fgcolor": "#fff"}}))
    page = tmp_path / "colour.html"
    page.write_text(f"<html><head><script>{figures.plotly_js()}</script></head><body><main>"
                    f'<section id="s">{figures.to_div(fig)}</section></main>'
                    "<script>console.warn('planted warning')</script></body></html>")
    result = browser.check_page(page)
    assert result.console_errors == [], result.console_errors
    assert "warning: planted warning" in result.console_warnings, result.console_warnings
    colour = [w for w in result.console_warnings if "Invalid color specifier" in w]
    assert colour and all(w.startswith("trace: ") for w in colour), result.console_warnings
    assert result.console_problems == result.console_warnings
