"""The analytic memory footprint of one training step, counted from the architecture alone.

It is what an engine must hold at the peak of a step (parameters, gradients, Adam state, the
activations backward needs and the gradients backward is working on when that set peaks),
independent of how minitorch stores its graph. Every parameter's gradient counts from the start
of backward: an engine that keeps them in one buffer, as minitorch's flat storage does, holds
them all from the first one.
"""

from __future__ import annotations

import numpy as np

from minitorch.models import GPTConfig


def n_params(cfg: GPTConfig) -> int:
    """Parameter count from the config (the test checks it against the model)."""
    C, H, V, L = cfg.n_embd, cfg.n_hidden, cfg.vocab_size, cfg.n_layer
    norm = 2 * C if cfg.norm == "layernorm" and cfg.bias else C  # weight (+ bias)
    bias = 1 if cfg.bias else 0
    block = (2 * norm
             + C * 3 * C + (3 * C if cfg.qkv_bias else 0)  # c_attn
             + C * C + bias * C  # attn.c_proj
             + C * H + bias * H + H * C + bias * C)  # mlp.c_fc, mlp.c_proj
    wpe = cfg.block_size * C if cfg.pos == "learned" else 0
    return V * C + wpe + L * block + norm + C * V + bias * V


def activation_elements(cfg: GPTConfig, B: int, T: int) -> dict[str, int]:
    """Floating-point elements that backward needs, saved by the forward, per kind.

    N = B*T rows, C = n_embd, H = n_hidden, V = vocab, nh = n_head. Per block:
      - each of the two norms keeps its normalized input x_hat (N*C) and one statistic per
        row (1/std for LayerNorm, 1/rms for RMSNorm: N). Its output xhat*w + b need not be
        kept for the next Linear's weight gradient: folded into that Linear (w into its
        weight's columns, b into its bias), the gradient comes from x_hat (ops/fused.py
        norm_linear);
      - attention keeps q, k, v (3*N*C: the fused c_attn output), the softmax probabilities
        (B*nh*T*T: softmax's vjp and probs @ v's vjp both use them) and the merged heads
        (N*C, the input of attn.c_proj); the causal mask and RoPE tables are constants;
      - the MLP keeps its hidden activation once (N*H): ReLU's vjp needs only where it is
        positive, which its output gives, and mlp.c_proj needs the same output; GELU needs
        its input as well (another N*H).
    The head keeps ln_f's x_hat and statistic (N*C + N) and the log-probabilities
    of the cross-entropy (N*V). The residual adds, reshapes and transposes keep nothing.
    Every term is a minimum (no recomputation assumed), so an engine's saved set can only be
    larger: the census test checks that.
    """
    N, C, H, V = B * T, cfg.n_embd, cfg.n_hidden, cfg.vocab_size
    stats = N  # one per row: 1/std (LayerNorm) or 1/rms (RMSNorm)
    per_block = {
        "norm x_hat and row statistics": 2 * (N * C + stats),
        "q, k, v": 3 * N * C,
        "attention probabilities": B * cfg.n_head * T * T,
        "attention output (heads merged)": N * C,
        "MLP hidden": N * H * (2 if cfg.activation == "gelu" else 1),
    }
    out = {k: cfg.n_layer * v for k, v in per_block.items()}
    out["ln_f x_hat and row statistic"] = N * C + stats
    out["log-probabilities (cross-entropy)"] = N * V
    return out


def gradient_elements_in_flight(cfg: GPTConfig, B: int, T: int) -> int:
    """Floating-point elements of gradient that backward must hold beyond the saved activations,
    at the moment its working set peaks.

    Backward releases saved activations as it goes, but each op's input gradient is made while
    its output gradient is still live. Two moments bound it from below (no recomputation, no
    chunking of rows):
      - the head: lm_head's input gradient (N*C) is made while the logits' gradient is live; the
        logits' gradient can take the log-probabilities' place (they die there), so it adds
        nothing, and every block's activations are still saved;
      - the last block's MLP: mlp.c_proj's input gradient (N*H) is made while the residual
        stream's gradient (N*C, c_proj's output gradient) is live and the block still needs
        every activation it saved, while the head's saved arrays are already released. With
        ReLU that includes c_proj's input (ReLU's vjp reads its output), so the N*H gradient
        needs memory of its own; GELU's vjp reads its input instead, so once c_proj's weight
        gradient is made the gradient can take the place of c_proj's input, and adds nothing.
    """
    N, C, H = B * T, cfg.n_embd, cfg.n_hidden
    acts = activation_elements(cfg, B, T)
    head = acts["ln_f x_hat and row statistic"] + acts["log-probabilities (cross-entropy)"]
    hidden_grad = N * H if cfg.activation == "relu" else 0
    return max(N * C, hidden_grad + N * C - head)


def footprint(cfg: GPTConfig, B: int, T: int, dtype=np.float64) -> dict:
    """Bytes of the analytic footprint of one Adam training step, with its parts.

    Parameters, their gradients and Adam's two moments are 4 arrays per parameter; the
    activations are `activation_elements`, and backward's peak adds
    `gradient_elements_in_flight`; the token ids and targets are two (B, T) int64 arrays.
    """
    item = np.dtype(dtype).itemsize
    P = n_params(cfg)
    acts = activation_elements(cfg, B, T)
    parts = {
        "parameters": P * item,
        "gradients": P * item,
        "adam_exp_avg_and_exp_avg_sq": 2 * P * item,
        "activations": sum(acts.values()) * item,
        "gradients_in_flight": gradient_elements_in_flight(cfg, B, T) * item,
        "token_ids_and_targets": 2 * B * T * np.dtype(np.int64).itemsize,
    }
    return {"bytes": sum(parts.values()), "parts": parts, "activation_elements": acts,
            "n_params": P, "batch": B, "seq_len": T, "dtype": np.dtype(dtype).name}
