"""What SIGINT, SIGTERM, SIGHUP and SIGUSR1 (which `train --ranks` sends its ranks through mpiexec)
do to a run: inside the training loop the first one asks it to stop at the next step boundary
(the loop writes a checkpoint there and says where); a second one, or one outside the loop,
stops at once. Each raises `Interrupted`, never a silent exit.
Handlers are installed only for the duration of `handled()` (the CLI's train command).
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator

SIGNALS = tuple(getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP", "SIGUSR1")
                if hasattr(signal, n))


def name(signum: int) -> str:
    """SIGINT for 2, and so on."""
    return signal.Signals(signum).name


class Interrupted(BaseException):
    """A run ended by a signal (a BaseException, as KeyboardInterrupt: `except Exception` does
    not swallow it). step: the step reached; saved_step and where: the checkpoint written at
    that step boundary and its manifest (None when the signal stopped the run at once)."""

    def __init__(self, signum: int, step: int | None = None, saved_step: int | None = None,
                 where: str | None = None):
        self.signum, self.step, self.saved_step, self.where = signum, step, saved_step, where
        super().__init__(f"{self.name}{'' if step is None else f' at step {step}'}")

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name

    @property
    def exit_code(self) -> int:
        return 128 + self.signum  # the shell's convention: 130 for SIGINT, 143 for SIGTERM


class _State:
    deferring = False  # inside the loop: the first signal waits for the step boundary
    pending: int | None = None  # that first signal


_STATE = _State()


def _handler(signum: int, frame) -> None:
    if _STATE.deferring and _STATE.pending is None:
        _STATE.pending = signum
        print(f"\n{signal.Signals(signum).name}: stopping after this step with a checkpoint "
              "(send it again to stop at once)", file=sys.stderr, flush=True)
        return
    raise Interrupted(signum)


@contextlib.contextmanager
def handled() -> Iterator[None]:
    """Install the handlers for the `with` block (the main thread only: elsewhere Python
    cannot); the previous handlers come back afterwards."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {s: signal.signal(s, _handler) for s in SIGNALS}
    _STATE.pending, _STATE.deferring = None, False
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        _STATE.pending, _STATE.deferring = None, False


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Inside: a first signal is only noted (see pending); the loop stops at the boundary."""
    was = _STATE.deferring
    _STATE.deferring = True
    try:
        yield
    finally:
        _STATE.deferring = was


def pending() -> int | None:
    """The signal waiting for the step boundary, if any."""
    return _STATE.pending
