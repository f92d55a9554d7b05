"""Where test, benchmark and training code writes JSON results, and how (a neutral module: the
suites write through it, the report reads what it wrote; it imports neither).

Every suite writes its own file under ARTIFACTS (default reports/artifacts/, or
$MINITORCH_ARTIFACTS). The report only reads these files; it never runs tests.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent


def artifacts_dir() -> Path:
    path = Path(os.environ.get("MINITORCH_ARTIFACTS", ROOT / "reports" / "artifacts"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def write_json(name: str, payload: Any) -> Path:
    """Atomically write `payload` as artifacts/<name> (temp file + rename)."""
    path = artifacts_dir() / name
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{name}.", suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        json.dump(payload, f, indent=1, default=_default)
    os.replace(tmp, path)
    return path


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
