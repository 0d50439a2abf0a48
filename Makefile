# The two commands of the README: `make grade SUBMISSION=path/to/solution.py` and `make test`.
# Both create .venv when it is missing, install the pinned dependencies into it, and install the
# sandbox's bubblewrap (or stop with one line that says what to install: the `sandbox` target).
# Also: `make test-fast` (the pure layers, no sandbox) and `make docs` (the documentation site).

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: grade test test-fast lint verify bench container-test image gradescope kit docs sandbox

# The sandbox's system tool, bubblewrap: installed when it is missing and this is root with apt-get
# (tools/system-packages); elsewhere make stops with one line that says what to install. Then the
# grader's own probe: bwrap must be able to create the child's namespaces on this machine.
sandbox: $(VENV)/.runtime-installed
	@tools/system-packages "the grader's sandbox" bwrap:bubblewrap
	@$(PY) -c 'from grader.sandbox.bubblewrap import BACKEND; import sys; p = BACKEND.problem(); p and sys.exit("error: bubblewrap is installed, but " + p.removeprefix("the bubblewrap backend does not work here: ") + "; grade in the container instead (docs/deployment.md)")'

$(VENV)/.runtime-installed: requirements.txt pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info[:2] == (3, 11), "Python 3.11 is needed (the sandboxed child reads CPython 3.11 frames): set PYTHON=python3.11"'
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check --no-compile -r requirements.txt
	# Byte-compiled on every core: pip compiles on one, and torch's 6000 files took twice as long. A file
	# that does not compile on this Python (torch ships one written for 3.12) stays source, as pip leaves it.
	$(PY) -m compileall -q -j 0 $(VENV)/lib >/dev/null 2>&1 || true
	# The console script .venv/bin/mlm-grader, run from any folder; editable: the grader stays in this checkout.
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps -e .
	touch $@

$(VENV)/.dev-installed: $(VENV)/.runtime-installed requirements-dev.txt
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $@

grade: sandbox
	@test -n "$(SUBMISSION)" || { echo "usage: make grade SUBMISSION=path/to/solution.py [ARGS='--json --public']" >&2; exit 2; }
	@$(PY) -m grader "$(SUBMISSION)" $(ARGS)

# The class report's test opens the page in a real browser: Debian's chromium, installed as bubblewrap is.
test: $(VENV)/.dev-installed sandbox lint
	@tools/system-packages "the class report's browser test (tests/test_class_report.py)" chromium
	$(PY) -m pytest -n 2 -q

# The pure layers only: no child process, no sandbox, nothing slow (a quick loop while changing the
# code). A test that starts a process fails here until it is marked sandbox (tests/conftest.py).
test-fast: $(VENV)/.dev-installed
	$(PY) -m pytest -n 2 -q -m "not sandbox and not slow" --no-processes

lint: $(VENV)/.dev-installed
	$(PY) -m ruff check .

# Every challenge package through its author's gate (python -m grader verify ID); CI runs it.
verify: $(VENV)/.runtime-installed
	@set -e; for id in $$($(PY) -c 'from grader.spec import problem_ids; print(*problem_ids())'); do $(PY) -m grader verify $$id; done

bench: $(VENV)/.runtime-installed
	$(PY) bench/grade_time.py
	$(PY) bench/tolerance_study.py

# The documentation site (mkdocs, material theme) into build/site, strictly: a broken link or anchor,
# or a page left out of mkdocs.yml's nav, fails the build. Not part of make test, which needs no docs
# packages: tests/test_docs.py checks the links there. CI runs make docs (.ci/run).
$(VENV)/.docs-installed: requirements-docs.txt
	@$(PYTHON) -c 'import sys; assert sys.version_info[:2] == (3, 11), "Python 3.11 is needed (the sandboxed child reads CPython 3.11 frames): set PYTHON=python3.11"'
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-docs.txt
	touch $@

docs: $(VENV)/.docs-installed
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --site-dir build/site

container-test: $(VENV)/.dev-installed
	$(PY) tests/container/check_container.py

# The production image with docker or podman; OFFLINE=1 builds its Debian base locally (debootstrap)
# where no registry can be reached.
image:
	$(PYTHON) deploy/image.py $(if $(OFFLINE),--offline)

# The Gradescope autograder: make gradescope SEED_FILE=path/to/secret [GRADER_OPTIONS='--points 10'].
# The zip holds the secret seed: keep it private (dist/ is not committed).
gradescope:
	@$(PYTHON) deploy/gradescope/build.py --seed-file="$(SEED_FILE)" --grader-options="$(GRADER_OPTIONS)" --out dist/gradescope-autograder.zip

# The candidate's kit: the statement, the stub, the public cases and check.py (no reference, no hidden
# case, no secret): dist/mlm-tied-head-kit.zip, to hand out.
kit: $(VENV)/.runtime-installed
	$(PY) deploy/kit/build.py $(if $(PROBLEM),--problem $(PROBLEM))
