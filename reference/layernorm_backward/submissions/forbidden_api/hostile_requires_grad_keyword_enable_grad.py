"""Idea: build an autograd graph without any forbidden name (requires_grad=True keyword in a factory
function, torch.enable_grad) and read the gradient through repr()/str() of the result (grad_fn name
only) or torch.Tensor.__iadd__ chains: nothing but a graph is reachable. The file then tries
torch.autograd through 'from torch import autograd' (the package removes it from the allowed
submodules): expected forbidden_api."""
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
    leaf = torch.zeros(x.shape, dtype=x.dtype, requires_grad=True)
    with torch.enable_grad():
        y = ((x + leaf) * grad_output).sum()
    print("GRAPH", repr(y)[-40:])
    from torch import autograd
    return autograd.grad(y, leaf)[0], weight, bias
