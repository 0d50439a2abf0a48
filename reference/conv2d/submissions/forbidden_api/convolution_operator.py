"""Forbidden: torch.convolution, the ATen operator behind every convolution."""

import torch


def conv2d(x, weight, bias, stride, padding, dilation):
    return torch.convolution(x, weight, bias, [stride, stride], [padding, padding], [dilation, dilation], False, [0, 0], 1)
