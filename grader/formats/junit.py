"""JUnit XML, as CI systems read it: one testsuite for the submission, one testcase per case.

A wrong answer (or forbidden functionality) is a `failure`; an exception, crash or limit is an
`error`; a case the run never reached is `skipped`. A submission rejected as a whole is one testcase
named after its verdict. Warnings, the diagnosis (once) and the seed's public id are testsuite properties.
"""

import xml.etree.ElementTree as ET

from grader.formats.points import TITLES, case_output, first_line, rejected_as_a_whole
from grader.formats.safe import printable
from grader.results import NOT_RUN, CaseResult, Report, Verdict

FAILURES = (Verdict.WRONG_ANSWER, Verdict.FORBIDDEN_API)  # judged outcomes; every other failing status is an error
# Every text goes through printable (grader/formats/safe.py): a submission may print anything, and
# what is left of it (escapes such as \x1b, U+FFFD for a lone surrogate) is text XML 1.0 carries.


def _outcome(parent: ET.Element, status: str, message: str) -> str:
    """Add the failure, error or skipped element for a case that did not pass; returns its kind."""
    if status == NOT_RUN:
        ET.SubElement(parent, "skipped", message=printable(message))
        return "skipped"
    kind = "failure" if status in FAILURES else "error"
    ET.SubElement(parent, kind, message=printable(first_line(message)), type=status).text = printable(message)
    return kind


def _staff(case: CaseResult, staff: bool) -> str:
    """For staff: the whole message of a hidden case that the candidate's report withholds."""
    return f"\n\nWithheld from the candidate (staff view), the whole message:\n{case.staff_message}" if staff and case.staff_message else ""


def render_junit(report: Report, staff: bool = False) -> str:
    """The JUnit XML; staff=True adds what the candidate's report withholds (CaseResult.withhold)."""
    suite = ET.Element("testsuite", name=printable(report.submission))
    properties = ET.SubElement(suite, "properties")
    for name, value in (("verdict", report.verdict.value), ("seed_id", report.seed_id), ("isolation", report.isolation)):
        ET.SubElement(properties, "property", name=name, value=printable(value))
    for warning in report.warnings:
        ET.SubElement(properties, "property", name="warning", value=printable(warning))
    for sentence in report.diagnosis:  # about the whole submission: once, not in each failing case
        ET.SubElement(properties, "property", name="diagnosis", value=printable(sentence))
    counts = {"failure": 0, "error": 0, "skipped": 0}
    if rejected_as_a_whole(report):
        case = ET.SubElement(suite, "testcase", name=TITLES[report.verdict], classname="submission", time=f"{report.seconds:.3f}")
        counts[_outcome(case, report.verdict.value, report.message)] += 1
    for c in [] if rejected_as_a_whole(report) else report.cases:
        case = ET.SubElement(suite, "testcase", name=c.name, classname=c.family, time=f"{c.shown_seconds(staff) or 0.0:.3f}")
        if not c.passed:
            counts[_outcome(case, c.status, case_output(c) + _staff(c, staff))] += 1
    stdout = report.staff_stdout if staff and report.staff_stdout is not None else report.stdout
    stderr = report.staff_stderr if staff and report.staff_stderr is not None else report.stderr
    ET.SubElement(suite, "system-out").text = printable(stdout)
    ET.SubElement(suite, "system-err").text = printable(stderr)
    suite.set("tests", str(len(suite.findall("testcase"))))
    suite.set("failures", str(counts["failure"]))
    suite.set("errors", str(counts["error"]))
    suite.set("skipped", str(counts["skipped"]))
    suite.set("time", f"{report.seconds:.3f}")
    ET.indent(suite)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suite, encoding="unicode")
