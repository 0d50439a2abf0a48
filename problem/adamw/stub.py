"""Your solution: implement the class AdamW. See README.md in this folder for the full statement."""

import torch  # noqa: F401 - the tensor library you will need


class AdamW:
    def __init__(self, params, lr, betas, eps, weight_decay):
        """params: a list of float tensors, to be updated in place by step(); betas: (beta1, beta2)."""
        raise NotImplementedError("write AdamW: see the statement, README.md next to this file")

    def step(self, grads):
        """One step of AdamW with grads (shaped like params, not to be modified): update every
        tensor of params in place."""
        raise NotImplementedError("write AdamW.step: see the statement, README.md next to this file")
