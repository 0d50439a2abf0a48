"""What numpy makes, checked where numpy makes it: two hooks in numpy's C types, set once per process.

numpy.ndarray's constructor. numpy.ndarray(shape, dtype, buffer=...) makes an array over another
object's memory, with any dtype, offset and strides. The class is on the lists (isinstance,
annotations), so library code can call it where no check of the capability layer runs: map(
numpy.ndarray, ...) makes the array and hands it to the next library call, and the file only ever
sees what that call returns. So the check sits in the type itself: its tp_new slot is replaced,
once per process, by one that makes the array and has the capability layer judge it as it judges
every array the file meets (Capabilities._own_memory), before anyone can use it. It judges every
array it makes: whether a buffer was given is the parse's to know (a keyword of the file's whose
__eq__ answers differently each time would tell numpy "buffer" and a second look "no"). Every route
to the constructor meets the check: the file's calls, library code's, and numpy's own subclasses'
(theirs call numpy.ndarray.__new__).

Arrays of Python objects. numpy's loops over such an array call the objects' own methods (a
comparison, an addition) while they hold pointers they own no reference to: a sort whose comparison
empties the array leaves a freed object in it, which numpy then writes back. Library code can make
such an array and hand it on where no check of the file's values runs (map(numpy.array, rows,
[object])), so numpy never makes one in the child: every array numpy allocates passes through
PyArray_NewFromDescr_int, which asks the dtype's class to finalize the dtype first (the DType slot
finalize_descr, empty for numpy's own object and structured dtypes). That slot of ObjectDType,
VoidDType and StringDType is set to one that refuses a dtype holding references (dtype=object, a
structured dtype with an object field, numpy's variable-width strings, dtype="T", whose arrays hold
pointers into an allocator numpy holds while it calls the file's __str__) before any memory is
allocated. Every other way to an array of objects starts from
one that was allocated (a view, a pickle's state, numpy's own buffers cast from numbers never hold the
file's objects; ndarray.__setstate__ is on no list), and numpy refuses to make one over memory it did
not allocate (a buffer, an __array_interface__, a view changing a dtype to or from one with objects).

The slots are written with ctypes, through CPython's PyTypeObject layout, which has not changed up to
tp_new since Python 3.8, and numpy 2.4's PyArray_DTypeMeta and NPY_DType_Slots
(numpy/_core/src/multiarray/dtypemeta.h); each layout is checked against the objects before anything
is written."""

import ctypes
import os
import sys
from collections.abc import Callable
from typing import Any, NoReturn

import numpy

# newfunc: PyObject *tp_new(PyTypeObject *subtype, PyObject *args, PyObject *kwds); kwds may be NULL.
# Called (numpy's own): what it returns, or numpy's exception raised in Python. Installed (the check):
# an address, so that a failure can be NULL; an exception raised in a ctypes callback is lost, and the
# caller would get whatever the stack held in its result's place.
_NEWFUNC = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.py_object, ctypes.py_object, ctypes.c_void_p)
_NEWFUNC_SLOT = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.py_object, ctypes.c_void_p)
_INCREF = ctypes.pythonapi.Py_IncRef
_INCREF.argtypes, _INCREF.restype = [ctypes.py_object], None


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

    def checked_new(subtype: Any, args: tuple, kwds: int | None) -> int:
        """The new array's address, with a reference the caller owns; 0 (NULL) where numpy refused
        to make it: the caller raises SystemError (numpy's own exception cannot leave a callback)."""
        try:
            made = original(subtype, args, kwds)
        except BaseException:  # noqa: BLE001 - numpy's ValueError or TypeError: no array, and nothing stale handed back
            return 0
        try:  # every array it made, buffer or not: whether a buffer was given is numpy's parse to know, not ours
            _JUDGE[0](made)
        except BaseException:  # noqa: BLE001 - a refusal that raises (where it does not end the run, as in tests): it is recorded, and the array is not handed out
            made = numpy.empty(0)
        _INCREF(made)
        return id(made)

    replacement = _NEWFUNC_SLOT(checked_new)
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


# -- arrays of Python objects ---------------------------------------------------------------------------

has_object = vars(numpy.dtype)["hasobject"].__get__  # whether a dtype holds references, read with numpy's own descriptor

# PyArray_Descr *finalize_descr(PyArray_Descr *descr): a new reference to the dtype to use.
_FINALIZE = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.py_object)
_OBJECTS: list[Callable[[], NoReturn]] = []  # what refuses an array of objects: the child's
_EXIT: list[int] = []  # the status the process ends with if that returns
_KEEP_FINALIZE: list[Any] = []
_DTYPE_KINDS = {"ObjectDType": (17, numpy.object_), "VoidDType": (20, numpy.void), "StringDType": (2056, str)}  # type_num and scalar type
_SLOT_NAMES = (  # NPY_DType_Slots, numpy 2.4 (numpy/_core/src/multiarray/dtypemeta.h), up to castingimpls
    "discover_descr_from_pyobject",
    "is_known_scalar_type",
    "default_descr",
    "common_dtype",
    "common_instance",
    "ensure_canonical",
    "setitem",
    "getitem",
    "get_clear_loop",
    "get_fill_zero_loop",
    "finalize_descr",
    "get_constant",
    "within_dtype_castingimpl",
    "castingimpls",
)


class _DTypeSlots(ctypes.Structure):
    _fields_ = [(name, ctypes.c_void_p) for name in _SLOT_NAMES]


def _type_of(address: int) -> Any:
    """The type of the object at `address` (its ob_type, read without touching anything else)."""
    return ctypes.cast(ctypes.c_void_p.from_address(address + ctypes.sizeof(ctypes.c_ssize_t)).value, ctypes.py_object).value


def _dtype_slots(kind: type) -> _DTypeSlots:
    """The DType class's slots (PyArray_DTypeMeta's dt_slots), once the layouts are seen to match:
    PyArray_DTypeMeta after its PyHeapTypeObject (the singleton dtype, the type number, the scalar
    type), and the slots' order (a clearing loop where the dtype holds objects, the casting tables)."""
    version = tuple(int(part) for part in numpy.__version__.split(".")[:2])
    if version != (2, 4):
        raise RuntimeError(f"arrays of Python objects cannot be refused on numpy {numpy.__version__}: its dtype layout is known for 2.4 only")
    number, scalar = _DTYPE_KINDS[kind.__name__]
    head = type.__basicsize__  # PyHeapTypeObject
    word = ctypes.sizeof(ctypes.c_void_p)
    at = id(kind)
    singleton, dt_slots = (ctypes.c_void_p.from_address(at + head + offset).value for offset in (0, 4 * word))
    laid_out = (
        type(kind).__basicsize__ == head + 8 * word
        and ctypes.c_int.from_address(at + head + word).value == number
        and ctypes.c_void_p.from_address(at + head + 2 * word).value == id(scalar)
        and singleton is not None
        and _type_of(singleton) is kind
        and dt_slots is not None
    )
    if laid_out:
        slots = _DTypeSlots.from_address(dt_slots)
        laid_out = slots.get_clear_loop is not None and slots.castingimpls is not None and _type_of(slots.castingimpls) is dict
        laid_out = laid_out and slots.within_dtype_castingimpl is not None and _type_of(slots.within_dtype_castingimpl).__name__ == "_ArrayMethod"
        if laid_out:
            return slots
    raise RuntimeError(f"the layout of numpy's {kind.__name__} is not the one expected: arrays of Python objects cannot be refused")


def refuse_object_arrays(refuse: Callable[[], NoReturn], exit_status: int) -> None:
    """Have `refuse()` called, before any memory is allocated, wherever numpy is about to make an
    array holding Python objects. It must not return (the child's refusal ends the run); the process
    ends with `exit_status` if it does, or raises. Installed once per process, in the child; a later
    call only changes what refuses (a pool's child refuses with its own capability layer)."""
    _OBJECTS[:] = [refuse]
    _EXIT[:] = [exit_status]
    if _KEEP_FINALIZE:
        return
    kinds = [numpy.dtypes.ObjectDType, numpy.dtypes.VoidDType]
    slots = [_dtype_slots(kind) for kind in kinds]
    if any(slot.finalize_descr is not None for slot in slots):
        raise RuntimeError("numpy's object or structured dtypes finalize their dtypes themselves: arrays of Python objects cannot be refused")
    # numpy's variable-width strings (dtype "T") keep pointers into an allocator of their own and call
    # str() on the file's objects while they hold it; every one of its dtypes holds references, so its
    # own finalization (which gives each array its allocator) is never reached: the slot refuses.
    strings = _dtype_slots(numpy.dtypes.StringDType)
    if strings.finalize_descr is None or not has_object(numpy.dtype("T")):
        raise RuntimeError("numpy's variable-width strings are not laid out as expected: arrays of Python objects cannot be refused")
    slots.append(strings)
    end = os._exit

    def finalize(descr: Any) -> Any:
        if has_object(descr):  # dtype=object, a structured dtype with an object field, a subarray of objects, dtype="T"
            try:
                _OBJECTS[0]()
            finally:  # (an exception cannot leave a ctypes callback, and numpy would go on with what came back)
                end(_EXIT[0])
        return descr

    replacement = _FINALIZE(finalize)
    _KEEP_FINALIZE.extend([finalize, replacement, end])
    address = ctypes.cast(replacement, ctypes.c_void_p).value
    for slot in slots:
        slot.finalize_descr = address
