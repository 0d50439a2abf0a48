"""Case generation: deterministic, and each family really contains what it claims."""

from pathlib import Path

import pytest
import torch

from grader.cases import CasesInTurn, make_case, make_cases
from grader.expected import expected_for
from grader.spec import load_spec, seed_public_id
from reference.mlm_forward_tied.reference import attention_scores, layer_norm

SPEC = load_spec()
SEEDS = ["alpha", "beta", "gamma", "delta", "epsilon"]


def by_family(cases, family):
    found = [c for c in cases if c.family == family]
    assert found, f"no case of family {family}"
    return found


def first_block_scores(case):
    """Attention scores of the first block, in the case's own dtype: (N, H, T, T)."""
    x = case.inputs["w_emb"][case.inputs["input_ids"]] + case.inputs["pos_embed"]
    w = case.inputs["blocks_weights"][0]
    return attention_scores(layer_norm(x), w[0], w[1], case.args["num_heads"])


def test_same_seed_gives_identical_cases():
    first, second = make_cases(SPEC, "same"), make_cases(SPEC, "same")
    assert [c.name for c in first] == [c.name for c in second]
    for a, b in zip(first, second, strict=True):
        for name in a.inputs:
            assert torch.equal(a.inputs[name], b.inputs[name])
        assert torch.equal(a.grad_output, b.grad_output)


@pytest.mark.parametrize("public_only", [False, True])
def test_cases_drawn_in_turn_are_the_cases_drawn_at_once(public_only):
    """A single grading draws each case when its turn comes (CasesInTurn): the same cases, in the
    same order, as a batch's make_cases, each drawn only once it is asked for."""
    at_once, in_turn = make_cases(SPEC, "turns", public_only), CasesInTurn(SPEC, "turns", public_only)
    assert len(in_turn) == len(at_once) and not in_turn.made
    assert in_turn[2].name == at_once[2].name and len(in_turn.made) == 3
    for a, b in zip(at_once, in_turn, strict=True):
        assert a.name == b.name and a.public == b.public and a.dtype == b.dtype
        assert all(torch.equal(a.inputs[name], b.inputs[name]) for name in a.inputs)
        assert torch.equal(a.grad_output, b.grad_output)
    assert in_turn[-1] is in_turn.made[-1] and in_turn[1:3] == in_turn.made[1:3]
    with pytest.raises(IndexError):
        in_turn[len(at_once)]


def test_hidden_cases_depend_on_the_seed_and_public_ones_do_not():
    one, two = make_cases(SPEC, "one"), make_cases(SPEC, "two")
    for a, b in zip(one, two, strict=True):
        same = all(torch.equal(a.inputs[k], b.inputs[k]) for k in a.inputs)
        assert same == a.public, a.name


def test_public_cases_come_first_and_public_only_selects_them():
    cases = make_cases(SPEC, "x")
    public = [c.public for c in cases]
    assert public == sorted(public, reverse=True) and any(public) and not all(public)
    assert [c.name for c in make_cases(SPEC, "x", public_only=True)] == [c.name for c in cases if c.public]


def test_every_family_has_its_count_and_names_are_unique():
    cases = make_cases(SPEC, "x")
    assert len({c.name for c in cases}) == len(cases)
    for family in SPEC.families.values():
        explicit = sum(t.family == family.name for t in SPEC.templates) - family.count
        assert sum(c.family == family.name for c in cases) == family.count + explicit


def test_seed_public_id_does_not_reveal_the_seed():
    assert seed_public_id("secret-seed") != seed_public_id("secret-seed2")
    assert "secret" not in seed_public_id("secret-seed") and len(seed_public_id("s")) == 12


@pytest.mark.parametrize("seed", SEEDS)
def test_every_case_is_well_formed_and_its_reference_finite(seed):
    for case in make_cases(SPEC, seed):
        s = case.shape
        assert case.inputs["input_ids"].dtype == torch.int64
        assert 0 <= int(case.inputs["input_ids"].min()) and int(case.inputs["input_ids"].max()) < s["V"]
        assert case.inputs["pos_embed"].shape == (s["T"], s["D"])
        assert case.inputs["blocks_weights"].shape == (s["B"], 6, s["D"], s["D"])
        assert s["D"] % s["H"] == 0
        for name in ("w_emb", "pos_embed", "blocks_weights", "mask_indicator"):
            assert str(case.inputs[name].dtype) == f"torch.{case.dtype}"
        assert case.grad_output.shape == (s["M"], s["V"])
        expected = expected_for(case)
        assert torch.isfinite(expected.output).all() and all(torch.isfinite(g).all() for g in expected.grads.values())


@pytest.mark.parametrize("seed", SEEDS)
def test_soft_masks_straddle_the_threshold(seed):
    for case in by_family(make_cases(SPEC, seed), "soft_mask"):
        values = case.inputs["mask_indicator"]
        half = torch.tensor(0.5, dtype=values.dtype)
        assert (values == half).any(), "exactly 0.5 (not selected)"
        assert (values == torch.nextafter(half, torch.tensor(1.0, dtype=values.dtype))).any()
        assert (values == torch.nextafter(half, torch.tensor(0.0, dtype=values.dtype))).any()
        assert ((values > 0) & (values < 0.5)).any() and ((values > 0.5) & (values < 1)).any()
        assert (values < 0).any() and (values > 1).any()


@pytest.mark.parametrize("seed", SEEDS)
def test_low_variance_cases_keep_every_layer_norm_input_near_eps(seed):
    from reference.mlm_forward_tied.reference import encoder_block

    for case in by_family(make_cases(SPEC, seed), "low_variance"):
        x = (case.inputs["w_emb"][case.inputs["input_ids"]] + case.inputs["pos_embed"]).double()
        for weights in case.inputs["blocks_weights"].double():
            assert x.var(-1, unbiased=False).max() < 10 * SPEC.constants["layer_norm_eps"]
            x = encoder_block(x, weights, case.args["num_heads"])


@pytest.mark.parametrize("seed", SEEDS)
def test_large_magnitude_cases_overflow_a_naive_float32_softmax(seed):
    for case in by_family(make_cases(SPEC, seed), "large_magnitude"):
        assert case.dtype == "float32"
        scores = first_block_scores(case)
        assert scores.max() >= SPEC.families["large_magnitude"].settings["min_score"]
        assert not torch.isfinite(torch.exp(scores)).all(), f"max score {scores.max():.1f}"


@pytest.mark.parametrize("seed", SEEDS)
def test_peaked_attention_is_far_from_uniform(seed):
    for case in by_family(make_cases(SPEC, seed), "peaked_attention"):
        weights = torch.softmax(first_block_scores(case).double(), dim=-1)
        uniform = 1 / case.shape["T"]
        assert weights.amax(-1).mean() > 2 * uniform


@pytest.mark.parametrize("seed", SEEDS)
def test_targeted_families_have_their_shapes_and_dtypes(seed):
    cases = make_cases(SPEC, seed)
    for case in by_family(cases, "multi_head"):
        assert case.shape["H"] >= 2 and case.shape["N"] >= 2 and case.shape["B"] >= 2
    for case in by_family(cases, "float64"):
        assert case.dtype == "float64"
    settings = {t.name: t.settings for t in SPEC.templates}
    for case in cases:
        if settings[case.name]["mask"] != "soft":
            values = case.inputs["mask_indicator"]
            assert ((values == 0) | (values == 1)).all()


def test_edge_cases_have_the_shape_their_name_promises():
    cases = {c.name: c for c in make_cases(SPEC, "edges")}
    assert cases["edge_no_masked_positions"].shape["M"] == 0
    assert cases["edge_no_masked_positions_float64"].shape["M"] == 0
    assert cases["edge_no_masked_positions_float64"].dtype == "float64"
    assert cases["edge_no_blocks"].shape["B"] == 0
    assert cases["edge_single_position"].shape["T"] == 1
    assert cases["edge_head_width_one"].shape["D"] == cases["edge_head_width_one"].shape["H"]
    assert cases["edge_single_sequence"].shape["N"] == 1
    all_masked = cases["edge_all_masked"].shape
    assert all_masked["M"] == all_masked["N"] * all_masked["T"]
    assert cases["edge_single_token_vocabulary"].shape["V"] == 1


def test_soft_mask_and_low_variance_families_each_have_a_float64_case():
    cases = make_cases(SPEC, "float64")
    for family in ("soft_mask", "low_variance"):
        assert "float64" in {c.dtype for c in by_family(cases, family)}, family


@pytest.mark.parametrize("seed", SEEDS)
def test_a_float64_soft_mask_cast_to_float32_selects_other_positions(seed):
    # the float64 neighbours of 0.5 become 0.5 in float32: a cast mask loses or gains a position
    for case in by_family(make_cases(SPEC, seed), "soft_mask"):
        if case.dtype == "float64":
            mask = case.inputs["mask_indicator"]
            assert not torch.equal(mask > 0.5, mask.float() > 0.5)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_float32_eps_shows_in_the_float64_low_variance_case(seed, monkeypatch):
    import numpy as np

    import reference.mlm_forward_tied.reference

    cases = [c for c in by_family(make_cases(SPEC, seed), "low_variance") if c.dtype == "float64"]
    honest = [expected_for(case).output for case in cases]
    monkeypatch.setattr(reference.mlm_forward_tied.reference, "LAYER_NORM_EPS", float(np.float32(SPEC.constants["layer_norm_eps"])))
    tolerance = SPEC.tolerance("low_variance", "float64")
    for case, right in zip(cases, honest, strict=True):
        wrong = expected_for(case).output
        assert (wrong - right).abs().max() > 10 * tolerance * right.abs().max(), case.name


def test_a_soft_mask_without_room_for_its_values_is_refused():
    from dataclasses import replace

    template = next(t for t in SPEC.templates if t.name == "public_soft_mask")
    small = replace(template, settings=template.settings | {"N": 1, "T": 4})
    with pytest.raises(ValueError, match="at least 8 positions"):
        make_case(small, "seed", SPEC)


@pytest.mark.parametrize("seed", SEEDS)
def test_probe_cases_switch_off_what_they_promise(seed):
    from reference.mlm_forward_tied.generate import BLOCK_MATRICES

    probes = {c.name: c for c in by_family(make_cases(SPEC, seed), "probes")}
    settings = {t.name: t.settings for t in SPEC.templates}
    for name, case in probes.items():
        assert case.dtype == "float64" and case.public  # public: the kit names the part as the grader does
        blocks = case.inputs["blocks_weights"]
        for matrix in settings[name].get("zero", "").split():
            assert blocks.shape[0] >= 1 and (blocks[:, BLOCK_MATRICES.index(matrix)] == 0).all(), name
        if settings[name].get("symmetric"):
            assert torch.equal(blocks, blocks.transpose(-1, -2))
    shape = {name: case.shape for name, case in probes.items()}
    assert shape["probe_embedding"]["B"] == 0 and shape["probe_embedding"]["N"] == 1 and shape["probe_embedding"]["M"] == shape["probe_embedding"]["T"]
    order = shape["probe_gather_order"]
    assert order["B"] == 0 and order["N"] >= 2 and order["T"] >= 2 and order["M"] == order["N"] * order["T"]
    threshold = probes["probe_mask_threshold"].inputs["mask_indicator"]
    assert shape["probe_mask_threshold"]["B"] == 0 and threshold.shape[0] == 1 and (threshold == 0.5).any() and (threshold < 0).any()
    uniform = first_block_scores(probes["probe_uniform_attention"])
    assert (uniform == 0).all(), "w_q = 0: every score equal"
    for name in ("probe_attention_only", "probe_uniform_attention", "probe_symmetric_weights", "probe_one_block", "probe_two_blocks"):
        assert shape[name]["H"] >= 2 and shape[name]["N"] >= 2 and shape[name]["T"] >= 2, name
    assert shape["probe_single_head"]["H"] == 1 and shape["probe_single_head"]["D"] >= 2
    assert shape["probe_single_position"]["T"] == 1 and shape["probe_two_blocks"]["B"] == 2
    # One position, attention only: no score, average or feed-forward to get wrong, so the layer norm shows alone.
    alone = shape["probe_single_position_attention"]
    assert alone["T"] == 1 and alone["B"] == 1 and "w_mlp2" in settings["probe_single_position_attention"]["zero"]


# A float32 case must be fair (grader/cases.py): where even the reference, computing in float32,
# errs near the tolerance, the draw is replaced by the next one from the case's stream.
FIXTURE = load_spec(Path(__file__).parent / "fixture_problem" / "problem.toml")


def cancelling_first(draws: list[str], always: bool = False):
    """The fixture's generator, except that its first draw (every draw when always) makes z = y - 3x
    cancel to about 1e-6 of x, which float32 cannot resolve: the reference's own rounding of 3x is
    many times the tolerance of z's tiny scale."""
    from tests.fixture_problem.generate import draw

    def drawing(settings, rng):
        drawn = draw(settings, rng)
        if always or not draws:
            x = drawn.args["x"]
            y = (3.0 * x.double() + 1e-6 * torch.from_numpy(rng.standard_normal(tuple(x.shape)))).float()
            drawn.args.update(alpha=-3.0, y=y)
            draws.append("cancelling")
        else:
            draws.append("fair")
        return drawn

    return drawing


def float32_basic():
    from dataclasses import replace

    template = next(t for t in FIXTURE.templates if t.family == "basic")
    return replace(template, settings=template.settings | {"dtype": "float32"})


def test_an_unfair_float32_draw_is_replaced_by_the_next_fair_one(monkeypatch):
    from grader import cases as drawing

    template = float32_basic()
    draws: list[str] = []
    monkeypatch.setattr(drawing, "generator", lambda spec: cancelling_first(draws))
    case = make_case(template, "fairness", FIXTURE)
    assert draws == ["cancelling", "fair"]
    assert case.unfair_draws == 1  # what python -m grader verify reports
    assert (case.args["y"] - 3.0 * case.args["x"]).abs().max() > 1e-3, "the case kept is the fair draw"
    assert expected_for(case, FIXTURE) is case.checked[2], "the float64 results drawing computed are not computed again"
    again: list[str] = []
    monkeypatch.setattr(drawing, "generator", lambda spec: cancelling_first(again))
    assert torch.equal(make_case(template, "fairness", FIXTURE).args["x"], case.args["x"]), "the same seed draws the same case"


def test_a_family_that_is_never_fair_is_a_set_up_error_saying_what_to_change(monkeypatch):
    from grader import cases as drawing
    from grader.spec import SetupError

    template = float32_basic()
    draws: list[str] = []
    monkeypatch.setattr(drawing, "generator", lambda spec: cancelling_first(draws, always=True))
    with pytest.raises(SetupError, match=f"drew case {template.name} 20 times .* better conditioned or widen its tolerance"):
        make_case(template, "fairness", FIXTURE)
    assert len(draws) == drawing.MAX_DRAWS


@pytest.mark.slow
def test_the_container_tests_secret_seed_no_longer_rejects_a_correct_file():
    """With this seed the first draw of peaked_attention_1 (D = 2, one head, scores in the tens) put
    the reference's own float32 result 2.2 times the tolerance from its float64 one, and correct
    files got wrong_answer on it."""
    from tests import in_process
    from tests.grading import SUBMISSIONS

    report = in_process.report(in_process.entry_point(SUBMISSIONS / "accepted" / "plain_helpers.py"), SPEC, seed="container-secret-31415")
    assert report.verdict.value == "accepted", report.message
