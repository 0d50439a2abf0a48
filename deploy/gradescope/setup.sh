#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image (an Ubuntu base) from
# the zip, unpacked in /autograder/source. It installs Python 3.11, bubblewrap where the
# distribution has it, and the grader's pinned requirements in a virtual environment, creates the
# unprivileged user the submission runs as, and makes the grader and the secret seed root's alone.
set -euo pipefail
ROOT="${AUTOGRADER_ROOT:-/autograder}"
SOURCE="$ROOT/source"
VENV="${MLM_GRADER_VENV:-/opt/venv}"
# torch 2.13.0 is taken from the CPU wheel index: from PyPI alone it would pull CUDA packages (GBs).
TORCH_INDEX_URL="${TORCH_INDEX_URL-https://download.pytorch.org/whl/cpu}"

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# setpriv (util-linux) starts the submission as another user; libseccomp2 backs the sandbox's filter.
apt-get install -y -qq --no-install-recommends ca-certificates util-linux libseccomp2 python3 python3-venv >/dev/null
if apt-cache show bubblewrap >/dev/null 2>&1; then
    apt-get install -y -qq --no-install-recommends bubblewrap >/dev/null || echo "setup.sh: bubblewrap did not install; the uid backend will be used"
fi

python_ok() { "$1" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; }  # the child reads CPython 3.11's frames
PYTHON=python3
if ! python_ok "$PYTHON"; then
    # Ubuntu 22.04 ships Python 3.10, and has a python3.11 package.
    apt-get install -y -qq --no-install-recommends python3.11 python3.11-venv >/dev/null
    PYTHON=python3.11
fi
python_ok "$PYTHON" || { echo "setup.sh: no Python 3.11 could be installed" >&2; exit 1; }

"$PYTHON" -m venv "$VENV"
"$VENV/bin/pip" install --quiet --disable-pip-version-check --no-cache-dir \
    ${TORCH_INDEX_URL:+--extra-index-url "$TORCH_INDEX_URL"} -r "$SOURCE/requirements.txt"
chmod -R a+rX "$VENV"   # the submission's process runs this interpreter as an unprivileged user

getent group mlm-runner >/dev/null || groupadd --system mlm-runner
getent passwd mlm-runner >/dev/null || useradd --system --gid mlm-runner --no-create-home --shell /usr/sbin/nologin mlm-runner

# Root's alone: the grader, the reference (the expected answers) and the secret seed.
chown -R root:root "$SOURCE"
chmod 0700 "$SOURCE"
[ -e "$SOURCE/secret_seed" ] && chmod 0600 "$SOURCE/secret_seed"
echo "setup.sh: ready ($("$VENV/bin/python" --version), torch $("$VENV/bin/python" -c 'import torch; print(torch.__version__)'))"
