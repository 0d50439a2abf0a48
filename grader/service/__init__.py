"""The grading service, `python -m grader serve`: the Python API (grader/api.py AsyncGrader) over
HTTP, for pipelines that grade from many workers or machines. docs/service.md tells how to run it.

    command.py      the command: its options, the secret seed and the token, uvicorn, signals
    app.py          the HTTP API (Starlette): routes, the token, body limits, requests checked, answers
    admission.py    backpressure: `jobs` gradings at a time, a bounded queue, 429 with Retry-After beyond
    metrics.py      what /metrics tells Prometheus

Imports point one way: the service imports the API and what is below it, never the reverse; its
clients (grader/client.py) share only grader/graded.py and grader/reward.py with it.
"""
