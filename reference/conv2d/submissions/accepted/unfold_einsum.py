"""Correct: zero padding by slice assignment into a new tensor, then Tensor.unfold windows and one einsum."""

import torch


def conv2d(x, weight, bias, stride, padding, dilation):
    n, c, h, w = x.shape
    o, _, kh, kw = weight.shape
    padded = x.new_zeros(n, c, h + 2 * padding, w + 2 * padding)
    padded[:, :, padding : padding + h, padding : padding + w] = x
    span_h, span_w = dilation * (kh - 1) + 1, dilation * (kw - 1) + 1
    windows = padded.unfold(2, span_h, stride).unfold(3, span_w, stride)  # (n, c, h_out, w_out, span_h, span_w)
    windows = windows[..., ::dilation, ::dilation]  # (n, c, h_out, w_out, kh, kw)
    return torch.einsum("nchwij,ocij->nohw", windows, weight) + bias[None, :, None, None]
