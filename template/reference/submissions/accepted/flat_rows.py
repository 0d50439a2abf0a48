"""Correct: the leading dimensions flattened into rows, then the shape of x given back."""


def template_entry_point(x, weight, eps):
    rows = x.reshape(-1, x.shape[-1])
    norm = (rows.pow(2).mean(dim=1, keepdim=True) + eps) ** 0.5
    return (rows / norm * weight).reshape(x.shape)
