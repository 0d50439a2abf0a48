"""Wrong twice: a GPT block (nanoGPT's CausalSelfAttention and MLP) adapted to the signature keeps
its causal mask and uses the exact erf GELU. Layer norm and residuals are right: the diagnosis must
name the attention's averaging and the feed-forward, not the layer norm they share."""
# diagnosis: averaging feed_forward

import math

import torch


class LayerNorm:
    def __init__(self, eps=1e-5):
        self.eps = eps

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        var = x.var(-1, keepdim=True, unbiased=False)
        return (x - mean) / torch.sqrt(var + self.eps)


class CausalSelfAttention:
    def __init__(self, w_q, w_k, w_v, w_o, n_head):
        self.w_q, self.w_k, self.w_v, self.w_o, self.n_head = w_q, w_k, w_v, w_o, n_head

    def forward(self, x):
        B, T, C = x.size()
        q = (x @ self.w_q).view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = (x @ self.w_k).view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = (x @ self.w_v).view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        bias = torch.tril(torch.ones(T, T, dtype=torch.bool)).view(1, 1, T, T)
        att = att.masked_fill(~bias, float("-inf"))
        att = att - att.amax(dim=-1, keepdim=True)
        att = torch.exp(att)
        att = att / att.sum(dim=-1, keepdim=True)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return y @ self.w_o


class MLP:
    def __init__(self, w_fc, w_proj):
        self.w_fc, self.w_proj = w_fc, w_proj

    def forward(self, x):
        x = x @ self.w_fc
        x = 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))
        return x @ self.w_proj


class Block:
    def __init__(self, weights, n_head):
        w_q, w_k, w_v, w_o, w_fc, w_proj = weights
        self.ln_1, self.ln_2 = LayerNorm(), LayerNorm()
        self.attn = CausalSelfAttention(w_q, w_k, w_v, w_o, n_head)
        self.mlp = MLP(w_fc, w_proj)

    def forward(self, x):
        x = x + self.attn.forward(self.ln_1.forward(x))
        x = x + self.mlp.forward(self.ln_2.forward(x))
        return x


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    x = w_emb[input_ids] + pos_embed
    for weights in blocks_weights:
        x = Block(weights, num_heads).forward(x)
    return x[mask_indicator > 0.5] @ w_emb.T
