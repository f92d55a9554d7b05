"""Training progress: on a terminal, one bar redrawn in place (step, loss, tokens/s, ETA); in a
pipe or a log file, one plain line every few seconds. Evaluation lines print above either.

Only what is printed depends on the clock; nothing the run computes or saves does.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TextIO


def _duration(seconds: float) -> str:
    """12.3 -> '0:12', 3725 -> '1:02:05'."""
    s = int(round(seconds))
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class ProgressBar:
    """Progress of a run of `total` steps written to `stream`.

    Args:
        total: the run's last step.
        stream: a terminal (isatty) gets the redrawn bar, anything else the periodic lines.
        tokens_per_step: B * T, for tokens/s.
        interval: seconds between plain lines when not on a terminal.
        clock: monotonic seconds (a test passes a fake one).
    """

    def __init__(self, total: int, stream: TextIO, tokens_per_step: int = 0, width: int = 30,
                 interval: float = 5.0, clock: Callable[[], float] = time.perf_counter):
        self.total, self.stream, self.width, self.interval = total, stream, width, interval
        self.tokens_per_step, self.clock = tokens_per_step, clock
        self.tty = hasattr(stream, "isatty") and stream.isatty()
        self.t0 = self.last_draw = clock()
        self.first_step: int | None = None

    def update(self, step: int, loss: float | None) -> None:
        """Step `step` is done with this batch loss (None: the update was skipped)."""
        if self.first_step is None:
            self.first_step = step - 1
        now = self.clock()
        due = (now - self.last_draw >= (0.1 if self.tty else self.interval)
               or step >= self.total)
        if not due:
            return
        self.last_draw = now
        rate = (step - self.first_step) / max(now - self.t0, 1e-9)  # steps/s in this process
        eta = _duration((self.total - step) / max(rate, 1e-9))
        tok = f"{rate * self.tokens_per_step:,.0f} tok/s" if self.tokens_per_step else \
            f"{rate:.1f} it/s"
        loss_text = "skipped" if loss is None else f"{loss:.4f}"
        if self.tty:
            done = int(self.width * step / self.total)
            self.stream.write(f"\r[{'#' * done}{'.' * (self.width - done)}] {step}/{self.total} "
                              f"loss {loss_text} | {tok} | eta {eta} ")
        else:
            self.stream.write(f"step {step}/{self.total} | loss {loss_text} | {tok} | "
                              f"eta {eta}\n")
        self.stream.flush()

    def message(self, text: str) -> None:
        self.stream.write(("\r\033[K" if self.tty else "") + text + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()
