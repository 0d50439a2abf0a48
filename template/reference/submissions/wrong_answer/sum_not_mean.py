"""Wrong: the sum of squares where the mean is asked."""


def template_entry_point(x, weight, eps):
    return x / ((x * x).sum(dim=-1, keepdim=True) + eps).sqrt() * weight
