def scale_count(x, y, alpha, keep):
    z = alpha * x.detach()
    return (z + y if keep else z), (x > 0).sum(-1)
