"""Gradient clipping: clip_grad_norm_ is implemented in nn/utils.py (torch.nn.utils, where nn can
use it without importing optim) and re-exported here, so `minitorch.optim.clip_grad_norm_` keeps
working."""

from ..nn.utils import clip_grad_norm_

__all__ = ["clip_grad_norm_"]
