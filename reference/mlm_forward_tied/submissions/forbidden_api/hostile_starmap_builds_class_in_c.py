"""A class built in C (itertools.starmap over the real type.__new__, reached as super(type, type).__new__),
so that no call of the file returns it: the items a loop gives are checked as a read value is, and
the class, whose module is the file's, is checked as its own: refused for its __array_interface__."""

import itertools
import numpy
import torch
import typing

ns = {"__array_interface__": {"data": (id(torch), True), "shape": (4,), "typestr": "<u8", "version": 3}}
for X in itertools.starmap(typing.get_origin, [(typing.Type[int],)]):
    print("T", X is type)
made = list(itertools.starmap(super(type, type).__new__, [(type, "X", (object,), ns)]))
print("made", made)
for m in made:
    print("READ", numpy.asarray(m()))


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    return torch.nn.functional.softmax(w_emb, dim=-1)
