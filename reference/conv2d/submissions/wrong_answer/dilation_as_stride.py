"""Wrong: the kernel's taps read stride apart and the windows start dilation apart (the two swapped)."""

import torch


def conv2d(x, weight, bias, stride, padding, dilation):
    n, c, h, w = x.shape
    o, _, kh, kw = weight.shape
    h_out = (h + 2 * padding - dilation * (kh - 1) - 1) // stride + 1
    w_out = (w + 2 * padding - dilation * (kw - 1) - 1) // stride + 1
    padded = x.new_zeros(n, c, h + 2 * padding + 64, w + 2 * padding + 64)
    padded[:, :, padding : padding + h, padding : padding + w] = x
    y = bias[None, :, None, None].expand(n, o, h_out, w_out)
    for a in range(kh):
        for b in range(kw):
            win = padded[:, :, a * stride : a * stride + dilation * h_out : dilation, b * stride : b * stride + dilation * w_out : dilation][:, :, :h_out, :w_out]
            y = y + torch.einsum("nchw,oc->nohw", win, weight[:, :, a, b])
    return y
