"""SummaryWriter: torch.utils.tensorboard's writer for scalars, text, histograms and hparams."""

from __future__ import annotations

import os
import socket
import time
from datetime import datetime

from . import summary
from .records import EventFile, event


def _step(global_step) -> int:
    if global_step is None:
        return 0
    try:
        return int(global_step)  # torch's int(step): NumPy integers and 0-d tensors too
    except (TypeError, ValueError):
        raise TypeError(f"global_step must be an int, got {type(global_step).__name__}") from None


def _tag(tag, what: str = "tag") -> str:
    if not isinstance(tag, str):
        raise TypeError(f"{what} must be a str, got {type(tag).__name__}")
    return tag


class SummaryWriter:
    """Writes event files under log_dir (default runs/<Mon>DD_HH-MM-SS_<hostname><comment>)."""

    def __init__(self, log_dir=None, comment: str = "", purge_step: int | None = None,
                 max_queue: int = 10, flush_secs: float = 120, filename_suffix: str = ""):
        if not log_dir:
            stamp = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", stamp + "_" + socket.gethostname() + comment)
        if not isinstance(max_queue, int) or max_queue < 1:
            raise ValueError(f"max_queue must be a positive int, got {max_queue!r}")
        self.log_dir = log_dir
        self.purge_step = purge_step
        self.max_queue, self.flush_secs = max_queue, flush_secs
        self.filename_suffix = filename_suffix
        self.file_writer: EventFile | None = None
        self.all_writers: dict[str, EventFile] | None = None
        self._get_file_writer()

    def _new_file(self, logdir: str) -> EventFile:
        return EventFile(logdir, self.max_queue, self.flush_secs, self.filename_suffix)

    def _get_file_writer(self) -> EventFile:
        """The main event file; a closed writer opens a new one, as torch's does."""
        if self.file_writer is None or self.all_writers is None:
            self.file_writer = self._new_file(os.fspath(self.log_dir))
            self.all_writers = {self.file_writer.logdir: self.file_writer}
            if self.purge_step is not None:  # TensorBoard hides events from this step on
                step, now = _step(self.purge_step), time.time()
                self.file_writer.add(event(now, step, file_version="brain.Event:2"))
                self.file_writer.add(event(now, step, session_log_start=True))
                self.purge_step = None
        return self.file_writer

    def get_logdir(self):
        return self.log_dir

    def _add(self, record: bytes, global_step, walltime, writer: EventFile | None = None):
        wall = time.time() if walltime is None else float(walltime)
        (writer or self._get_file_writer()).add(event(wall, _step(global_step), summary=record))

    def add_scalar(self, tag, scalar_value, global_step=None, walltime=None,
                   new_style: bool = False, double_precision: bool = False) -> None:
        """scalar_value: a number, or a Tensor/array of one element (stored as float32 unless
        new_style and double_precision)."""
        self._add(summary.scalar(_tag(tag), scalar_value, new_style, double_precision),
                  global_step, walltime)

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None) -> None:
        """One run per key (log_dir/<main_tag with / as _>_<key>), each a series main_tag."""
        _tag(main_tag, "main_tag")
        if not isinstance(tag_scalar_dict, dict):
            raise TypeError(f"tag_scalar_dict must be a dict, got {type(tag_scalar_dict).__name__}")
        walltime = time.time() if walltime is None else walltime
        logdir = self._get_file_writer().logdir
        for tag, value in tag_scalar_dict.items():
            run = logdir + "/" + main_tag.replace("/", "_") + "_" + _tag(tag, "each key")
            if run not in self.all_writers:
                self.all_writers[run] = self._new_file(run)
            self._add(summary.scalar(main_tag, value), global_step, walltime,
                      self.all_writers[run])

    def add_text(self, tag, text_string, global_step=None, walltime=None) -> None:
        self._add(summary.text(_tag(tag), text_string), global_step, walltime)

    def add_histogram(self, tag, values, global_step=None, bins="tensorflow", walltime=None,
                      max_bins=None) -> None:
        """bins: "tensorflow" (TensorFlow's exponential edges), or any np.histogram bins."""
        self._add(summary.histogram(_tag(tag), values, bins, max_bins), global_step, walltime)

    def add_hparams(self, hparam_dict, metric_dict, hparam_domain_discrete=None, run_name=None,
                    global_step=None) -> None:
        """The hparams plugin's records and each metric as a scalar, in log_dir/run_name
        (default: the current time)."""
        records = summary.hparams(hparam_dict, metric_dict, hparam_domain_discrete)
        logdir = os.path.join(self._get_file_writer().logdir, run_name or str(time.time()))
        with SummaryWriter(log_dir=logdir) as w:
            for record in records:
                w._add(record, global_step, None)
            for k, v in metric_dict.items():
                w.add_scalar(k, v, global_step)

    def flush(self) -> None:
        for w in (self.all_writers or {}).values():
            w.flush()

    def close(self) -> None:
        for w in (self.all_writers or {}).values():
            w.close()
        self.file_writer = self.all_writers = None

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
