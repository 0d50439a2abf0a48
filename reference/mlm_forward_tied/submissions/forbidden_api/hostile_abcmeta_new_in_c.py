"""A class built in C by a library metaclass's own __new__ (abc.ABCMeta.__new__, run by
itertools.starmap, calls the real type.__new__ itself), instantiated in C (type.__call__ run by
map) and handed to numpy in C: no value of the chain passes through the file's code until numpy
has read the raw address. Every metaclass __new__ written in Python checks the names of what it
builds (restricted._check_library_metaclasses): refused."""

import abc
import itertools

import numpy
import torch

ns = {"__array_interface__": {"data": (id(torch), True), "shape": (4,), "typestr": "<u8", "version": 3}}
arrays = list(map(numpy.asarray, map(type.__call__, itertools.starmap(abc.ABCMeta.__new__, [(abc.ABCMeta, "W", (object,), ns)]))))
print("READ", arrays)


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    return torch.nn.functional.softmax(w_emb, dim=-1)
