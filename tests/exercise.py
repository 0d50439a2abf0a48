"""Every torch callable on the rules' lists, called once with arguments it accepts, forward and
backward: what `tools/operators.py` profiles to find the operators the lists need, and what the
tests run under the armed guard to show that every allowed function is allowed.

Each function is tried with the argument patterns below, in order, until one is accepted; the few
that take arguments of their own have an explicit call in CALLS.
"""

import warnings
from collections.abc import Callable
from typing import Any

import torch


def tensors() -> dict[str, Any]:
    """Fresh inputs: small float64 tensors that require gradients, and what indexing needs."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(3, 4, dtype=torch.float64, generator=g).requires_grad_()
    y = torch.randn(3, 4, dtype=torch.float64, generator=g).requires_grad_()
    square = (torch.randn(4, 4, dtype=torch.float64, generator=g) + 4 * torch.eye(4, dtype=torch.float64)).requires_grad_()
    return {
        "x": x,
        "y": y,
        "m": torch.randn(4, 3, dtype=torch.float64, generator=g).requires_grad_(),
        "v": torch.randn(4, dtype=torch.float64, generator=g).requires_grad_(),
        "sq": square,
        "spd": (square @ square.mT).detach().requires_grad_(),
        "b": torch.randn(2, 3, 4, dtype=torch.float64, generator=g).requires_grad_(),
        "idx": torch.tensor([0, 2]),
        "idx2": torch.tensor([[0, 1], [2, 3], [1, 0]]),
        "mask": torch.tensor([[True, False, True, False]] * 3),
        "ints": torch.tensor([1, 3, 3, 0]),
        "sorted": torch.tensor([-1.0, 0.0, 1.0], dtype=torch.float64),
        "pos": (torch.rand(3, 4, dtype=torch.float64, generator=g) + 0.5).requires_grad_(),
        "unit": (torch.rand(3, 4, dtype=torch.float64, generator=g) * 0.8 + 0.1).requires_grad_(),
    }


# Argument patterns, by the names of tensors(); ints and floats as they are.
PATTERNS: tuple[tuple[Any, ...], ...] = (
    ("x",), ("x", "y"), ("x", -1), ("x", 1), ("x", "m"), ("x", 2.0), ("x", "y", "y"), ((3, 4),), (3,),
    (["x", "y"],), ("x", 0, "idx"), ("x", "mask"), ("x", 0, 1), ("v", "v"), ("sq",), ("spd",), ("b", "b"),
    ("x", "idx"), ("ints",), ("ints", "ints"), (),
)  # fmt: skip

# Calls that no pattern fits, by qualified name (the method forms take the same after x).
CALLS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "torch.tensor": lambda t: torch.tensor([1.0, 2.0]),
    "torch.as_tensor": lambda t: torch.as_tensor([1.0, 2.0]),
    "torch.asarray": lambda t: torch.asarray([1.0, 2.0]),
    "torch.from_numpy": lambda t: torch.from_numpy(t["x"].detach().numpy().copy()),
    "torch.arange": lambda t: torch.arange(5),
    "torch.full": lambda t: torch.full((3, 4), 1.5),
    "torch.reshape": lambda t: torch.reshape(t["x"], (4, 3)),
    "torch.flip": lambda t: torch.flip(t["x"], (0,)),
    "torch.imag": lambda t: torch.imag(torch.complex(t["x"], t["y"])),
    "torch.bmm": lambda t: torch.bmm(t["b"], t["b"].mT),
    "torch.dtype": lambda t: torch.float32,  # a class whose instances torch makes: read, never called
    "torch.linspace": lambda t: torch.linspace(0, 1, 5),
    "torch.logspace": lambda t: torch.logspace(0, 1, 5),
    "torch.randint": lambda t: torch.randint(0, 5, (3,)),
    "torch.randperm": lambda t: torch.randperm(4),
    "torch.manual_seed": lambda t: None,  # it seeds torch's default generator: no operator, and a side effect the tests avoid
    "torch.tril_indices": lambda t: torch.tril_indices(3, 3),
    "torch.triu_indices": lambda t: torch.triu_indices(3, 3),
    "torch.meshgrid": lambda t: torch.meshgrid(t["v"], t["v"], indexing="ij"),
    "torch.complex": lambda t: torch.complex(t["x"], t["y"]),
    "torch.polar": lambda t: torch.polar(t["pos"], t["x"]),
    "torch.narrow": lambda t: torch.narrow(t["x"], 1, 0, 2),
    "torch.select": lambda t: torch.select(t["x"], 1, 2),
    "torch.take_along_dim": lambda t: torch.take_along_dim(t["x"], t["idx2"], 1),
    "torch.gather": lambda t: torch.gather(t["x"], 1, t["idx2"]),
    "torch.scatter": lambda t: torch.scatter(t["x"], 1, t["idx2"], t["y"][:, :2]),
    "torch.scatter_add": lambda t: torch.scatter_add(t["x"], 1, t["idx2"], t["y"][:, :2]),
    "torch.scatter_reduce": lambda t: torch.scatter_reduce(t["x"], 1, t["idx2"], t["y"][:, :2], "sum"),
    "torch.index_add": lambda t: torch.index_add(t["x"], 0, t["idx"], t["y"][:2]),
    "torch.index_copy": lambda t: torch.index_copy(t["x"], 0, t["idx"], t["y"][:2]),
    "torch.index_fill": lambda t: torch.index_fill(t["x"], 0, t["idx"], 1.0),
    "torch.masked_fill": lambda t: torch.masked_fill(t["x"], t["mask"], 0.0),
    "torch.split": lambda t: torch.split(t["x"], 2, 1),
    "torch.tensor_split": lambda t: torch.tensor_split(t["x"], 2, 1),
    "torch.chunk": lambda t: torch.chunk(t["x"], 2, 1),
    "torch.hsplit": lambda t: torch.hsplit(t["x"], 2),
    "torch.vsplit": lambda t: torch.vsplit(t["b"], 2),
    "torch.roll": lambda t: torch.roll(t["x"], 1, 1),
    "torch.tile": lambda t: torch.tile(t["x"], (2,)),
    "torch.repeat_interleave": lambda t: torch.repeat_interleave(t["x"], 2, 0),
    "torch.broadcast_to": lambda t: torch.broadcast_to(t["v"], (3, 4)),
    "torch.broadcast_shapes": lambda t: torch.broadcast_shapes((3, 1), (1, 4)),
    "torch.unflatten": lambda t: torch.unflatten(t["x"], 1, (2, 2)),
    "torch.permute": lambda t: torch.permute(t["b"], (2, 0, 1)),
    "torch.movedim": lambda t: torch.movedim(t["b"], 0, 2),
    "torch.moveaxis": lambda t: torch.moveaxis(t["b"], 0, 2),
    "torch.diagonal": lambda t: torch.diagonal(t["sq"]),
    "torch.where": lambda t: torch.where(t["mask"], t["x"], t["y"]),
    "torch.clamp": lambda t: torch.clamp(t["x"], -0.5, 0.5),
    "torch.clip": lambda t: torch.clip(t["x"], -0.5, 0.5),
    "torch.lerp": lambda t: torch.lerp(t["x"], t["y"], 0.3),
    "torch.addcmul": lambda t: torch.addcmul(t["x"], t["y"], t["y"]),
    "torch.addcdiv": lambda t: torch.addcdiv(t["x"], t["y"], t["pos"]),
    "torch.log": lambda t: torch.log(t["pos"]),
    "torch.log2": lambda t: torch.log2(t["pos"]),
    "torch.log10": lambda t: torch.log10(t["pos"]),
    "torch.sqrt": lambda t: torch.sqrt(t["pos"]),
    "torch.rsqrt": lambda t: torch.rsqrt(t["pos"]),
    "torch.logit": lambda t: torch.logit(t["unit"]),
    "torch.erfinv": lambda t: torch.erfinv(t["unit"]),
    "torch.lgamma": lambda t: torch.lgamma(t["pos"]),
    "torch.digamma": lambda t: torch.digamma(t["pos"]),
    "torch.acosh": lambda t: torch.acosh(t["pos"] + 1),
    "torch.xlogy": lambda t: torch.xlogy(t["x"], t["pos"]),
    "torch.float_power": lambda t: torch.float_power(t["pos"], 2.0),
    "torch.pow": lambda t: torch.pow(t["pos"], 2.0),
    "torch.bincount": lambda t: torch.bincount(t["ints"]),
    "torch.searchsorted": lambda t: torch.searchsorted(t["sorted"], t["x"].detach()),
    "torch.bucketize": lambda t: torch.bucketize(t["x"].detach(), t["sorted"]),
    "torch.quantile": lambda t: torch.quantile(t["x"], 0.5, dim=1),
    "torch.nanquantile": lambda t: torch.nanquantile(t["x"], 0.5, dim=1),
    "torch.kthvalue": lambda t: torch.kthvalue(t["x"], 2, 1),
    "torch.topk": lambda t: torch.topk(t["x"], 2, 1),
    "torch.einsum": lambda t: torch.einsum("ij,jk->ik", t["x"], t["m"]),
    "torch.tensordot": lambda t: torch.tensordot(t["x"], t["m"], 1),
    "torch.mv": lambda t: torch.mv(t["x"], t["v"]),
    "torch.addmm": lambda t: torch.addmm(t["sq"][:3, :3], t["x"], t["m"]),
    "torch.addmv": lambda t: torch.addmv(t["v"][:3], t["x"], t["v"]),
    "torch.addbmm": lambda t: torch.addbmm(t["sq"][:3, :3], t["b"], t["b"].mT),
    "torch.baddbmm": lambda t: torch.baddbmm(t["b"] @ t["b"].mT, t["b"], t["b"].mT),
    "torch.addr": lambda t: torch.addr(t["x"], t["v"][:3], t["v"]),
    "torch.cross": lambda t: torch.cross(t["x"][:, :3], t["y"][:, :3], dim=1),
    "torch.block_diag": lambda t: torch.block_diag(t["x"], t["y"]),
    # above 25 rows, cdist computes through matmul (aten::_euclidean_dist)
    "torch.cdist": lambda t: (torch.cdist(t["x"], t["y"]), torch.cdist(t["x"].repeat(10, 1), t["y"].repeat(10, 1))),
    "torch.diff": lambda t: torch.diff(t["x"], dim=1),
    "torch.unique_consecutive": lambda t: torch.unique_consecutive(t["ints"]),
    "torch.finfo": lambda t: torch.finfo(torch.float32),
    "torch.iinfo": lambda t: torch.iinfo(torch.int64),
    "torch.promote_types": lambda t: torch.promote_types(torch.float32, torch.int64),
    "torch.can_cast": lambda t: torch.can_cast(torch.float32, torch.int64),
    "torch.result_type": lambda t: torch.result_type(t["x"], 1),
    "torch.set_grad_enabled": lambda t: torch.set_grad_enabled(True),
    "torch.vmap": lambda t: torch.vmap(lambda row: (row * row).sum())(t["x"]),
    "torch.autograd.grad": lambda t: torch.autograd.grad((t["x"] * t["x"]).sum(), [t["x"]]),
    "torch.autograd.backward": lambda t: torch.autograd.backward((t["x"] * t["x"]).sum()),
    "torch.Tensor": lambda t: torch.Tensor([1.0, 2.0]),
    "torch.Size": lambda t: torch.Size([2, 3]),
    "torch.device": lambda t: torch.device("cpu"),
    "torch.linalg.solve": lambda t: torch.linalg.solve(t["sq"], t["v"]),
    "torch.linalg.lstsq": lambda t: torch.linalg.lstsq(t["sq"], t["sq"]),
    "torch.linalg.cross": lambda t: torch.linalg.cross(t["x"][:, :3], t["y"][:, :3]),
    "torch.linalg.multi_dot": lambda t: torch.linalg.multi_dot([t["x"], t["m"], t["x"]]),
    "torch.linalg.vecdot": lambda t: torch.linalg.vecdot(t["x"], t["y"]),
    "torch.linalg.solve_triangular": lambda t: torch.linalg.solve_triangular(t["sq"].triu(), t["sq"], upper=True),
    "torch.linalg.matrix_power": lambda t: torch.linalg.matrix_power(t["sq"], 3),
    "torch.linalg.matmul": lambda t: torch.linalg.matmul(t["x"], t["m"]),
    "torch.special.logit": lambda t: torch.special.logit(t["unit"]),
    "torch.special.erfinv": lambda t: torch.special.erfinv(t["unit"]),
    "torch.special.gammaln": lambda t: torch.special.gammaln(t["pos"]),
    "torch.special.digamma": lambda t: torch.special.digamma(t["pos"]),
    "torch.special.ndtri": lambda t: torch.special.ndtri(t["unit"]),
    "torch.special.log1p": lambda t: torch.special.log1p(t["pos"]),
    "torch.special.entr": lambda t: torch.special.entr(t["pos"]),
    "torch.special.xlogy": lambda t: torch.special.xlogy(t["x"], t["pos"]),
    "torch.special.logsumexp": lambda t: torch.special.logsumexp(t["x"], 1),
    "torch.fft.irfft": lambda t: torch.fft.irfft(torch.fft.rfft(t["x"])),
    "torch.fft.irfft2": lambda t: torch.fft.irfft2(torch.fft.rfft2(t["x"])),
    "torch.fft.irfftn": lambda t: torch.fft.irfftn(torch.fft.rfftn(t["x"])),
    "torch.fft.fftfreq": lambda t: torch.fft.fftfreq(4),
    "torch.fft.rfftfreq": lambda t: torch.fft.rfftfreq(4),
    # methods whose arguments differ from their functions'
    "torch.Tensor.view": lambda t: t["x"].view(4, 3),
    "torch.Tensor.reshape": lambda t: t["x"].reshape(4, 3),
    "torch.Tensor.expand": lambda t: t["v"].expand(3, 4),
    "torch.Tensor.repeat": lambda t: t["x"].repeat(2, 1),
    "torch.Tensor.new_full": lambda t: t["x"].new_full((2,), 1.0),
    "torch.Tensor.new_tensor": lambda t: t["x"].new_tensor([1.0]),
    "torch.Tensor.new_empty": lambda t: t["x"].new_empty((2,)),
    "torch.Tensor.new_zeros": lambda t: t["x"].new_zeros((2,)),
    "torch.Tensor.new_ones": lambda t: t["x"].new_ones((2,)),
    "torch.Tensor.unfold": lambda t: t["x"].unfold(1, 2, 1),
    "torch.Tensor.item": lambda t: t["x"][0, 0].item(),
    "torch.Tensor.numpy": lambda t: t["x"].detach().numpy(),
    "torch.Tensor.masked_fill_": lambda t: t["x"].detach().clone().masked_fill_(t["mask"], 0.0),
    "torch.Tensor.index_add_": lambda t: t["x"].detach().clone().index_add_(0, t["idx"], t["y"].detach()[:2]),
    "torch.Tensor.index_copy_": lambda t: t["x"].detach().clone().index_copy_(0, t["idx"], t["y"].detach()[:2]),
    "torch.Tensor.index_fill_": lambda t: t["x"].detach().clone().index_fill_(0, t["idx"], 1.0),
    "torch.Tensor.scatter_": lambda t: t["x"].detach().clone().scatter_(1, t["idx2"], t["y"].detach()[:, :2]),
    "torch.Tensor.scatter_add_": lambda t: t["x"].detach().clone().scatter_add_(1, t["idx2"], t["y"].detach()[:, :2]),
    "torch.Tensor.scatter_reduce_": lambda t: t["x"].detach().clone().scatter_reduce_(1, t["idx2"], t["y"].detach()[:, :2], "sum"),
    "torch.Tensor.fill_": lambda t: t["x"].detach().clone().fill_(1.0),
    "torch.Tensor.copy_": lambda t: t["x"].detach().clone().copy_(t["y"]),
    "torch.Tensor.index_put_": lambda t: t["x"].detach().clone().index_put_((t["idx"],), torch.tensor(1.0, dtype=torch.float64)),
    "torch.Tensor.type_as": lambda t: t["x"].type_as(t["ints"]),
    "torch.Tensor.backward": lambda t: (t["x"] * t["x"]).sum().backward(),
    "torch.Tensor.retain_grad": lambda t: (t["x"] * 2).retain_grad(),
    "torch.Tensor.requires_grad_": lambda t: t["x"].detach().requires_grad_(),
    "torch.Tensor.detach_": lambda t: (t["x"] * 1).detach_(),
    "torch.Tensor.squeeze_": lambda t: t["x"].detach().clone().unsqueeze(0).squeeze_(0),
    "torch.Tensor.unsqueeze_": lambda t: t["x"].detach().clone().unsqueeze_(0),
    "torch.Tensor.t_": lambda t: t["x"].detach().clone().t_(),
    "torch.Tensor.transpose_": lambda t: t["x"].detach().clone().transpose_(0, 1),
    "torch.Tensor.addmm_": lambda t: t["sq"][:3, :3].detach().clone().addmm_(t["x"], t["m"]),
    "torch.Tensor.addmv_": lambda t: t["v"][:3].detach().clone().addmv_(t["x"], t["v"]),
    "torch.view_as_real": lambda t: torch.view_as_real(torch.complex(t["x"], t["y"])),
    "torch.Tensor.baddbmm_": lambda t: (t["b"] @ t["b"].mT).detach().baddbmm_(t["b"], t["b"].mT),
    "torch.Tensor.addr_": lambda t: t["x"].detach().clone().addr_(t["v"][:3], t["v"]),
}


def _arguments(pattern: tuple[Any, ...], t: dict[str, Any]) -> list[Any]:
    def one(item: Any) -> Any:
        if isinstance(item, str):
            return t[item]
        if isinstance(item, list):
            return [one(inner) for inner in item]
        return item

    return [one(item) for item in pattern]


def _in_place(name: str) -> bool:
    return name.endswith("_") and not name.endswith("__")


def call(qualified: str, function: Callable[..., Any], t: dict[str, Any]) -> tuple[str, Any]:
    """Call an allowed function once on the inputs t: ("", its result), or (why not, None) when no
    pattern fits."""
    method = qualified.startswith("torch.Tensor.")
    base = qualified.rpartition(".")[2]
    if qualified in CALLS:
        return "", CALLS[qualified](t)
    if method and f"torch.{base}" in CALLS:  # the method form of a function with its own call
        explicit = CALLS[f"torch.{base}"]
        return "", explicit(t)
    last = ""
    for pattern in PATTERNS:
        arguments = _arguments(pattern, t)
        if _in_place(base) and arguments and isinstance(arguments[0], torch.Tensor):
            arguments[0] = arguments[0].detach().clone()  # an in-place method on a leaf that requires grad is refused by autograd
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if method:
                    if not arguments or not isinstance(arguments[0], torch.Tensor):
                        continue
                    return "", getattr(arguments[0], base)(*arguments[1:])
                return "", function(*arguments)
        except (TypeError, RuntimeError, ValueError, IndexError, NotImplementedError) as error:
            last = f"{type(error).__name__}: {str(error).splitlines()[0][:160] if str(error) else ''}"
    return last or "no pattern fits", None


def backward(result: Any, t: dict[str, Any]) -> None:
    """Differentiate a result that carries a gradient with respect to the inputs t, as the grader's
    vector-Jacobian product does (a scalar sum, then autograd.grad)."""
    outputs = [r for r in (result if isinstance(result, tuple | list) else [result]) if isinstance(r, torch.Tensor)]
    differentiable = [o for o in outputs if o.requires_grad and (o.is_floating_point() or o.is_complex())]
    leaves = [value for value in t.values() if isinstance(value, torch.Tensor) and value.requires_grad]
    if differentiable and leaves:
        total = sum((o.abs() if o.is_complex() else o).sum() for o in differentiable)
        torch.autograd.grad(total, leaves, allow_unused=True)


def torch_functions(functions: list[str]) -> list[str]:
    """The callables of the lists that run torch operators: torch's and its submodules', and Tensor methods."""
    return [name for name in functions if name.startswith("torch.") and not name.startswith("torch.types.")]


def syntax(t: dict[str, Any]) -> list[Any]:
    """What Python's own syntax does with tensors (operators, indexing, conversions, printing): none
    of it is a function of the lists, all of it runs operators."""
    x, y, m, mask, idx = t["x"], t["y"], t["m"], t["mask"], t["idx"]
    z = x.detach().clone()
    z[idx] = 1.0
    z[mask] = 0.0
    z[:, 1:3] = y.detach()[:, :2]
    z[0] += 1.0
    z += y.detach()
    z *= 2.0
    z -= 1.0
    z /= 3.0
    results = [
        x + y, x - y, x * y, x / y, x // 2, x % 2, x**2, 2**x, -x, +x, abs(x), x @ m, x[0], x[:, 1:3], x[idx], x[mask], x[None],
        x[..., 0], x[-1, ::2], x.T, x.mT, x < y, x <= y, x > y, x >= y, x == y, x != y, ~mask, mask & mask, mask | mask, mask ^ mask,
        float(x[0, 0]), int(t["ints"][0]), bool(mask[0, 0]), len(x), list(iter(x)), x.shape, x.ndim, x.dtype, z,
        repr(x), str(x), repr(x.detach().float()), str(t["ints"]), str(mask), format(x[0, 0].item(), ".3f"), x.tolist(),
        repr(torch.tensor([float("nan"), float("inf"), 1e10, 1e-10])), repr(torch.zeros(0, 3)), repr(torch.randn(200, 200)),
    ]
    return results
