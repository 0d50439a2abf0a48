"""Hints: what a failure pattern usually means. The report's formats are in grader/formats/."""

from grader.results import Report, Verdict
from grader.spec import Spec


def hints(report: Report, spec: Spec) -> list[str]:
    """What a failure pattern usually means, when every failing case shares one trait."""
    failed = [c for c in report.cases if c.status == Verdict.WRONG_ANSWER]
    if not failed or len(failed) == len(report.cases):
        return []
    found = []
    families = {c.family for c in failed}
    if len(families) == 1 and (hint := spec.families[families.pop()].hint):
        found.append(hint)
    if all(c.check == "gradient" for c in failed):
        found.append(
            "Only the gradient check fails: the values are right but the gradient reaching w_emb is not. "
            "The head must use w_emb itself (x @ w_emb.T), not a detached or copied matrix, and the result "
            "must stay on the autograd graph (no torch.no_grad(), .detach(), .numpy() or .item())."
        )
    if all(c.dtype == "float64" for c in failed) and not all(c.family == "float64" for c in failed):
        found.append(spec.families["float64"].hint)
    if all(c.check == "inputs" for c in failed):
        found.append(
            "Only the inputs check fails: an in-place operation (x += ..., .add_(), item assignment) changed an argument; work on new tensors instead."
        )
    return found
