"""Wrong: eps added after the square root; shows where mean(x**2) is near eps (the small_values family)."""


def template_entry_point(x, weight, eps):
    return x / ((x * x).mean(dim=-1, keepdim=True).sqrt() + eps) * weight
