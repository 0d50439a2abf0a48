"""numpy never makes an array of Python objects in the child (grader/child/capabilities/arrays.py):
wherever the request comes from (the file's call, library code handed numpy's function, numpy's own
inference from a list of objects, a structured or subarray dtype), the refusal comes before any
memory is allocated, and arrays of numbers, structured or not, are made as before.

Each route runs in a process of its own, as the child does: the refusal ends the process."""

import subprocess
import sys

import pytest

from tests.grading import ROOT

RUN = """
import os, sys
import numpy
from grader.child.capabilities import arrays

def refuse():
    print("REFUSED", flush=True)
    os._exit(7)

arrays.refuse_object_arrays(refuse, 9)
class Mine:
    pass
exec(sys.argv[1])
print("MADE", flush=True)
"""

REFUSED = [
    "numpy.array([Mine(), b'x'], dtype=object)",
    "numpy.array([Mine(), 1.0])",  # numpy infers dtype=object itself
    "numpy.asarray([[Mine()], [Mine()]])",
    "numpy.empty(3, dtype='O')",
    "numpy.zeros((), dtype=object)",
    "numpy.empty(0, dtype=object)",  # even with no item
    "list(map(numpy.array, [[Mine(), 2]], [object]))",  # library code makes it where no check of values runs
    "numpy.arange(3).astype(object)",
    "numpy.zeros(2, dtype=[('a', 'f8'), ('b', object)])",  # a structured dtype with an object field
    "numpy.zeros(2, dtype=('O', (3,)))",  # a subarray of objects
    "numpy.frompyfunc(lambda v: v, 1, 1)(numpy.arange(3))",  # its loops make object arrays
    "numpy.full(2, Mine())",
    "numpy.sort([Mine(), Mine()])",
    "numpy.array(['a', 'bc'], dtype='T')",  # numpy's variable-width strings hold pointers too
    "numpy.arange(3).astype(numpy.dtypes.StringDType())",
]

MADE = [
    "numpy.array([1.0, 2.0])",
    "numpy.zeros(2, dtype=[('a', 'f8'), ('b', 'i4')])",  # structured, numbers only
    "numpy.zeros(2, dtype=('f4', (3,)))",
    "numpy.array([(1, 2.0)], dtype='i4,f8')",
    "numpy.dtype(object)",  # the dtype alone holds nothing
    "numpy.ones((2, 3)).sum(axis=0)",
    "numpy.array(['a', 'bc'])",  # fixed-width strings hold no pointer
]


def _run(statement: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", RUN, statement], cwd=ROOT, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("statement", REFUSED)
def test_numpy_never_makes_an_array_of_python_objects(statement):
    done = _run(statement)
    assert (done.returncode, done.stdout) == (7, "REFUSED\n"), done.stderr[-2000:]


@pytest.mark.parametrize("statement", MADE)
def test_arrays_of_numbers_are_made_as_before(statement):
    done = _run(statement)
    assert (done.returncode, done.stdout) == (0, "MADE\n"), done.stderr[-2000:]


def test_a_refusal_that_returns_still_ends_the_process():
    done = subprocess.run(
        [sys.executable, "-c", RUN.replace("os._exit(7)", "return"), "numpy.array([Mine()])"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert (done.returncode, done.stdout) == (9, "REFUSED\n"), done.stderr[-2000:]


CONSTRUCTOR_REFUSES = """
import sys
import numpy
from grader.child.capabilities import arrays

arrays.check_buffers(lambda array: None)
for _ in range(2000):  # each time numpy refuses: an exception, never what the stack held (a freed object, a crash)
    for make in (
        lambda: numpy.ndarray((2,), numpy.float64, buffer=numpy.zeros(2), offset=8, strides=(8,)),
        lambda: numpy.ndarray((4,), numpy.float64, buffer=numpy.broadcast_to(numpy.zeros(1), (4,))),
        lambda: numpy.ndarray(shape=(2,), dtype=numpy.float64, buffer=numpy.zeros(1)),
    ):
        try:
            make()
        except SystemError:
            pass
        else:
            sys.exit("an array came back")
made = numpy.ndarray((3,), numpy.float64, buffer=numpy.arange(3.0))
print(made.tolist(), sys.getrefcount(made))
"""


def test_the_checked_constructor_hands_back_no_array_where_numpy_refuses_to_make_one():
    done = subprocess.run([sys.executable, "-c", CONSTRUCTOR_REFUSES], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["[0.0,", "1.0,", "2.0]", "2"]  # and the array made holds one reference, its name's
