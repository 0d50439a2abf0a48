"""Your solution: implement cross_entropy_backward. See README.md in this folder for the full statement."""

import torch  # noqa: F401 - the tensor library you will need


def cross_entropy_backward(logits, targets, ignore_index, label_smoothing):
    """The mean cross-entropy loss of logits (N, C) against targets (N,) and its gradient.

    Rows whose target equals ignore_index are left out of the mean; label_smoothing spreads that
    share of each target's weight over all C classes. Return (loss, grad_logits): a 0-dim tensor and
    a tensor of the shape of logits, both in the dtype of logits.
    """
    raise NotImplementedError("write cross_entropy_backward: see the statement, README.md next to this file")
