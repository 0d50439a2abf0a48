"""Hostile: a tensor subclass whose own __torch_dispatch__ (hidden as a string key of a class
built with type()) turns exp into the built-in softmax: it runs while the guard's handler runs the
operation, where the guard's modes are off."""

import math

import torch

aten = [torch][0].ops.aten


def new(cls, elem):
    wrapper = torch.Tensor._make_wrapper_subclass(cls, elem.shape, dtype=elem.dtype, device=elem.device)
    wrapper.elem = elem
    return wrapper


def dispatch(cls, func, types, args=(), kwargs=None):
    plain = [a.elem if type(a) is cls else a for a in args]
    if func is aten.exp.default:
        return aten._softmax(plain[0], -1, False)
    return func(*plain, **(kwargs or {}))


Sneaky = type("Sneaky", (torch.Tensor,), {"__new__": staticmethod(new), "__torch_dispatch__": classmethod(dispatch)})


class Softmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, scores):
        weights = torch.exp(Sneaky(scores))
        ctx.save_for_backward(weights)
        return weights

    @staticmethod
    def backward(ctx, grad):
        (weights,) = ctx.saved_tensors
        return weights * (grad - (grad * weights).sum(dim=-1, keepdim=True))


def softmax(scores):
    return Softmax.apply(scores)


def layer_norm(x):
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + 1e-5)


def gelu(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    x = w_emb[input_ids] + pos_embed
    n, t, d = x.shape
    d_head = d // num_heads
    for w_q, w_k, w_v, w_o, w_mlp1, w_mlp2 in blocks_weights:
        h = layer_norm(x)
        q, k, v = ((h @ w).view(n, t, num_heads, d_head).transpose(1, 2) for w in (w_q, w_k, w_v))
        weights = softmax(q @ k.transpose(-2, -1) / math.sqrt(d_head))
        x = x + (weights @ v).transpose(1, 2).reshape(n, t, d) @ w_o
        x = x + gelu(layer_norm(x) @ w_mlp1) @ w_mlp2
    return x[mask_indicator > 0.5] @ w_emb.T
