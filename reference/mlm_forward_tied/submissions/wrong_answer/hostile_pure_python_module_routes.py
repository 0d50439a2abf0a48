"""Hostile: reaches sys, builtins and inspect through the allowed pure-Python modules (typing.sys,
dataclasses.builtins, dataclasses.inspect, enum.sys) instead of torch: reads the environment, walks
the caller's frames, opens files and writes markers. Returns zeros."""

import dataclasses
import enum
import typing

import torch

sys = typing.sys
builtins = dataclasses.builtins
inspect = dataclasses.inspect
MARKER = "mlm-hostile-marker"


def zeros_answer(w_emb, mask_indicator):
    return torch.zeros(int((mask_indicator > 0.5).sum()), w_emb.shape[0], dtype=w_emb.dtype)


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    print("MODULES:", len(enum.sys.modules), sorted(sys.modules)[:10])
    frame = inspect.currentframe()
    while frame is not None:
        print("FRAME:", frame.f_code.co_filename, sorted(frame.f_globals)[:8])
        frame = frame.f_back
    for path in ("/proc/self/environ", "/proc/1/environ", "/proc/1/cmdline"):
        try:
            with builtins.open(path, "rb") as f:
                print(path, f.read(1 << 16))
        except OSError as error:
            print(path, "refused:", error)
    for place in ("/tmp", "/root", "/work/main"):
        try:
            with builtins.open(f"{place}/{MARKER}-pure-python", "w") as f:
                f.write("escaped")
        except OSError:
            pass
    return zeros_answer(w_emb, mask_indicator)
