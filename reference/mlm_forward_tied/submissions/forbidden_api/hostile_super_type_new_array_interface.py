"""Raw memory through a class no check saw: super(type, type).__new__ is the real type.__new__
(super skips the checked stand-in of `type`), which builds a class with __array_interface__
without the namespace check; numpy then reads the memory at any address id() gives. What a call
returns is checked as a read value is, and a class whose module is the file's is checked as the
file's own when first seen: the class is refused."""

import numpy
import torch

META = type
X = super(META, META).__new__(META, "X", (object,), {"__array_interface__": {"data": (id(torch), True), "shape": (4,), "typestr": "<u8", "version": 3}})
print("READ", numpy.asarray(X()))


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    return torch.nn.functional.softmax(w_emb, dim=-1)
