"""Mutants of the reference (grader/mutation.py): the kinds of mistake they cover, ids that stay put,
the author's equivalence marks, and the score verify prints."""

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from grader.mutation import OPERATORS, MutationScore, load_equivalent, load_mutant, mutants, score, score_lines
from reference.mlm_forward_tied import reference as mlm

MLM_PATH = Path(mlm.__file__)
MLM_SOURCE = MLM_PATH.read_text(encoding="utf-8")
MLM_MUTANTS = mutants(MLM_SOURCE)


def change(mutant) -> str:
    """A description without its line: "`a` -> `b`"."""
    return mutant.description.split(": ", 1)[1]


def find(mutant_list, before: str, after: str):
    matches = [mutant for mutant in mutant_list if change(mutant) == f"`{before}` -> `{after}`"]
    assert len(matches) == 1, f"{len(matches)} mutants `{before}` -> `{after}`, not 1"
    return matches[0]


def line_of(text: str) -> int:
    (line,) = [number for number, content in enumerate(MLM_SOURCE.splitlines(), start=1) if text in content]
    return line


# -- what the mutants of the MLM reference cover --------------------------------------------------------


@pytest.mark.parametrize(
    ("operator", "before", "after", "where"),
    [
        ("binary_operator", "var + LAYER_NORM_EPS", "var - LAYER_NORM_EPS", "var + LAYER_NORM_EPS"),
        ("drop_term", "var + LAYER_NORM_EPS", "var", "var + LAYER_NORM_EPS"),
        ("drop_sqrt", "torch.sqrt(var + LAYER_NORM_EPS)", "var + LAYER_NORM_EPS", "var + LAYER_NORM_EPS"),
        ("constant", "LAYER_NORM_EPS = 1e-05", "LAYER_NORM_EPS = 0.0001", "LAYER_NORM_EPS = 1e-5"),
        ("constant", "LAYER_NORM_EPS = 1e-05", "LAYER_NORM_EPS = 0.0", "LAYER_NORM_EPS = 1e-5"),
        ("constant", "0.044715 * x ** 3", "0.08943 * x ** 3", "0.044715"),
        ("constant", "0.044715 * x ** 3", "0.0 * x ** 3", "0.044715"),
        ("axis", "x.mean(dim=-1, keepdim=True)", "x.mean(dim=-2, keepdim=True)", "mean = x.mean"),
        ("axis", "x.mean(dim=-1, keepdim=True)", "x.mean(dim=0, keepdim=True)", "mean = x.mean"),
        ("flip_bool", "x.mean(dim=-1, keepdim=True)", "x.mean(dim=-1, keepdim=False)", "mean = x.mean"),
        ("reduction", "scores.amax(dim=-1, keepdim=True)", "scores.amin(dim=-1, keepdim=True)", "scores.amax"),
        ("reduction", "weights.sum(dim=-1, keepdim=True)", "weights.mean(dim=-1, keepdim=True)", "weights.sum"),
        ("detach", "scores.amax(dim=-1, keepdim=True).detach()", "scores.amax(dim=-1, keepdim=True)", "scores.amax"),
        ("drop_term", "scores - scores.amax(dim=-1, keepdim=True).detach()", "scores", "scores.amax"),
        ("transpose", "k.transpose(-2, -1)", "k", "k.transpose"),
        ("swap_operands", "q @ k.transpose(-2, -1)", "k.transpose(-2, -1) @ q", "k.transpose"),
        ("drop_factor", "q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])", "q @ k.transpose(-2, -1)", "k.transpose"),
        ("index", "q.shape[-1]", "q.shape[-2]", "k.transpose"),
        ("transpose", "x @ w_q", "x @ w_q.mT", "x @ w_q"),
        ("swap_args", "split_heads(x @ w_q, num_heads)", "split_heads(num_heads, x @ w_q)", "x @ w_q"),
        ("comparison", "mask_indicator > MASK_THRESHOLD", "mask_indicator >= MASK_THRESHOLD", "> MASK_THRESHOLD"),
        ("transpose", "masked @ w_emb.T", "masked @ w_emb", "masked @ w_emb.T"),
        ("swap_operands", "masked @ w_emb.T", "w_emb.T @ masked", "masked @ w_emb.T"),
        ("drop_term", "x + feed_forward(layer_norm(x), w_mlp1, w_mlp2)", "x", "feed_forward(layer_norm"),
    ],
)
def test_the_reference_has_the_mutants_of_its_documented_mistakes(operator, before, after, where):
    mutant = find(MLM_MUTANTS, before, after)
    assert mutant.operator == operator
    assert mutant.line == line_of(where)
    assert mutant.description == f"line {mutant.line}: `{before}` -> `{after}`"
    assert after.split(" = ")[-1] in mutant.source  # the change is in the source a verify run loads


def test_every_mutant_compiles_differs_from_the_reference_and_from_every_other():
    original = ast.dump(ast.parse(MLM_SOURCE))
    trees = [ast.dump(ast.parse(mutant.source)) for mutant in MLM_MUTANTS]
    for mutant in MLM_MUTANTS:
        compile(mutant.source, mutant.id, "exec")
    assert original not in trees
    assert len(set(trees)) == len(trees) == len({mutant.id for mutant in MLM_MUTANTS})
    assert {mutant.operator for mutant in MLM_MUTANTS} <= OPERATORS.keys()
    assert all(mutant.id.split(":")[1] == mutant.operator for mutant in MLM_MUTANTS)


def test_every_operator_finds_its_site():
    source = (
        "import torch\n"
        "def f(x, y, n: int = 2):\n"
        "    a = -x + y.T - x.transpose(0, 1) @ y\n"
        "    b = a / x.mean(dim=-1, keepdim=True).detach() * torch.sqrt(y)\n"
        "    c = x[1:n] if n > 0 else x[0]\n"
        "    return torch.maximum(a, b), g(c, n)\n"
    )
    found = mutants(source)
    assert {mutant.operator for mutant in found} == OPERATORS.keys()
    changes = {change(mutant) for mutant in found}
    assert "`g(c, n)` -> `g(n, c)`" in changes
    # Swapping the arguments of a symmetric call makes an equivalent mutant: none is made.
    assert not any("torch.maximum(b, a)" in mutant.source or "transpose(1, 0)" in mutant.source for mutant in found)


def test_docstrings_annotations_and_decorators_are_left_alone():
    source = 'import functools\n@functools.lru_cache(maxsize=2)\ndef f(x: "list[1]", n: int = 1) -> tuple[int, 2]:\n    """1 + 2"""\n    return x[0] + n\n'

    def untouched(tree: ast.Module) -> str:
        function = tree.body[1]
        return ast.dump(function.decorator_list[0]) + ast.dump(function.returns) + ast.dump(function.args.args[0]) + ast.dump(function.body[0])

    found = mutants(source)
    assert found  # the default, the index and the sum are mutated
    assert all(untouched(ast.parse(mutant.source)) == untouched(ast.parse(source)) for mutant in found)


def test_the_list_is_the_same_on_every_run():
    assert mutants(MLM_SOURCE) == MLM_MUTANTS


@pytest.mark.sandbox
def test_the_ids_are_the_same_in_another_process_with_another_hash_seed():
    """mutants.toml outlives the process: no id may depend on Python's per-process string hashing."""
    script = "import sys; from grader.mutation import mutants; print(' '.join(m.id for m in mutants(sys.stdin.read())))"
    for seed in ("1", "2"):
        environment = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(MLM_PATH.parents[1])}
        run = subprocess.run([sys.executable, "-c", script], input=MLM_SOURCE, capture_output=True, text=True, env=environment, check=True)
        assert run.stdout.split() == [mutant.id for mutant in MLM_MUTANTS]


def test_ids_survive_code_added_moved_or_commented_elsewhere():
    edited = "# a comment that moves every line down\n\n" + MLM_SOURCE + "\n\ndef unrelated(x):\n    return x * 2 - 1\n"
    after = {mutant.id: mutant for mutant in mutants(edited)}
    for mutant in MLM_MUTANTS:
        assert mutant.id in after
        assert after[mutant.id].line == mutant.line + 2
        assert change(after[mutant.id]) == change(mutant)
    assert any(mutant_id.startswith("unrelated:") for mutant_id in after)


def test_editing_a_statement_renews_its_mutants_ids_and_no_other():
    """An equivalence mark names one mutant; when its statement changes, the mark must go stale, not
    move silently to another mutant."""
    edited = MLM_SOURCE.replace("0.044715 * x**3", "0.0447 * x**3")
    assert edited != MLM_SOURCE
    before = {mutant.id for mutant in MLM_MUTANTS}
    after = {mutant.id for mutant in mutants(edited)}
    gelu_before = {mutant_id for mutant_id in before if mutant_id.startswith("gelu_tanh:")}
    assert gelu_before and not gelu_before & after
    assert before - gelu_before <= after


def test_only_the_named_functions_and_the_constants_they_read():
    found = mutants(MLM_SOURCE, ["layer_norm"])
    assert {mutant.id.split(":")[0] for mutant in found} == {"layer_norm", "LAYER_NORM_EPS"}
    assert {mutant.id for mutant in found} <= {mutant.id for mutant in MLM_MUTANTS}
    with pytest.raises(ValueError, match="no function named 'layer_nrom'.*layer_norm"):
        mutants(MLM_SOURCE, ["layer_nrom"])
    with pytest.raises(TypeError):
        mutants(MLM_SOURCE, "layer_norm")


# -- loading a mutant ---------------------------------------------------------------------------------


def mlm_arguments() -> tuple:
    generator = torch.Generator().manual_seed(0)
    n, t, d, v = 2, 3, 4, 5
    return (
        torch.randint(0, v, (n, t), generator=generator),
        torch.randn(v, d, generator=generator, dtype=torch.float64),
        torch.randn(t, d, generator=generator, dtype=torch.float64),
        torch.randn(1, 6, d, d, generator=generator, dtype=torch.float64),
        torch.tensor([[0.9, 0.1, 0.7], [0.2, 0.8, 0.6]], dtype=torch.float64),
        2,
    )


def test_a_mutated_helper_reaches_the_entry_point_and_the_real_reference_stays():
    mutant = find(MLM_MUTANTS, "(x - mean) / torch.sqrt(var + LAYER_NORM_EPS)", "x - mean")  # in layer_norm, which only the blocks call
    module = load_mutant(mutant, "reference.mlm_forward_tied.reference")
    assert module.__name__ == "reference.mlm_forward_tied.reference" and module.__package__ == "reference.mlm_forward_tied"
    assert module is not mlm and sys.modules["reference.mlm_forward_tied.reference"] is mlm
    arguments = mlm_arguments()
    expected = mlm.mlm_forward_tied(*arguments)
    assert not torch.allclose(module.mlm_forward_tied(*arguments), expected)
    assert torch.equal(mlm.mlm_forward_tied(*arguments), expected)


def test_a_mutant_of_a_package_module_keeps_its_relative_imports(tmp_path, monkeypatch):
    package = "mutation_test_package"
    (tmp_path / package).mkdir()
    (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / package / "helpers.py").write_text("TWO = 2.0\n")
    (tmp_path / package / "reference.py").write_text("from .helpers import TWO\n\n\ndef f(x):\n    return x * TWO + 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        mutant = find(mutants((tmp_path / package / "reference.py").read_text(), ["f"]), "x * TWO + 1", "x * TWO - 1")
        module = load_mutant(mutant, f"{package}.reference", file=tmp_path / package / "reference.py")
        assert module.f(3.0) == 5.0 and module.TWO == 2.0 and module.__file__.endswith("reference.py")
        assert f"{package}.reference" not in sys.modules
    finally:
        for name in [name for name in sys.modules if name == package or name.startswith(package + ".")]:
            del sys.modules[name]


# -- the author's equivalence marks -------------------------------------------------------------------------


def test_equivalence_marks_are_read_with_their_reasons(tmp_path):
    path = tmp_path / "mutants.toml"
    path.write_text('[equivalent]\n"softmax:drop_term:97ef0d8c" = "the shift by the row maximum cancels: softmax(x - c) == softmax(x)"\n')
    assert load_equivalent(path) == {"softmax:drop_term:97ef0d8c": "the shift by the row maximum cancels: softmax(x - c) == softmax(x)"}
    assert load_equivalent(tmp_path / "absent.toml") == {}
    path.write_text("")
    assert load_equivalent(path) == {}


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ('[equivalent\n"a:b:c" = "x"\n', "not valid TOML"),
        ('[equivalent]\n"a:b:c" = 3\n', "'a:b:c': the reason must be a non-empty string"),
        ('[equivalent]\n"a:b:c" = "  "\n', "the reason must be a non-empty string"),
        ('[equivalent]\na.b = "x"\n', "write the id in quotes"),
        ('[equivalents]\n"a:b:c" = "x"\n', "unknown key 'equivalents'"),
        ('equivalent = "x"\n', "`equivalent` must be a table"),
    ],
)
def test_a_bad_mutants_toml_is_refused_naming_the_file_and_the_problem(tmp_path, content, problem):
    path = tmp_path / "mutants.toml"
    path.write_text(content)
    with pytest.raises(ValueError, match="mutants.toml") as raised:
        load_equivalent(path)
    assert str(path) in str(raised.value) and problem in str(raised.value)


# -- the score -------------------------------------------------------------------------------------------


def test_the_score_counts_killed_over_the_non_equivalent_and_says_what_to_do():
    described = [
        find(MLM_MUTANTS, "var + LAYER_NORM_EPS", "var - LAYER_NORM_EPS"),
        find(MLM_MUTANTS, "scores - scores.amax(dim=-1, keepdim=True).detach()", "scores"),
        find(MLM_MUTANTS, "masked @ w_emb.T", "masked @ w_emb"),
    ]
    survivor, equivalent, refuted = (mutant.id for mutant in described)
    outcomes = {"k1": "killed", "k2": "killed", refuted: "killed", "b1": "broken", survivor: "survived", equivalent: "survived", "s1": "same"}
    marks = {equivalent: "the shift cancels", refuted: "wrongly marked", "gone:constant:00000000": "was equivalent once"}
    result = score(outcomes, marks)
    assert result == MutationScore(
        killed=["k1", "k2", refuted],
        broken=["b1"],
        survived=[survivor],
        equivalent={equivalent: "the shift cancels"},
        same=["s1"],
        stale=["gone:constant:00000000"],
        refuted=[refuted],
    )
    assert result.counted == 5 and result.value == 0.8 and not result.adequate
    lines = score_lines(result, MLM_MUTANTS, "reference/mlm/mutants.toml")
    assert lines == [
        f"survived: {survivor} {described[0].description}: add a case that tells it apart, or mark it equivalent in reference/mlm/mutants.toml with the reason",
        f"equivalent (author): {equivalent}: the shift cancels",
        f"marked equivalent but killed: {refuted} {described[2].description}: a case tells it apart; remove its entry from reference/mlm/mutants.toml",
        "stale equivalence mark: gone:constant:00000000 names no mutant of the reference (its code changed); remove it from reference/mlm/mutants.toml",
        "mutation score: 80.0% (4 of 5 non-equivalent mutants killed, 1 of them broken; 1 equivalent, 1 same output)",
    ]


def test_the_score_is_rounded_down_so_a_survivor_never_shows_100_percent():
    outcomes = {f"m{i}": "killed" for i in range(1999)} | {"last": "survived"}
    assert score_lines(score(outcomes, {}), [], "mutants.toml")[-1].startswith("mutation score: 99.9% (1999 of 2000 ")
    everything_same = score({"a": "same"}, {})
    assert everything_same.adequate and score_lines(everything_same, [], "m.toml") == [
        "mutation score: 100.0% (0 of 0 non-equivalent mutants killed, 0 of them broken; 0 equivalent, 1 same output)"
    ]


def test_an_unknown_outcome_is_refused():
    with pytest.raises(ValueError, match="'passed' is none of killed, survived, same, broken"):
        score({"a:b:c": "passed"}, {})


# -- end to end: mutants of a tiny module run on a case, classified, scored -------------------------------------

TINY = "def f(x):\n    return (x - x.mean(dim=-1, keepdim=True)) / 2.0\n"


def outcome(mutant, x: torch.Tensor, expected: torch.Tensor, accepts) -> str:
    """What verify does with a mutant, in small: broken if it raises or is not finite, same if its
    float64 output is the reference's, else whether the (hidden) check accepts it."""
    try:
        got = load_mutant(mutant, "tiny").f(x.clone())
    except Exception:
        return "broken"
    if not isinstance(got, torch.Tensor) or not torch.isfinite(got).all():
        return "broken"
    if got.shape == expected.shape and torch.equal(got, expected):
        return "same"
    return "survived" if accepts(got) else "killed"


def test_a_weak_check_leaves_survivors_and_a_full_comparison_kills_them():
    x = torch.randn(7, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    expected = (x - x.mean(dim=-1, keepdim=True)) / 2.0
    found = mutants(TINY)

    def centred(got):  # a weak check: only that the output has mean zero
        return got.shape == expected.shape and abs(float(got.mean())) < 1e-9

    outcomes = {mutant.id: outcome(mutant, x, expected, centred) for mutant in found}
    by_change = {change(mutant): outcomes[mutant.id] for mutant in found}
    assert by_change["`(x - x.mean(dim=-1, keepdim=True)) / 2.0` -> `(x - x.mean(dim=-1, keepdim=True)) * 2.0`"] == "survived"
    assert by_change["`(x - x.mean(dim=-1, keepdim=True)) / 2.0` -> `x - x.mean(dim=-1, keepdim=True)`"] == "survived"
    assert by_change["`(x - x.mean(dim=-1, keepdim=True)) / 2.0` -> `2.0 / (x - x.mean(dim=-1, keepdim=True))`"] == "killed"
    assert by_change["`x.mean(dim=-1, keepdim=True)` -> `x.sum(dim=-1, keepdim=True)`"] == "killed"
    assert by_change["`(x - x.mean(dim=-1, keepdim=True)) / 2.0` -> `(x - x.mean(dim=-1, keepdim=True)) / 0.0`"] == "broken"
    assert by_change["`x.mean(dim=-1, keepdim=True)` -> `x.mean(dim=0, keepdim=True)`"] == "same"  # x is 1-D
    assert by_change["`x.mean(dim=-1, keepdim=True)` -> `x.mean(dim=-2, keepdim=True)`"] == "broken"

    weak = score(outcomes, {})
    survivors = [mutant_id for mutant_id, result in outcomes.items() if result == "survived"]
    assert weak.survived == survivors and not weak.adequate
    assert weak.value == (len(weak.killed) + len(weak.broken)) / (len(outcomes) - len(weak.same))
    lines = score_lines(weak, found, "reference/tiny/mutants.toml")
    assert [line.split()[1] for line in lines if line.startswith("survived: ")] == survivors

    marked = score(outcomes, dict.fromkeys(survivors, "accepted for this test"))
    assert marked.adequate and marked.value == 1.0 and len(marked.equivalent) == len(survivors)

    full = score({mutant.id: outcome(mutant, x, expected, lambda got: torch.allclose(got, expected)) for mutant in found}, {})
    assert full.adequate and full.value == 1.0 and full.same
    assert score_lines(full, found, "m.toml")[-1].startswith("mutation score: 100.0% (")


def test_making_mutants_prints_no_warning(recwarn):
    found = mutants("def f(x, g):\n    return (g + 1)(x)\n")
    assert "`g + 1` -> `1`" in {change(mutant) for mutant in found}  # `1(x)` compiles with a SyntaxWarning
    assert [str(warning.message) for warning in recwarn] == []
