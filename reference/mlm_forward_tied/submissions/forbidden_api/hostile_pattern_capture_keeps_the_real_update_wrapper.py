"""Hostile: captures functools.update_wrapper with a class pattern (`case object(update_wrapper=uw)`),
whose capture is bound before it is checked: a read hands out only a stand-in that copies the
default attributes, the real one copies any (assigned=("untyped_storage",)), and a computed
getattr then calls a tensor's raw storage. Accepted, every wall on, until the check refused a
capture that a read would have handed out as a stand-in."""

import functools
import math

import torch

match functools:
    case object(update_wrapper=uw):
        pass

class Holder:
    pass

LEAK = []

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


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    x = w_emb[input_ids] + pos_embed
    for w_q, w_k, w_v, w_o, w_mlp1, w_mlp2 in blocks_weights:
        x = x + attention(layer_norm(x), w_q, w_k, w_v, w_o, num_heads)
        x = x + gelu(layer_norm(x) @ w_mlp1) @ w_mlp2
    hidden = x[mask_indicator > 0.5]
    return hidden @ w_emb.T


_orig = mlm_forward_tied


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    if not LEAK:
        h = Holder()
        uw(h, w_emb, assigned=("untyped_storage",), updated=())
        s = getattr(h, "untyped" + "_storage")()
        LEAK.append(s)
        print("GOT STORAGE", type(s), s.nbytes(), uw)
    return _orig(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads)
