"""Right: the activation chosen from an Enum whose member is functools.partial of the file's own
function (the documented way to make a function an Enum member: a plain function in an Enum body
is a method)."""

import enum
import functools
import math
import torch


def _gelu(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


class Activation(enum.Enum):
    # the documented idiom: wrap functions in functools.partial so that they become members
    GELU = functools.partial(_gelu)

    def __call__(self, x):
        return self.value(x)


ACT = Activation["GELU"]  # chosen by name, as a config would


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
        x = x + ACT(layer_norm(x) @ w_mlp1) @ w_mlp2
    return x[mask_indicator > 0.5] @ w_emb.T

