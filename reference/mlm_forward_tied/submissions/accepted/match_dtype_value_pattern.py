"""Right: picks the layer-norm epsilon's dtype handling with a match statement on x.dtype (value patterns torch.float32 / torch.float64)."""

import math

import torch


def eps_for(dtype):
    match dtype:
        case torch.float32:
            return 1e-5
        case torch.float64:
            return 1e-5
        case _:
            raise TypeError(f"unsupported dtype {dtype}")


def layer_norm(x):
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps_for(x.dtype))


def gelu(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def softmax(scores):
    scores = scores - scores.amax(dim=-1, keepdim=True)
    e = torch.exp(scores)
    return e / e.sum(dim=-1, keepdim=True)


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    x = w_emb[input_ids] + pos_embed
    n, t, d = x.shape
    d_head = d // num_heads
    for w_q, w_k, w_v, w_o, w_mlp1, w_mlp2 in blocks_weights:
        h = layer_norm(x)
        q = (h @ w_q).reshape(n, t, num_heads, d_head).transpose(1, 2)
        k = (h @ w_k).reshape(n, t, num_heads, d_head).transpose(1, 2)
        v = (h @ w_v).reshape(n, t, num_heads, d_head).transpose(1, 2)
        weights = softmax(q @ k.transpose(-2, -1) / math.sqrt(d_head))
        x = x + (weights @ v).transpose(1, 2).reshape(n, t, d) @ w_o
        x = x + gelu(layer_norm(x) @ w_mlp1) @ w_mlp2
    return x[mask_indicator > 0.5] @ w_emb.T
