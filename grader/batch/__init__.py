"""Many submissions: `python -m grader batch PATH... --out results.jsonl` (command.py).

Finds the submissions (discovery.py: files, class folders, and LMS downloads as a zip or a folder,
lms.py, the zip opened safely by archive.py), keeps a shard of them (shards.py), skips those already
graded in the results file (store.py), grades the rest `--jobs` at a time (schedule.py), each exactly
as `python -m grader FILE` would, and appends one JSON line per submission as soon as it is known;
at the end the summary (summary.py), the gradebook rebuilt from the whole results file
(gradebook.py), each student's report (feedback.py) and the class at a glance (class_report.py,
with similarity.py). Ctrl-C or SIGTERM stops cleanly (stop.py) and a rerun resumes.
"""
