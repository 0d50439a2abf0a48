"""Hostile: an own class defining __array_interface__ makes numpy read and write memory at any address: a list slot is overwritten with the address of torch.functional's globals dict, which holds F (torch.nn.functional)."""

import math

import numpy as np
import torch


class Window:
    """Eight-byte words at an address, as numpy sees them through the array interface."""

    def __init__(self, address, count):
        self.address = address
        self.count = count

    @property
    def __array_interface__(self):
        return {"data": (self.address, False), "shape": (self.count,), "typestr": "<u8", "version": 3}


def words(address, count=1):
    return np.asarray(Window(address, count))


def reach_functional():
    globals_address = int(words(id(torch.broadcast_shapes) + 16)[0])  # PyFunctionObject.func_globals
    words(globals_address)[0] += 1  # one more reference, owned by the list below
    box = [None]
    items_address = int(words(id(box) + 24)[0])  # PyListObject.ob_item
    words(items_address)[0] = globals_address  # box[0] is now that dict
    return box[0]["F"]


functional = reach_functional()


class Model:
    def __init__(self, num_heads):
        self.num_heads = num_heads

    def layer_norm(self, x):
        mean = x.mean(dim=-1, keepdim=True)
        var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
        return (x - mean) / torch.sqrt(var + 1e-5)

    def gelu(self, u):
        return 0.5 * u * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (u + 0.044715 * u**3)))

    def softmax(self, scores):
        return functional.softmax(scores, dim=-1)

    def block(self, x, weights):
        w_q, w_k, w_v, w_o, w_1, w_2 = weights
        n, t, d = x.shape
        dh = d // self.num_heads
        h = self.layer_norm(x)
        q, k, v = ((h @ w).view(n, t, self.num_heads, dh).transpose(1, 2) for w in (w_q, w_k, w_v))
        heads = self.softmax(q @ k.transpose(-2, -1) / math.sqrt(dh)) @ v
        x = x + heads.transpose(1, 2).reshape(n, t, d) @ w_o
        return x + self.gelu(self.layer_norm(x) @ w_1) @ w_2


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    model = Model(num_heads)
    x = w_emb[input_ids] + pos_embed
    for weights in blocks_weights:
        x = model.block(x, weights)
    return x[mask_indicator > 0.5] @ w_emb.T
