"""Who called the file's special method (grader/child/capabilities/callers.py): Python code and
CPython's own C code may, the C code of numpy and torch may not, whatever the route between them
(the file's call, library code handed numpy's function, a generator numpy resumes).

The walk is run here, in this process, from special methods that record what it found and return
normally, so numpy and torch go on as they would; tests/test_hostile.py grades the attacks."""

import functools
import sys

import numpy
import pytest
import torch

from grader.child.capabilities.callers import Callers, probe

CALLERS = Callers()
HERE = __file__


def files_code(frame) -> bool:
    """The code standing for the file's: this module's, but not the recording methods themselves."""
    return frame.f_code.co_filename == HERE and frame.f_code.co_name not in Recording.METHODS


class Recording:
    """What the walk found each time one of the special methods ran."""

    METHODS = ("__len__", "__getitem__", "__float__", "__index__", "__bool__", "__str__", "rows", "forward", "backward")

    def _record(self) -> None:
        Recorder.found.append(CALLERS.library_between(sys._getframe(1), files_code))


class Recorder(Recording):
    """A sequence of numbers."""

    found: list = []

    def __len__(self):
        self._record()
        return 2

    def __getitem__(self, index):
        self._record()
        if index >= 2:
            raise IndexError(index)
        return 1.0

    def __float__(self):
        self._record()
        return 1.0

    def __index__(self):
        self._record()
        return 1



class Scalar(Recording):
    """Not a sequence: numpy and torch convert it as one value."""

    def __bool__(self):
        self._record()
        return True

    def __str__(self):
        self._record()
        return "r"


class Rows:
    """A sequence whose items come from a generator of the file's."""

    def __len__(self):
        return 2

    def __getitem__(self, index):
        raise IndexError(index)

    def __iter__(self):
        return self.rows()

    def rows(self):
        for value in (1.0, 2.0):
            Recorder.found.append(CALLERS.library_between(sys._getframe(), files_code))
            yield value


class Twice(torch.autograd.Function):
    """torch's autograd runs forward from Function.apply's C code and backward from its engine."""

    @staticmethod
    def forward(ctx, x):
        Recorder.found.append(CALLERS.library_between(sys._getframe(), files_code))
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        Recorder.found.append(CALLERS.library_between(sys._getframe(), files_code))
        return grad * 2


class Borrowed(torch.autograd.Function):
    """A forward that is no function of the file's: torch's C code calls numpy's through it."""

    forward = functools.wraps(lambda items: items)(functools.partial(numpy.array, dtype=numpy.float64))  # a signature to bind

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass


def twice_backward() -> None:
    x = torch.ones(2, requires_grad=True)
    Twice.apply(x).sum().backward()


def found_by(call) -> list:
    Recorder.found = []
    call()
    assert Recorder.found, "no special method ran: this route tests nothing"
    return Recorder.found


ALLOWED = {
    "len": lambda: len(Recorder()),
    "float": lambda: float(Recorder()),
    "str and f-string": lambda: (str(Scalar()), f"{Scalar()}"),
    "print": lambda: print(Scalar(), file=open("/dev/null", "w")),
    "a for loop over the file's sequence": lambda: [value for value in Recorder()],
    "sorted with a key of the file's": lambda: sorted([3, 1], key=lambda v: len(Recorder())),
    "map and functools.reduce": lambda: (list(map(len, [Recorder()])), functools.reduce(lambda a, b: a + len(b), [Recorder()], 0)),
    "bool in an if": lambda: 1 if Scalar() else 0,
    "a generator the file's loop resumes": lambda: list(Rows()),
    "torch.vmap of a function of the file's": lambda: torch.vmap(lambda row: row * len(Recorder()))(torch.ones(2, 3)),
    "torch.autograd.Function's forward and backward": twice_backward,
}

REFUSED = {
    "numpy's shape discovery": (lambda: numpy.array([Recorder()], dtype=numpy.float64), "numpy"),
    "numpy's discovery inside map": (lambda: list(map(numpy.array, [[Recorder()]], [numpy.float64])), "numpy"),
    "numpy's conversion to bool": (lambda: numpy.array([True, Scalar()], dtype=bool), "numpy"),
    "numpy's conversion to str": (lambda: numpy.array(["a", Scalar()], dtype="U3"), "numpy"),
    "numpy's shape argument": (lambda: numpy.zeros([Recorder(), 2]), "numpy"),
    "torch.tensor's store": (lambda: torch.tensor([1.0, Recorder()]), "torch"),
    "torch's integer lists": (lambda: torch.ones(2).view([Recorder(), 2]), "torch"),
    "a generator numpy's discovery resumes": (lambda: numpy.array(Rows(), dtype=numpy.float64), "numpy"),
    "numpy's walk inside Function.apply's C code": (lambda: Borrowed.apply([Recorder()]), "numpy"),
}


@pytest.mark.parametrize("route", ALLOWED)
def test_python_and_cpythons_own_c_code_may_call_the_files_special_methods(route):
    assert set(found_by(ALLOWED[route])) == {None}


@pytest.mark.parametrize("route", REFUSED)
def test_numpys_and_torchs_c_code_may_not(route):
    call, library = REFUSED[route]
    found = found_by(call)
    assert found[0] is not None and f"/{library}/" in found[0], found


def test_the_walk_is_tried_before_it_is_trusted():
    probe(CALLERS)  # raises where this build's native stack cannot be read as the walk needs
