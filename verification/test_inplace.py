"""In-place updates as torch's: `p -= lr * p.grad` under no_grad() changes the parameter (before,
`-=` rebound a name and a hand-written SGD loop silently trained nothing), `+=` on a graph's node
joins the graph, a leaf that requires grad is refused while grad is enabled, a write into an
array a live graph saved makes its backward raise, and dtypes and shapes are checked as torch
checks them. Each scenario runs on torch and on minitorch and must give the same result or
both raise."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import minitorch as mt


def _sgd_by_hand(L):
    w = L.tensor([1.0, 2.0], requires_grad=True)
    params = [w]
    (w * w).sum().backward()
    with L.no_grad():
        for p in params:
            p -= 0.1 * p.grad  # the loop variable: only an in-place update reaches w
    return w.detach().numpy(), w.requires_grad, w.is_leaf


def _add_alpha_and_zero(L):
    w = L.tensor([1.0, 2.0], requires_grad=True)
    (w * w).sum().backward()
    with L.no_grad():
        w.add_(w.grad, alpha=-0.25).mul_(2.0).sub_(1.0, alpha=0.5)
    w.grad.zero_()
    return w.detach().numpy(), w.grad.numpy()


def _graph_node(L):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    alias = y
    y += x
    y *= 2
    y /= L.tensor([4.0, 8.0])
    y.sum().backward()
    return x.grad.numpy(), alias.detach().numpy()


def _constant_joins_graph(L):
    x = L.zeros(2)
    w = L.tensor([1.0, 2.0], requires_grad=True)
    x += w * 2
    x.sum().backward()
    return w.grad.numpy(), x.requires_grad, x.is_leaf


def _fill_cuts_the_past(L):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    y.fill_(5.0)
    (y * x).sum().backward()
    return x.grad.numpy()


def _copy_broadcasts(L):
    x = L.zeros(2, 3)
    src = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x.copy_(src)
    (x * 2).sum().backward()
    return src.grad.numpy(), x.detach().numpy()


def _write_seen_by_views(L):
    x = L.zeros(3)
    view = x.numpy() if L is torch else x.data
    x += 1
    x.clamp_(max=0.5)
    return view.copy()


def _integer_and_bool(L):
    n = L.tensor([7, -7])
    n //= 2
    n %= 3
    m = L.tensor([True, False])
    m &= L.tensor([True, True])
    m |= False
    m ^= True
    return n.numpy(), m.numpy()


def _down_cast(L):
    x = L.tensor([1.0, 2.0])
    x += L.tensor([0.1, 0.2], dtype=L.float64)
    return x.numpy(), str(x.dtype).removeprefix("torch.")


def _leaf_in_grad_mode(L):
    w = L.tensor([1.0], requires_grad=True)
    w += 1


def _saved_then_written(L):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    z = y * y  # saves y
    with L.no_grad():
        y += 1
    z.sum().backward()


def _float_into_int(L):
    n = L.tensor([1, 2])
    n += 1.5


def _broadcast_target(L):
    x = L.tensor([1.0, 2.0])
    x += L.ones(2, 2)


def _expanded_target(L):
    x = L.zeros(1, 3).expand(2, 3)
    x += 1


SAME = [_sgd_by_hand, _add_alpha_and_zero, _graph_node, _constant_joins_graph,
        _fill_cuts_the_past, _copy_broadcasts, _write_seen_by_views, _integer_and_bool,
        _down_cast]
REFUSED = {_leaf_in_grad_mode: "leaf", _saved_then_written: "modified in place",
           _float_into_int: "cannot be written", _broadcast_target: "not the tensor's",
           _expanded_target: "cannot write"}


def _setitem_constant(L):
    x = L.zeros(2, 3, 4)
    x[0, :, [1, 3]] = L.tensor([1.0, 2.0])  # torch's int-beside-array rule: shape (3, 2)
    x[x > 1] = 7
    x[1] = 5
    x[..., 0] += 1
    return x.numpy()


def _setitem_in_graph(L):
    x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    v = L.tensor(5.0, requires_grad=True)
    y = x * 2
    y[1] = v * 3
    y[[0, 2]] = y[[2, 0]] * 1
    (y * L.tensor([1.0, 10.0, 100.0])).sum().backward()
    return x.grad.numpy(), v.grad.numpy()


def _setitem_under_no_grad(L):
    w = L.tensor([1.0, 2.0], requires_grad=True)
    with L.no_grad():
        w[0] = 3
    return w.detach().numpy(), w.is_leaf, w.requires_grad


def _setitem_leaf(L):
    w = L.tensor([1.0, 2.0], requires_grad=True)
    w[0] = 3


def _setitem_out_of_range(L):
    x = L.zeros(3)
    x[5] = 1


def _graph_write_with_an_alias(L):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    view = y.detach().numpy()  # shares y's memory in both libraries
    y += x
    return view.copy()


def _graph_write_through_a_view(L):
    z = L.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True) * 2
    row = z[0]
    row += L.tensor([1.0, 1.0], requires_grad=True) * 3
    return z.detach().numpy()


def _graph_write_under_a_view(L):
    x = L.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True) * 1
    y = x[0]  # taken before the write: torch rebases its gradient onto the write
    x[0, 1] = L.tensor(5.0, requires_grad=True)
    return y.detach().numpy()


# README, "Where minitorch differs": torch runs these (views follow the write through its
# autograd view tracking); minitorch refuses them in one line rather than give a gradient
# that ignores the write.
def _graph_write_under_a_saved_view(L):
    x = L.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = x * 2
    v = y[0]
    z = v * L.tensor([1.0, 1.0], requires_grad=True)  # saves the view v, not y
    y *= 3
    v.sum().backward()
    return x.grad.numpy(), z.detach().numpy()


def _graph_write_under_a_view_saved_twice(L):
    x = L.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = x * 2
    t = y[0]
    z = t * t  # two holds of y through one view
    w = y[1]
    y *= 3
    w.sum().backward()
    return x.grad.numpy(), z.detach().numpy()


SHARED = [_graph_write_with_an_alias, _graph_write_through_a_view, _graph_write_under_a_view,
          _graph_write_under_a_saved_view, _graph_write_under_a_view_saved_twice]


def _mul_keeps_the_old_value_for_backward(L):
    a = L.tensor([1.0, 2.0], requires_grad=True)
    c = L.tensor([3.0, 4.0], requires_grad=True)
    z = a * 1
    z *= c  # grad of c needs z's old value: the mul node keeps it, as torch's saves it
    z.sum().backward()
    return a.grad.numpy(), c.grad.numpy()


def _saved_node_written_in_grad_mode(L):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    z = y * y  # saves y
    y += 1
    z.sum().backward()


def _view_of_saved_written(L):
    x = L.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = x * 1
    row = y[0]  # a view of y in both libraries
    z = y * y  # saves y
    with L.no_grad():
        row += 1
    z.sum().backward()


def _constant_times_a_graph(L):
    x = L.tensor([2.0, 3.0])
    w = L.tensor([5.0, 7.0], requires_grad=True)
    x *= w  # mul saves x's old value for w's gradient
    x.sum().backward()
    return w.grad.numpy(), x.detach().numpy()


def _float64_into_a_float32_node(L):
    a = L.tensor([1.0, 2.0], requires_grad=True)
    b = L.tensor([0.25, 0.5], dtype=L.float64, requires_grad=True)
    x = a * 1
    x += b * 3  # float64 result, written into float32: the node's output is cast back
    (x * x).sum().backward()
    return x.detach().numpy(), a.grad.numpy(), b.grad.numpy()


def _setitem_graph_value_into_a_constant(L):
    c = L.zeros(3)
    v = L.tensor(2.0, requires_grad=True)
    c[1] = v * 3  # the constant joins the graph through the written value
    (c * L.tensor([1.0, 5.0, 1.0])).sum().backward()
    return c.detach().numpy(), v.grad.numpy()


def _copy_over_a_node_keeps_it(L):
    w = L.tensor([1.0, 2.0], requires_grad=True)
    c = L.tensor([5.0, 6.0], requires_grad=True)
    y = w * 2
    y.copy_(c * 1)
    (y * 3).sum().backward()
    return w.grad.numpy(), c.grad.numpy(), y.requires_grad


SAME += [_setitem_constant, _setitem_in_graph, _setitem_under_no_grad,
         _setitem_graph_value_into_a_constant, _copy_over_a_node_keeps_it,
         _mul_keeps_the_old_value_for_backward, _constant_times_a_graph,
         _float64_into_a_float32_node]
REFUSED.update({_saved_node_written_in_grad_mode: "modified in place",
                _view_of_saved_written: "modified in place|cannot write",
                _setitem_leaf: "leaf", _setitem_out_of_range: "out of bounds"})


def _flat(result):
    return result if isinstance(result, tuple) else (result,)


@pytest.mark.parametrize("scenario", SAME, ids=lambda f: f.__name__.lstrip("_"))
def test_inplace_as_torch(scenario):
    for got, want in zip(_flat(scenario(mt)), _flat(scenario(torch)), strict=True):
        if isinstance(want, np.ndarray):
            assert got.dtype == want.dtype
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=0)
        else:
            assert got == want


@pytest.mark.parametrize("scenario", list(REFUSED), ids=lambda f: f.__name__.lstrip("_"))
def test_inplace_refused_as_torch(scenario):
    with pytest.raises((RuntimeError, IndexError)):
        scenario(torch)
    with pytest.raises((RuntimeError, TypeError, IndexError), match=REFUSED[scenario]) as info:
        scenario(mt)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("scenario", SHARED, ids=lambda f: f.__name__.lstrip("_"))
def test_difference_inplace_on_shared_memory_refused(scenario):
    scenario(torch)  # runs
    with pytest.raises(RuntimeError, match="shares memory") as info:
        scenario(mt)
    assert "\n" not in str(info.value)


def test_inplace_in_a_captured_step_refused():
    """Replay follows ops, not writes: an in-place update inside a captured step is refused
    (before, the first replay gave a wrong loss and dropped a gradient)."""
    from minitorch.replay import Replay

    w = mt.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    b = mt.tensor([0.5, -0.5], requires_grad=True)

    def step(x):
        h = x @ w
        h += b
        return (h * h).sum()

    with pytest.raises(RuntimeError, match="cannot be captured for replay"):
        Replay().backward(step, np.ones((3, 2)))


def test_setitem_in_a_captured_step_refused():
    """Even a write that needs no gradient (into a constant) is refused in a captured step:
    the tape would replay the constant as it was at capture."""
    from minitorch.replay import Replay

    w = mt.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)

    def step(x):
        c = mt.zeros(2)
        c[1] = 2.0
        return ((x @ w) * c).sum()

    with pytest.raises(RuntimeError, match="cannot be captured for replay"):
        Replay().backward(step, np.ones((3, 2)))


def test_setitem_writes_a_number_in_the_tensor_dtype():
    """x[i] = 0.1 on a float64 tensor stores float64 0.1 exactly, as torch (not a float32
    rounding of it)."""
    for L in (mt, torch):
        x = L.zeros(3, dtype=L.float64)
        x[1] = 0.1
        assert x.numpy()[1] == 0.1


def test_shared_memory_counted_beside_saved_holds():
    """A tensor a live node saved and `.numpy()` aliases: the alias is seen beside the node's
    own references, and the write joining the graph is refused at once."""
    x = mt.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    z = y * y  # y saved: two references per hold
    alias = y.detach().numpy()
    with pytest.raises(RuntimeError, match="shares memory"):
        y += x
    assert alias is y.data and z.requires_grad


def test_inplace_writes_the_array_unless_the_node_saved_it():
    """h += 1 on a graph node writes h's own array (no copy: add saves nothing); h *= c saves
    h's old value, so h takes the product's array and the old one stays for backward."""
    w = mt.tensor([1.0, 2.0], requires_grad=True)
    h = w * 1
    before = id(h.data)  # an id, not a reference: a second holder would make the write refused
    h += 1
    assert id(h.data) == before and h.tolist() == [2.0, 3.0]
    c = mt.tensor([3.0, 4.0], requires_grad=True)
    h *= c
    assert id(h.data) != before  # the old array is the mul node's, its values checked below
    h.sum().backward()
    assert c.grad.tolist() == [2.0, 3.0] and w.grad.tolist() == [3.0, 4.0]
