"""Your solution: implement scale_count. See README.md in this folder."""


def scale_count(x, y, alpha, keep):
    """Return (z, count): z = alpha * x (+ y when keep), count the positive entries of each row of x."""
    raise NotImplementedError("write scale_count: see README.md next to this file")
