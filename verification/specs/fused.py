"""Specs of the fused layer ops (engine/ops/fused.py) and their composite twins
(nn/composites.py), which are checked by the same table."""

from __future__ import annotations

import numpy as np

from minitorch.nn import functional as F

from .core import BIG, Sample, real, sid, spec
from .references import (
    np_attention,
    np_cross_entropy,
    np_layer_norm,
    np_rms_norm,
    np_rope,
    t_attention,
    t_cross_entropy,
    t_layer_norm,
    t_rms_norm,
    t_rope,
)


def _linear_samples(rng):
    return [Sample("(2,3)x(4,3)+b", (real(rng, (2, 3)), real(rng, (4, 3)), real(rng, (4,)))),
            Sample("(2,2,3)x(4,3)", (real(rng, (2, 2, 3)), real(rng, (4, 3)))),
            Sample("(1,3)x(2,3)+b", (real(rng, (1, 3)), real(rng, (2, 3)), real(rng, (2,)))),
            Sample("(4,5,6)x(7,6)+b", (real(rng, BIG), real(rng, (7, 6)), real(rng, (7,)))),
            Sample("(3,2).Tx(4,3)+b", (real(rng, (3, 2)).T, real(rng, (4, 3)), real(rng, (4,))))]


for _name, _call in [("linear", F.linear), ("linear_composite", F.linear_composite)]:
    spec(_name, _linear_samples, lambda x, w, b=None: x @ w.T + (0.0 if b is None else b),
         "reals", call=_call,
         torch=lambda x, w, b=None: __import__("torch").nn.functional.linear(x, w, b))


def _norm_samples(affine: int):
    def make(rng):
        shapes = [(2, 3), (2, 3, 4), (4,), BIG]
        out = [Sample(sid(s) + ",affine", (real(rng, s), *(real(rng, s[-1:]) for _ in
                                                            range(affine)))) for s in shapes]
        out.append(Sample("(2,3),plain", (real(rng, (2, 3)),)))
        out.append(Sample("(3,2).T,affine", (real(rng, (3, 2)).T,
                                             *(real(rng, (3,)) for _ in range(affine)))))
        out.append(Sample("(2,4)offset,eps=0.1", (real(rng, (2, 4)) * 0.1 + 3.0,
                                                  *(real(rng, (4,)) for _ in range(affine))),
                          {"eps": 0.1}))
        return out

    return make


for _name, _fn in [("layer_norm", F.layer_norm), ("layer_norm_composite", F.layer_norm_composite)]:
    spec(_name, _norm_samples(2), np_layer_norm, "reals (and a row far from zero mean)",
         call=lambda x, w=None, b=None, _fn=_fn, **kw: _fn(x, x.shape[-1:], w, b, **kw),
         torch=t_layer_norm)
for _name, _fn in [("rms_norm", F.rms_norm), ("rms_norm_composite", F.rms_norm_composite)]:
    spec(_name, _norm_samples(1), np_rms_norm, "reals",
         call=lambda x, w=None, _fn=_fn, eps=1e-5: _fn(x, x.shape[-1:], w, eps=eps),
         torch=t_rms_norm)


def _norm_linear_samples(rng):
    """Inputs x, nw, [nb], w, [b] (no nb with rms): biases present or not, a width-1 output,
    a transposed input, rows far from zero mean."""
    def make(sid_, x, out, rms=False, bias=True, **attrs):
        C = x.shape[-1]
        norm = (real(rng, (C,)),) if rms else (real(rng, (C,)), real(rng, (C,)))
        lin = (real(rng, (out, C)),) + ((real(rng, (out,)),) if bias else ())
        return Sample(sid_, (x, *norm, *lin), {"rms": rms, **attrs})

    return [make("(2,3)->4", real(rng, (2, 3)), 4),
            make("(2,3,4)->2,nobias", real(rng, (2, 3, 4)), 2, bias=False),
            make("BIG->3", real(rng, BIG), 3),
            make("(3,2).T->1", real(rng, (3, 2)).T, 1),
            make("(2,4)offset,eps=0.1->3", real(rng, (2, 4)) * 0.1 + 3.0, 3, eps=0.1),
            make("(2,3)->4,rms", real(rng, (2, 3)), 4, rms=True),
            make("(2,3,4)->2,rms,nobias", real(rng, (2, 3, 4)), 2, rms=True, bias=False),
            make("BIG->3,rms", real(rng, BIG), 3, rms=True)]


def _norm_linear_args(x, nw, *rest, rms=False):
    """(x, nw, nb, w, b) from a sample's inputs x, nw, [nb], w, [b] (no nb with rms)."""
    nb, rest = (None, rest) if rms else (rest[0], rest[1:])
    return x, nw, nb, rest[0], rest[1] if len(rest) > 1 else None


def np_norm_linear(*inputs, rms=False, eps=1e-5):
    x, nw, nb, w, b = _norm_linear_args(*inputs, rms=rms)
    y = np_rms_norm(x, nw, eps) if rms else np_layer_norm(x, nw, nb, eps)
    return y @ w.T + (0.0 if b is None else b)


def t_norm_linear(*inputs, rms=False, eps=1e-5):
    import torch

    x, nw, nb, w, b = _norm_linear_args(*inputs, rms=rms)
    y = t_rms_norm(x, nw, eps) if rms else t_layer_norm(x, nw, nb, eps)
    return torch.nn.functional.linear(y, w, b)


for _name, _fn in [("norm_linear", F.norm_linear),
                   ("norm_linear_composite", F.norm_linear_composite)]:
    spec(_name, _norm_linear_samples, np_norm_linear,
         "reals (and rows far from zero mean); layer_norm or rms_norm, biases optional",
         call=lambda *inputs, _fn=_fn, rms=False, eps=1e-5: _fn(
             *_norm_linear_args(*inputs, rms=rms), eps=eps, rms=rms),
         torch=t_norm_linear)


def _ce_samples(rng):
    return [Sample("(4,5),t[repeats]", (real(rng, (4, 5)), np.array([1, 1, 4, 0]))),
            Sample("(2,3,5)", (real(rng, (2, 3, 5)), rng.integers(0, 5, (2, 3)))),
            Sample("(1,3)", (real(rng, (1, 3)), np.array([2]))),
            Sample("(3,4)huge", (real(rng, (3, 4)) * 300.0, np.array([0, 3, 1]))),
            Sample("(5,4).T", (real(rng, (5, 4)).T, np.array([4, 0, 0, 2]))),
            Sample("(2,6,12)", (real(rng, (2, 6, 12)), rng.integers(0, 12, (2, 6))))]


for _name, _call in [("cross_entropy", F.cross_entropy),
                     ("cross_entropy_composite", F.cross_entropy_composite)]:
    spec(_name, _ce_samples, np_cross_entropy, "reals; integer targets in range (repeats)",
         call=_call, torch=t_cross_entropy)


def _attn_samples(rng):
    def qkv(sq, skv):
        return real(rng, sq), real(rng, skv), real(rng, skv)

    causal = {"is_causal": True}
    return [Sample("(1,3,4)causal", qkv((1, 3, 4), (1, 3, 4)), causal),
            Sample("(2,2,3,4)causal", qkv((2, 2, 3, 4), (2, 2, 3, 4)), causal),
            Sample("q(1,2,4)kv(1,3,4)causal", qkv((1, 2, 4), (1, 3, 4)), causal),
            Sample("(2,3,2)full", qkv((2, 3, 2), (2, 3, 2)), {"is_causal": False}),
            Sample("(1,1,2)causal", qkv((1, 1, 2), (1, 1, 2)), causal),
            Sample("(2,2,5,8)causal", qkv((2, 2, 5, 8), (2, 2, 5, 8)), causal),
            Sample("q(1,4,3).mT,causal", (real(rng, (1, 4, 3)).swapaxes(-1, -2),
                                          *qkv((1, 3, 4), (1, 3, 4))[1:]), causal),
            Sample("q(1,3,4)kv(1,2,4)causal", qkv((1, 3, 4), (1, 2, 4)), causal)]


spec("scaled_dot_product_attention", _attn_samples, np_attention,
     "reals; causal (torch's top-left alignment, Tq <, = and > Tk) and full",
     call=F.scaled_dot_product_attention,
     torch=t_attention)


def _rope_samples(rng):
    out = []
    for shape, offset in [((1, 3, 4), 0), ((2, 2, 3, 6), 5), ((4, 2), 0), ((2, 2, 5, 8), 3)]:
        cos, sin = F.rope_tables(shape[-2], shape[-1], offset=offset)
        out.append(Sample(f"{sid(shape)},offset={offset}", (real(rng, shape),),
                          {"cos": cos, "sin": sin}))
    cos, sin = F.rope_tables(3, 4)
    out.append(Sample("(1,4,3).mT", (real(rng, (1, 4, 3)).swapaxes(-1, -2),),
                      {"cos": cos, "sin": sin}))
    return out


spec("rope", _rope_samples, np_rope, "reals; cos/sin tables are constants", call=F.rope,
     torch=t_rope)


def _split_heads(qkv, n_head):
    """(B, T, 3C) -> q, k, v, each (B, nh, T, hs), as the fused projection is laid out."""
    B, T, C3 = qkv.shape
    return [a.reshape(B, T, n_head, C3 // 3 // n_head).swapaxes(1, 2)
            for a in np.split(qkv, 3, axis=-1)]


def np_causal_self_attention(qkv, n_head, cos=None, sin=None):
    q, k, v = _split_heads(qkv, n_head)
    if cos is not None:
        q, k = np_rope(q, cos, sin), np_rope(k, cos, sin)
    y = np_attention(q, k, v, is_causal=True)  # (B, nh, T, hs)
    return y.swapaxes(1, 2).reshape(qkv.shape[0], qkv.shape[1], -1)


def t_causal_self_attention(qkv, n_head, cos=None, sin=None):
    B, T, C3 = qkv.shape
    q, k, v = (a.reshape(B, T, n_head, C3 // 3 // n_head).transpose(1, 2)
               for a in qkv.split(C3 // 3, dim=-1))
    if cos is not None:
        q, k = t_rope(q, cos, sin), t_rope(k, cos, sin)
    return t_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, T, C3 // 3)


def _csa_samples(rng):
    def rope(T, hs):
        cos, sin = F.rope_tables(T, hs)
        return {"cos": cos, "sin": sin}

    return [Sample("(1,3,6),nh=1", (real(rng, (1, 3, 6)),), {"n_head": 1}),
            Sample("(2,4,24),nh=2", (real(rng, (2, 4, 24)),), {"n_head": 2}),
            Sample("(2,4,24),nh=2,rope", (real(rng, (2, 4, 24)),), {"n_head": 2, **rope(4, 4)}),
            Sample("(1,1,6),nh=1", (real(rng, (1, 1, 6)),), {"n_head": 1}),
            Sample("(2,5,24),nh=2,rope", (real(rng, (2, 5, 24)),), {"n_head": 2, **rope(5, 4)}),
            Sample("(3,2,12).T01,nh=2", (real(rng, (3, 2, 12)).swapaxes(0, 1),), {"n_head": 2})]


for _name, _call in [("causal_self_attention", F.causal_self_attention),
                     ("causal_self_attention_composite", F.causal_self_attention_composite)]:
    spec(_name, _csa_samples, np_causal_self_attention,
         "reals; q|k|v packed along the last dim, causal mask, optional RoPE", call=_call,
         torch=t_causal_self_attention)
