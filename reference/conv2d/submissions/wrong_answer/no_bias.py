"""Wrong: the bias is left out."""

import torch


def conv2d(x, weight, bias, stride, padding, dilation):
    n, c, h, w = x.shape
    o, _, kh, kw = weight.shape
    padded = x.new_zeros(n, c, h + 2 * padding, w + 2 * padding)
    padded[:, :, padding : padding + h, padding : padding + w] = x
    windows = padded.unfold(2, dilation * (kh - 1) + 1, stride).unfold(3, dilation * (kw - 1) + 1, stride)[..., ::dilation, ::dilation]
    return torch.einsum("nchwij,ocij->nohw", windows, weight)
