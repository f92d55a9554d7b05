"""A hand-written, graph-free NumPy GPT step: forward, manual backward and flat-buffer Adam.

The yardstick for what NumPy itself can do on the `seed` preset (any LayerNorm + learned-position
config works, so gpt2-mini too). No autograd: every gradient below is derived by hand, and
benchmarks/tests/test_numpy_peer.py checks them against PyTorch autograd in float64.
Parameters, gradients and Adam moments each live in one flat buffer; parameters are views of it.
Shapes: B batch, T time, C n_embd, nh heads, hs C/nh, H hidden, V vocab, N = B*T rows.
"""

from __future__ import annotations

import math

import numpy as np

GELU_C = math.sqrt(2.0 / math.pi)


def row_sum(a):
    """Sum over the last dim as one BLAS matrix-vector product (as minitorch's kernels do)."""
    return a @ np.ones(a.shape[-1], a.dtype)


def col_sum(a, out=None):
    """Sum of (N, n) over its rows -> (n,) as ones @ a."""
    return np.matmul(np.ones(a.shape[0], a.dtype), a, out=out)


def layer_norm(x, w, b, eps):
    """y = xhat*w + b, xhat = (x - mean)/sqrt(var + eps) over the last dim.

    Returns y and the cache (xhat, rstd)."""
    xc = x - (row_sum(x) / x.shape[-1])[:, None]  # (N, C)
    var = np.einsum("nc,nc->n", xc, xc)[:, None] / x.shape[-1]  # (N, 1)
    rstd = 1.0 / np.sqrt(var + eps)
    xc *= rstd  # xhat, in place
    y = xc * w
    if b is not None:
        y += b
    return y, (xc, rstd)


def layer_norm_backward(dy, cache, w, gw, gb):
    """Writes grad_w = sum(dy*xhat), grad_b = sum(dy); returns
    grad_x = rstd*(dxhat - mean(dxhat) - xhat*mean(dxhat*xhat)), dxhat = dy*w."""
    xhat, rstd = cache
    np.einsum("nc,nc->c", dy, xhat, out=gw)
    if gb is not None:
        col_sum(dy, out=gb)
    dxhat = dy * w  # (N, C)
    C = dy.shape[-1]
    proj = np.einsum("nc,nc->n", dxhat, xhat)[:, None] / C  # (N, 1)
    dxhat -= (row_sum(dxhat) / C)[:, None]
    dxhat -= xhat * proj
    dxhat *= rstd
    return dxhat


def linear(x, w, b):
    """y = x @ w^T + b. x (N, in), w (out, in) -> (N, out)."""
    y = x @ w.T
    if b is not None:
        y += b
    return y


def linear_backward(dy, x, w, gw, gb, need_dx=True):
    """Writes grad_w = dy^T x and grad_b = sum(dy); returns grad_x = dy @ w (or None)."""
    np.matmul(dy.T, x, out=gw)
    if gb is not None:
        col_sum(dy, out=gb)
    return dy @ w if need_dx else None


def activation(h, kind):
    """relu or tanh-GELU of h (N, H); returns (y, cache)."""
    if kind == "relu":
        return np.maximum(h, 0.0), h
    u = GELU_C * (h + 0.044715 * (h * h * h))  # h**3 is ~40x slower (np.power)
    with np.errstate(over="ignore"):  # s = (1 + tanh u)/2 as a sigmoid: exp beats tanh on AVX2
        s = 1.0 / (1.0 + np.exp(-2.0 * u))
    return h * s, (h, s)


def activation_backward(dy, cache, kind):
    """relu: g*(h > 0) (relu'(0) = 0); gelu: g*(0.5(1+t) + 0.5 h (1-t^2) c (1 + 3*0.044715 h^2)),
    t = tanh(u), which is g*s*(1 + 2h (1-s) c (1 + 3*0.044715 h^2)) with s = (1 + t)/2."""
    if kind == "relu":
        dy *= cache > 0
        return dy
    h, s = cache
    du2 = 2.0 * GELU_C * (1.0 + 3.0 * 0.044715 * h * h)
    return dy * (s * (1.0 + h * (1.0 - s) * du2))


def attention(qkv, B, T, nh, mask_add):
    """Causal softmax(q k^T / sqrt(hs)) v from qkv (N, 3C); returns y (N, C) and the cache."""
    C = qkv.shape[-1] // 3
    hs = C // nh
    qkv5 = qkv.reshape(B, T, 3, nh, hs)
    q, k, v = (qkv5[:, :, i].transpose(0, 2, 1, 3) for i in range(3))  # (B, nh, T, hs) views
    att = q @ k.transpose(0, 1, 3, 2)  # (B, nh, T, T)
    att *= 1.0 / math.sqrt(hs)
    att += mask_add  # 0 on and below the diagonal, -inf above
    att -= att.max(axis=-1, keepdims=True)
    np.exp(att, out=att)
    att /= row_sum(att)[..., None]
    y = att @ v  # (B, nh, T, hs)
    y = y.transpose(0, 2, 1, 3).reshape(B * T, C)  # heads side by side (a copy when nh > 1)
    return y, (q, k, v, att)


def attention_backward(dy, cache, B, T, nh):
    """grad of qkv (N, 3C): dv = att^T dy, datt = dy v^T, ds = att*(datt - sum(datt*att))/sqrt(hs),
    dq = ds k, dk = ds^T q."""
    q, k, v, att = cache
    hs = q.shape[-1]
    C = nh * hs
    dyh = dy.reshape(B, T, nh, hs).transpose(0, 2, 1, 3)  # (B, nh, T, hs)
    dqkv = np.empty((B, T, 3, nh, hs), dtype=dy.dtype)
    dqkv[:, :, 2] = (att.transpose(0, 1, 3, 2) @ dyh).transpose(0, 2, 1, 3)  # dv
    datt = dyh @ v.transpose(0, 1, 3, 2)  # (B, nh, T, T)
    datt -= np.einsum("bhij,bhij->bhi", datt, att)[..., None]
    datt *= att
    datt *= 1.0 / math.sqrt(hs)
    dqkv[:, :, 0] = (datt @ k).transpose(0, 2, 1, 3)  # dq
    dqkv[:, :, 1] = (datt.transpose(0, 1, 3, 2) @ q).transpose(0, 2, 1, 3)  # dk
    return dqkv.reshape(B * T, 3 * C)


def cross_entropy(logits, targets):
    """Mean -log softmax(logits)[target] over N rows; returns loss and dlogits = (p - onehot)/N."""
    N = logits.shape[0]
    rows = np.arange(N)
    shifted = logits - logits.max(axis=-1, keepdims=True)  # (N, V)
    e = np.exp(shifted)
    s = row_sum(e)
    loss = float(np.mean(np.log(s) - shifted[rows, targets]))
    e /= s[:, None]  # probabilities
    e[rows, targets] -= 1.0
    e *= 1.0 / N
    return loss, e


class NumpyGPT:
    """The GPT of minitorch.nn.gpt for LayerNorm + learned-position configs, by hand.

    Args:
        cfg: a GPTConfig with norm="layernorm", pos="learned".
        arrays: initial weights by GPT-2 parameter name (e.g. from a minitorch model).
        dtype: np.float32 or np.float64.
        lr, betas, eps: Adam hyperparameters (torch.optim.Adam arithmetic).
    """

    def __init__(self, cfg, arrays: dict, dtype=np.float64, lr=1e-3, betas=(0.9, 0.999),
                 eps=1e-8):
        bad = {k: getattr(cfg, k) for k, ok in
               [("norm", cfg.norm == "layernorm"), ("pos", cfg.pos == "learned")] if not ok}
        if bad:
            raise ValueError(f"NumpyGPT supports norm='layernorm', pos='learned' only; got {bad}")
        self.cfg, self.dtype = cfg, np.dtype(dtype)
        self.names = list(arrays)
        sizes = [arrays[n].size for n in self.names]
        offsets = np.concatenate([[0], np.cumsum(sizes)])
        total = int(offsets[-1])
        self.theta, self.grad = np.empty(total, self.dtype), np.zeros(total, self.dtype)
        self.m, self.v, self.tmp = (np.zeros(total, self.dtype) for _ in range(3))
        self.spans = {n: (lo, hi, arrays[n].shape)
                      for n, lo, hi in zip(self.names, offsets[:-1], offsets[1:])}
        self.params, self.grads = self.views(self.theta), self.views(self.grad)
        for name, p in self.params.items():
            p[...] = arrays[name]
        self.lr, self.betas, self.eps, self.t = lr, betas, eps, 0
        T = cfg.block_size
        self.mask_add = np.where(np.triu(np.ones((T, T), bool), k=1), -np.inf, 0.0).astype(dtype)

    def views(self, flat: np.ndarray) -> dict:
        """Each parameter's view into a flat buffer laid out like self.theta."""
        return {n: flat[lo:hi].reshape(shape) for n, (lo, hi, shape) in self.spans.items()}

    def _p(self, name):
        return self.params.get(name)

    def loss_and_grads(self, idx, targets, grads: dict | None = None) -> float:
        """Forward + loss + manual backward; gradients land in `grads` (views by name, default
        self.grads). idx, targets (B, T)."""
        cfg, P, G = self.cfg, self.params, self.grads if grads is None else grads
        B, T = idx.shape
        nh, eps, act = cfg.n_head, cfg.norm_eps, cfg.activation
        mask = self.mask_add[:T, :T]
        x = P["wte.weight"][idx.ravel()]  # (N, C)
        x.reshape(B, T, -1)[...] += P["wpe.weight"][:T]
        caches = []
        for i in range(cfg.n_layer):
            pre = f"h.{i}."
            y1, ln1 = layer_norm(x, P[pre + "ln_1.weight"], self._p(pre + "ln_1.bias"), eps)
            qkv = linear(y1, P[pre + "attn.c_attn.weight"], self._p(pre + "attn.c_attn.bias"))
            ya, att = attention(qkv, B, T, nh, mask)
            x = x + linear(ya, P[pre + "attn.c_proj.weight"], self._p(pre + "attn.c_proj.bias"))
            y2, ln2 = layer_norm(x, P[pre + "ln_2.weight"], self._p(pre + "ln_2.bias"), eps)
            h = linear(y2, P[pre + "mlp.c_fc.weight"], self._p(pre + "mlp.c_fc.bias"))
            a, actc = activation(h, act)
            x = x + linear(a, P[pre + "mlp.c_proj.weight"], self._p(pre + "mlp.c_proj.bias"))
            caches.append((y1, ln1, ya, att, y2, ln2, a, actc))
        yf, lnf = layer_norm(x, P["ln_f.weight"], self._p("ln_f.bias"), eps)
        logits = linear(yf, P["lm_head.weight"], self._p("lm_head.bias"))  # (N, V)
        loss, dlogits = cross_entropy(logits, targets.ravel())

        dyf = linear_backward(dlogits, yf, P["lm_head.weight"], G["lm_head.weight"],
                              G.get("lm_head.bias"))
        dx = layer_norm_backward(dyf, lnf, P["ln_f.weight"], G["ln_f.weight"], G.get("ln_f.bias"))
        for i in reversed(range(cfg.n_layer)):
            pre = f"h.{i}."
            y1, ln1, ya, att, y2, ln2, a, actc = caches[i]
            da = linear_backward(dx, a, P[pre + "mlp.c_proj.weight"],
                                 G[pre + "mlp.c_proj.weight"], G.get(pre + "mlp.c_proj.bias"))
            dh = activation_backward(da, actc, act)
            dy2 = linear_backward(dh, y2, P[pre + "mlp.c_fc.weight"], G[pre + "mlp.c_fc.weight"],
                                  G.get(pre + "mlp.c_fc.bias"))
            dx += layer_norm_backward(dy2, ln2, P[pre + "ln_2.weight"], G[pre + "ln_2.weight"],
                                      G.get(pre + "ln_2.bias"))
            dya = linear_backward(dx, ya, P[pre + "attn.c_proj.weight"],
                                  G[pre + "attn.c_proj.weight"], G.get(pre + "attn.c_proj.bias"))
            dqkv = attention_backward(dya, att, B, T, nh)
            dy1 = linear_backward(dqkv, y1, P[pre + "attn.c_attn.weight"],
                                  G[pre + "attn.c_attn.weight"], G.get(pre + "attn.c_attn.bias"))
            dx += layer_norm_backward(dy1, ln1, P[pre + "ln_1.weight"], G[pre + "ln_1.weight"],
                                      G.get(pre + "ln_1.bias"))
        np.sum(dx.reshape(B, T, -1), axis=0, out=G["wpe.weight"][:T])
        G["wpe.weight"][T:] = 0.0
        gwte = G["wte.weight"]  # rows grouped by id (stable sort), each group one reduceat
        gwte[...] = 0.0
        ids = idx.ravel()
        order = np.argsort(ids, kind="stable")
        sorted_ids = ids[order]
        starts = np.flatnonzero(np.concatenate(([True], sorted_ids[1:] != sorted_ids[:-1])))
        gwte[sorted_ids[starts]] = np.add.reduceat(dx[order], starts, axis=0)
        return loss

    def adam_step(self) -> None:
        """One Adam update of the flat parameter buffer, in torch.optim.Adam's arithmetic order:
        m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2; p -= lr/bc1 * m / (sqrt(v)/sqrt(bc2) + eps)."""
        b1, b2 = self.betas
        self.t += 1
        g, m, v, tmp = self.grad, self.m, self.v, self.tmp
        m *= b1
        np.multiply(g, 1.0 - b1, out=tmp)
        m += tmp
        v *= b2
        np.multiply(g, g, out=tmp)
        tmp *= 1.0 - b2
        v += tmp
        np.sqrt(v, out=tmp)
        tmp /= math.sqrt(1.0 - b2**self.t)
        tmp += self.eps
        np.divide(m, tmp, out=tmp)
        tmp *= self.lr / (1.0 - b1**self.t)
        self.theta -= tmp

    def step(self, idx, targets) -> float:
        """One training step; returns the loss before the update."""
        loss = self.loss_and_grads(idx, targets)
        self.adam_step()
        return loss

    def parallel(self, workers: int) -> None:
        """Run `step` as `workers` threads, each on its share of the batch's rows with a
        one-thread BLAS (the caller pins it), summing the shares' gradients: the same trick as
        minitorch.parallel.DataParallel, so minitorch/NumPy stays a measure of engine cost."""
        from concurrent.futures import ThreadPoolExecutor

        self.pool = ThreadPoolExecutor(workers - 1) if workers > 1 else None
        self.shards = [np.zeros_like(self.grad) for _ in range(workers - 1)]
        self.shard_grads = [self.grads] + [self.views(buf) for buf in self.shards]

    def parallel_step(self, idx, targets) -> float:
        """`step` with the rows split across the workers set by `parallel`."""
        loss = self.parallel_loss_and_grads(idx, targets)
        self.adam_step()
        return loss

    def parallel_loss_and_grads(self, idx, targets) -> float:
        """`loss_and_grads` with the rows split across the workers: the shares' gradients,
        weighted by their rows, summed into self.grad."""
        n, W = len(idx), len(self.shard_grads)
        bounds = np.linspace(0, n, W + 1).round().astype(int)

        def run(k):
            lo, hi = bounds[k], bounds[k + 1]
            return (hi - lo) / n * self.loss_and_grads(idx[lo:hi], targets[lo:hi],
                                                       self.shard_grads[k])

        futures = [self.pool.submit(run, k) for k in range(1, W)]
        loss = run(0) + sum(f.result() for f in futures)
        self.grad *= (bounds[1] - bounds[0]) / n
        for k, buf in enumerate(self.shards, 1):
            buf *= (bounds[k + 1] - bounds[k]) / n
            self.grad += buf
        return loss

