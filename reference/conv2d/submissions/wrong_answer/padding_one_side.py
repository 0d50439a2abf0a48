"""Wrong: padding added only at the top and the left (2 * padding of it), not on every side."""

import torch


def conv2d(x, weight, bias, stride, padding, dilation):
    n, c, h, w = x.shape
    o, _, kh, kw = weight.shape
    padded = x.new_zeros(n, c, h + 2 * padding, w + 2 * padding)
    padded[:, :, 2 * padding :, 2 * padding :] = x
    windows = padded.unfold(2, dilation * (kh - 1) + 1, stride).unfold(3, dilation * (kw - 1) + 1, stride)[..., ::dilation, ::dilation]
    return torch.einsum("nchwij,ocij->nohw", windows, weight) + bias[None, :, None, None]
