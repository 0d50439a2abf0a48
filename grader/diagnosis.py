"""What a wrong answer gets wrong, in a sentence or two, most likely first (deciding only: no I/O).

Everything here runs in the grader, on what the child returned for its failing cases (the checked
reply and the tensors the grader kept: an output of the wrong shape or dtype is described, not kept):
- checks that are not about numbers (type, dtype, device, inputs changed in place) say so;
- float64 results that are all float32 numbers mean the computation ran in float32;
- known mistakes: when a failing case's output matches, within the case's tolerance, a known wrong
  twin of the reference (reference/mlm_forward_tied/mistakes.py), and that twin explains every failing case, it is
  named. `[diagnosis] known_mistakes = false` in the spec turns this off (exams), and so does the
  absence of reference/ (a candidate's kit);
- probe cases (family "probes" in problem/mlm-forward-tied/problem.toml) switch parts of the network off or make them
  trivial; which pass and which fail locates the fault (`localise`). A conclusion names a part only
  when the probes prove the parts before it right.
"""

import itertools
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from grader.case import Case
from grader.child.vjp import vector_jacobian
from grader.compare import bitwise_equal, compare_values
from grader.results import NOT_NUMBERS, NOT_RUN, WRONG_LOGITS, WRONG_NUMBERS, CaseResult, Check, Verdict
from grader.spec import PROBE_FAMILY, Spec, hidden_module  # noqa: F401 - PROBE_FAMILY: named here too, where the probes are read

Received = dict[str, tuple[dict[str, Any], dict[str, Tensor]]]  # case name -> (reply, tensors), failing cases only

# The probe cases by role (their names in problem/mlm-forward-tied/problem.toml).
EMBEDDING = "probe_embedding"  # no blocks, one sequence, every position selected
GATHER_ORDER = "probe_gather_order"  # no blocks, several sequences, every position selected
MASK_THRESHOLD = "probe_mask_threshold"  # no blocks, one sequence, mask values around 0.5
WITHOUT_ATTENTION = "probe_without_attention"  # w_o = 0: layer norm and feed-forward only
ATTENTION_ONLY = "probe_attention_only"  # w_mlp2 = 0
UNIFORM_ATTENTION = "probe_uniform_attention"  # w_q = 0 and w_mlp2 = 0: all scores equal
SINGLE_HEAD = "probe_single_head"  # w_mlp2 = 0, one head
SINGLE_POSITION = "probe_single_position"  # T = 1, full block
SINGLE_POSITION_ATTENTION = "probe_single_position_attention"  # T = 1, w_mlp2 = 0: no scores, no averaging, no feed-forward
IDENTITY_BLOCKS = "probe_identity_blocks"  # w_o = 0 and w_mlp2 = 0: the block must leave x unchanged
SYMMETRIC_WEIGHTS = "probe_symmetric_weights"  # every matrix symmetric: x @ W == x @ W.T
ONE_BLOCK = "probe_one_block"
TWO_BLOCKS = "probe_two_blocks"
OUTSIDE_PROBES = (EMBEDDING, GATHER_ORDER, MASK_THRESHOLD)
BLOCK_PROBES = (
    WITHOUT_ATTENTION, ATTENTION_ONLY, UNIFORM_ATTENTION, SINGLE_HEAD, SINGLE_POSITION, SINGLE_POSITION_ATTENTION,
    IDENTITY_BLOCKS, SYMMETRIC_WEIGHTS, ONE_BLOCK, TWO_BLOCKS,
)  # fmt: skip
PROBES = (*OUTSIDE_PROBES, *BLOCK_PROBES)

# The parts of the computation (keys of CONCLUSIONS) that each probe's logits depend on: a probe
# whose logits are right proves these parts right, a probe whose logits are wrong has a fault in one
# of them. A zeroed matrix switches its path off (w_o = 0: no attention; w_mlp2 = 0: no
# feed-forward); with one position there are no scores to get wrong and nothing to average; with
# all scores equal each head takes the plain mean, whatever the split into heads; with one head
# d_head is d_model; symmetric matrices hide their orientation; several sequences show the order of rows.
OUTSIDE = frozenset({"embedding_or_head"})
_LN = OUTSIDE | {"structure", "layer_norm", "orientation"}  # a block with a path switched on
# "w_o_orientation": w_o used as w_o.T, a fault of the value path that symmetric matrices hide
# (the other value-path faults, such as v = h @ w_k, they do not).
_VALUES = frozenset({"value_path", "w_o_orientation"})
_ATTENTION = _LN | _VALUES | {"averaging", "scores", "heads"}
_FULL = _ATTENTION | {"feed_forward", "chaining"}
PROBE_PARTS: dict[str, frozenset[str]] = {
    EMBEDDING: OUTSIDE,
    GATHER_ORDER: OUTSIDE | {"gather_order"},
    MASK_THRESHOLD: OUTSIDE | {"selection"},
    IDENTITY_BLOCKS: OUTSIDE | {"structure", "gather_order"},
    WITHOUT_ATTENTION: _LN | {"feed_forward", "gather_order"},
    ATTENTION_ONLY: _ATTENTION | {"gather_order"},
    UNIFORM_ATTENTION: _LN | _VALUES | {"averaging", "gather_order"},
    SINGLE_HEAD: _ATTENTION - {"heads"} | {"gather_order"},
    SINGLE_POSITION: _LN | _VALUES | {"feed_forward", "chaining"},
    SINGLE_POSITION_ATTENTION: _LN | _VALUES,
    SYMMETRIC_WEIGHTS: _FULL - {"orientation", "w_o_orientation"} | {"gather_order"},
    ONE_BLOCK: _FULL | {"gather_order"},
    TWO_BLOCKS: _FULL | {"gather_order", "across_blocks"},
}
BLOCK_PARTS = frozenset().union(*PROBE_PARTS.values()) - OUTSIDE - {"gather_order", "selection"}
SAME_CONCLUSION = {"w_o_orientation": "value_path"}  # a part the probes tell apart, told to the candidate as another
LARGEST_EXPLANATION = 3  # more faults at once than this: the probes cannot tell them apart

_BLOCKS = "The embedding, the selection of rows and the tied head are right (the probes without blocks pass); the fault is in the blocks, "
# Probe conclusions: what the pattern of passing and failing probes proves, and where to look.
CONCLUSIONS = {
    "embedding_or_head": "The fault is outside the blocks: with no blocks and every position selected the logits are already wrong. "
    "Check x = w_emb[input_ids] + pos_embed and logits = rows @ w_emb.T, with nothing (no final layer norm) in between.",
    "head_columns": "The tied head is wrong: the result does not have vocab_size columns. logits = rows @ w_emb.T, shape (M, vocab_size).",
    "selection": "The selection of masked positions is wrong: take exactly the positions with mask_indicator > 0.5, strictly "
    "(0.5 itself is not selected; values below 0 and above 1 occur), one row each.",
    "gather_order": "The embedding and the tied head are right (the probe without blocks on one sequence passes), but with several sequences "
    "the rows come in the wrong order: row-major (n, t), all selected positions of sequence 0 first.",
    "structure": _BLOCKS + "in their residual structure: a block whose attention and feed-forward add nothing (w_o = 0, w_mlp2 = 0) "
    "still changes x. Pre-LN: x = x + MHA(LN(x)), then x = x + FFN(LN(x)), each residual added to x itself.",
    "orientation": _BLOCKS + "in the orientation of the weights: with symmetric matrices the blocks are right, otherwise the attention and "
    "the feed-forward both fail. Weights are (in, out): x @ W, never x @ W.T.",
    "layer_norm": _BLOCKS + "most likely in the layer norm that the attention and the feed-forward share (each fails alone; the residual "
    "structure is right): (x - mean) / sqrt(var + 1e-5), population variance, eps inside the root.",
    "feed_forward": _BLOCKS + "in the feed-forward: the probe without attention fails, the attention-only one passes. "
    "FFN(h) = GELU(h @ w_mlp1) @ w_mlp2, GELU(u) = 0.5 * u * (1 + tanh(sqrt(2 / pi) * (u + 0.044715 * u**3))).",
    "value_path": _BLOCKS + "in the attention's value path: it fails even with all scores equal and with a single position "
    "(the feed-forward passes). Check v = h @ w_v, the heads concatenated in column order, then @ w_o.",
    "averaging": _BLOCKS + "in how attention averages over positions: right with one position, wrong with all scores equal, where "
    "each query takes the plain mean of the values of its whole sequence (weights summing to one over the keys, no causal mask).",
    "scores": _BLOCKS + "in the attention scores: right when all scores are equal, wrong with one head. "
    "Per head: q @ k^T / sqrt(d_head) with q = h @ w_q, k = h @ w_k, softmax over the keys (the last dimension).",
    "heads": _BLOCKS + "in how heads divide d_model: one head is right, several are not. Head j owns the contiguous columns "
    "[j * d_head, (j + 1) * d_head), and scores are divided by sqrt(d_head), the width of one head.",
    "chaining": _BLOCKS + "in how the attention and the feed-forward follow each other: each is right alone, a whole block is not. "
    "The feed-forward's layer norm takes x after the attention's residual add.",
    "across_blocks": _BLOCKS + "in going from one block to the next: one block is right, two are not. "
    "Block i uses blocks_weights[i], in order, on the previous block's output.",
    "nonfinite_blocks": "The embedding and the tied head are right (a probe through the blocks passes), but through the blocks your logits hold NaN "
    "or inf where the expected ones are finite, even where w_o = 0 or w_mlp2 = 0 switch a path off (NaN * 0 is NaN), so the probes cannot "
    "tell which part makes them: look for a softmax over a row whose scores are all -inf (every position attends to every position of its "
    "sequence; the mask only selects the rows for the head), a division by zero or an overflow.",
    "gradient_outside": "The logits are right but the gradients are not, already with no blocks: the embedding lookup or the tied head is cut "
    "off from autograd. Both must use w_emb itself (no .detach(), torch.no_grad(), NumPy or copy).",
    "gradient_blocks": "The logits are right but the gradients are not, and only with blocks: a step inside the blocks is cut off from "
    "autograd (.detach(), .item(), NumPy or torch.no_grad()).",
}

# Where each part is and what it must be, for a diagnosis that finds several faults at once.
FIXES = {
    "embedding_or_head": "outside the blocks: x = w_emb[input_ids] + pos_embed, and logits = rows @ w_emb.T with nothing (no final layer norm) in between",
    "selection": "the selection of masked positions: exactly those with mask_indicator > 0.5, strictly",
    "gather_order": "the order of the rows: row-major (n, t), all selected positions of sequence 0 first",
    "structure": "the residual structure: pre-LN, x = x + MHA(LN(x)), then x = x + FFN(LN(x)), each residual added to x itself",
    "orientation": "the orientation of the weights: (in, out), x @ W, never x @ W.T",
    "layer_norm": "the layer norm: (x - mean) / sqrt(var + 1e-5), population variance, eps inside the root",
    "feed_forward": "the feed-forward: GELU(h @ w_mlp1) @ w_mlp2, GELU(u) = 0.5 * u * (1 + tanh(sqrt(2 / pi) * (u + 0.044715 * u**3)))",
    "value_path": "the attention's value path: v = h @ w_v, the heads concatenated in column order, then @ w_o",
    "averaging": "how attention averages over positions: weights summing to one over the keys of the whole sequence, no causal mask",
    "scores": "the attention scores: per head q @ k^T / sqrt(d_head), softmax over the keys (the last dimension)",
    "heads": "how heads divide d_model: head j owns the columns [j * d_head, (j + 1) * d_head), scores divided by sqrt(d_head)",
    "chaining": "how the attention and the feed-forward follow each other: the feed-forward's layer norm takes x after the attention's residual add",
    "across_blocks": "going from one block to the next: block i uses blocks_weights[i], in order, on the previous block's output",
}
SEVERAL = (
    "The probe cases show faults in {count} parts at once (each failing probe is explained by one of them, "
    "and no one part explains them all); fix them one at a time: "
)
# The start of a block's conclusion when the probes without blocks did not all run (one raised):
# a probe through the blocks that passes still proves the embedding and the head right.
_BLOCKS_UNRUN = (
    "The embedding and the tied head are right (a probe through the blocks passes; the probes without blocks did not all run); the fault is in the blocks, "
)

# A twin's logits are compared on every failing case, its gradients (a backward pass each) on the
# first few only: a step cut off from autograd shows on any case.
GRADIENT_CASES = 3

PRECISION = (
    "Your float64 logits are all float32 numbers: the computation runs in float32 somewhere. Compute in the dtype of the inputs "
    "(no .float(), no float32 tensors of constants)."
)


@dataclass(frozen=True)
class Failure:
    case: Case
    result: CaseResult
    reply: dict[str, Any]  # the child's checked reply: "output" describes the result (type, shape, dtype, device)
    tensors: dict[str, Tensor]  # the tensors kept: output, grad_<input>, after_<input>

    @property
    def shape(self) -> tuple[int, ...] | None:
        """The shape of the returned tensor, from its description (the tensor itself is not kept
        when the shape is wrong)."""
        shape = self.reply.get("output", {}).get("shape")
        return tuple(shape) if isinstance(shape, list) else None


@dataclass(frozen=True)
class Finding:
    sentences: list[str]
    checks: tuple[Check, ...] = ()  # the checks not about numbers (NOT_NUMBERS) that got a sentence
    precision: bool = False  # the float64 results are float32 numbers
    mistake: str | None = None  # the name of the twin in reference/mlm_forward_tied/mistakes.py
    parts: tuple[str, ...] = ()  # the keys of the conclusions in CONCLUSIONS: each part the probes show wrong

    @property
    def part(self) -> str | None:
        """The part, when the probes show exactly one wrong."""
        return self.parts[0] if len(self.parts) == 1 else None

    def keys(self) -> set[str]:
        """What was found, by name: the checks, "precision", the mistake's and the parts' names."""
        return {*self.checks, *(["precision"] if self.precision else []), *filter(None, (self.mistake,)), *self.parts}


def diagnose(cases: list[Case], results: list[CaseResult], received: Received, spec: Spec) -> list[str]:
    """The diagnosis of a wrong answer: one or two short sentences, most likely first. `received`
    maps the name of each failing case to the child's reply and the tensors kept from it."""
    return analyse(cases, results, received, spec).sentences


def analyse(cases: list[Case], results: list[CaseResult], received: Received, spec: Spec) -> Finding:
    by_name = {case.name: case for case in cases}
    failures = [Failure(by_name[r.name], r, *received.get(r.name, ({}, {}))) for r in results if r.status == Verdict.WRONG_ANSWER and r.name in by_name]
    if not failures:
        return Finding([])
    checks = {check: sentence for check in NOT_NUMBERS if (sentence := _check_sentence(check, failures))}
    sentences = [checks[check] for check in checks if check != Check.INPUTS]
    numeric = [f for f in failures if f.result.check in WRONG_NUMBERS and (_is_float(f.tensors.get("output")) or f.shape is not None)]

    precision = _float32_precision(numeric)
    if precision:
        sentences.append(PRECISION)
        numeric = [f for f in numeric if f.case.dtype != "float64"]  # the float64 cases fail by rounding alone

    mistake = None
    if spec.known_mistakes and numeric:
        named = _name_mistake(numeric, spec)
        if named:
            mistake, sentence = named
            sentences.append(sentence)

    shape_part = _shape_part(failures)
    outcomes = _probe_outcomes(results, received)
    parts = () if precision else (shape_part,) if shape_part else localise(outcomes)
    sentences += conclusions(parts, all(outcomes.get(name) in ("ok", "gradient") for name in OUTSIDE_PROBES))
    if Check.INPUTS in checks:  # the least likely to be the first thing to fix: the numbers are right
        sentences.append(checks[Check.INPUTS])
    return Finding(sentences, tuple(checks), precision, mistake, parts)


def conclusions(parts: tuple[str, ...], outside_ran: bool = True) -> list[str]:
    """One part: its conclusion, with the reasoning the probes give (which says the probes without
    blocks pass only when they did). Several: each part's fix."""
    if len(parts) <= 1:
        return [CONCLUSIONS[part] if outside_ran else CONCLUSIONS[part].replace(_BLOCKS, _BLOCKS_UNRUN) for part in parts]
    return [SEVERAL.format(count=len(parts)) + "; ".join(f"({i}) in {FIXES[part]}" for i, part in enumerate(parts, 1)) + "."]


# -- probes ---------------------------------------------------------------------------------------
def _probe_outcomes(results: list[CaseResult], received: Received | None = None) -> dict[str, str]:
    """For each probe case that ran: "ok", "values" (wrong logits), "nonfinite" (wrong logits with
    NaN or inf: a zeroed matrix no longer switches a path off, NaN * 0 is NaN), "gradient" (right
    logits, wrong gradient) or "unknown" (it raised, or failed a check that says nothing about the numbers)."""
    outcomes = {}
    for r in results:
        if r.name not in PROBES or r.status == NOT_RUN:
            continue
        if r.passed or (r.status == Verdict.WRONG_ANSWER and r.check == Check.INPUTS):  # values were checked before inputs
            outcomes[r.name] = "ok"
        elif r.status == Verdict.WRONG_ANSWER and r.check in WRONG_LOGITS:
            output = (received or {}).get(r.name, ({}, {}))[1].get("output")
            outcomes[r.name] = "nonfinite" if _is_float(output) and not bool(torch.isfinite(output).all()) else "values"
        elif r.status == Verdict.WRONG_ANSWER and r.check == Check.GRADIENT:
            outcomes[r.name] = "gradient"
        else:
            outcomes[r.name] = "unknown"
    return outcomes


def localise(outcomes: dict[str, str]) -> tuple[str, ...]:
    """The parts the probe outcomes show wrong (keys of CONCLUSIONS), or () when they prove nothing.

    Only the probes that ran count. A probe with right logits proves right every part it depends on
    (PROBE_PARTS); each probe with wrong logits has a fault in one of its parts not proven right. The
    answer is the smallest set of parts that explains every failing probe, when there is exactly one
    such set: a part is never named where another, as small, explanation exists."""
    wrong = {name for name, outcome in outcomes.items() if outcome in ("values", "nonfinite")}
    if not wrong:
        gradient = {name for name, outcome in outcomes.items() if outcome == "gradient"}
        if gradient & set(OUTSIDE_PROBES):
            return ("gradient_outside",)
        return ("gradient_blocks",) if gradient else ()
    right = frozenset().union(*(PROBE_PARTS[name] for name, outcome in outcomes.items() if outcome in ("ok", "gradient")))
    suspects = []
    for name in wrong:
        # NaN or inf pass through a zeroed matrix: the probe then depends on every part of the block.
        parts = PROBE_PARTS[name] | (BLOCK_PARTS if outcomes[name] == "nonfinite" and name not in OUTSIDE_PROBES else set())
        suspects.append(parts - right)
    # NaN or inf through the blocks, with the outside proven right, is a finding of its own when no part can be named.
    fallback = ("nonfinite_blocks",) if OUTSIDE <= right and any(outcomes[name] == "nonfinite" for name in wrong - set(OUTSIDE_PROBES)) else ()
    if not all(suspects):  # a failing probe whose parts are all proven right: the model of the probes does not fit
        return fallback
    candidates = sorted(frozenset().union(*suspects))
    for size in range(1, LARGEST_EXPLANATION + 1):
        explanations = [chosen for chosen in itertools.combinations(candidates, size) if all(set(chosen) & parts for parts in suspects)]
        if len(explanations) == 1:
            named = {SAME_CONCLUSION.get(part, part) for part in explanations[0]}
            return tuple(sorted(named, key=list(CONCLUSIONS).index))
        if explanations:  # as small and as good as another: the probes cannot tell which
            return fallback
    return fallback


def _shape_part(failures: list[Failure]) -> str | None:
    """A result of the wrong shape says by itself which part is wrong: the number of rows is the
    selection's, the number of columns the head's."""
    for f in failures:
        if f.result.check != Check.SHAPE or f.shape is None or len(f.shape) != 2:
            continue
        m, v = f.case.grad_output.shape
        if f.shape[1] != v:
            return "head_columns"
        if f.shape[0] != m:
            return "selection"
    return None


# -- checks that are not about numbers -------------------------------------------------------------
def _check_sentence(check: Check, failures: list[Failure]) -> str | None:
    failed = [f for f in failures if f.result.check == check]
    if not failed:
        return None
    if check == Check.TYPE:
        return (
            "The result is not a plain torch.Tensor: return the logits tensor itself (not a NumPy array, a list, "
            "a subclass of torch.Tensor or a sparse tensor)."
        )
    if check == Check.DTYPE:
        f = failed[0]
        dtype = f.reply.get("output", {}).get("dtype")
        got = f" ({dtype} for {f.case.dtype} inputs)" if isinstance(dtype, str) else ""
        return f"The result's dtype is not the inputs' dtype{got}: return the logits in w_emb's dtype (no .double(), .float() or .to() on the result)."
    if check == Check.DEVICE:
        return "The result is not on the inputs' device: return it where the inputs are (no .to() or .cuda())."
    changed = sorted({name for f in failed for name in f.case.inputs if _changed(f, name)})
    names = ", ".join(changed) if changed else "an argument"
    return (
        f"Your call changes {names} in place (the logits are right): work on new tensors, with no in-place operation "
        "(x += ..., .add_(), .gt_(), item assignment) on an argument."
    )


def _changed(f: Failure, name: str) -> bool:
    after = f.tensors.get(f"after_{name}")
    return after is not None and not bitwise_equal(f.case.inputs[name], after)


def _is_float(t: Any) -> bool:
    return isinstance(t, Tensor) and t.dtype in (torch.float32, torch.float64)


def _float32_precision(numeric: list[Failure]) -> bool:
    """True when every failing float64 case returned logits that are all float32 numbers (and
    some are not zero): no float64 computation gives that."""
    wide = [f.tensors["output"] for f in numeric if f.case.dtype == "float64" and f.result.check == Check.VALUES and _is_float(f.tensors.get("output"))]
    if not wide:
        return False
    for out in wide:
        finite = out[torch.isfinite(out)].to(torch.float64)
        if not finite.count_nonzero() or not torch.equal(finite, finite.to(torch.float32).to(torch.float64)):
            return False
    return True


# -- known mistakes ---------------------------------------------------------------------------------
def _name_mistake(numeric: list[Failure], spec: Spec) -> tuple[str, str] | None:
    """The first twin (in the package's mistakes.MISTAKES order) that explains every failing case, as
    (name, sentence). A twin whose logits match but whose gradients do not is named only if no
    twin matches both, and the sentence says so."""
    try:
        MISTAKES = hidden_module(f"{spec.module}.mistakes").MISTAKES  # noqa: N806 - absent where the reference is (a candidate's kit)
    except ImportError:
        return None
    values_fail = any(f.result.check in WRONG_LOGITS for f in numeric)
    fallback = None
    for twin in MISTAKES:
        if twin.gradient_only == values_fail:  # right logits cannot explain wrong ones, and the reverse
            continue
        matches, gradients_left = set(), GRADIENT_CASES
        for f in numeric:  # stops at the first case the twin does not explain
            compare = gradients_left > 0 and all(_is_float(f.tensors.get(f"grad_{name}")) for name in f.case.differentiable)
            match = _explains(twin, f, spec, compare)
            if match is None:
                break
            gradients_left -= compare
            matches.add(match)
        else:
            if LOGITS_ONLY not in matches:
                return twin.name, _mistake_sentence(twin, matches, values_fail)
            fallback = fallback or (twin, matches)
    if fallback:
        return fallback[0].name, _mistake_sentence(*fallback, values_fail)
    return None


# How far a twin explains one failing case.
EXPLAINED = "explained"  # the logits (and the gradients, where compared) match
SHAPE_ONLY = "shape"  # a result of the wrong shape, not kept: the twin's result has that shape
LOGITS_ONLY = "logits"  # the logits match, the gradients do not


def _mistake_sentence(twin: Any, matches: set[str], values_fail: bool) -> str:
    if not values_fail:
        return f"Your logits are right and your gradients match the reference {twin.what}: {twin.fix}."
    if LOGITS_ONLY in matches:
        return (
            f"Your logits match the reference {twin.what} ({twin.fix}), but your gradients differ from that variant's: "
            "something else is wrong too, perhaps a step cut off from autograd."
        )
    if matches == {SHAPE_ONLY}:
        return f"Your results have the shape of the reference {twin.what}: {twin.fix}."
    return f"Your logits match the reference {twin.what}: {twin.fix}."


def _explains(twin: Any, f: Failure, spec: Spec, compare_gradients: bool) -> str | None:
    """How far the twin explains this failing case (EXPLAINED, SHAPE_ONLY, LOGITS_ONLY), or None."""
    tolerance, gradient_tolerance = spec.tolerances(f.case.family, f.case.dtype)
    if f.result.check in WRONG_LOGITS:
        with torch.no_grad():
            output = twin(**_inputs(twin, f.case), num_heads=f.case.args["num_heads"])
        if not _is_float(f.tensors.get("output")):  # not kept: only its description is left
            return SHAPE_ONLY if tuple(output.shape) == f.shape else None
        if not _close(output, f.tensors["output"], tolerance):
            return None
    if not compare_gradients:
        return EXPLAINED
    gradients_match = all(_close(want, f.tensors[f"grad_{name}"], gradient_tolerance) for name, want in _twin_grads(twin, f.case).items())
    if f.result.check == Check.GRADIENT:  # the logits are right: the gradients are all the twin can explain
        return EXPLAINED if gradients_match else None
    return EXPLAINED if gradients_match else LOGITS_ONLY


def _inputs(twin: Any, case: Case) -> dict[str, Tensor]:
    dtype = getattr(torch, case.dtype) if twin.in_case_dtype else torch.float64
    return {name: t.to(dtype) if t.is_floating_point() else t for name, t in case.inputs.items()}


def _twin_grads(twin: Any, case: Case) -> dict[str, Tensor]:
    inputs = _inputs(twin, case)
    wrt = case.differentiable
    leaves = [inputs[name].clone().requires_grad_(True) for name in wrt]
    inputs |= dict(zip(wrt, leaves, strict=True))
    output = twin(**inputs, num_heads=case.args["num_heads"])
    if not output.requires_grad or output.shape != case.grad_output.shape:
        return {name: torch.zeros_like(leaf) for name, leaf in zip(wrt, leaves, strict=True)}
    grads = vector_jacobian(output, leaves, case.grad_output.to(output.dtype))
    return {name: torch.zeros_like(leaf) if g is None else g for name, leaf, g in zip(wrt, leaves, grads, strict=True)}


def _close(want: Tensor, got: Tensor | None, tolerance: float) -> bool:
    """got is within tolerance of want, as the grader judges closeness; where want is not finite
    (a twin that overflows in float32), got must be non-finite at the same places."""
    if not _is_float(got) or tuple(got.shape) != tuple(want.shape):
        return False
    finite = torch.isfinite(want)
    if not torch.equal(finite, torch.isfinite(got)):
        return False
    return compare_values(want.detach()[finite], got[finite], tolerance, show_values=False).passed
