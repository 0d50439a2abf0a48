"""Idea: a named tuple whose Python __getitem__/__len__/__iter__ lie (claim wrong elements): the
tuple holds zeros, the methods give the right answer. describe_tuple must read tuple's own slots,
so the zeros are judged: expected wrong_answer, with every wall too (the special methods
are allowed; the judge reads the tuple itself)."""
# every wall: wrong_answer
from collections import namedtuple
import torch


def _ref(x, weight, grad_output, eps):
    d = x.shape[-1]
    rows = x.reshape(-1, d)
    dy = grad_output.reshape(-1, d)
    c = rows - rows.mean(1, keepdim=True)
    sigma = torch.sqrt((c * c).mean(1, keepdim=True) + eps)
    x_hat = c / sigma
    g = dy * weight
    gx = (g - g.mean(1, keepdim=True) - x_hat * (g * x_hat).mean(1, keepdim=True)) / sigma
    return gx.reshape(x.shape), (dy * x_hat).sum(0), dy.sum(0)


class Out(namedtuple("Out", "gx gw gb")):
    def __getitem__(self, i):
        return self.right[i]

    def __len__(self):
        return 3

    def __iter__(self):
        return iter(self.right)


def layer_norm_backward(x, weight, bias, grad_output, eps):
    right = _ref(x, weight, grad_output, eps)
    out = Out(*(torch.zeros_like(t) for t in right))
    out.right = right
    return out
