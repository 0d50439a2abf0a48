"""Wrong: H_out and W_out computed without the padding (the padded input's border is dropped)."""

import torch


def conv2d(x, weight, bias, stride, padding, dilation):
    n, c, h, w = x.shape
    o, _, kh, kw = weight.shape
    padded = x.new_zeros(n, c, h + 2 * padding, w + 2 * padding)
    padded[:, :, padding : padding + h, padding : padding + w] = x
    h_out = (h - dilation * (kh - 1) - 1) // stride + 1
    w_out = (w - dilation * (kw - 1) - 1) // stride + 1
    windows = padded.unfold(2, dilation * (kh - 1) + 1, stride).unfold(3, dilation * (kw - 1) + 1, stride)[..., ::dilation, ::dilation]
    return torch.einsum("nchwij,ocij->nohw", windows[:, :, :h_out, :w_out], weight) + bias[None, :, None, None]
