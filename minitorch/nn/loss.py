"""Loss modules (torch.nn names and constructor arguments): each forward(input, target) is one
call of nn.functional with the module's reduction and options. No parameters: weight and
pos_weight are buffers, as in torch (cast by `to`, listed by state_dict when given)."""

from __future__ import annotations

from ..engine import Tensor
from . import functional as F
from .activation import _Stateless
from .functional.loss import _check_reduction


class _Loss(_Stateless):
    """reduction ('mean', 'sum' or 'none'), checked when the module is built."""

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean"):
        _check_reduction(type(self).__name__, reduction, size_average, reduce)
        self.reduction = reduction


class MSELoss(_Loss):
    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.l1_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    def __init__(self, size_average=None, reduce=None, reduction: str = "mean",
                 beta: float = 1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    def __init__(self, reduction: str = "mean", delta: float = 1.0):
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class NLLLoss(_Loss):
    """F.nll_loss on log-probabilities (N, C) or (N, C, d...) and int64 class ids."""

    def __init__(self, weight: Tensor | None = None, size_average=None,
                 ignore_index: int = -100, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.ignore_index = ignore_index

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.nll_loss(input, target, self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class CrossEntropyLoss(_Loss):
    """F.cross_entropy on logits and class ids or class probabilities."""

    def __init__(self, weight: Tensor | None = None, size_average=None,
                 ignore_index: int = -100, reduce=None, reduction: str = "mean",
                 label_smoothing: float = 0.0):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.cross_entropy(input, target, self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class BCELoss(_Loss):
    """F.binary_cross_entropy on probabilities; weight rescales each element."""

    def __init__(self, weight: Tensor | None = None, size_average=None, reduce=None,
                 reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy(input, target, self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """F.binary_cross_entropy_with_logits; weight rescales each element, pos_weight the
    positive term."""

    def __init__(self, weight: Tensor | None = None, size_average=None, reduce=None,
                 reduction: str = "mean", pos_weight: Tensor | None = None):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy_with_logits(input, target, self.weight,
                                                  reduction=self.reduction,
                                                  pos_weight=self.pos_weight)
