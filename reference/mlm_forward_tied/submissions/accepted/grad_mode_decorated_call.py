"""Honest: a module-like class whose __call__ is decorated with one of torch's grad-mode decorators
(@torch.enable_grad(); @torch.no_grad() is written the same way, for code whose gradients are not
checked), as PyTorch code writes an entry point."""

import math

import torch


def layer_norm(x):
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + 1e-5)


def gelu(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def softmax(scores):
    scores = scores - scores.amax(dim=-1, keepdim=True)
    e = torch.exp(scores)
    return e / e.sum(dim=-1, keepdim=True)


def attention(x, w_q, w_k, w_v, w_o, num_heads):
    n, t, d = x.shape
    d_head = d // num_heads
    q = (x @ w_q).view(n, t, num_heads, d_head).transpose(1, 2)
    k = (x @ w_k).view(n, t, num_heads, d_head).transpose(1, 2)
    v = (x @ w_v).view(n, t, num_heads, d_head).transpose(1, 2)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_head)
    out = softmax(scores) @ v
    return out.transpose(1, 2).reshape(n, t, d) @ w_o


class TiedMLM:
    def __init__(self, w_emb, pos_embed, blocks_weights, num_heads):
        self.w_emb, self.pos_embed, self.blocks, self.num_heads = w_emb, pos_embed, blocks_weights, num_heads

    @torch.enable_grad()
    def __call__(self, input_ids, mask_indicator):
        x = self.w_emb[input_ids] + self.pos_embed
        for w_q, w_k, w_v, w_o, w_mlp1, w_mlp2 in self.blocks:
            x = x + attention(layer_norm(x), w_q, w_k, w_v, w_o, self.num_heads)
            x = x + gelu(layer_norm(x) @ w_mlp1) @ w_mlp2
        return x[mask_indicator > 0.5] @ self.w_emb.T


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    return TiedMLM(w_emb, pos_embed, blocks_weights, num_heads)(input_ids, mask_indicator)
