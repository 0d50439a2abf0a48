"""The child's runner: what it says about a result cannot be dictated by the result, inputs are
seen as the plain call left them, a decorated entry point is callable, and what the submission
prints is kept however its process ends."""

import importlib.util
import subprocess
import sys
import traceback
import warnings

import pytest
import torch

from grader.cases import make_cases
from grader.child.runner import _error_report, describe_output, run_case, signature_problem, submission_traceback
from grader.spec import load_spec
from tests.grading import ROOT, SUBMISSIONS, fast_spec, grade_json

SPEC = load_spec()
PARAMETERS = list(SPEC.parameter_names)


class FakeName(torch.Tensor):
    __module__ = "torch"
    __qualname__ = "Tensor"


class NotATensor:
    __module__ = "torch"
    __qualname__ = "Tensor"


def test_a_plain_dense_tensor_is_described_and_its_values_copied():
    out = torch.randn(3, 4)
    info, sent = describe_output(out)
    assert info == {"type": "torch.Tensor", "plain": True, "layout": "torch.strided", "shape": [3, 4], "dtype": "float32", "device": "cpu"}
    copy = sent["output"].clone()
    out.add_(1.0)  # changed after the call: what is sent is what was returned
    assert torch.equal(sent["output"], copy)


@pytest.mark.parametrize(
    "make, kind",
    [
        (lambda: torch.randn(3, 4).as_subclass(FakeName), "subclass of torch.Tensor"),
        (lambda: NotATensor(), "non-tensor object of class torch.Tensor"),
        (lambda: torch.randn(3, 4).to_sparse(), "torch.Tensor with layout torch.sparse_coo"),
        (lambda: torch.randn(3, 4).to_sparse_csr(), "torch.Tensor with layout torch.sparse_csr"),
        (lambda: torch.nested.nested_tensor([torch.randn(2, 4), torch.randn(1, 4)]), "nested torch.Tensor"),
        (lambda: torch.randn(3, 4).numpy(), "non-tensor object of class numpy.ndarray"),
    ],
)
def test_anything_else_is_never_described_as_a_plain_tensor_and_sends_no_values(make, kind):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sparse CSR and nested tensors are "beta"
        info, sent = describe_output(make())
    assert info["type"] != "torch.Tensor" and info["type"].startswith(kind), info
    assert sent == {}
    assert info["plain"] is (not info["type"].startswith(("subclass", "non-tensor")))


def test_a_tensor_the_wire_cannot_carry_is_described_without_values():
    for out in (torch.randn(3, 4, dtype=torch.float16), torch.empty(3, 4, device="meta")):
        info, sent = describe_output(out)
        assert info["type"] == "torch.Tensor" and sent == {}


def wrapper_without_wraps(fn):
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)

    return wrapper


def entry(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    pass


def first_named(input_ids, *rest):
    pass


def misnamed(ids, *rest):
    pass


def keyword_only(*args, required):
    pass


@pytest.mark.parametrize(
    "fn, problem",
    [
        (entry, None),
        (wrapper_without_wraps(entry), None),
        (first_named, None),
        (misnamed, "the parameters must be"),
        (keyword_only, "extra parameters without a default value: required"),
        (lambda input_ids, w_emb: None, "the parameters must be"),
    ],
)
def test_a_callable_that_takes_the_six_arguments_by_position_is_valid(fn, problem):
    found = signature_problem(fn, PARAMETERS)
    assert found == problem if problem is None else problem in found


def test_inputs_are_copied_right_after_the_plain_call():
    kept = []

    def restores_later(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
        for given, original in kept:  # the previous call's input put back
            given.copy_(original)
        kept.append((mask_indicator, mask_indicator.clone()))
        mask_indicator.fill_(1.0)
        return torch.zeros(int((original_mask > 0.5).sum()), w_emb.shape[0], dtype=w_emb.dtype)

    case = next(c for c in make_cases(SPEC, "x") if c.name == "public_soft_mask")
    original_mask = case.inputs["mask_indicator"]
    header, tensors = case.request()
    reply, sent = run_case(restores_later, header, tensors, "/nonexistent.py")
    assert "error" not in reply and reply["differentiable"] is False
    assert not torch.equal(sent["after_mask_indicator"], original_mask)  # the change is seen
    assert torch.equal(sent["after_w_emb"], case.inputs["w_emb"])


@pytest.mark.sandbox
def test_what_is_printed_without_flush_is_kept_when_the_call_returns():
    report, status = grade_json(str(SUBMISSIONS / "accepted" / "prints_without_flush.py"), "--public")
    assert report["verdict"] == "accepted" and status == 0
    assert report["stdout"].count("selected ") == 2 * len(report["cases"])  # plain and gradient calls


@pytest.mark.sandbox
def test_what_is_printed_without_flush_is_kept_when_the_process_is_killed(tmp_path):
    report, _ = grade_json(str(SUBMISSIONS / "time_limit_exceeded" / "prints_then_spins.py"), "--public", "--spec", str(fast_spec(tmp_path)))
    assert report["verdict"] == "time_limit_exceeded"
    assert "about to spin" in report["stdout"]


RECURSIVE = """
import torch


def deeper(x, n):
    if n == 0:
        return torch.ones(2) @ torch.ones(3)  # a shape error in torch, under the submission's frames
    return deeper(x, n - 1)


def forever(x):
    return forever(x)


def mutual(x, n):
    return other(x, n)


def other(x, n):
    return mutual(x, n - 1) if n else forever(x)
"""


@pytest.mark.parametrize("call", ["deeper(0, 2)", "deeper(0, 5)", "forever(0)", "mutual(0, 4)"])
def test_a_deep_traceback_reads_as_python_prints_it(tmp_path, call):
    # only the frames shown are looked up, but the text is Python's own: the submission's frames,
    # a line repeated more than 3 times in a row counted
    path = tmp_path / "solution.py"
    path.write_text(RECURSIVE)
    spec = importlib.util.spec_from_file_location("recursive_submission", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.raises(Exception) as caught:
        eval(call, vars(module))
    tb = caught.value.__traceback__
    python = "".join(traceback.format_list([f for f in traceback.extract_tb(tb) if f.filename == str(path)]))
    assert submission_traceback(tb, str(path)) == python
    assert ("[Previous line repeated" in python) == (call not in ("deeper(0, 2)",))


def raised_by(call) -> BaseException:
    try:
        call()
    except BaseException as error:  # noqa: BLE001
        return error
    raise AssertionError("it did not raise")


def torch_allocation():
    return torch.empty(1 << 60, dtype=torch.uint8)  # fails at once, in torch's allocator


def python_allocation():
    return bytearray(1 << 60)


def steps():
    yield 1


def thrown_into_a_generator():
    running = steps()
    next(running)
    running.throw(MemoryError())


def with_a_borrowed_traceback():
    real = raised_by(lambda: int("x"))  # a ValueError raised in a call: its innermost frame is at that call
    raise RuntimeError(str(raised_by(torch_allocation))).with_traceback(real.__traceback__)


def reraised_failure():
    try:
        torch_allocation()
    except RuntimeError:
        raise  # the same failure, still the allocator's


@pytest.mark.parametrize("call", [torch_allocation, python_allocation, reraised_failure])
def test_an_allocation_failure_of_torch_or_the_interpreter_sets_the_memory_flag(call):
    assert _error_report(raised_by(call), "/nowhere/solution.py")["memory"] is True


@pytest.mark.parametrize(
    "call",
    [
        lambda: exec("raise RuntimeError(message)", {"message": str(raised_by(torch_allocation))}),  # torch's exact words, raised
        lambda: exec("raise RuntimeError('CUDA out of memory; not enough memory; can\\'t allocate memory')"),
        lambda: exec("raise MemoryError('out of memory')"),
        thrown_into_a_generator,
        with_a_borrowed_traceback,
    ],
    ids=["allocator_words", "out_of_memory_words", "memory_error", "generator_throw", "borrowed_traceback"],
)
def test_words_or_a_memory_error_the_submission_raises_set_no_memory_flag(call):
    assert _error_report(raised_by(call), "/nowhere/solution.py")["memory"] is False


@pytest.mark.sandbox
def test_the_pools_warm_up_leaves_no_lazy_import_to_a_childs_first_case():
    """torch imports hundreds of modules on the first use of some allowed functions (torch.addr
    under torch.vmap, torch.broadcast_shapes): seconds under the guard's profile function, which on
    a loaded machine took an honest file's first case past its time limit. The pool's server
    imports them before it forks, so a child's first case imports nothing."""
    script = """
import importlib.util, sys
from grader.cases import make_cases
from grader.child import runner
from grader.sandbox.child import Child
from grader.spec import load_spec
spec = load_spec()
runner.warm_up(Child.child_config(spec, ""))
case = next(iter(make_cases(spec, "lazy")))
before = set(sys.modules)
for path in sys.argv[1:]:
    loader = importlib.util.spec_from_file_location("submission", path)
    module = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(module)
    module.mlm_forward_tied(**case.args)
print(sorted(set(sys.modules) - before))
"""
    files = [SUBMISSIONS / "accepted" / name for name in ("vmap_with_addr.py", "public_broadcast_shapes.py")]
    done = subprocess.run([sys.executable, "-c", script, *map(str, files)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", done.stdout
