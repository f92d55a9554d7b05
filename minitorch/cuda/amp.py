"""torch.cuda.amp: the deprecated CUDA spellings of torch.amp's GradScaler and autocast. With no
CUDA device both disable themselves, with torch's deprecation and CUDA warnings, and pass
everything through (a script that always builds a scaler, enabled or not, runs unchanged)."""

from __future__ import annotations

import warnings

from .. import amp
from ..engine.dtypes import float16


class GradScaler(amp.GradScaler):
    def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True):
        warnings.warn("`torch.cuda.amp.GradScaler(args...)` is deprecated. Please use "
                      "`torch.amp.GradScaler('cuda', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cuda", init_scale, growth_factor, backoff_factor, growth_interval,
                         enabled)


class autocast(amp.autocast):  # noqa: N801  (torch's name)
    def __init__(self, enabled: bool = True, dtype=float16, cache_enabled: bool = True):
        warnings.warn("`torch.cuda.amp.autocast(args...)` is deprecated. Please use "
                      "`torch.amp.autocast('cuda', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cuda", dtype, enabled, cache_enabled)
