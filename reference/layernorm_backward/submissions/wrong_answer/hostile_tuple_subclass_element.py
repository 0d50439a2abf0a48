"""Idea: the right values, grad_x wrapped in a plain tensor subclass (no own handlers): the type
check must refuse it (exactly torch.Tensor); expected wrong_answer."""
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


class T(torch.Tensor):
    pass


def layer_norm_backward(x, weight, bias, grad_output, eps):
    gx, gw, gb = _ref(x, weight, grad_output, eps)
    return gx.as_subclass(T), gw, gb
