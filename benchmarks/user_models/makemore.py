"""makemore-style models on a names-like stream (vocab 27, token 0 = start/end): its Transformer
(explicit masked attention with a tril buffer, a hand-written tanh GELU) and its MLP (Bengio
et al.: the last block_size token embeddings concatenated, one tanh hidden layer)."""

from __future__ import annotations

import math

import numpy as np

VOCAB, BLOCK, BATCH = 27, 16, 32


def transformer(L, vocab_size=VOCAB, block_size=BLOCK, n_layer=4, n_head=4, n_embd=64):
    nn, F = L.nn, L.nn.functional

    class NewGELU(nn.Module):
        def forward(self, x):
            return 0.5 * x * (1.0 + L.tanh(math.sqrt(2.0 / math.pi) *
                                           (x + 0.044715 * L.pow(x, 3.0))))

    class CausalSelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(n_embd, 3 * n_embd)
            self.c_proj = nn.Linear(n_embd, n_embd)
            self.register_buffer("bias", L.tril(L.ones(block_size, block_size))
                                 .view(1, 1, block_size, block_size))

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(n_embd, dim=2)
            k = k.view(B, T, n_head, C // n_head).transpose(1, 2)
            q = q.view(B, T, n_head, C // n_head).transpose(1, 2)
            v = v.view(B, T, n_head, C // n_head).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
            att = F.softmax(att, dim=-1)
            y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
            return self.c_proj(y)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(n_embd)
            self.attn = CausalSelfAttention()
            self.ln_2 = nn.LayerNorm(n_embd)
            self.mlp = nn.ModuleDict(dict(c_fc=nn.Linear(n_embd, 4 * n_embd),
                                          c_proj=nn.Linear(4 * n_embd, n_embd), act=NewGELU()))

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            m = self.mlp
            return x + m.c_proj(m.act(m.c_fc(self.ln_2(x))))

    class Transformer(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(vocab_size, n_embd)
            self.wpe = nn.Embedding(block_size, n_embd)
            self.h = nn.ModuleList([Block() for _ in range(n_layer)])
            self.ln_f = nn.LayerNorm(n_embd)
            self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)

        def forward(self, idx, targets=None):
            b, t = idx.size()
            pos = L.arange(0, t, dtype=L.long).unsqueeze(0)
            x = self.wte(idx) + self.wpe(pos)
            for block in self.h:
                x = block(x)
            logits = self.lm_head(self.ln_f(x))
            loss = None
            if targets is not None:
                loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1),
                                       ignore_index=-1)
            return logits, loss

    return Transformer()


def mlp(L, vocab_size=VOCAB, block_size=BLOCK, n_embd=64, n_embd2=64):
    nn, F = L.nn, L.nn.functional

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(vocab_size + 1, n_embd)  # + a "blank" token for padding
            self.mlp = nn.Sequential(nn.Linear(block_size * n_embd, n_embd2), nn.Tanh(),
                                     nn.Linear(n_embd2, vocab_size))

        def forward(self, idx, targets=None):
            embs = []
            for _ in range(block_size):  # each position looks back block_size tokens
                embs.append(self.wte(idx))
                idx = L.roll(idx, 1, 1)
                idx[:, 0] = vocab_size
            x = L.cat(embs, -1)
            logits = self.mlp(x)
            loss = None
            if targets is not None:
                loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1),
                                       ignore_index=-1)
            return logits, loss

    return MLP()


def names_batch(L, batch_size=BATCH, block_size=BLOCK, seed=0):
    """Seeded words of 2-15 letters framed by token 0; targets -1 after the end (ignored)."""
    rng = np.random.default_rng(seed)
    x = np.zeros((batch_size, block_size), np.int64)
    y = np.full((batch_size, block_size), -1, np.int64)
    for i in range(batch_size):
        word = rng.integers(1, VOCAB, rng.integers(2, block_size))
        x[i, 1:len(word) + 1] = word
        y[i, :len(word)] = word
        y[i, len(word)] = 0
    return L.tensor(x, dtype=L.long), L.tensor(y, dtype=L.long)


def build(L, kind: str = "transformer"):
    L.manual_seed(0)
    m = transformer(L) if kind == "transformer" else mlp(L)
    opt = L.optim.AdamW(m.parameters(), lr=5e-4, weight_decay=0.01, betas=(0.9, 0.99),
                        eps=1e-8)
    x, y = names_batch(L)

    def step():
        _, loss = m(x, y)
        m.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss.item()

    return step
