"""Correct: one output position at a time, in plain Python loops, stacked at the end."""

import torch


def conv2d(x, weight, bias, stride, padding, dilation):
    n, c, h, w = x.shape
    o, _, kh, kw = weight.shape
    zeros_h = torch.zeros(n, c, padding, w, dtype=x.dtype)
    p = torch.cat([zeros_h, x, zeros_h], dim=2)
    zeros_w = torch.zeros(n, c, h + 2 * padding, padding, dtype=x.dtype)
    p = torch.cat([zeros_w, p, zeros_w], dim=3)
    h_out = (h + 2 * padding - dilation * (kh - 1) - 1) // stride + 1
    w_out = (w + 2 * padding - dilation * (kw - 1) - 1) // stride + 1
    flat_w = weight.reshape(o, -1)
    rows = []
    for i in range(h_out):
        cols = []
        for j in range(w_out):
            r, s = i * stride, j * stride
            patch = p[:, :, r : r + dilation * (kh - 1) + 1 : dilation, s : s + dilation * (kw - 1) + 1 : dilation]
            cols.append(patch.reshape(n, -1) @ flat_w.T + bias)
        rows.append(torch.stack(cols, dim=-1))
    return torch.stack(rows, dim=-2)
