"""Grade the one submission a platform hands over and always leave a results.json behind.

    python deploy/platform_grade.py gradescope|prairielearn SUBMISSION_DIR RESULTS_JSON
        [--seed-file F] [--options-file F] [GRADER OPTIONS...]

Used by deploy/gradescope/run_autograder and deploy/prairielearn/run. It picks the file to grade
(solution.py, else solution.ipynb, else the only .py or .ipynb file in SUBMISSION_DIR: grader/layout.py), runs `python -m grader FILE --format
PLATFORM --output RESULTS_JSON --isolation strict` (bubblewrap, else the uid backend) from the
checkout that holds this script, and passes the grader's human report through to stdout (the platform's log, meant for staff). When the
grader leaves no report (no secret seed, no sandbox, a crash), it writes one that scores nothing
and says what happened: to staff in the log, to the student in plain words. Exits 0 either way.
Gradescope's log is for staff alone (the results say stdout_visibility: hidden), so there the log is
the grader's staff view (--staff: the whole messages of hidden cases, all the submission printed);
elsewhere it is the candidate's view unless --staff is among the grader options.
--seed-file names a file holding the secret seed (else MLM_GRADER_SEED is used, if set);
--options-file a file of further grader options (shell words, e.g. `--points 10`).
Only the standard library is used, so this runs even when the grader's dependencies do not import.
"""

import argparse
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

APP = Path(__file__).resolve().parent.parent  # the checkout (or /autograder/source, or /app)
sys.path.insert(0, str(APP))
from grader.layout import choose_file  # noqa: E402 - standard library only, as this script; the batch picks a folder's file the same way

SEED_ENV = "MLM_GRADER_SEED"
TIMEOUT = float(os.environ.get("MLM_GRADER_TIMEOUT", "540"))  # below the platforms' own job limits, so a report is still written
GRADER_FAULT = (
    "The autograder could not grade this submission; this is not your submission's fault. Course staff can see what went wrong; submit again later or ask them."
)


def unusable(platform: str, student_message: str, staff_details: str, students_fault: bool) -> dict:
    """A results.json scoring nothing, for a submission that could not be graded."""
    if platform == "prairielearn":
        # Not gradable: PrairieLearn then counts no attempt and changes no points.
        return {
            "gradable": False,
            "score": 0.0,
            "message": student_message,
            "output": "",
            "format_errors": [student_message],
            "tests": [
                {
                    "name": "Submission" if students_fault else "Grader error",
                    "description": "the submission as a whole",
                    "points": 0.0,
                    "max_points": 0.0,
                    "message": student_message,
                    "output": "",
                }
            ],
            "verdict": "invalid_submission" if students_fault else "grader_error",
            "warnings": [],
        }
    return {
        "score": 0.0,
        "execution_time": 0,
        "output": student_message,
        "output_format": "text",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": [
            {
                "name": "Submission" if students_fault else "Grader error",
                "number": "1",
                "score": 0.0,
                "max_score": 0.0,
                "status": "failed",
                "output": student_message if students_fault else staff_details,
                "tags": ["invalid_submission" if students_fault else "grader_error"],
                "visibility": "visible" if students_fault else "hidden",  # details of a fault are for staff
            }
        ],
        "extra_data": {"verdict": "invalid_submission" if students_fault else "grader_error", "warnings": []},
    }


def write_results(path: Path, results: dict) -> None:
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    os.replace(temporary, path)


def read_seed(path: Path) -> str:
    """The secret seed in a file (one line; surrounding whitespace is not part of it), or "" if none."""
    try:
        return path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return ""


def grade(platform: str, folder: Path, results: Path, seed_file: Path | None, options: list[str]) -> None:
    environment = dict(os.environ)
    seed = read_seed(seed_file) if seed_file else environment.get(SEED_ENV, "")
    environment.pop(SEED_ENV, None)  # no seed is the grader's to refuse (or allow), never an empty one
    if seed:
        environment[SEED_ENV] = seed
    submission, problem = choose_file(folder)
    if submission is None:
        print(f"platform_grade: {problem}")
        write_results(results, unusable(platform, problem, problem, students_fault=True))
        return
    command = [sys.executable, "-m", "grader", str(submission), "--format", platform, "--output", str(results), "--isolation", "strict", *options]
    if platform == "gradescope":  # its log is for staff alone (stdout_visibility: hidden): it may show what students may not read
        command.append("--staff")
    try:
        run = subprocess.run(command, cwd=APP, env=environment, capture_output=True, text=True, errors="replace", timeout=TIMEOUT)
        log, status = run.stdout + run.stderr, run.returncode
    except subprocess.TimeoutExpired as expired:
        log, status = f"the grader did not finish within {TIMEOUT:g} s (MLM_GRADER_TIMEOUT) and was stopped\n", None
        log += (expired.stdout or b"").decode(errors="replace")  # bytes, whatever text= says
    except OSError as error:
        log, status = f"the grader could not be started: {error}\n", None
    print(log, end="", flush=True)
    try:
        json.loads(results.read_text(encoding="utf-8"))
        return
    except (OSError, ValueError):
        details = f"The grader exited with status {status} and wrote no report. Its output:\n{log}"
        print(f"platform_grade: no report from the grader (exit status {status}); writing one that scores nothing")
        write_results(results, unusable(platform, GRADER_FAULT, details, students_fault=False))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="platform_grade.py", allow_abbrev=False, description=__doc__.strip().splitlines()[0])
    parser.add_argument("platform", choices=["gradescope", "prairielearn"])
    parser.add_argument("submission_dir", type=Path)
    parser.add_argument("results", type=Path)
    parser.add_argument("--seed-file", type=Path)
    parser.add_argument("--options-file", type=Path)
    args, options = parser.parse_known_args(argv)
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.unlink(missing_ok=True)  # a report left from an earlier run must never pass for this one's
    try:
        if args.options_file and args.options_file.is_file():
            options = shlex.split(args.options_file.read_text(encoding="utf-8"), comments=True) + options
        grade(args.platform, args.submission_dir, args.results, args.seed_file, options)
    except Exception as error:  # noqa: BLE001 - the platform must get a results.json whatever happens here
        print(f"platform_grade: {error!r}")
        write_results(args.results, unusable(args.platform, GRADER_FAULT, repr(error), students_fault=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
