"""Where test, benchmark and training code writes JSON results, and how (a neutral module: the
suites write through it, the report reads what it wrote; it imports neither, only the library's
atomic write).

Every suite writes its own file under ARTIFACTS (default reports/artifacts/, or
$MINITORCH_ARTIFACTS). The report only reads these files; it never runs tests.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from minitorch.io import atomic_write

ROOT = Path(__file__).resolve().parent.parent


def artifacts_dir() -> Path:
    path = Path(os.environ.get("MINITORCH_ARTIFACTS", ROOT / "reports" / "artifacts"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def write_json(name: str, payload: Any) -> Path:
    """Atomically write `payload` as artifacts/<name> (minitorch's one atomic write)."""
    return atomic_write(artifacts_dir() / name, json.dumps(payload, indent=1, default=_default))


def read_json(name: str) -> Any | None:
    """The parsed artifact, or None if it is missing or unreadable."""
    path = artifacts_dir() / name
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _default(obj: Any) -> Any:
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if hasattr(obj, "item"):
        return obj.item()
    return str(obj)
