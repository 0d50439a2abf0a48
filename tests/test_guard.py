"""The runtime guard: each layer sees what it is there for, honest operations pass, and once armed
it cannot be switched off, emptied or bypassed by another thread without that showing."""

import atexit
import json
import select
import subprocess
import sys
import tempfile
import textwrap
from functools import cache
from pathlib import Path

import pytest
import torch

from grader.child.guard import ForbiddenAPIError, Guard, _FunctionWatch, own_override, vector_jacobian
from grader.spec import ROOT, load_spec

POLICY = load_spec().policy
X = torch.randn(2, 3, 4)


def guard() -> Guard:
    return Guard(POLICY["forbidden_functions"], POLICY["forbidden_operators"], "/nonexistent/submission.py")


# -- the modes, pushed for a block (in this process) ------------------------------------------


def test_function_layer_sees_forbidden_functions_by_name():
    # rms_norm is refused by its name before any operator runs
    g = guard()
    with pytest.raises(ForbiddenAPIError), _FunctionWatch(g):
        torch.rms_norm(X, (4,))
    assert g.found == ["the function torch.rms_norm"]


@pytest.mark.parametrize("route", [lambda: torch.ops.aten.rms_norm.default(X, [4]), lambda: torch.ops.aten.rms_norm(X, [4])])
def test_operator_overloads_are_matched_by_their_base_name(route):
    g = guard()
    with pytest.raises(ForbiddenAPIError), g.watching():
        route()
    assert g.found == ["the operator aten.rms_norm"]


def test_tensor_methods_are_named():
    g = guard()
    with pytest.raises(ForbiddenAPIError), g.watching():
        X.softmax(-1)
    assert g.found == ["the Tensor method .softmax"]


def test_a_swallowed_refusal_is_still_recorded():
    g = guard()
    with g.watching():
        try:
            torch.softmax(X, -1)
        except ForbiddenAPIError:
            pass
    assert g.found


def dispatch_softmax(cls, func, types, args=(), kwargs=None):
    plain = [a.elem if type(a) is cls else a for a in args]
    return torch.ops.aten._softmax(plain[0], -1, False) if func is torch.ops.aten.exp.default else func(*plain, **(kwargs or {}))


def wrapped(cls, elem):
    wrapper = torch.Tensor._make_wrapper_subclass(cls, elem.shape, dtype=elem.dtype)
    wrapper.elem = elem
    return wrapper


def test_a_tensor_subclass_with_its_own_dispatch_is_refused_before_its_code_runs():
    # built with type() so the dunder name is only a string key, as a cheater would
    sneaky = type("Sneaky", (torch.Tensor,), {"__new__": staticmethod(wrapped), "__torch_dispatch__": classmethod(dispatch_softmax)})
    g = guard()
    with pytest.raises(ForbiddenAPIError), g.watching():
        torch.exp(sneaky(X))
    assert len(g.found) == 1 and "Sneaky" in g.found[0] and "tensor subclasses with their own __torch_dispatch__" in g.found[0]
    assert own_override(torch.Tensor) is None and own_override(type("Plain", (torch.Tensor,), {})) is None
    assert own_override(torch.nn.Parameter) is None  # torch's "disabled" handler runs no code


def test_an_object_with_its_own_torch_function_is_refused():
    class Impostor:
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return torch.rms_norm(args[0], (4,))  # would run with the function mode off

    g = guard()
    with pytest.raises(ForbiddenAPIError), g.watching():
        torch.add(X, Impostor())
    assert "Impostor" in g.found[0]


def test_a_plain_subclass_passes():
    g = guard()
    plain = type("Plain", (torch.Tensor,), {})
    with g.watching():
        (X.as_subclass(plain) * 2).exp().sum()
    assert g.found == []


def my_softmax(s):
    e = torch.exp(s - s.amax(-1, keepdim=True))
    return e / e.sum(-1, keepdim=True)


@pytest.mark.slow
def test_honest_operations_and_their_backward_pass():
    g = guard()
    w = torch.randn(4, 4, requires_grad=True)
    with g.watching():
        s = X @ w
        mean = s.mean(-1, keepdim=True)
        h = (s - mean) / torch.sqrt(s.var(-1, unbiased=False, keepdim=True) + 1e-5)
        p = torch.exp(h - torch.logsumexp(h, -1, keepdim=True))
        q = torch.einsum("nij,nkj->nik", p, h).tanh().amax(-1)
        r = torch.vmap(my_softmax)(h).sum() + torch.linalg.vector_norm(h, dim=-1).sum() + torch.special.erf(h).sum()
        torch.autograd.grad(q.sum() + r, w, grad_outputs=torch.ones(()))
        torch.func.grad(lambda t: my_softmax(t).pow(2).sum())(h.detach())
    assert g.found == []


# -- the armed guard, in a process of its own (arming cannot be undone) -----------------------

PRELUDE = """
import json, math, sys, threading
sys.path.insert(0, {kit!r})
import torch
from child import runner, wire
from child.guard import Guard, ForbiddenAPIError, READ_EVENT
guard = Guard({functions!r}, {operators!r}, "/nonexistent/submission.py")
torch.set_num_threads(1)
guard.arm(protect=[runner, wire])
x = torch.randn(2, 3, 4, dtype=torch.float64)
seen = {{}}

def attempt(label, job):
    try:
        job()
        seen[label] = "ran"
    except Exception as error:
        seen[label] = type(error).__name__ + ": " + str(error)[:200]
"""


# A process that has imported torch and the child's modules, and forks one child per script: each
# script then arms a guard of its own in a process of its own, without paying for a torch import.
FORK_SERVER = """
import json, os, sys, traceback
sys.path.insert(0, {kit!r})
import torch
from child import runner, wire
from child.guard import Guard
Guard({functions!r}, {operators!r}, "").kernels_to_override()  # found once, as the pool's server does
for line in sys.stdin:
    request = json.loads(line)
    pid = os.fork()
    if pid == 0:
        for fd, path in ((1, request["out"]), (2, request["err"])):
            os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), fd)
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        status = 0
        try:
            exec(compile(request["script"], "<armed>", "exec"), {{"__name__": "__main__"}})
        except SystemExit as end:
            status = end.code if isinstance(end.code, int) else 1
        except BaseException:
            traceback.print_exc()
            status = 1
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    _, wait_status = os.waitpid(pid, 0)
    print(os.waitstatus_to_exitcode(wait_status), flush=True)
"""


@cache
def fork_server() -> subprocess.Popen:
    source = FORK_SERVER.format(kit=str(ROOT / "grader"), functions=POLICY["forbidden_functions"], operators=POLICY["forbidden_operators"])
    env = {"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"}
    server = subprocess.Popen([sys.executable, "-c", source], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    atexit.register(server.kill)
    return server


def armed(code: str) -> tuple[list[str], dict[str, str]]:
    """Run `code` after arming a guard in a fresh process (forked from one that imported torch):
    (its findings, what `seen` holds)."""
    prelude = PRELUDE.format(kit=str(ROOT / "grader"), functions=POLICY["forbidden_functions"], operators=POLICY["forbidden_operators"])
    script = prelude + textwrap.dedent(code) + "\nprint(json.dumps([guard.findings(), seen]))\n"
    server = fork_server()
    with tempfile.TemporaryDirectory() as folder:
        out, err = Path(folder) / "stdout", Path(folder) / "stderr"
        server.stdin.write(json.dumps({"script": script, "out": str(out), "err": str(err)}) + "\n")
        server.stdin.flush()
        ready, _, _ = select.select([server.stdout], [], [], 180)
        assert ready, "the armed script did not end within 180 s"
        status = server.stdout.readline()
        stdout, stderr = out.read_text(), err.read_text()
    assert status.strip() == "0" and stdout, f"exit status {status.strip() or '(the fork server ended)'}\n{stderr[-3000:]}"
    found, seen = json.loads(stdout.splitlines()[-1])
    seen["stderr"] = stderr
    return found, seen


@pytest.mark.sandbox
def test_armed_guard_lets_honest_work_through_and_walls_off_threads_at_the_kernel():
    found, seen = armed(
        """
        w = torch.randn(4, 4, dtype=torch.float64, requires_grad=True)
        h = x @ w
        h = (h - h.mean(-1, keepdim=True)) / torch.sqrt(h.var(-1, unbiased=False, keepdim=True) + 1e-5)
        torch.autograd.grad(torch.exp(h - h.amax(-1, keepdim=True)).sum(), w)
        seen["honest"] = json.dumps(guard.findings())
        seen["os refuses threads"] = str(guard.os_refuses_threads)
        sys.modules.pop("_thread")
        fresh = __import__("_thread")  # a fresh start_new_thread, which the guard did not replace
        attempt("fresh thread", lambda: fresh.start_new_thread(print, ("escaped",)))
        import os
        attempt("fork", os.fork)
        torch.set_num_threads(4)  # has no effect: more threads would need the kernel's consent
        attempt("large product", lambda: torch.randn(600, 600) @ torch.randn(600, 600))
        """
    )
    assert seen["honest"] == "[]"
    assert seen["stderr"] == ""  # and the process ends quietly, the profile function removed at exit
    assert found == ["the runtime guard was tampered with (sys.modules._thread was replaced)"]
    assert seen["os refuses threads"] == "True"
    assert seen["fresh thread"] == "RuntimeError: can't start new thread"
    assert seen["fork"].startswith("BlockingIOError")
    assert seen["large product"] == "ran"


@pytest.mark.sandbox
def test_a_tensor_set_on_a_storage_is_refused_at_the_kernel():
    # a storage the capability layer let through, resized under a tensor set on it, reads past its
    # end; Tensor.set_(storage) does not go through the function mode
    found, seen = armed(
        """
        held = torch.ones(4).untyped_storage()
        attempt("set_", lambda: torch.empty(0).set_(held, 0, (4,), (1,)))
        attempt("set_ whole", lambda: torch.empty(0).set_(held))
        attempt("set_ of a tensor", lambda: torch.empty(0).set_(torch.ones(3)))
        """
    )
    assert all(seen[label].startswith("ForbiddenAPIError") for label in ("set_", "set_ whole", "set_ of a tensor"))  # (torch sets it on its storage)
    assert found and found[0] == "the operator aten.set_ onto a storage"


@pytest.mark.sandbox
def test_operators_reaching_memory_through_unchecked_pointers_or_indices_are_refused_at_the_kernel_whatever_the_problem():
    # a packed weight is a uint8 tensor whose bytes are a C++ pointer: written, then freed, it
    # decrements any word in memory; the capability layer forbids torch.fbgemm_*, the guard is the second wall
    found, seen = armed(
        """
        attempt("pack fp16", lambda: torch.fbgemm_pack_gemm_matrix_fp16(torch.ones(2, 2)))
        attempt("pack int8", lambda: torch.fbgemm_pack_quantized_matrix(torch.ones(2, 2)))
        attempt("segment", lambda: torch.segment_reduce(torch.ones(4), "sum", offsets=torch.tensor([0, 4]), unsafe=True))
        attempt("ctc", lambda: torch.ctc_loss(torch.full((3, 1, 4), -1.4), torch.tensor([[1]]), [3], [1]))
        attempt("pool", lambda: torch.max_pool1d_with_indices(torch.ones(1, 2, 4), 2))
        attempt("bag", lambda: torch.embedding_bag(torch.ones(3, 2), torch.tensor([0]), torch.tensor([0])))
        attempt("unsafe", lambda: torch.ones(4).unsafe_split(2))
        attempt("embedding", lambda: torch.embedding(torch.ones(3, 2), torch.tensor([0]), -1, True, False))
        attempt("fake quant", lambda: torch.fake_quantize_per_tensor_affine(torch.ones(2), 0.1, 0, 0, 255))
        attempt("mkldnn", lambda: torch.mkldnn_rnn_layer(
            torch.ones(5, 2, 3), torch.ones(16, 3), torch.ones(16, 4), torch.ones(16), torch.ones(16),
            torch.ones(2, 4), torch.ones(2, 4), False, [], 2, 4, 1, True, False, False, False))
        """
    )
    labels = ("pack fp16", "pack int8", "segment", "ctc", "pool", "bag", "unsafe", "embedding", "fake quant", "mkldnn")
    assert all(seen[label].startswith("ForbiddenAPIError") for label in labels), seen
    assert "the operator aten.unsafe_split (its views' writes pass autograd's version counter by)" in found
    assert found[:4] == [
        "the operator aten.fbgemm_pack_gemm_matrix_fp16 (its result holds a raw C++ pointer)",
        "the operator aten.fbgemm_pack_quantized_matrix (its result holds a raw C++ pointer)",
        "the operator aten.segment_reduce (it reads and writes at offsets it does not check)",
        "the operator aten.ctc_loss (it reads and writes at target labels it does not check)",
    ]


@pytest.mark.sandbox
def test_torchs_lazy_kernel_registrations_elsewhere_are_not_tampering():
    # the first torch.vmap registers functorch's batching kernels, nll_loss_backward's among them,
    # whose CPU kernel the guard refuses: only the keys the guard overrides are compared
    found, seen = armed('attempt("vmap", lambda: torch.vmap(lambda r: torch.addr(torch.zeros(2, 2), r[:2], r[1:]))(torch.ones(4, 3)))')
    assert seen["vmap"] == "ran" and found == []


@pytest.mark.sandbox
def test_a_thread_is_refused_and_recorded():
    found, seen = armed('attempt("thread", lambda: threading.Thread(target=lambda: torch.softmax(x, -1)).start())')
    assert seen["thread"].startswith("ForbiddenAPIError")
    assert found and found[0].startswith("a thread")


@pytest.mark.sandbox
def test_forbidden_operators_are_refused_with_the_modes_off():
    found, seen = armed(
        """
        with torch._C.DisableTorchFunction(), torch._C._DisableTorchDispatch():
            attempt("softmax", lambda: torch.softmax(x, -1))
            attempt("rms_norm", lambda: torch.ops.aten.rms_norm.default(x, [4]))
            with torch.inference_mode():
                attempt("layer_norm", lambda: torch.layer_norm(x, (4,)))
        """
    )
    assert all(seen[k].startswith("ForbiddenAPIError") for k in ("softmax", "rms_norm", "layer_norm")), seen
    for name in ("softmax", "rms_norm", "layer_norm"):
        assert any(f.startswith("the operator aten.") and f.endswith(name) for f in found), found


@pytest.mark.sandbox
def test_the_kernels_refuse_forbidden_operators_by_any_route():
    found, seen = armed(
        """
        import torch.nn.functional as F
        routes = {
            "aten._softmax": lambda: torch.ops.aten._softmax(x, -1, False),
            "aten.gelu": lambda: torch._C._nn.gelu(x),
            "aten.layer_norm": lambda: F.layer_norm(x, (4,)),
            "aten.group_norm": lambda: F.group_norm(x, 1),
            "aten.batch_norm": lambda: F.batch_norm(x, None, None, training=True),
            "aten.scaled_dot_product_attention": lambda: F.scaled_dot_product_attention(x, x, x),
            "aten.log_softmax": lambda: torch.exp(x.log_softmax(-1)),
            "aten.softmax": lambda: torch.nn.Softmax(dim=-1)(x),
        }
        with torch._C.DisableTorchFunction():  # the function mode off: the kernels alone
            for operator, route in routes.items():
                attempt(operator, route)
        """
    )
    operators = ("aten._softmax", "aten.gelu", "aten.layer_norm", "aten.group_norm", "aten.batch_norm")
    for operator in (*operators, "aten.scaled_dot_product_attention", "aten.log_softmax", "aten.softmax"):
        assert seen[operator].startswith("ForbiddenAPIError"), (operator, seen[operator])
        assert any(f.startswith(f"the operator {operator}") for f in found), (operator, found)


@pytest.mark.sandbox
def test_torchs_python_implementations_of_forbidden_functions_are_recorded_and_refused_by_whatever_route():
    # the profile function records the entry; the function mode refuses the first torch function
    # the implementation calls, so that it ends at once. Other Python code of torch's runs: the
    # capabilities of grader/child/restricted.py keep a submission from torch's private modules.
    found, seen = armed(
        """
        import torch._decomp, torch._refs
        attempt("refs softmax", lambda: torch._refs.softmax(x, -1))
        attempt("decomposition table", lambda: torch._decomp.decomposition_table[torch.ops.aten._softmax.default](x, -1, False))
        attempt("another name", lambda: torch._refs._normalize(x, [2], 1e-5))  # a layer norm under another name
        attempt("honest after", lambda: torch.exp(x).sum())
        """
    )
    for route, where in (("refs softmax", "torch._refs.softmax"), ("decomposition table", "torch._decomp.decompositions._softmax")):
        assert seen[route].startswith(f"ForbiddenAPIError: the function {where}"), (route, seen[route])
        assert any(f.startswith(f"the function {where}") for f in found), (where, found)
    assert seen["another name"] == "ran"  # torch's Python code that is no forbidden function runs
    assert seen["honest after"] == "ran"  # the refusal ends with the implementation


@pytest.mark.sandbox
def test_a_decomposition_run_while_the_modes_are_off_is_recorded():
    found, seen = armed(
        """
        import torch._decomp
        decomposition = torch._decomp.decomposition_table[torch.ops.aten._softmax.default]
        with torch.overrides._pop_mode_temporarily(), torch._C.DisableTorchFunction():
            attempt("softmax", lambda: decomposition(x, -1, False))
        """
    )
    assert seen["softmax"] == "ran"  # nothing refused it, but the profile function saw it
    assert any(f.startswith("the function torch._decomp.decompositions._softmax") for f in found), found


@pytest.mark.parametrize(
    "attack, shows",
    [
        ("guard.found.clear(); attempt('hide', lambda: sys.audit(READ_EVENT, []))", "the function torch.softmax"),
        ("type(guard).check_function = lambda self, func: None", "Guard.check_function was replaced"),
        ("attempt('swap', lambda: setattr(Guard.check_function, '__code__', (lambda self, func: None).__code__))", "__code__ of Guard.check_function"),
        ("torch._C._push_on_torch_function_stack(torch.overrides.TorchFunctionMode())", "no longer alone on the torch function mode stack"),
        ("torch._C._push_on_torch_dispatch_stack(torch.utils._python_dispatch.TorchDispatchMode())", "a dispatch mode was pushed"),
        ("guard.library._destroy()", "the kernels of aten::"),
        ("guard.kernels[0][1].__closure__[-1].cell_contents = 'nothing'", "the function _refusing_kernel.<locals>.refuse_operator was changed"),
        ("attempt('defaults', lambda: setattr(sys.getprofile(), '__defaults__', ()))", "the __defaults__ of _profile_function.<locals>.profile"),
        ("attempt('no defaults', lambda: setattr(sys.getprofile(), '__defaults__', None))", "the __defaults__ of _profile_function.<locals>.profile"),
        ("attempt('hook', lambda: sys.addaudithook(lambda event, args: None))", "sys.addaudithook"),
        ("runner.wire = None", "child.runner.wire was replaced"),
        ("import builtins; builtins.len = lambda obj: 0", "builtins.len was replaced"),
        ("attempt('trace', lambda: sys.settrace(lambda *a: None))", "sys.settrace"),
        ("import gc; attempt('gc', gc.get_objects)", "gc.get_objects"),
    ],
)
@pytest.mark.sandbox
def test_tampering_shows_in_the_record(attack, shows):
    found, _ = armed(f"attempt('softmax', lambda: torch.softmax(x, -1))\n{attack}\n")
    assert "the function torch.softmax" in found
    assert any(shows in f for f in found), found


@pytest.mark.sandbox
def test_a_change_that_lasts_shows_in_the_last_full_read():
    # after a case the runner reads without the whole check, except every FULL_CHECK_EVERY-th
    # read; its last read, after the last case, is full; the stacks are checked on every read
    skip_to_a_partial_read = "from child.guard import FULL_CHECK_EVERY\nfor _ in range(FULL_CHECK_EVERY + 1):\n    guard.findings(False)\n"
    found, seen = armed(skip_to_a_partial_read + 'runner.wire = None\nseen["after a case"] = json.dumps(guard.findings(False))\n')
    assert json.loads(seen["after a case"]) == []  # (this read was not a full one)
    assert "the runtime guard was tampered with (child.runner.wire was replaced)" in found  # the last, full read
    found, seen = armed(
        skip_to_a_partial_read + "torch._C._push_on_torch_function_stack(torch.overrides.TorchFunctionMode())\n"
        'seen["after a case"] = json.dumps(guard.findings(False))\n'
    )
    assert any("no longer alone on the torch function mode stack" in f for f in json.loads(seen["after a case"]))


@pytest.mark.sandbox
def test_a_replaced_kernel_shows_in_a_periodic_read_before_the_last():
    # the periodic full reads check the refusing kernels a slice at a time, in turn: every kernel,
    # whichever slice it is in, is checked within FULL_CHECK_EVERY * KERNEL_SLICES reads
    for which in (0, -1):
        found, seen = armed(
            f"""
            import warnings
            from child.guard import FULL_CHECK_EVERY, KERNEL_SLICES
            qualified, op, name, key = guard.kernels_to_override()[{which}]
            replacement = torch.library.Library("aten", "IMPL")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                replacement.impl(op, lambda *args, **kwargs: None, key)
            reads = [guard.findings(False) for _ in range(FULL_CHECK_EVERY * KERNEL_SLICES + 1)]
            seen["first"] = str(next(i for i, read in enumerate(reads) if any("the kernels of " + qualified in f for f in read)))
            """
        )
        assert 0 < int(seen["first"]) <= 8 * 4, seen
        assert any(f"the kernels of {found[0].split('the kernels of ')[1].split(' ')[0]}" in f for f in found), found


@pytest.mark.sandbox
def test_a_finding_is_reported_again_in_every_later_read():
    # each read is a case: a route used in every case is reported in every case
    found, seen = armed(
        """
        attempt("first", lambda: torch.softmax(x, -1))
        seen["first read"] = json.dumps(guard.findings())
        attempt("second", lambda: torch.softmax(x, -1))
        """
    )
    assert json.loads(seen["first read"]) == ["the function torch.softmax"]
    assert found == ["the function torch.softmax", "the function torch.softmax"]


@pytest.mark.sandbox
def test_the_first_call_after_arming_is_fast():
    # arming warms up what a case does, and neither arming nor a case imports torch._dynamo or
    # sympy (a dispatch mode imports the first, autograd.grad with grad_outputs the second: seconds)
    found, seen = armed(
        """
        modules = set(sys.modules)
        w = torch.randn(4, 4, dtype=torch.float64, requires_grad=True)
        y = (x @ w)[x.new_ones(2, dtype=torch.bool)]
        runner.vector_jacobian(y, [w], torch.ones_like(y))
        seen["imported"] = ", ".join(sorted(set(sys.modules) - modules))
        seen["heavy"] = ", ".join(sorted(m for m in sys.modules if m in ("sympy", "torch._dynamo")))
        """
    )
    assert found == [] and seen["imported"] == "" and seen["heavy"] == ""


def test_vector_jacobian_equals_autograd_with_grad_outputs_bitwise():
    w = torch.randn(5, 7, requires_grad=True)
    b = torch.randn(3, 5, dtype=torch.float64).float().requires_grad_()
    out = torch.tanh(b @ w) * 3.0
    grad_output = torch.randn(3, 7)
    want = torch.autograd.grad(out, [w, b], grad_outputs=grad_output, retain_graph=True)
    got = vector_jacobian(out, [w, b], grad_output)
    assert all(torch.equal(g, e) for g, e in zip(got, want, strict=True))
    with pytest.raises(RuntimeError, match="Mismatch in shape"):  # where a product would broadcast
        vector_jacobian(out[:1], [w], grad_output)


@pytest.mark.sandbox
def test_a_subclass_dispatch_handler_runs_only_under_the_kernels_and_the_profile_function():
    # the function mode refuses a subclass with its own __torch_dispatch__ among the arguments; a
    # submission that turns the mode off reaches its handler, where torch keeps the mode off: what
    # the handler reaches there is still refused by the kernels or recorded by the profile function
    found, seen = armed(
        """
        import torch._decomp
        decomposition = torch._decomp.decomposition_table[torch.ops.aten._softmax.default]

        def new(cls, elem):
            wrapper = torch.Tensor._make_wrapper_subclass(cls, elem.shape, dtype=elem.dtype)
            wrapper.elem = elem
            return wrapper

        def dispatch(cls, func, types, args=(), kwargs=None):
            plain = [a.elem if type(a) is cls else a for a in args]
            seen["mode inside"] = str(torch._C._is_torch_function_mode_enabled())
            attempt("kernel", lambda: torch.softmax(plain[0], -1))
            return decomposition(plain[0], -1, False)

        Quiet = type("Quiet", (torch.Tensor,), {"__new__": staticmethod(new), "__torch_dispatch__": classmethod(dispatch),
                                                 "__torch_function__": torch._C._disabled_torch_function_impl})
        attempt("refused", lambda: torch.exp(Quiet(x)))  # the function mode sees it among the arguments
        with torch._C.DisableTorchFunction():  # but with the mode off, only the dispatcher sees it
            attempt("exp", lambda: torch.exp(Quiet(x)))
        """
    )
    assert seen["refused"].startswith("ForbiddenAPIError") and "Quiet" in seen["refused"]
    assert seen["mode inside"] == "False" and seen["exp"] == "ran"
    assert seen["kernel"].startswith("ForbiddenAPIError")
    assert any(f.startswith("the operator aten.softmax") for f in found), found
    assert any(f.startswith("the function torch._decomp.decompositions._softmax") for f in found), found


def test_a_guard_that_is_not_armed_reports_what_it_found():
    g = guard()
    with g.watching():
        try:
            torch.softmax(X, -1)
        except ForbiddenAPIError:
            pass
    assert g.findings() == ["the function torch.softmax"]
