"""Forbidden: torch.conv2d computes the very convolution the challenge asks to write."""

import torch


def conv2d(x, weight, bias, stride, padding, dilation):
    return torch.conv2d(x, weight, bias, stride, padding, dilation)
