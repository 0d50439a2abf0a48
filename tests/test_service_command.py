"""`python -m grader serve`'s checks before anything starts (grader/service/command.py): what counts as
loopback, where the seed may come from, which challenges are served; each refusal says what to do."""

import pytest

from grader.service.command import UsageError, loopback_only, parse_args, read_seed_file, served_problems, take_token
from grader.spec import problem_ids


@pytest.mark.parametrize(("host", "loopback"), [("127.0.0.1", True), ("127.0.0.2", True), ("::1", True), ("localhost", True), ("0.0.0.0", False), ("", False)])
def test_only_loopback_addresses_count_as_loopback(host, loopback):
    assert loopback_only(host) is loopback


def test_beyond_loopback_a_token_is_needed_and_an_empty_one_is_refused(monkeypatch):
    monkeypatch.delenv("MLM_GRADER_TOKEN", raising=False)
    assert take_token("127.0.0.1") is None
    with pytest.raises(UsageError, match="--host 0.0.0.0 reaches beyond this machine, and MLM_GRADER_TOKEN is not set"):
        take_token("0.0.0.0")
    monkeypatch.setenv("MLM_GRADER_TOKEN", "")
    with pytest.raises(UsageError, match="set but empty"):
        take_token("127.0.0.1")


def test_the_seed_file_is_read_stripped_and_never_given_beside_the_variable(tmp_path, monkeypatch):
    monkeypatch.delenv("MLM_GRADER_SEED", raising=False)
    seed = tmp_path / "seed"
    seed.write_text("  the-secret\n")
    assert read_seed_file(seed) == "the-secret" and read_seed_file(None) is None
    monkeypatch.setenv("MLM_GRADER_SEED", "another")
    with pytest.raises(UsageError, match="both MLM_GRADER_SEED and the seed file"):
        read_seed_file(seed)
    (tmp_path / "empty").write_text("\n")
    with pytest.raises(UsageError, match="is empty"):
        read_seed_file(tmp_path / "empty")
    with pytest.raises(UsageError, match="cannot read the seed file"):
        read_seed_file(tmp_path / "missing")


def test_every_challenge_is_served_unless_some_are_named():
    assert served_problems(None) == tuple(problem_ids())
    assert served_problems(["mlm-forward-tied", "mlm-forward-tied"]) == ("mlm-forward-tied",)
    with pytest.raises(UsageError, match="there is no problem 'nope'"):
        served_problems(["nope"])


@pytest.mark.parametrize(("args", "says"), [(["--jobs", "0"], "--jobs must be at least 1"), (["--deadline", "0"], "--deadline must be above 0")])
def test_bad_options_are_usage_errors(args, says, capsys):
    with pytest.raises(SystemExit) as stopped:
        parse_args(args)
    assert stopped.value.code == 2 and says in capsys.readouterr().err
