"""numpy.ndarray's constructor, checked where it runs. numpy.ndarray(shape, dtype, buffer=...) makes
an array over another object's memory, with any dtype, offset and strides. The class is on the lists
(isinstance, annotations), so library code can call it where no check of the capability layer runs:
map(numpy.ndarray, ...) makes the array and hands it to the next library call, and the file only
ever sees what that call returns. So the check sits in the type itself: its tp_new slot is replaced,
once per process, by one that makes the array and has the capability layer judge it as it judges
every array the file meets (Capabilities._own_memory), before anyone can use it. It judges every
array it makes: whether a buffer was given is the parse's to know (a keyword of the file's whose
__eq__ answers differently each time would tell numpy "buffer" and a second look "no"). Every route
to the constructor meets the check: the file's calls, library code's, and numpy's own subclasses'
(theirs call numpy.ndarray.__new__).

The slot is written with ctypes, through CPython's PyTypeObject layout, which has not changed up to
tp_new since Python 3.8; the layout is checked against the type before anything is written."""

import ctypes
import sys
from collections.abc import Callable
from typing import Any

import numpy

# newfunc: PyObject *tp_new(PyTypeObject *subtype, PyObject *args, PyObject *kwds); kwds may be NULL.
_NEWFUNC = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.py_object, ctypes.py_object, ctypes.c_void_p)


class _TypeObject(ctypes.Structure):
    """CPython's PyTypeObject, up to tp_new (Include/cpython/object.h)."""

    _fields_ = [
        *((name, ctypes.c_ssize_t) for name in ("ob_refcnt", "ob_type", "ob_size")),
        ("tp_name", ctypes.c_char_p),
        ("tp_basicsize", ctypes.c_ssize_t),
        ("tp_itemsize", ctypes.c_ssize_t),
        *(
            (name, ctypes.c_void_p)
            for name in (
                "tp_dealloc",
                "tp_vectorcall_offset",
                "tp_getattr",
                "tp_setattr",
                "tp_as_async",
                "tp_repr",
                "tp_as_number",
                "tp_as_sequence",
                "tp_as_mapping",
                "tp_hash",
                "tp_call",
                "tp_str",
                "tp_getattro",
                "tp_setattro",
                "tp_as_buffer",
            )
        ),  # fmt: skip
        ("tp_flags", ctypes.c_ulong),
        *(
            (name, ctypes.c_void_p)
            for name in (
                "tp_doc",
                "tp_traverse",
                "tp_clear",
                "tp_richcompare",
                "tp_weaklistoffset",
                "tp_iter",
                "tp_iternext",
                "tp_methods",
                "tp_members",
                "tp_getset",
                "tp_base",
                "tp_dict",
                "tp_descr_get",
                "tp_descr_set",
                "tp_dictoffset",
                "tp_init",
                "tp_alloc",
                "tp_new",
            )
        ),  # fmt: skip
    ]


_KEEP: list[Any] = []  # the replacement slot functions and what they call: alive for the process
_JUDGE: list[Callable[[Any], None]] = []  # what judges an array made over a buffer: the latest Capabilities'


def _type_object(kind: type) -> _TypeObject:
    """The type's PyTypeObject, once its layout is seen to match (its name, size and flags)."""
    if sys.implementation.name != "cpython" or not (3, 8) <= sys.version_info[:2] <= (3, 13):
        raise RuntimeError(f"numpy.ndarray's constructor cannot be checked on {sys.implementation.name} {sys.version}")
    found = _TypeObject.from_address(id(kind))
    name = f"{kind.__module__}.{kind.__qualname__}" if kind.__module__ != "builtins" else kind.__qualname__
    if found.tp_basicsize != kind.__basicsize__ or found.tp_flags != kind.__flags__ or not found.tp_new or found.tp_name.decode() not in (name, kind.__name__):
        raise RuntimeError(f"the layout of {name}'s type object is not the one expected: its constructor cannot be checked")
    return found


def check_buffers(judge: Callable[[Any], None]) -> None:
    """Have `judge(array)` see every array numpy.ndarray's constructor makes, before it is returned:
    it refuses (and does not return) or accepts. Installed once per process; a later call only
    changes the judge (a pool's child judges with its own capability layer)."""
    _JUDGE[:] = [judge]
    if _KEEP:
        return
    slot = _type_object(numpy.ndarray)
    original = _NEWFUNC(slot.tp_new)

    def checked_new(subtype: Any, args: tuple, kwds: int | None) -> Any:
        made = original(subtype, args, kwds)
        try:  # every array it made, buffer or not: whether a buffer was given is numpy's parse to know, not ours
            _JUDGE[0](made)
        except BaseException:  # noqa: BLE001 - a refusal that raises (where it does not end the run, as in tests): it is recorded, and the array is not handed out
            return numpy.empty(0)  # (an exception cannot leave a ctypes callback: it would be lost)
        return made

    replacement = _NEWFUNC(checked_new)
    address = ctypes.cast(replacement, ctypes.c_void_p).value
    _KEEP.extend([original, checked_new, replacement])
    before = slot.tp_new
    for kind in [numpy.ndarray, *_subclasses(numpy.ndarray)]:  # a subclass without a __new__ of its own copied the slot
        found = _type_object(kind)
        if found.tp_new == before:
            found.tp_new = address


def _subclasses(kind: type) -> list[type]:
    found, stack = [], [kind]
    while stack:
        for sub in type.__subclasses__(stack.pop()):
            if sub not in found:
                found.append(sub)
                stack.append(sub)
    return found
