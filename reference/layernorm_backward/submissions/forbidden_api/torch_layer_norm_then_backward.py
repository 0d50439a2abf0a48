"""Forbidden: torch.layer_norm (the built-in forward, no torch.nn needed) differentiated by y.backward()."""

import torch


def layer_norm_backward(x, weight, bias, grad_output, eps):
    leaves = [t.detach().clone().requires_grad_() for t in (x, weight, bias)]
    y = torch.layer_norm(leaves[0], [x.shape[-1]], leaves[1], leaves[2], eps)
    y.backward(grad_output)
    return tuple(leaf.grad for leaf in leaves)
