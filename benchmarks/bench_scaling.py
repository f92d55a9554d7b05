"""asv: the minitorch training step over the scaling grid of benchmarks/scaling.py
(batch, sequence length, width, depth, each varied alone around the seed preset)."""

from __future__ import annotations

from . import scaling


class Scaling:
    params = (scaling.point_names(), ["float32"])
    param_names = ["point", "dtype"]
    timeout = 300

    def setup(self, point, dtype):
        key = (point, dtype)
        if key not in _CACHE:  # asv re-runs setup before each timed call: build once
            _CACHE[key] = scaling.make_step(point, dtype)
            _CACHE[key]()
        self.step = _CACHE[key]

    def time_train_step(self, point, dtype):
        self.step()


_CACHE: dict = {}
