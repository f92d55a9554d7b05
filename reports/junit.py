"""Reads pytest's JUnit XML (written by the main job) into counts, failures and xfail reasons."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class SuiteResult:
    name: str
    counts: dict[str, int] = field(default_factory=dict)  # passed, failed, error, skipped, xfailed
    failures: list[tuple[str, str]] = field(default_factory=list)  # (test id, message)
    xfails: list[tuple[str, str]] = field(default_factory=list)  # (test id, reason)
    skips: list[tuple[str, str]] = field(default_factory=list)  # (test id, reason)
    seconds: float | None = None


def read_junit(path: Path) -> SuiteResult:
    """Parse one JUnit file; raises ValueError with the path if it is not valid XML."""
    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError) as e:
        raise ValueError(f"{path}: not a readable JUnit XML file ({e})") from e
    name = path.stem.removeprefix("junit-")
    result = SuiteResult(name, {"passed": 0, "failed": 0, "error": 0, "skipped": 0,
                                "xfailed": 0})
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    seconds = [float(s.get("time", "nan")) for s in suites if s.get("time")]
    result.seconds = sum(seconds) if seconds else None
    for case in root.iter("testcase"):
        test_id = _test_id(case)
        outcome = _outcome(case)
        result.counts[outcome[0]] += 1
        if outcome[0] in ("failed", "error"):
            result.failures.append((test_id, outcome[1]))
        elif outcome[0] == "xfailed":
            result.xfails.append((test_id, outcome[1]))
        elif outcome[0] == "skipped":
            result.skips.append((test_id, outcome[1]))
    return result


def _test_id(case: ET.Element) -> str:
    cls, name = case.get("classname", ""), case.get("name", "")
    return f"{cls.replace('.', '/')}::{name}" if cls else name


def _outcome(case: ET.Element) -> tuple[str, str]:
    for tag, kind in (("failure", "failed"), ("error", "error")):
        el = case.find(tag)
        if el is not None:
            return kind, (el.get("message") or (el.text or "")).strip()[:500]
    el = case.find("skipped")
    if el is not None:
        message = (el.get("message") or "").strip()
        if el.get("type") == "pytest.xfail":
            return "xfailed", message
        return "skipped", message
    return "passed", ""
