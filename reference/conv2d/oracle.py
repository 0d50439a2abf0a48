"""2-D convolution: an independent oracle, torch.nn.functional.conv2d itself (what the contract
names), in float64. `verify` compares the reference against it."""

import torch
from torch import Tensor


def oracle(x: Tensor, weight: Tensor, bias: Tensor, stride: int, padding: int, dilation: int) -> Tensor:
    wide = torch.float64
    return torch.nn.functional.conv2d(x.to(wide), weight.to(wide), bias.to(wide), stride=stride, padding=padding, dilation=dilation)
