"""A trained model back from its checkpoint: the GPT (weights loaded, eval mode) and tokenizer.

The config is size-checked and the arrays validated by load_checkpoint before the GPT is built;
arrays that do not fit the module (missing, extra, wrong shape) are a CheckpointError.
"""

from __future__ import annotations

from pathlib import Path

from ..data import load_tokenizer
from ..data.base import Tokenizer, TokenizerError
from ..engine import Generator
from ..models.gpt import GPT
from .checkpoint import Checkpoint, load_checkpoint
from .manifest import CheckpointError, model_config_of


def load_model(path: str | Path,
               max_params: int | None = None) -> tuple[GPT, Tokenizer, Checkpoint]:
    """(model, tokenizer, checkpoint) rebuilt from the checkpoint at `path`, weights loaded.

    The model is in eval mode, in the dtype it was trained in; no corpus is needed.
    """
    ckpt = load_checkpoint(path, max_params)
    config = model_config_of(ckpt.model_config, path)
    try:
        tokenizer = load_tokenizer(ckpt.tokenizer)
    except TokenizerError as e:
        raise CheckpointError(f"checkpoint {path}: field 'tokenizer': {e}") from None
    if tokenizer.vocab_size != config.vocab_size:
        raise CheckpointError(f"checkpoint {path}: its tokenizer has {tokenizer.vocab_size} ids "
                              f"but model_config.vocab_size is {config.vocab_size}")
    dtype = next(iter(ckpt.model.values())).dtype
    model = GPT(config, generator=Generator(0), dtype=dtype)  # init is overwritten just below
    try:
        model.load_state_dict(ckpt.model)
    except (KeyError, ValueError) as e:
        raise CheckpointError(f"checkpoint {path}: its arrays do not fit its model_config: "
                              f"{e.args[0] if e.args else e}") from None
    return model.eval(), tokenizer, ckpt
