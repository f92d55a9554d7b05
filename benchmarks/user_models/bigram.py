"""The bigram language model of a "let's build GPT" lecture script, with its batching loop: a
random start per row (0-d tensors from randint), each row sliced out of the data tensor with
those bounds in a Python list comprehension and stacked."""

from __future__ import annotations

import numpy as np

VOCAB, BLOCK, BATCH, TOKENS = 65, 8, 32, 100_000


def build(L, batch_size=BATCH, block_size=BLOCK):
    nn, F = L.nn, L.nn.functional
    L.manual_seed(1337)
    text = np.random.default_rng(0).integers(0, VOCAB, TOKENS)  # stands in for encode(text)
    data = L.tensor(text, dtype=L.long)

    def get_batch():
        ix = L.randint(len(data) - block_size, (batch_size,))
        x = L.stack([data[i:i + block_size] for i in ix])
        y = L.stack([data[i + 1:i + block_size + 1] for i in ix])
        return x, y

    class BigramLanguageModel(nn.Module):
        def __init__(self, vocab_size):
            super().__init__()
            self.token_embedding_table = nn.Embedding(vocab_size, vocab_size)

        def forward(self, idx, targets=None):
            logits = self.token_embedding_table(idx)
            if targets is None:
                return logits, None
            B, T, C = logits.shape
            logits = logits.view(B * T, C)
            return logits, F.cross_entropy(logits, targets.view(B * T))

    model = BigramLanguageModel(VOCAB)
    optimizer = L.optim.AdamW(model.parameters(), lr=1e-3)

    def step():
        xb, yb = get_batch()
        _, loss = model(xb, yb)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        return loss.item()

    return step
