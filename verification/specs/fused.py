"""Specs of the fused layer ops (engine/ops/fused.py) and their composite twins
(nn/functional/), which are checked by the same table."""

from __future__ import annotations

import numpy as np

from minitorch.nn import functional as F

from .core import BIG, MARGIN, Sample, along, away0, distinct, real, sid, spec, unary
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


# ---- activations and losses (nn/functional/), references written with NumPy's log1p/expm1 ----
def _tF():
    import torch

    return torch.nn.functional


def _act_samples(draw, attrs_list=({},)):
    """unary shape families (one transposed), a large-magnitude row, and each attrs variant."""
    def make(rng):
        out = unary(draw)(rng)
        huge = np.array([[-40.0, -21.0, -3.0], [3.0, 19.0, 40.0]])  # softplus: 20 is a kink
        out.append(Sample("(2,3)huge", (huge,)))
        for attrs in attrs_list[1:]:
            label = ",".join(f"{k}={v}" for k, v in attrs.items())
            out.append(Sample(f"(2,3,4),{label}", (draw(rng, (2, 3, 4)),), dict(attrs)))
        return out

    return make


def _np_softplus(x, beta=1.0, threshold=20.0):
    z = x * beta
    return np.where(z > threshold, x, np.log1p(np.exp(np.minimum(z, threshold))) / beta)


spec("silu", _act_samples(real), lambda x: x / (1.0 + np.exp(-x)),
     "reals (and +-40)", call=F.silu, torch=lambda x: _tF().silu(x))
spec("leaky_relu", _act_samples(away0, ({}, {"negative_slope": 0.2})),
     lambda x, negative_slope=0.01: np.where(x > 0, x, negative_slope * x),
     f"|x| >= {MARGIN} (kink at 0)", call=F.leaky_relu,
     torch=lambda x, **kw: _tF().leaky_relu(x, **kw))
spec("elu", _act_samples(away0, ({}, {"alpha": 0.5})),
     lambda x, alpha=1.0: np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0.0))),
     f"|x| >= {MARGIN} (kink at 0), and |x| < 1/2 (the expm1 branch)", call=F.elu,
     torch=lambda x, **kw: _tF().elu(x, **kw))
spec("softplus", _act_samples(real, ({}, {"beta": 2.0, "threshold": 3.0})), _np_softplus,
     "reals (and +-40: both sides of threshold 20); beta 2 with threshold 3", call=F.softplus,
     torch=lambda x, **kw: _tF().softplus(x, **kw))


def _pair_samples(draw_t=real, extra=()):
    """(input, target) pairs: each reduction, a 0-d pair, a transposed input, a broadcast target,
    and extra attrs variants."""
    def make(rng):
        out = []
        for shape, red in [((), "mean"), ((3,), "sum"), ((2, 3), "none"), ((2, 3, 4), "mean"),
                           (BIG, "mean")]:
            out.append(Sample(f"{sid(shape)},{red}", (real(rng, shape), draw_t(rng, shape)),
                              {"reduction": red}))
        out.append(Sample("(3,2).T,none", (real(rng, (3, 2)).T, draw_t(rng, (2, 3))),
                          {"reduction": "none"}))
        out.append(Sample("(2,3)x(3,),mean", (real(rng, (2, 3)), draw_t(rng, (3,))),
                          {"reduction": "mean"}))
        for attrs in extra:
            label = ",".join(f"{k}={v}" for k, v in attrs.items())
            out.append(Sample(f"(2,3,4),{label}", (real(rng, (2, 3, 4)) * 2.0,
                                                   draw_t(rng, (2, 3, 4))), dict(attrs)))
        return out

    return make


def _np_reduce(loss, reduction="mean"):
    return loss if reduction == "none" else (loss.sum() if reduction == "sum" else loss.mean())


def _np_smooth_l1(x, t, reduction="mean", beta=1.0):
    d = np.abs(x - t)
    if beta == 0:
        return _np_reduce(d, reduction)
    return _np_reduce(np.where(d < beta, 0.5 * d**2 / beta, d - 0.5 * beta), reduction)


def _np_huber(x, t, reduction="mean", delta=1.0):
    d = np.abs(x - t)
    return _np_reduce(np.where(d < delta, 0.5 * d**2, delta * (d - 0.5 * delta)), reduction)


spec("mse_loss", _pair_samples(), lambda x, t, reduction="mean": _np_reduce((x - t) ** 2,
                                                                              reduction),
     "reals; broadcast target", call=F.mse_loss,
     torch=lambda x, t, **kw: _tF().mse_loss(x, t, **kw))
spec("l1_loss", _pair_samples(), lambda x, t, reduction="mean": _np_reduce(np.abs(x - t),
                                                                             reduction),
     "reals (input != target: kink there)", call=F.l1_loss,
     torch=lambda x, t, **kw: _tF().l1_loss(x, t, **kw))
spec("smooth_l1_loss", _pair_samples(extra=({"reduction": "sum", "beta": 0.5},
                                            {"reduction": "mean", "beta": 0.0})),
     _np_smooth_l1, "reals (both branches; |input - target| != beta)", call=F.smooth_l1_loss,
     torch=lambda x, t, **kw: _tF().smooth_l1_loss(x, t, **kw))
spec("huber_loss", _pair_samples(extra=({"reduction": "sum", "delta": 0.5},)), _np_huber,
     "reals (both branches; |input - target| != delta)", call=F.huber_loss,
     torch=lambda x, t, **kw: _tF().huber_loss(x, t, **kw))


def _np_nll(x, t, w=None, reduction="mean", ignore_index=-100):
    C = x.shape[0 if x.ndim == 1 else 1]
    xs = np.moveaxis(x.reshape((1, C) if x.ndim == 1 else x.shape), 1, -1).reshape(-1, C)
    ids = t.reshape(-1)
    keep = ids != ignore_index
    wt = np.ones(C) if w is None else w
    scale = np.where(keep, wt[np.where(keep, ids, 0)], 0.0)
    losses = -xs[np.arange(ids.size), np.where(keep, ids, 0)] * scale
    if reduction == "none":
        return losses.reshape(t.shape)
    return losses.sum() if reduction == "sum" else losses.sum() / scale.sum()


def _nll_samples(rng):
    return [Sample("(4,5),t[repeats]", (real(rng, (4, 5)), np.array([1, 1, 4, 0]))),
            Sample("(5,),0-d target,sum", (real(rng, (5,)), np.array(3)), {"reduction": "sum"}),
            Sample("(2,3,4)d1,none", (real(rng, (2, 3, 4)), rng.integers(0, 3, (2, 4))),
                   {"reduction": "none"}),
            Sample("(5,4).T,ignore", (real(rng, (5, 4)).T, np.array([4, -100, 0, 2]))),
            Sample("(4,3),weight", (real(rng, (4, 3)), np.array([2, 0, 0, 1]),
                                    rng.uniform(0.5, 2.0, 3)), const=frozenset({2})),
            Sample("(2,3,5)d1,weight,ignore=1", (real(rng, (2, 3, 5)),
                                                 rng.integers(0, 3, (2, 5)),
                                                 rng.uniform(0.5, 2.0, 3)),
                   {"ignore_index": 1}, const=frozenset({2})),
            Sample("(4,5,6),mean", (real(rng, BIG), rng.integers(0, 5, (4, 6))))]


spec("nll_loss", _nll_samples, _np_nll,
     "reals; int64 class ids (repeats, ignored), optional class weights (constant)",
     call=F.nll_loss, torch=lambda x, t, w=None, **kw: _tF().nll_loss(x, t, w, **kw))


def _probs(rng, shape):
    return rng.uniform(0.05, 0.95, shape)


def _np_bce(p, t, w=None, reduction="mean"):
    loss = -(t * np.maximum(np.log(p), -100) + (1 - t) * np.maximum(np.log1p(-p), -100))
    return _np_reduce(loss * (1.0 if w is None else w), reduction)


def _bce_samples(rng):
    out = [s for s in _pair_samples(_probs)(rng)]
    out = [Sample(s.id, (_probs(rng, s.inputs[0].shape) if s.inputs[0].flags.c_contiguous
                         else _probs(rng, s.inputs[0].shape[::-1]).T,
                         _probs(rng, s.inputs[0].shape)), s.attrs)
           for s in out if s.inputs[0].shape == s.inputs[1].shape]
    out.append(Sample("(2,3),weight(3,),sum", (_probs(rng, (2, 3)), _probs(rng, (2, 3)),
                                               rng.uniform(0.5, 2.0, 3)),
                      {"reduction": "sum"}, const=frozenset({2})))
    out.append(Sample("(2,3),0/1 targets", (_probs(rng, (2, 3)),
                                            rng.integers(0, 2, (2, 3)).astype(np.float64))))
    return out


spec("binary_cross_entropy", _bce_samples, _np_bce,
     "probabilities in [0.05, 0.95], targets in [0, 1] (differentiable); weight constant",
     call=F.binary_cross_entropy,
     torch=lambda p, t, w=None, **kw: _tF().binary_cross_entropy(p, t, w, **kw))


def _np_bce_logits(x, t, w=None, pw=None, reduction="mean"):
    log_sig = np.minimum(x, 0) - np.log1p(np.exp(-np.abs(x)))
    lw = 1.0 if pw is None else 1.0 + (pw - 1.0) * t
    return _np_reduce(((1 - t) * x - lw * log_sig) * (1.0 if w is None else w), reduction)


def _bce_logits_samples(rng):
    out = [Sample(s.id, (s.inputs[0], _probs(rng, s.inputs[1].shape)), s.attrs)
           for s in _pair_samples()(rng) if s.inputs[0].shape == s.inputs[1].shape]
    huge = np.array([[-40.0, -20.0, -3.0], [3.0, 20.0, 40.0]])
    out.append(Sample("(2,3)huge,none", (huge, np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 1.0]])),
                      {"reduction": "none"}))
    out.append(Sample("(2,3),weight,pos_weight", (real(rng, (2, 3)), _probs(rng, (2, 3)),
                                                  rng.uniform(0.5, 2.0, (2, 1)),
                                                  rng.uniform(0.5, 3.0, 3)),
                      {"reduction": "sum"}, const=frozenset({2, 3})))
    return out


spec("binary_cross_entropy_with_logits", _bce_logits_samples, _np_bce_logits,
     "real logits (and +-40), targets in [0, 1] (differentiable); weight, pos_weight constant",
     call=lambda x, t, w=None, pw=None, **kw: F.binary_cross_entropy_with_logits(
         x, t, w, pos_weight=pw, **kw),
     torch=lambda x, t, w=None, pw=None, **kw: _tF().binary_cross_entropy_with_logits(
         x, t, w, pos_weight=pw, **kw))


def _np_normalize(x, p=2.0, dim=1, eps=1e-12):
    a = np.abs(x)
    if p in (np.inf, -np.inf):
        norm = a.max(dim, keepdims=True) if p > 0 else a.min(dim, keepdims=True)
    elif p == 0:  # torch.norm's 0: the count of non-zeros
        norm = (x != 0).sum(dim, keepdims=True).astype(x.dtype)
    else:
        norm = (a**p).sum(dim, keepdims=True) ** (1 / p)
    return x / np.maximum(norm, eps)


def _normalize_samples(rng):
    return [Sample("(2,3)", (real(rng, (2, 3)),)),
            Sample("(3,),dim=0", (real(rng, (3,)),), {"dim": 0}),
            Sample("(2,3,4),dim=-1", (real(rng, (2, 3, 4)),), {"dim": -1}),
            Sample("(2,3,4),p=1", (away0(rng, (2, 3, 4)),), {"p": 1.0}),
            Sample("(2,3,4),p=3", (away0(rng, (2, 3, 4)),), {"p": 3.0}),
            Sample("(2,5),p=inf", (distinct(rng, (2, 5)),), {"p": np.inf}),
            Sample("(2,5),p=-inf", (distinct(rng, (2, 5)),), {"p": -np.inf}),
            Sample("(2,3,4),p=0", (away0(rng, (2, 3, 4)),), {"p": 0.0}),
            Sample("(2,3,4),p=0,zeros", (away0(rng, (2, 3, 4)) * (rng.random((2, 3, 4)) < 0.7),),
                   {"p": 0.0}),
            Sample("(2,3,4),p=-1.5", (away0(rng, (2, 3, 4)),), {"p": -1.5, "dim": 2}),
            Sample("(3,2).T", (real(rng, (3, 2)).T,)),
            Sample("(4,5,6),dim=2", (real(rng, BIG),), {"dim": 2})]


spec("normalize", _normalize_samples, _np_normalize,
     "reals (no zero slice; |x| away from 0 for p=1, 3, 0, -1.5; distinct for p=+-inf)",
     call=F.normalize, torch=lambda x, **kw: _tF().normalize(x, **kw),
     xfail={"gradcheck:(2,3,4),p=0,zeros": "finite differences step across the count's jump "
            "at each zero (the gradient there, torch's, is checked by the parity test)"})


def _batch_norm_samples(rng):
    """Training mode (the batch's statistics), (N, C) and (N, C, L), with and without affine
    parameters, one non-contiguous input."""
    out = []
    for shape, affine in [((4, 3), True), ((3, 2, 5), True), ((5, 3), False)]:
        x = real(rng, shape) * 2.0 + 0.5
        params = (rng.uniform(0.5, 1.5, shape[1]), real(rng, (shape[1],))) if affine else ()
        out.append(Sample(f"{sid(shape)}{',affine' if affine else ''}", (x, *params), {}))
    out.append(Sample("(3,4).T", (real(rng, (3, 4)).T,), {}))
    return out


def _np_batch_norm(x, w=None, b=None, eps=1e-5):
    dims = (0, *range(2, x.ndim))
    shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    y = (x - x.mean(dims, keepdims=True)) / np.sqrt(x.var(dims, keepdims=True) + eps)
    return y if w is None else y * w.reshape(shape) + b.reshape(shape)


spec("batch_norm", _batch_norm_samples, _np_batch_norm, "reals, at least 2 values per channel",
     call=lambda x, w=None, b=None: F.batch_norm(x, None, None, w, b, training=True),
     torch=lambda x, w=None, b=None: _tF().batch_norm(x, None, None, w, b, training=True))


def _off(*kinks: float):
    """Reals in [-7, 7] moved >= MARGIN away from each kink (the clipping activations' bounds)."""
    def draw(rng, shape):
        x = rng.uniform(-7.0, 7.0, shape)
        near = np.min([np.abs(x - k) for k in kinks], axis=0) < MARGIN
        return np.where(near, x + 2 * MARGIN, x)

    return draw


def _act_variants(draw, attrs_list=({},)):
    """unary shape families (one transposed) for each attrs variant (no huge row: it would sit
    on a kink)."""
    def make(rng):
        out = unary(draw, attrs_list[0])(rng)
        for attrs in attrs_list[1:]:
            label = ",".join(f"{k}={v}" for k, v in attrs.items())
            out += [Sample(f"{s.id},{label}", s.inputs, dict(attrs))
                    for s in unary(draw, attrs)(rng)[:4]]
        return out

    return make


_SELU = (1.6732632423543772848170429916717, 1.0507009873554804934193349852946)
_KINKED = "reals in [-7, 7], >= 0.05 from the kinks"
spec("celu", _act_samples(away0, ({}, {"alpha": 0.5})),
     lambda x, alpha=1.0: np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0.0) / alpha)),
     f"|x| >= {MARGIN} (kink at 0)", call=F.celu, torch=lambda x, **kw: _tF().celu(x, **kw))
spec("selu", _act_samples(away0),
     lambda x: _SELU[1] * np.where(x > 0, x, _SELU[0] * np.expm1(np.minimum(x, 0.0))),
     f"|x| >= {MARGIN} (kink at 0)", call=F.selu, torch=lambda x: _tF().selu(x))
spec("softsign", _act_samples(real), lambda x: x / (1.0 + np.abs(x)), "reals (and +-40)",
     call=F.softsign, torch=lambda x: _tF().softsign(x))
spec("logsigmoid", _act_samples(real), lambda x: -np.logaddexp(0.0, -x), "reals (and +-40)",
     call=F.logsigmoid, torch=lambda x: _tF().logsigmoid(x))
spec("hardtanh", _act_variants(_off(-1.0, 1.0, -0.5, 2.0), ({}, {"min_val": -0.5,
                                                                   "max_val": 2.0})),
     lambda x, min_val=-1.0, max_val=1.0: np.clip(x, min_val, max_val), _KINKED,
     call=F.hardtanh, torch=lambda x, **kw: _tF().hardtanh(x, **kw))
spec("relu6", _act_variants(_off(0.0, 6.0)), lambda x: np.clip(x, 0.0, 6.0), _KINKED,
     call=F.relu6, torch=lambda x: _tF().relu6(x))
spec("hardsigmoid", _act_variants(_off(-3.0, 3.0)), lambda x: np.clip(x / 6.0 + 0.5, 0.0, 1.0),
     _KINKED, call=F.hardsigmoid, torch=lambda x: _tF().hardsigmoid(x))
spec("hardswish", _act_variants(_off(-3.0, 3.0)), lambda x: x * np.clip(x + 3.0, 0.0, 6.0) / 6.0,
     _KINKED, call=F.hardswish, torch=lambda x: _tF().hardswish(x))
spec("mish", _act_samples(real), lambda x: x * np.tanh(np.logaddexp(0.0, x)), "reals (and +-40)",
     call=F.mish, torch=lambda x: _tF().mish(x))


def _np_softmin(x, axis):
    z = np.exp(-x - np.max(-x, axis=axis, keepdims=True))
    return z / z.sum(axis=axis, keepdims=True)


spec("softmin", along(real), _np_softmin, "reals (and a large-magnitude row)",
     call=lambda x, axis: F.softmin(x, axis), torch=lambda x, axis: _tF().softmin(x, axis))
