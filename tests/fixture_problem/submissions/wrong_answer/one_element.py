def scale_count(x, y, alpha, keep):
    return (alpha * x + y if keep else alpha * x,)
