"""How far correct and wrong submissions land from the float64 truth, over many seeds.

Runs every file in reference/mlm_forward_tied/submissions/accepted and reference/mlm_forward_tied/submissions/wrong_answer in this process
(they are our own files) on the hidden cases of SEEDS seeds and prints, per dtype, the largest
error of any correct file and, per wrong file, its largest error in its worst case, each as a
fraction of max|expected| and as a multiple of the spec's tolerance. Usage:

    .venv/bin/python bench/tolerance_study.py [SEEDS]
"""

import math
import sys
from collections import defaultdict
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.cases import make_cases  # noqa: E402
from grader.child.runner import load_submission  # noqa: E402
from grader.expected import expected_for  # noqa: E402
from grader.spec import load_spec  # noqa: E402


def load(path: Path):
    return load_submission(str(path)).mlm_forward_tied


def relative_error(expected: torch.Tensor, got: object) -> float:
    if not isinstance(got, torch.Tensor) or tuple(got.shape) != tuple(expected.shape):
        return math.inf
    if expected.numel() == 0:
        return 0.0
    diff = (got.detach().double() - expected).abs().max().item()
    scale = expected.abs().max().item()
    return math.inf if not math.isfinite(diff) else diff / scale if scale else diff


def errors(fn, case, expected) -> tuple[float, float]:
    """(error of the logits, error of the worst gradient), both relative to the tensor's scale;
    inf where the grader's other checks (dtype, inputs left unchanged) reject the result."""
    leaves = {k: v.clone().requires_grad_(k in case.differentiable) for k, v in case.inputs.items()}
    try:
        out = fn(**leaves, num_heads=case.args["num_heads"])
        value = relative_error(expected.output, out)
        if getattr(out, "dtype", None) != case.inputs["w_emb"].dtype:
            value = math.inf
        if any(not torch.equal(leaves[k], case.inputs[k]) for k in leaves):
            value = math.inf
        if not isinstance(out, torch.Tensor) or not out.requires_grad or value == math.inf:
            return value, math.inf
        grads = torch.autograd.grad(out, [leaves[k] for k in case.differentiable], case.grad_output.to(out.dtype), allow_unused=True)
    except Exception:  # noqa: BLE001 - a crash is as wrong as can be
        return math.inf, math.inf
    worst = 0.0
    for name, grad in zip(case.differentiable, grads, strict=True):
        grad = torch.zeros_like(expected.grads[name]) if grad is None else grad
        worst = max(worst, relative_error(expected.grads[name], grad))
    return value, worst


def main() -> None:
    seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    spec = load_spec()
    folder = ROOT / "reference" / "mlm_forward_tied" / "submissions"
    accepted = {p.stem: load(p) for p in sorted((folder / "accepted").glob("*.py"))}
    # hostile_* files attack whatever runs them: they run only in the sandbox, never in-process
    wrong = {p.stem: load(p) for p in sorted((folder / "wrong_answer").glob("*.py")) if not p.stem.startswith("hostile_")}
    correct_worst = defaultdict(float)  # (dtype, family, "value"/"grad") -> largest error
    wrong_best = defaultdict(lambda: math.inf)  # (wrong file, dtype) -> smallest over seeds of its worst case (in tolerances)
    for seed in range(seeds):
        cases = make_cases(spec, f"study-{seed}")
        expected = [expected_for(case) for case in cases]
        for fn in accepted.values():
            for case, exp in zip(cases, expected, strict=True):
                value, grad = errors(fn, case, exp)
                tolerance, gradient_tolerance = spec.tolerance(case.family, case.dtype), spec.tolerance(case.family, case.dtype, gradient=True)
                value, grad = value / tolerance, grad / gradient_tolerance
                correct_worst[case.dtype, case.family, "value"] = max(correct_worst[case.dtype, case.family, "value"], value)
                correct_worst[case.dtype, case.family, "grad"] = max(correct_worst[case.dtype, case.family, "grad"], grad)
        for name, fn in wrong.items():
            worst = defaultdict(float)
            for case, exp in zip(cases, expected, strict=True):
                value, grad = errors(fn, case, exp)
                tolerance, gradient_tolerance = spec.tolerance(case.family, case.dtype), spec.tolerance(case.family, case.dtype, gradient=True)
                worst[case.dtype] = max(worst[case.dtype], value / tolerance, grad / gradient_tolerance)
            for dtype, ratio in worst.items():
                wrong_best[name, dtype] = min(wrong_best[name, dtype], ratio)

    print(f"Correct files ({len(accepted)}), {seeds} seeds: largest error as a fraction of the tolerance (want << 1)")
    print(f"{'dtype':8} {'family':18} {'logits':>10} {'gradient':>10}")
    for dtype, family, _ in sorted(k for k in correct_worst if k[2] == "value"):
        print(f"{dtype:8} {family:18} {correct_worst[dtype, family, 'value']:10.2e} {correct_worst[dtype, family, 'grad']:10.2e}")
    print(f"\nWrong files ({len(wrong)}): error of the worst case of each dtype, in tolerances, smallest over the seeds (want >> 1)")
    print(f"  {'file':28} {'float32':>10} {'float64':>10}")
    for name in sorted(wrong, key=lambda n: max(wrong_best[n, "float32"], wrong_best[n, "float64"])):
        print(f"  {name:28} {wrong_best[name, 'float32']:10.3g} {wrong_best[name, 'float64']:10.3g}")


if __name__ == "__main__":
    main()
