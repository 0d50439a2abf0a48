"""Your solution: implement eigh. See README.md in this folder for the full statement."""

import torch  # noqa: F401 - the tensor library you will need


def eigh(a):
    """The eigenvalues (ascending) and unit eigenvectors (as columns) of the symmetric matrix a (n, n).

    Return (eigenvalues, eigenvectors): shapes (n,) and (n, n), column i an eigenvector of
    eigenvalue i, both in the dtype of a.
    """
    raise NotImplementedError("write eigh: see the statement, README.md next to this file")
