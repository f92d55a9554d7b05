"""A nanoGPT-style char GPT (its model.py's layout): fused c_attn, SDPA with is_causal, GELU MLP,
pre-LayerNorm blocks, cross-entropy on flattened logits, AdamW. The head is untied and has a
bias so the architecture is the one minitorch's GPT builds from ARCH (own_gpt_config)."""

from __future__ import annotations

import math

import numpy as np

ARCH = dict(vocab_size=65, block_size=64, n_layer=4, n_head=4, n_embd=128)
BATCH = 12


def model(L, vocab_size, block_size, n_layer, n_head, n_embd):
    nn, F = L.nn, L.nn.functional

    class CausalSelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(n_embd, 3 * n_embd)
            self.c_proj = nn.Linear(n_embd, n_embd)

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(n_embd, dim=2)
            q = q.view(B, T, n_head, C // n_head).transpose(1, 2)
            k = k.view(B, T, n_head, C // n_head).transpose(1, 2)
            v = v.view(B, T, n_head, C // n_head).transpose(1, 2)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            y = y.transpose(1, 2).contiguous().view(B, T, C)
            return self.c_proj(y)

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_fc = nn.Linear(n_embd, 4 * n_embd)
            self.gelu = nn.GELU(approximate="tanh")
            self.c_proj = nn.Linear(4 * n_embd, n_embd)

        def forward(self, x):
            return self.c_proj(self.gelu(self.c_fc(x)))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(n_embd)
            self.attn = CausalSelfAttention()
            self.ln_2 = nn.LayerNorm(n_embd)
            self.mlp = MLP()

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(vocab_size, n_embd)
            self.wpe = nn.Embedding(block_size, n_embd)
            self.h = nn.ModuleList([Block() for _ in range(n_layer)])
            self.ln_f = nn.LayerNorm(n_embd)
            self.lm_head = nn.Linear(n_embd, vocab_size)
            self.apply(self._init_weights)
            for name, p in self.named_parameters():
                if name.endswith("c_proj.weight"):  # GPT-2's scaled residual projections
                    nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * n_layer))

        def _init_weights(self, module):
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if isinstance(module, nn.Linear) and module.bias is not None:
                nn.init.zeros_(module.bias)

        def forward(self, idx, targets=None):
            b, t = idx.size()
            pos = L.arange(0, t, dtype=L.long)
            x = self.wte(idx) + self.wpe(pos)
            for block in self.h:
                x = block(x)
            logits = self.lm_head(self.ln_f(x))
            loss = None
            if targets is not None:
                loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
            return logits, loss

    return GPT()


def batch(L, vocab_size, block_size, batch_size=BATCH, seed=0):
    """A seeded random token stream cut into (B, T) inputs and their next tokens."""
    stream = np.random.default_rng(seed).integers(0, vocab_size, (batch_size, block_size + 1))
    x = L.tensor(stream[:, :-1].copy(), dtype=L.long)
    y = L.tensor(stream[:, 1:].copy(), dtype=L.long)
    return x, y


def build(L, arch=None, batch_size=BATCH):
    arch = {**ARCH, **(arch or {})}
    L.manual_seed(0)
    m = model(L, **arch)
    opt = L.optim.AdamW(m.parameters(), lr=6e-4, betas=(0.9, 0.95), weight_decay=0.1)
    x, y = batch(L, arch["vocab_size"], arch["block_size"], batch_size)

    def step():
        _, loss = m(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss.item()

    return step


def own_gpt_config():
    """minitorch's GPTConfig for the same architecture: GELU (tanh), biased fused Q/K/V and
    Linears, LayerNorm with bias, learned positions, MLP width 4 C."""
    from minitorch.models.gpt import PRESETS

    return PRESETS["gpt2-mini"].replace(**ARCH, n_hidden=4 * ARCH["n_embd"])


def build_own(L, batch_size=BATCH):
    """minitorch's own GPT (minitorch.models.gpt) on the same batch with the same AdamW."""
    from minitorch.models.gpt import GPT

    cfg = own_gpt_config()
    m = GPT(cfg, generator=L.Generator(0))
    opt = L.optim.AdamW(m.parameters(), lr=6e-4, betas=(0.9, 0.95), weight_decay=0.1)
    x, y = batch(L, cfg.vocab_size, cfg.block_size, batch_size)

    def step():
        _, loss = m(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss.item()

    return step
