"""Many submissions: `python -m grader batch PATH... --out results.jsonl` (command.py).

Finds the submissions (discovery.py), keeps a shard of them (shards.py), skips those already graded
in the results file (store.py), grades the rest `--jobs` at a time (schedule.py), each exactly as
`python -m grader FILE` would, and appends one JSON line per submission as soon as it is known; at
the end the summary (summary.py), the gradebook (gradebook.py) and each student's report
(feedback.py). Ctrl-C or SIGTERM stops cleanly (stop.py) and a rerun resumes.
"""
