"""Honest: a port of nanoGPT's GPTConfig, LayerNorm, CausalSelfAttention (fused c_attn, without the causal mask: this encoder is bidirectional), MLP and Block as plain classes."""

import math
from dataclasses import dataclass

import torch


@dataclass
class GPTConfig:
    n_head: int
    n_embd: int
    bias: bool = False  # no biases in this challenge
    dropout: float = 0.0


class LayerNorm:
    """nanoGPT's LayerNorm with bias=False, and here without a learned weight either."""

    def __init__(self, ndim, eps=1e-5):
        self.ndim = ndim
        self.eps = eps

    def forward(self, x):
        mu = x.mean(-1, keepdim=True)
        sigma2 = (x - mu).pow(2).mean(-1, keepdim=True)
        return (x - mu) / torch.sqrt(sigma2 + self.eps)


class CausalSelfAttention:
    """Kept nanoGPT's name; the mask is gone, every position sees every position."""

    def __init__(self, config, w_q, w_k, w_v, w_o):
        assert config.n_embd % config.n_head == 0
        self.c_attn = torch.cat([w_q, w_k, w_v], dim=1)  # (C, 3C): weights are (in, out) here
        self.c_proj = w_o
        self.n_head = config.n_head
        self.n_embd = config.n_embd

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = (x @ self.c_attn).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att - att.max(dim=-1, keepdim=True).values
        att = att.exp()
        att = att / att.sum(dim=-1, keepdim=True)
        y = att @ v  # (B, nh, T, T) x (B, nh, T, hs) -> (B, nh, T, hs)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return y @ self.c_proj


class MLP:
    def __init__(self, config, w_fc, w_proj):
        self.c_fc = w_fc
        self.c_proj = w_proj

    def forward(self, x):
        x = x @ self.c_fc
        x = 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))
        return x @ self.c_proj


class Block:
    def __init__(self, config, weights):
        w_q, w_k, w_v, w_o, w_fc, w_proj = weights
        self.ln_1 = LayerNorm(config.n_embd)
        self.attn = CausalSelfAttention(config, w_q, w_k, w_v, w_o)
        self.ln_2 = LayerNorm(config.n_embd)
        self.mlp = MLP(config, w_fc, w_proj)

    def forward(self, x):
        x = x + self.attn.forward(self.ln_1.forward(x))
        x = x + self.mlp.forward(self.ln_2.forward(x))
        return x


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    config = GPTConfig(n_head=num_heads, n_embd=w_emb.size(1))
    blocks = [Block(config, weights) for weights in blocks_weights]
    tok_emb = w_emb[input_ids]  # wte
    x = tok_emb + pos_embed  # wpe, already looked up for positions 0..T-1
    for block in blocks:
        x = block.forward(x)
    return x[mask_indicator > 0.5] @ w_emb.t()  # lm_head tied to wte
