"""Right: the attention softmax as a custom torch.autograd.Function whose forward keeps its dimension on ctx (ctx.dim = dim) and whose backward is written by hand."""

import math

import torch


class StableSoftmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, scores, dim):
        shifted = scores - scores.amax(dim=dim, keepdim=True)
        weights = torch.exp(shifted)
        weights = weights / weights.sum(dim=dim, keepdim=True)
        ctx.save_for_backward(weights)
        ctx.dim = dim
        return weights

    @staticmethod
    def backward(ctx, grad_weights):
        (weights,) = ctx.saved_tensors
        inner = (grad_weights * weights).sum(dim=ctx.dim, keepdim=True)
        return weights * (grad_weights - inner), None


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
        q = (h @ w_q).reshape(n, t, num_heads, d_head).transpose(1, 2)
        k = (h @ w_k).reshape(n, t, num_heads, d_head).transpose(1, 2)
        v = (h @ w_v).reshape(n, t, num_heads, d_head).transpose(1, 2)
        weights = StableSoftmax.apply(q @ k.transpose(-2, -1) / math.sqrt(d_head), -1)
        x = x + (weights @ v).transpose(1, 2).reshape(n, t, d) @ w_o
        x = x + gelu(layer_norm(x) @ w_mlp1) @ w_mlp2
    return x[mask_indicator > 0.5] @ w_emb.T
