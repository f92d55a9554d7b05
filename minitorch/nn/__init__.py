"""torch.nn: layers, containers, losses, activations, initializers and the functional API on
top of the engine (torch's names); nothing here imports optim, train, generate or the models."""

from . import functional, init, parallel, utils  # noqa: F401
from .activation import (
    CELU,
    ELU,
    GELU,
    SELU,
    Flatten,
    Hardsigmoid,
    Hardswish,
    Hardtanh,
    Identity,
    LeakyReLU,
    LogSigmoid,
    LogSoftmax,
    Mish,
    ReLU,
    ReLU6,
    Sigmoid,
    SiLU,
    Softmax,
    Softmin,
    Softplus,
    Softsign,
    Tanh,
)
from .layers import BatchNorm1d, BatchNorm2d, Dropout, Embedding, LayerNorm, Linear, RMSNorm
from .loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    HuberLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
    SmoothL1Loss,
)
from .module import Module, ModuleDict, ModuleList, Parameter, Sequential

__all__ = ["BCELoss", "BCEWithLogitsLoss", "BatchNorm1d", "BatchNorm2d", "CrossEntropyLoss",
           "Dropout", "ELU", "Embedding", "Flatten", "GELU", "HuberLoss", "Identity", "L1Loss",
           "LayerNorm", "LeakyReLU", "Linear", "LogSoftmax", "MSELoss", "Module", "ModuleDict",
           "ModuleList", "NLLLoss", "Parameter", "RMSNorm", "ReLU", "Sequential", "SiLU",
           "Sigmoid", "SmoothL1Loss", "Softmax", "Softplus", "Tanh", "functional", "init",
           "parallel", "utils", "CELU", "SELU", "Hardsigmoid", "Hardswish", "Hardtanh",
           "LogSigmoid", "Mish", "ReLU6", "Softmin", "Softsign"]
