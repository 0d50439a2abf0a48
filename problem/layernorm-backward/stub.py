"""Your solution: implement layer_norm_backward. See README.md in this folder for the full statement."""

import torch  # noqa: F401 - the tensor library you will need


def layer_norm_backward(x, weight, bias, grad_output, eps):
    """Gradients of y = (x - mean) / sqrt(var + eps) * weight + bias over the last dimension of x.

    x, grad_output: (..., D); weight, bias: (D,); eps: a Python float.
    Return (grad_x, grad_weight, grad_bias) of shapes x.shape, (D,), (D,), in the dtype of x.
    """
    raise NotImplementedError("write layer_norm_backward: see the statement, README.md next to this file")
