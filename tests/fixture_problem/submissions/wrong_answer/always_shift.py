def scale_count(x, y, alpha, keep):
    return alpha * x + y, (x > 0).sum(-1)
