"""Challenges as packages (docs/challenges.md, "A challenge package"), tested on the harness's own fixture problem
(tests/fixture_problem/: two outputs, an exact int64 one, float and bool parameters, a gradient
check, autograd kept from the submission) and on the installed packages' registry."""

import dataclasses
import json
import tomllib
from pathlib import Path

import pytest
import torch

from grader import protocol
from grader.cases import make_cases
from grader.child import wire
from grader.expected import expected_for, public_case_file, read_public_case
from grader.package_format import FormatError, check_format
from grader.rules import base_rules
from grader.spec import DEFAULT_PROBLEM, ROOT, load_spec, parse_spec, problem_ids, problem_spec
from tests.grading import run_grader, shared_once

FIXTURE = ROOT / "tests" / "fixture_problem"
SPEC_FILE = FIXTURE / "problem.toml"
SPEC = load_spec(SPEC_FILE)
DATA = tomllib.loads(SPEC_FILE.read_text())

# Each fixture submission: its verdict, and what the first failing case's message says.
EXPECTED = {
    "correct.py": ("accepted", "all 5 cases passed"),
    "named_tuple.py": ("accepted", "all 5 cases passed"),
    "count_off_by_one.py": ("wrong_answer", "the values of the counts are not close to the expected ones (compared exactly: int64)"),
    "always_shift.py": ("wrong_answer", "case no_shift_1 failed (4 of 5 cases passed): the values of z are not close"),
    "list_result.py": ("wrong_answer", "returned a non-tuple object of class builtins.list; expected a tuple of 2 tensors (z, count)"),
    "one_element.py": ("wrong_answer", "returned a tuple of 1 element; expected 2 (z, count)"),
    "float_counts.py": ("wrong_answer", "element 1 (count): returned dtype float64; expected int64"),
    "detached_x.py": ("wrong_answer", "the gradient reaching x is wrong"),
    "uses_autograd.py": ("forbidden_api", "torch.autograd is forbidden (addcmul, and autograd: write it yourself); write it from elementary operations"),
}


@pytest.fixture(scope="module")
def fixture_batch(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Every fixture submission graded once, by one batch of the fixture problem."""

    def grade() -> dict:
        out = tmp_path_factory.mktemp("fixture-batch") / "results.jsonl"
        files = [str(path) for path in sorted((FIXTURE / "submissions").glob("*/*.py"))]
        done = run_grader("batch", *files, "--spec", str(SPEC_FILE), "--out", str(out), "--allow-default-seed")
        assert out.exists(), done.stderr
        return {"lines": [json.loads(line) for line in out.read_text().splitlines()], "stdout": done.stdout, "stderr": done.stderr}

    return shared_once(tmp_path_factory, "fixture-batch", grade)


def test_the_fixture_has_an_expectation_for_each_of_its_submissions():
    found = {p.name: p.parent.name for p in (FIXTURE / "submissions").glob("*/*.py")}
    assert found == {name: verdict for name, (verdict, _) in EXPECTED.items()}


@pytest.mark.sandbox
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_fixture_submission_gets_its_verdict_and_message(fixture_batch, name):
    line = next(line for line in fixture_batch["lines"] if line["id"] == Path(name).stem)
    verdict, says = EXPECTED[name]
    assert (line["verdict"], line["problem"]) == (verdict, SPEC.id), line["message"]
    assert says in line["message"], line["message"]
    assert line["spec_sha256"] == SPEC.digest


@pytest.mark.sandbox
def test_a_batch_never_appends_another_problems_results(fixture_batch, tmp_path):
    out = tmp_path / "results.jsonl"
    out.write_text("".join(json.dumps(line) + "\n" for line in fixture_batch["lines"]))
    done = run_grader("batch", str(FIXTURE / "submissions" / "accepted" / "correct.py"), "--out", str(out), "--allow-default-seed")
    assert done.returncode == 2
    assert f"holds results of the problem {SPEC.id}, not {DEFAULT_PROBLEM}" in done.stderr and "another --out" in done.stderr


@pytest.mark.sandbox
def test_problems_lists_every_installed_challenge_and_marks_the_default():
    done = run_grader("problems")
    assert done.returncode == 0, done.stderr
    for problem in problem_ids():
        assert f"{problem}{' (default)' if problem == DEFAULT_PROBLEM else ''}: " in done.stdout
    assert {"mlm-forward-tied", "layernorm-backward"} <= set(problem_ids())


@pytest.mark.sandbox
def test_an_unknown_problem_is_a_usage_error_naming_the_known_ones(tmp_path):
    for args in (
        ["--problem", "nope", str(FIXTURE / "submissions" / "accepted" / "correct.py")],
        ["batch", str(FIXTURE), "--problem", "nope", "--out", str(tmp_path / "r.jsonl")],
    ):
        done = run_grader(*args)
        assert done.returncode == 2 and "there is no problem 'nope'" in done.stderr and DEFAULT_PROBLEM in done.stderr, done.stderr
        assert "Traceback" not in done.stderr


def test_two_problems_never_share_data():
    other = dataclasses.replace(SPEC, id="fixture-other")
    ours, theirs = make_cases(SPEC, "seed"), make_cases(other, "seed")
    assert [c.name for c in ours] == [c.name for c in theirs]
    assert not any(torch.equal(a.args["x"], b.args["x"]) for a, b in zip(ours, theirs, strict=True) if a.args["x"].shape == b.args["x"].shape)


def test_the_call_carries_scalars_by_value_and_tensors_by_name():
    case = make_cases(SPEC, "seed")[0]
    header, tensors = case.request()
    assert header["call"] == [["x", "tensor"], ["y", "tensor"], ["alpha", case.args["alpha"]], ["keep", case.args["keep"]]]
    assert isinstance(case.args["alpha"], float) and case.args["alpha"] in (0.5, 2.0, -3.0) and case.args["keep"] is True
    assert set(tensors) == {"x", "y", "upstream_0", "upstream_1"} and (header["returns"], header["outputs"]) == ("tuple", 2)


def test_a_public_case_file_reads_back_as_the_same_case():
    case = next(c for c in make_cases(SPEC, "seed", public_only=True))
    expected = expected_for(case, SPEC)
    template = next(t for t in SPEC.templates if t.name == case.name)
    again, want = read_public_case(public_case_file(case, expected, SPEC), template, SPEC)
    assert (again.args.keys(), again.shape, again.output_shapes, again.dtype) == (case.args.keys(), case.shape, case.output_shapes, case.dtype)
    assert all(torch.equal(a, b) for a, b in zip(want.outputs, expected.outputs, strict=True)) and want.outputs[1].dtype == torch.int64
    assert torch.equal(want.grads["x"], expected.grads["x"]) and torch.equal(again.upstream[1], case.upstream[1])


# -- the wire of a tuple result --------------------------------------------------------------------


def _result(case, parts: list[dict], tensors: dict) -> tuple[dict, list]:
    header = {"kind": "result", "name": case.name, "output": {"type": "tuple", "plain": True, "length": len(parts)}, "parts": parts}
    frame = wire.encode(header, tensors)
    import io

    return wire.read_header(io.BytesIO(frame))


def _part(tensor: torch.Tensor) -> dict:
    return {"type": "torch.Tensor", "plain": True, "layout": "torch.strided", "shape": list(tensor.shape), "dtype": str(tensor.dtype)[6:], "device": "cpu"}


def test_a_tuple_result_that_describes_an_element_otherwise_than_it_sends_it_is_refused():
    case = make_cases(SPEC, "seed")[0]
    z, count = expected_for(case, SPEC).outputs
    z = z.to(getattr(torch, case.dtype))
    expect = protocol.expect_result(case, SPEC)
    header, described = _result(case, [_part(z), _part(count)], {"output_0": z, "output_1": count})
    assert protocol.check(header, described, expect)["parts"][1]["dtype"] == "int64"
    lying = _part(count) | {"shape": [99]}
    header, described = _result(case, [_part(z), lying], {"output_0": z, "output_1": count})
    with pytest.raises(protocol.ProtocolError, match="describes its output_1 with another shape or dtype"):
        protocol.check(header, described, expect)
    header, described = _result(case, [_part(z), _part(count)], {"output_0": z, "output_7": count})
    with pytest.raises(protocol.ProtocolError, match="a tensor named 'output_7', which the case does not have"):
        protocol.check(header, described, expect)
    header, described = _result(case, [_part(z)] * (protocol.MAX_PARTS + 1), {})
    with pytest.raises(protocol.ProtocolError, match="at most 64 descriptions"):
        protocol.check(header, described, expect)


# -- the rules: a package only narrows the harness's allow-lists -----------------------------------------


def forbid(*names: str, what: str = "the exponential") -> dict:
    return {"rules": {"forbid": [{"what": what, "names": list(names), "advice": "write it from elementary operations"}]}}


def test_a_package_narrows_every_list_by_pattern_and_says_what_to_write_instead():
    spec = parse_spec(DATA | forbid("torch.exp", "torch.Tensor.exp", "torch.Tensor.exp_", "aten::exp", "aten::exp_"))
    base = base_rules()
    assert "torch.exp" in base.functions and "aten::exp" in base.operators
    assert "torch.exp" not in spec.rules.functions and "torch.Tensor.exp_" not in spec.rules.functions
    assert "aten::exp" not in spec.rules.operators and "aten::expm1" in spec.rules.operators
    assert set(spec.rules.functions) < set(base.functions) and set(spec.rules.operators) < set(base.operators)
    assert spec.rules.advice_for("torch.exp") == "write it from elementary operations"
    assert spec.rules.advice_for("torch.log") != "write it from elementary operations"


@pytest.mark.parametrize(
    "rules, message",
    [
        ({"allow": ["os"]}, "[rules] has no key 'allow'"),
        ({"forbid": [{"what": "x", "names": ["torch.exp"]}]}, "exactly the keys what, names and advice"),
        ({"forbid": [{"what": "x", "names": [], "advice": "y"}]}, "names must be a non-empty list"),
    ],
)
def test_a_package_can_only_narrow_and_a_mistake_is_named(rules, message):
    with pytest.raises(ValueError) as refused:
        parse_spec(DATA | {"rules": rules})
    assert message in str(refused.value)


def test_the_old_policy_table_is_refused_with_what_replaces_it():
    with pytest.raises(FormatError, match=r"\[policy\] is no longer read: narrow the harness's allow-lists with \[\[rules.forbid\]\] tables"):
        check_format(DATA | {"policy": {"forbidden_functions": ["gelu"]}})


@pytest.mark.parametrize("operator", ["aten::clone", "aten::detach", "aten::copy_", "aten::mul", "aten::sum"])
def test_a_package_cannot_remove_what_the_graders_own_code_runs(operator):
    with pytest.raises(ValueError, match=f"removes {operator}, which the grader's own code runs in the child"):
        parse_spec(DATA | forbid(operator))


def test_without_a_gradient_check_the_gradient_operators_may_go_and_autograd_with_them():
    spec = parse_spec(DATA | {"problem": DATA["problem"] | {"gradient_wrt": []}} | forbid("aten::mul", "torch.Tensor.backward", "torch.autograd*"))
    assert "aten::mul" not in spec.rules.operators and "torch.Tensor.backward" not in spec.rules.functions
    assert "torch.autograd.grad" not in spec.rules.functions


@pytest.mark.sandbox
def test_the_guards_warm_up_works_whatever_a_package_forbids(tmp_path):
    """The warm-up computes tanh, exp and sqrt before the kernels refuse anything; removing them from
    the lists (which the submission does not use) must not refuse the guard itself."""
    removed = '"aten::tanh", "aten::exp", "aten::sqrt", "aten::var*", "aten::linspace", '
    text = SPEC_FILE.read_text().replace('names = ["torch.addcmul",', f'names = [{removed}"torch.addcmul",')
    assert '"aten::tanh", "aten::exp"' in text
    (tmp_path / "problem.toml").write_text(text)
    done = run_grader("--spec", str(tmp_path / "problem.toml"), str(FIXTURE / "submissions" / "accepted" / "correct.py"))
    assert done.returncode == 0 and "all 5 cases passed" in done.stdout, done.stdout + done.stderr


# -- the package's identity --------------------------------------------------------------------------


def test_the_package_digest_covers_everything_the_grader_reads(tmp_path, monkeypatch):
    """The statement, the module [problem] module names, the hidden modules it imports, and the
    package it extends; not the example submissions nor a candidate's solution.py."""
    from grader import spec as spec_module

    files = {
        "problem/toy/problem.toml": "x = 1\n",
        "problem/toy/README.md": "statement\n",
        "problem/base/problem.toml": "y = 1\n",
        "problem/base/README.md": "the extended statement\n",
        "reference/own_module/reference.py": "from reference.shared.helpers import f\n",
        "reference/shared/helpers.py": "def f(): pass\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    monkeypatch.setattr(spec_module, "PROBLEMS", tmp_path / "problem")
    monkeypatch.setattr(spec_module, "ROOT", tmp_path)
    toml = tmp_path / "problem/toy/problem.toml"
    spec = dataclasses.replace(SPEC, id="toy", hidden="reference.own_module", path=toml)

    def digest() -> str:
        return spec_module.package_digest(spec, [toml, tmp_path / "problem/base/problem.toml"])

    seen = [digest()]
    for name in ("reference/own_module/reference.py", "reference/shared/helpers.py", "problem/toy/README.md", "problem/base/README.md"):
        (tmp_path / name).write_text((tmp_path / name).read_text() + "# changed\n")
        seen.append(digest())
    (tmp_path / "problem/toy/solution.py").write_text("a candidate's work\n")
    (tmp_path / "reference/own_module/submissions/accepted").mkdir(parents=True)
    (tmp_path / "reference/own_module/submissions/accepted/example.py").write_text("an example\n")
    assert len(set(seen)) == 5 and digest() == seen[-1]


def test_every_installed_package_parses_and_names_a_hidden_side():
    for problem in problem_ids():
        spec = problem_spec(problem)
        assert spec.id == problem and (ROOT / spec.module.replace(".", "/")).is_dir()


def test_every_case_name_can_label_the_childs_output():
    """The child labels what a submission prints with the case's name; a name the label reader does
    not take would leave the raw label line in the report."""
    from grader.sandbox.output import label_text

    for problem in problem_ids():
        for template in problem_spec(problem).templates:
            assert label_text(f"{template.name} forward".encode()) == f"[case {template.name}, forward call]"
    bad = DATA | {"cases": [DATA["cases"][0] | {"name": "public small"}]}
    with pytest.raises(ValueError, match="case name 'public small': case names are 1 to 100 letters"):
        parse_spec(bad)
