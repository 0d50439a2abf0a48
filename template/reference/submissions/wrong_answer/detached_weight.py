"""Wrong: the right values, but weight is detached: the gradient reaching it is 0."""


def template_entry_point(x, weight, eps):
    return x / ((x * x).mean(dim=-1, keepdim=True) + eps).sqrt() * weight.detach()
