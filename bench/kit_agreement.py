"""Does the candidate's kit agree with the grader on every file of reference/mlm_forward_tied/submissions?

Builds the kit, unzips it outside the repository, and for every submission file (hostile ones
included) compares what `python check.py FILE` says, run from the kit's folder, with the grader's
own verdict on the public cases (what `python -m grader --public` gives, graded here as a batch,
through the warm pool where it keeps every wall). A file agrees when check.py exits 0 exactly where the grader accepts the
public cases, and otherwise prints the grader's verdict. Too slow for the test suite, which checks a
sample (tests/test_kit.py). Usage:

    .venv/bin/python bench/kit_agreement.py [JOBS]
"""

import subprocess
import sys
import tempfile
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUBMISSIONS = ROOT / "reference" / "mlm_forward_tied" / "submissions"
sys.path.insert(0, str(ROOT))

from grader.batch.schedule import Workers  # noqa: E402
from grader.spec import load_spec  # noqa: E402

VERDICTS = ("accepted", "wrong_answer", "forbidden_api", "compile_error", "invalid_submission", "runtime_error", "time_limit_exceeded", "memory_limit_exceeded")


def main(jobs: int) -> int:
    files = sorted(p for verdict in VERDICTS for p in (SUBMISSIONS / verdict).glob("*.py"))
    with tempfile.TemporaryDirectory(prefix="mlm-kit-agreement-") as folder:
        folder = Path(folder)
        zipped = folder / "kit.zip"
        subprocess.run([sys.executable, str(ROOT / "deploy" / "kit" / "build.py"), "--out", str(zipped)], check=True, capture_output=True)
        with zipfile.ZipFile(zipped) as archive:
            archive.extractall(folder)
        kit = folder / "mlm-tied-head-kit"
        spec = load_spec()
        public = Workers(spec, spec.default_hidden_seed, jobs=jobs, public_only=True)  # as `python -m grader --public` grades
        grader = {path: report.verdict.value for path, report in public.map((path, path) for path in files)}

        def check(path: Path) -> subprocess.CompletedProcess:
            return subprocess.run([sys.executable, "check.py", str(path)], cwd=kit, capture_output=True, text=True, timeout=600, env={"PATH": "/usr/bin:/bin"})

        with ThreadPoolExecutor(jobs) as pool:
            checked = list(pool.map(check, files))
    disagree = []
    for path, run in zip(files, checked, strict=True):
        verdict = grader[path]
        agrees = run.returncode == 0 if verdict == "accepted" else run.returncode == 1 and f"Verdict:    {verdict.upper()} (public cases only)" in run.stdout
        if not agrees:
            disagree.append(f"{path.parent.name}/{path.name}: grader {verdict}, check.py exit {run.returncode}: {(run.stdout + run.stderr)[-300:]!r}")
    print(f"{len(files) - len(disagree)} of {len(files)} files: check.py agrees with the grader's public-case verdict")
    for line in disagree:
        print("  DISAGREES " + line)
    return 1 if disagree else 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 2))
