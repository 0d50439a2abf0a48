# The production image: the grader, the hidden reference and the problem, with torch on CPU.
#
#   docker build -t mlm-grader .
#   docker run --rm --network none --read-only --tmpfs /tmp \
#       -v "$PWD/solution.py:/submission/solution.py:ro" mlm-grader [--json] [--seed S] ...
#   docker run --rm --read-only --tmpfs /tmp -p 8000:8000 -e MLM_GRADER_SEED -e MLM_GRADER_TOKEN \
#       mlm-grader serve --host 0.0.0.0          # the grading service (docs/service.md)
#
# The grader runs as the user mlm-grader, keeping only the capabilities it needs to start the
# child as mlm-runner and to end it (setuid, setgid, kill); the child runs as mlm-runner with no
# capabilities and cannot read /app (grader, reference, problem) or the grader's environment.

ARG BASE_IMAGE=python:3.11-slim-bookworm

FROM ${BASE_IMAGE} AS base
# Where pip finds torch: the CPU wheel index by default (set it empty to use PyPI alone); a folder
# of wheels with PIP_FIND_LINKS (mounted into the build).
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
ARG PIP_FIND_LINKS=""
ENV PYTHONDONTWRITEBYTECODE=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
COPY requirements.txt /tmp/requirements.txt
RUN python3 -m venv /opt/venv \
 && /opt/venv/bin/pip install ${TORCH_INDEX_URL:+--extra-index-url "${TORCH_INDEX_URL}"} ${PIP_FIND_LINKS:+--find-links "${PIP_FIND_LINKS}"} \
        -r /tmp/requirements.txt \
 && rm /tmp/requirements.txt \
 && groupadd --system mlm-grader && useradd --system --gid mlm-grader --no-create-home --shell /usr/sbin/nologin mlm-grader \
 && groupadd --system mlm-runner && useradd --system --gid mlm-runner --no-create-home --shell /usr/sbin/nologin mlm-runner

# The runner image for `--isolation docker`: torch and the child-side code only. No reference, no
# hidden cases, no secret: the grader stays on the host and starts one container per submission.
FROM base AS runner
COPY grader/child/ /opt/runner/child/
RUN chmod -R a+rX,go-w /opt/runner
USER mlm-runner
WORKDIR /tmp

# The default target: the whole grader in one image.
FROM base AS grader
COPY grader/ /app/grader/
COPY reference/ /app/reference/
COPY problem/ /app/problem/
COPY deploy/platform_grade.py /app/deploy/platform_grade.py
COPY deploy/prairielearn/run /app/deploy/prairielearn/run
RUN chown -R root:mlm-grader /app && chmod -R u=rwX,g=rX,o= /app && chmod 0755 /app/deploy/prairielearn/run
WORKDIR /app
# With no arguments the grader grades /submission/solution.py; `batch ...` grades a folder. Either
# way strict isolation unless --isolation says otherwise.
ENV MLM_GRADER_SUBMISSION=/submission/solution.py MLM_GRADER_ISOLATION=strict
# `serve` listens here (deploy/kubernetes/grading-service.yaml).
EXPOSE 8000
ENTRYPOINT ["setpriv", "--reuid=mlm-grader", "--regid=mlm-grader", "--init-groups", \
            "--inh-caps=+setuid,+setgid,+kill", "--ambient-caps=+setuid,+setgid,+kill", "--", \
            "/opt/venv/bin/python", "-m", "grader"]
