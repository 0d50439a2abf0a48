"""Wrong: the right values, computed in NumPy: the result carries no gradient (a wrong answer, not an error)."""

import numpy as np
import torch


def conv2d(x, weight, bias, stride, padding, dilation):
    xs, ws, bs = x.detach().numpy(), weight.detach().numpy(), bias.detach().numpy()
    n, c, h, w = xs.shape
    o, _, kh, kw = ws.shape
    p = np.zeros((n, c, h + 2 * padding, w + 2 * padding), dtype=xs.dtype)
    p[:, :, padding : padding + h, padding : padding + w] = xs
    h_out = (h + 2 * padding - dilation * (kh - 1) - 1) // stride + 1
    w_out = (w + 2 * padding - dilation * (kw - 1) - 1) // stride + 1
    y = np.zeros((n, o, h_out, w_out), dtype=xs.dtype) + bs[None, :, None, None]
    for a in range(kh):
        for b in range(kw):
            win = p[:, :, a * dilation : a * dilation + stride * (h_out - 1) + 1 : stride, b * dilation : b * dilation + stride * (w_out - 1) + 1 : stride]
            y = y + np.einsum("nchw,oc->nohw", win, ws[:, :, a, b])
    return torch.from_numpy(np.ascontiguousarray(y))
