"""Correct: a 2x2 rotation matrix per position and pair, applied with einsum."""

import math

import torch


def apply_rotary(x, positions, base):
    t, h, d = x.shape
    rows = []
    for p in positions.tolist():
        mats = []
        for i in range(d // 2):
            angle = p * base ** (-2 * i / d)
            c, s = math.cos(angle), math.sin(angle)
            mats.append([[c, -s], [s, c]])
        rows.append(mats)
    rot = torch.tensor(rows, dtype=x.dtype)  # (t, d/2, 2, 2)
    pairs = x.reshape(t, h, d // 2, 2)
    return torch.einsum("tpij,thpj->thpi", rot, pairs).reshape(t, h, d)
