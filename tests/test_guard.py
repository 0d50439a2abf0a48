"""The runtime guard: every operator off the rules' list refuses at the dispatcher whatever the route,
the backward operators of allowed ones run only while autograd runs them, honest operations pass,
tensor subclasses with handlers of their own are refused, and once armed the guard cannot be switched
off, emptied or bypassed by another thread without that showing."""

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

from grader.child.guard import ForbiddenAPIError, Guard, own_override, vector_jacobian
from grader.spec import ROOT, load_spec

RULES = load_spec().rules.child_config()
X = torch.randn(2, 3, 4)
OFF_THE_LIST = "which is not on this challenge's list of operators"


def guard() -> Guard:
    return Guard(RULES, "/nonexistent/submission.py")


# -- the modes, pushed for a block (in this process) ------------------------------------------


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
guard = runner.prepared_guard(json.loads({rules!r}), "/nonexistent/submission.py")  # the fork server's, its kernels in place
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
prepared = runner.prepared_guard(json.loads({rules!r}), "")
with prepared.watching():  # the warm-up, then the kernels, once, before forking, as the pool's server does
    prepared.warm_up(True)
prepared.override_kernels()
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
    source = FORK_SERVER.format(kit=str(ROOT / "grader"), rules=json.dumps(RULES))
    env = {"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"}
    server = subprocess.Popen([sys.executable, "-c", source], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    atexit.register(server.kill)
    return server


def armed(code: str) -> tuple[list[str], dict[str, str]]:
    """Run `code` after arming a guard in a fresh process (forked from one that imported torch):
    (its findings, what `seen` holds)."""
    prelude = PRELUDE.format(kit=str(ROOT / "grader"), rules=json.dumps(RULES))
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
    assert seen["stderr"] == ""  # and the process ends quietly
    assert found == ["the runtime guard was tampered with (sys.modules._thread was replaced)"]
    assert seen["os refuses threads"] == "True"
    assert seen["fresh thread"] == "RuntimeError: can't start new thread"
    assert seen["fork"].startswith("BlockingIOError")
    assert seen["large product"] == "ran"


def test_out_is_refused_where_the_file_passes_it_and_torchs_own_out_calls_run():
    # a resize for out= that fails (4 TiB) leaves the tensor's new size over its 16 bytes
    g = guard()
    t = torch.zeros(4)
    with g.watching():
        assert torch.allclose(X.mean(-1), X.sum(-1) / 4)  # mean runs sum's out= overload inside torch
        assert torch.linalg.vector_norm(X, out=None).item() > 0  # out=None is no out=
        with pytest.raises(ForbiddenAPIError):
            torch.zeros(1 << 40, out=t)
        with pytest.raises(ForbiddenAPIError):
            torch.add(X, 1, out=torch.empty(0))
    assert t.shape == (4,) and g.found[0].startswith("out= (in a call of zeros)")


@pytest.mark.sandbox
def test_a_tensor_set_on_a_storage_is_refused_at_the_kernel():
    # a storage the capability layer let through, resized under a tensor set on it, reads past its
    # end; Tensor.set_(storage) does not go through the function mode: set_ is on no list
    found, seen = armed(
        """
        held = torch.ones(4).untyped_storage()
        attempt("set_", lambda: torch.empty(0).set_(held, 0, (4,), (1,)))
        attempt("set_ whole", lambda: torch.empty(0).set_(held))
        attempt("set_ of a tensor", lambda: torch.empty(0).set_(torch.ones(3)))
        """
    )
    assert all(seen[label].startswith("ForbiddenAPIError") for label in ("set_", "set_ whole", "set_ of a tensor"))
    assert found and found[0].startswith(f"the operator aten::set_, {OFF_THE_LIST}")


@pytest.mark.sandbox
def test_operators_reaching_memory_through_unchecked_pointers_or_indices_are_refused_at_the_kernel():
    # a packed weight is a uint8 tensor whose bytes are a C++ pointer: written, then freed, it
    # decrements any word in memory. No list names these operators: each refuses, whatever reaches it
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
        attempt("sparse", lambda: torch.zeros(2, layout=torch.sparse_coo))  # the layout is data; the sparse kernels refuse
        attempt("backward op called directly", lambda: torch.ops.aten.max_pool2d_with_indices_backward(
            torch.ones(1, 1, 2, 2), torch.ones(1, 1, 4, 4), [2, 2], [2, 2], [0, 0], [1, 1], False, torch.full((1, 1, 2, 2), 10**9)))
        """
    )
    labels = ("pack fp16", "pack int8", "segment", "ctc", "pool", "bag", "unsafe", "embedding", "fake quant", "mkldnn", "sparse", "backward op called directly")
    assert all(seen[label].startswith("ForbiddenAPIError") for label in labels), seen
    for operator in ("fbgemm_pack_gemm_matrix_fp16", "segment_reduce", "ctc_loss", "unsafe_split", "max_pool2d_with_indices_backward"):
        assert any(f.startswith(f"the operator aten::{operator}, {OFF_THE_LIST}") for f in found), (operator, found)


@pytest.mark.sandbox
def test_an_allowed_operators_backward_runs_only_while_autograd_runs_it():
    # tanh_backward is what autograd runs for tanh: it runs in a backward pass, and is refused when called
    found, seen = armed(
        """
        w = x.clone().requires_grad_()
        attempt("autograd", lambda: torch.autograd.grad(torch.tanh(w).sum(), [w]))
        seen["during autograd"] = json.dumps(guard.findings())
        attempt("direct", lambda: torch.ops.aten.tanh_backward(torch.ones(3), torch.ones(3)))
        """
    )
    assert seen["autograd"] == "ran" and seen["during autograd"] == "[]"
    assert seen["direct"].startswith("ForbiddenAPIError")
    assert found == [f"the operator aten::tanh_backward, {OFF_THE_LIST}"]


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
def test_operators_off_the_list_are_refused_with_the_modes_off():
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
        assert any(f.startswith("the operator aten::") and name in f.split(",")[0] for f in found), found


@pytest.mark.sandbox
def test_the_kernels_refuse_operators_off_the_list_by_any_route():
    found, seen = armed(
        """
        import torch.nn.functional as F
        import torch._refs
        routes = {
            "aten::_softmax": lambda: torch.ops.aten._softmax(x, -1, False),
            "aten::gelu": lambda: torch._C._nn.gelu(x),
            "aten::layer_norm": lambda: F.layer_norm(x, (4,)),
            "aten::group_norm": lambda: F.group_norm(x, 1),
            "aten::batch_norm": lambda: F.batch_norm(x, None, None, training=True),
            "aten::scaled_dot_product_attention": lambda: F.scaled_dot_product_attention(x, x, x),
            "aten::log_softmax": lambda: torch.exp(x.log_softmax(-1)),
            "aten::softmax": lambda: torch.nn.Softmax(dim=-1)(x),
            "aten::linear": lambda: F.linear(x, torch.ones(2, 4)),
            "prims::": lambda: torch._refs.softmax(x, -1),  # torch's Python references run prims, which no list names
        }
        with torch._C.DisableTorchFunction():  # the function mode off: the kernels alone
            for operator, route in routes.items():
                attempt(operator, route)
            attempt("vmapped", lambda: torch.vmap(lambda row: torch.softmax(row, -1))(x))  # functorch's batching rules too
        """
    )
    for operator in ("aten::_softmax", "aten::gelu", "aten::layer_norm", "aten::group_norm", "aten::batch_norm", "aten::linear"):
        assert seen[operator].startswith("ForbiddenAPIError"), (operator, seen[operator])
        assert any(f.startswith(f"the operator {operator}, ") for f in found), (operator, found)
    for route in ("aten::scaled_dot_product_attention", "aten::log_softmax", "aten::softmax", "prims::", "vmapped"):
        assert seen[route].startswith("ForbiddenAPIError"), (route, seen[route])


@pytest.mark.parametrize(
    "attack, shows",
    [
        ("guard.found.clear(); attempt('hide', lambda: sys.audit(READ_EVENT, []))", "the operator aten::softmax"),
        ("type(guard).allowed = lambda self, qualified: 'allowed'", "Guard.allowed was replaced"),
        ("attempt('swap', lambda: setattr(Guard.allowed, '__code__', (lambda self, q: 'allowed').__code__))", "__code__ of Guard.allowed"),
        ("torch._C._push_on_torch_function_stack(torch.overrides.TorchFunctionMode())", "no longer alone on the torch function mode stack"),
        ("torch._C._push_on_torch_dispatch_stack(torch.utils._python_dispatch.TorchDispatchMode())", "a dispatch mode was pushed"),
        ("guard.libraries[0]._destroy()", "the kernels of "),
        (
            "attempt('swap', lambda: setattr(guard.kernels[-1][2], '__code__', (lambda *args, **kwargs: None).__code__))",
            "__code__ of _refusing_kernel.<locals>.refuse_operator was being replaced",
        ),
        ("attempt('hook', lambda: sys.addaudithook(lambda event, args: None))", "sys.addaudithook"),
        ("runner.wire = None", "child.runner.wire was replaced"),
        ("import builtins; builtins.len = lambda obj: 0", "builtins.len was replaced"),
        ("attempt('trace', lambda: sys.settrace(lambda *a: None))", "sys.settrace"),
        ("attempt('profile', lambda: sys.setprofile(lambda *a: None))", "sys.setprofile"),
        ("import gc; attempt('gc', gc.get_objects)", "gc.get_objects"),
    ],
)
@pytest.mark.sandbox
def test_tampering_shows_in_the_record(attack, shows):
    found, _ = armed(f"attempt('softmax', lambda: torch.softmax(x, -1))\n{attack}\n")
    assert any(f.startswith("the operator aten::softmax") for f in found), found
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
@pytest.mark.parametrize("change", ["a kernel registered over it", "a cell of its closure set"])
def test_a_replaced_kernel_shows_within_a_round_of_reads(change):
    # every read checks a few refusing kernels and every full read more, going round: every kernel,
    # the first and the last alike, is checked within one round of reads, whether another kernel
    # was registered over it or the guard's own kernel was changed in place
    replace = {
        "a kernel registered over it": """
            replacement = torch.library.Library(qualified.partition("::")[0], "IMPL")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                replacement.impl(qualified.partition("::")[2], lambda *args, **kwargs: None, key)
            """,
        "a cell of its closure set": """
            kernel = next(k for q, _, k in guard.kernels if q == qualified)
            kernel.__closure__[-1].cell_contents = "nothing"
            """,
    }[change]
    for which in (0, -1):
        found, seen = armed(
            f"""
            import warnings
            from child.guard import FULL_CHECK_EVERY, KERNELS_PER_READ, KERNELS_PER_FULL_CHECK
            qualified = list(dict.fromkeys(q for q, _, _ in guard.kernels))[{which}]
            key = next(k for q, k, _ in guard.kernels if q == qualified)
            {textwrap.indent(textwrap.dedent(replace), " " * 12).strip()}
            per_round = (FULL_CHECK_EVERY - 1) * KERNELS_PER_READ + KERNELS_PER_FULL_CHECK
            round_reads = FULL_CHECK_EVERY * (len(set(q for q, _, _ in guard.kernels)) // per_round + 2)
            reads = [guard.findings(False) for _ in range(round_reads)]
            seen["first"] = str(next(i for i, read in enumerate(reads) if any("the kernels of " + qualified in f for f in read)))
            seen["round"] = str(round_reads)
            """
        )
        assert int(seen["first"]) < int(seen["round"]), seen


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
    refusal = json.loads(seen["first read"])
    assert len(refusal) == 1 and refusal[0].startswith(f"the operator aten::softmax, {OFF_THE_LIST}")
    assert found == refusal * 2


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
def test_a_subclass_dispatch_handler_runs_only_under_the_kernels():
    # the function mode refuses a subclass with its own __torch_dispatch__ among the arguments; a
    # submission that turns the mode off reaches its handler, where torch keeps the mode off: what
    # the handler runs there is still refused by the kernels
    found, seen = armed(
        """
        def new(cls, elem):
            wrapper = torch.Tensor._make_wrapper_subclass(cls, elem.shape, dtype=elem.dtype)
            wrapper.elem = elem
            return wrapper

        def dispatch(cls, func, types, args=(), kwargs=None):
            plain = [a.elem if type(a) is cls else a for a in args]
            seen["mode inside"] = str(torch._C._is_torch_function_mode_enabled())
            attempt("kernel", lambda: torch.softmax(plain[0], -1))
            return func(*plain, **(kwargs or {}))

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
    assert any(f.startswith("the operator aten::softmax") for f in found), found


def test_a_guard_that_is_not_armed_reports_what_it_found():
    g = guard()
    with g.watching():
        try:
            torch.exp(type("Sneaky", (torch.Tensor,), {"__torch_function__": classmethod(lambda *a, **k: None)})([1.0]))
        except ForbiddenAPIError:
            pass
    assert len(g.findings()) == 1 and "Sneaky" in g.findings()[0]
