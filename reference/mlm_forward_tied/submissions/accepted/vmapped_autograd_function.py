"""Right: the attention softmax as a torch.autograd.Function with generate_vmap_rule = True,
applied row by row through torch.vmap; its setup_context keeps the dimension on ctx (functorch
hands it a wrapper of the real context) and its backward is written by hand."""

import math

import torch


class RowSoftmax(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(scores, dim):
        shifted = scores - scores.amax(dim=dim, keepdim=True)
        weights = torch.exp(shifted)
        return weights / weights.sum(dim=dim, keepdim=True)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(output)
        ctx.dim = inputs[1]

    @staticmethod
    def backward(ctx, grad_weights):
        (weights,) = ctx.saved_tensors
        inner = (grad_weights * weights).sum(dim=ctx.dim, keepdim=True)
        return weights * (grad_weights - inner), None


def softmax_rows(scores):
    """The softmax over the last dimension, one leading row at a time."""
    return torch.vmap(RowSoftmax.apply, in_dims=(0, None))(scores, -1)


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
        weights = softmax_rows(q @ k.transpose(-2, -1) / math.sqrt(d_head))
        x = x + (weights @ v).transpose(1, 2).reshape(n, t, d) @ w_o
        x = x + gelu(layer_norm(x) @ w_mlp1) @ w_mlp2
    return x[mask_indicator > 0.5] @ w_emb.T
