"""Honest: a port of minGPT's style, NewGELU as a class, the block's mlp as a dict with an mlpf lambda, modules called through forward()."""

import math

import torch


class NewGELU:
    """The GELU of Google BERT / OpenAI GPT (tanh form)."""

    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class Linear:
    def __init__(self, weight):
        self.weight = weight  # (in, out)

    def forward(self, x):
        return x @ self.weight


class LayerNorm:
    def __init__(self, eps=1e-5):
        self.eps = eps

    def forward(self, x):
        mean = x.mean(dim=-1, keepdim=True)
        var = x.var(dim=-1, keepdim=True, correction=0)
        return (x - mean) / (var + self.eps).sqrt()


class SelfAttention:
    """minGPT's CausalSelfAttention, less the causal mask and the dropouts."""

    def __init__(self, n_head, w_q, w_k, w_v, w_o):
        self.query, self.key, self.value = Linear(w_q), Linear(w_k), Linear(w_v)
        self.c_proj = Linear(w_o)
        self.n_head = n_head

    def forward(self, x):
        B, T, C = x.size()
        k = self.key.forward(x).view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = self.query.forward(x).view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = self.value.forward(x).view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = torch.exp(att - torch.logsumexp(att, dim=-1, keepdim=True))
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj.forward(y)


class Block:
    def __init__(self, n_head, weights):
        w_q, w_k, w_v, w_o, w_fc, w_proj = weights.unbind(0)
        self.ln_1 = LayerNorm()
        self.attn = SelfAttention(n_head, w_q, w_k, w_v, w_o)
        self.ln_2 = LayerNorm()
        self.mlp = dict(c_fc=Linear(w_fc), c_proj=Linear(w_proj), act=NewGELU())
        m = self.mlp
        self.mlpf = lambda x: m["c_proj"].forward(m["act"].forward(m["c_fc"].forward(x)))

    def forward(self, x):
        x = x + self.attn.forward(self.ln_1.forward(x))
        x = x + self.mlpf(self.ln_2.forward(x))
        return x


class GPT:
    def __init__(self, w_emb, pos_embed, blocks_weights, n_head):
        self.wte = w_emb
        self.wpe = pos_embed
        self.h = [Block(n_head, w) for w in blocks_weights]

    def forward(self, idx, mask):
        x = self.wte[idx] + self.wpe
        for block in self.h:
            x = block.forward(x)
        return x[mask > 0.5] @ self.wte.transpose(0, 1)  # lm_head weight tied to wte


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    return GPT(w_emb, pos_embed, blocks_weights, num_heads).forward(input_ids, mask_indicator)
