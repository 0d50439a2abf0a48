"""Right: an Enum whose members are functools.partial of torch's functions (torch.tanh,
torch.exp), each called through the member's value."""

import enum
import functools
import math
import torch


class Nonlinearity(enum.Enum):
    # functools.partial makes a function an Enum member (a plain function would be a method)
    TANH = functools.partial(torch.tanh)
    EXP = functools.partial(torch.exp)

    def __call__(self, x):
        return self.value(x)


assert len(Nonlinearity) == 2, list(Nonlinearity)


def gelu4(x):
    return 0.5 * x * (1.0 + Nonlinearity.TANH(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def layer_norm(x):
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + 1e-5)


def gelu(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def softmax(scores):
    e = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
    return e / e.sum(dim=-1, keepdim=True)


def attention(x, w_q, w_k, w_v, w_o, num_heads):
    n, t, d = x.shape
    dh = d // num_heads
    q, k, v = ((x @ w).view(n, t, num_heads, dh).transpose(1, 2) for w in (w_q, w_k, w_v))
    out = softmax(q @ k.transpose(-2, -1) / math.sqrt(dh)) @ v
    return out.transpose(1, 2).reshape(n, t, d) @ w_o


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    x = w_emb[input_ids] + pos_embed
    for w_q, w_k, w_v, w_o, w_mlp1, w_mlp2 in blocks_weights:
        x = x + attention(layer_norm(x), w_q, w_k, w_v, w_o, num_heads)
        x = x + gelu4(layer_norm(x) @ w_mlp1) @ w_mlp2
    return x[mask_indicator > 0.5] @ w_emb.T

