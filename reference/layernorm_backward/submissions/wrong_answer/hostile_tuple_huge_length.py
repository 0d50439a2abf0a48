"""Idea: a tuple of 10 million elements (the right three first): length is read with tuple's slot,
no part is described; expected wrong_answer (a tuple of N elements), no grader_error."""
# every wall: wrong_answer
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


def layer_norm_backward(x, weight, bias, grad_output, eps):
    return _ref(x, weight, grad_output, eps) + (0,) * 10_000_000
