"""torch.nn.functional: the one home of minitorch's functional API, one module per family
(layers, activation, attention, loss). Each F.name calls a registered op (fused ops for the
transformer's hot spots: engine/ops/fused.py) or is a composite of ops defined here; the
`*_composite` functions are the fused ops' reference decompositions."""

from .activation import (
    celu,
    elu,
    gelu,
    hardsigmoid,
    hardswish,
    hardtanh,
    leaky_relu,
    log_softmax,
    logsigmoid,
    mish,
    relu,
    relu6,
    selu,
    sigmoid,
    silu,
    softmax,
    softmin,
    softplus,
    softsign,
    tanh,
)
from .attention import (
    causal_self_attention,
    causal_self_attention_composite,
    rope,
    rope_tables,
    scaled_dot_product_attention,
)
from .layers import (
    batch_norm,
    check_dropout_p,
    dropout,
    embedding,
    embedding_options,
    layer_norm,
    layer_norm_composite,
    linear,
    linear_composite,
    norm_linear,
    norm_linear_composite,
    normalize,
    one_hot,
    padding_row,
    rms_norm,
    rms_norm_composite,
)
from .loss import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cross_entropy,
    cross_entropy_composite,
    huber_loss,
    l1_loss,
    mse_loss,
    nll_loss,
    smooth_l1_loss,
)

__all__ = [
    "batch_norm", "binary_cross_entropy", "binary_cross_entropy_with_logits",
    "causal_self_attention", "causal_self_attention_composite", "check_dropout_p",
    "cross_entropy", "cross_entropy_composite", "dropout", "elu", "embedding",
    "embedding_options", "gelu", "huber_loss", "l1_loss", "layer_norm", "layer_norm_composite",
    "leaky_relu", "linear", "linear_composite", "log_softmax", "mse_loss", "nll_loss",
    "norm_linear", "norm_linear_composite", "normalize", "one_hot", "padding_row", "relu",
    "rms_norm", "rms_norm_composite", "rope", "rope_tables", "scaled_dot_product_attention",
    "sigmoid", "silu", "smooth_l1_loss", "softmax", "softplus", "tanh",
    "celu", "selu", "softsign", "logsigmoid", "hardtanh", "relu6", "hardsigmoid", "hardswish",
    "mish", "softmin",
]
