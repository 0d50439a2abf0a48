"""What a problem.toml may hold: every table and key, its type and whether it is required, and the
check that names an unknown or missing key with the nearest valid one (docs/problem-format.md
specifies each key in words; tests/test_package_format.py keeps the two in step).

Only the standard library: the kit and every command that reads a package import this.
"""

import difflib
from dataclasses import dataclass
from typing import Any

# The types a key may have, as docs/problem-format.md names them.
STRING, INTEGER, NUMBER, BOOLEAN = "string", "integer", "number", "boolean"
STRINGS = "list of strings"
TABLE = "table"  # a table whose keys this schema lists
FREE_TABLE = "free table"  # a table whose keys are the author's (settings, constants, names)
TABLES = "array of tables"
ANY = "any"  # a generator setting: a value, a range [low, high], a list of strings or { one_of = [...] }
DTYPE_TABLE = "table of dtype = number"  # { float32 = ..., float64 = ... }


@dataclass(frozen=True)
class Key:
    type: str
    required: bool = False


def _keys(required: str = "", **types: str) -> dict[str, Key]:
    """A table's keys: those named in `required` (space-separated) are required; types by name."""
    wanted = set(required.split())
    return {name: Key(kind, name in wanted) for name, kind in types.items()}


PARAMETER = _keys("name type", name=STRING, type=STRING, dtype=STRING, keyword=BOOLEAN)
SCHEMA: dict[str, dict[str, Key]] = {
    "": _keys(
        "problem limits tolerance seeds defaults families",
        extends=STRING,
        drop=STRINGS,
        problem=TABLE,
        parameters=TABLES,
        step_parameters=TABLES,
        outputs=TABLES,
        limits=TABLE,
        tolerance=TABLE,
        report=TABLE,
        diagnosis=TABLE,
        seeds=TABLE,
        scoring=TABLE,
        hints=TABLE,
        defaults=FREE_TABLE,
        families=TABLES,
        cases=TABLES,
        rules=TABLE,
    ),
    "problem": _keys(
        "id entry_point",
        id=STRING,
        title=STRING,
        entry_point=STRING,
        kind=STRING,
        method=STRING,
        returns=STRING,
        gradient_wrt=STRINGS,
        judge=STRING,
        module=STRING,
        constants=FREE_TABLE,
    ),
    "parameters": PARAMETER,
    "step_parameters": PARAMETER,
    "outputs": _keys("name", name=STRING, dtype=STRING, shape=STRING, what=STRING, scale_floor=NUMBER, tolerance=DTYPE_TABLE, updates=STRING),
    "limits": _keys(
        "source_bytes startup_seconds case_seconds total_seconds cpu_seconds memory_mib file_size_mib open_files output_bytes",
        source_bytes=INTEGER,
        startup_seconds=NUMBER,
        case_seconds=NUMBER,
        total_seconds=NUMBER,
        cpu_seconds=INTEGER,
        memory_mib=INTEGER,
        file_size_mib=INTEGER,
        open_files=INTEGER,
        output_bytes=INTEGER,
    ),
    "tolerance": _keys("float32 float64", float32=NUMBER, float64=NUMBER, gradient=DTYPE_TABLE),
    "report": _keys(hidden_case_details=BOOLEAN),
    "diagnosis": _keys(probes=BOOLEAN, known_mistakes=BOOLEAN, parts=FREE_TABLE, premises=FREE_TABLE, probe=TABLES, nonfinite=TABLE, shapes=TABLES),
    "diagnosis.parts.*": _keys("conclusion", conclusion=STRING, fix=STRING, premise=STRING, told_as=STRING),
    "diagnosis.premises.*": _keys("probes holds otherwise", probes=STRINGS, holds=STRING, otherwise=STRING),
    "diagnosis.probe": _keys("case parts", case=STRING, parts=STRINGS, gradient=STRING),
    "diagnosis.nonfinite": _keys("probes parts", probes=STRINGS, parts=STRINGS, fallback=STRING, proven=STRINGS),
    "diagnosis.shapes": _keys("output axis part", output=STRING, axis=INTEGER, part=STRING),
    "seeds": _keys("public default_hidden env_var", public=STRING, default_hidden=STRING, env_var=STRING),
    "scoring": _keys(mode=STRING, weights=FREE_TABLE),
    "hints": _keys(gradient=STRING, inputs=STRING, float64=STRING),
    "defaults": _keys("count visibility dtype", count=INTEGER, visibility=STRING, dtype=ANY, hint=STRING),
    "families": _keys(
        "name description",
        name=STRING,
        description=STRING,
        hint=STRING,
        hint_checks=STRINGS,
        count=INTEGER,
        tolerance=DTYPE_TABLE,
        gradient_tolerance=DTYPE_TABLE,
        visibility=STRING,
        dtype=ANY,
    ),
    "cases": _keys("name family", name=STRING, family=STRING, visibility=STRING, dtype=ANY),
    "rules": _keys(forbid=TABLES),
    "rules.forbid": _keys("what names advice", what=STRING, names=STRINGS, advice=STRING),
}
SETTINGS_TABLES = ("families", "cases")  # their other keys are generator settings, each declared in [defaults]
NEVER_INHERITED = ("id", "module")  # [problem] keys a package that extends another must give itself (or leave out)


class FormatError(ValueError):
    """A problem.toml that does not follow the format: one line naming the key and, for an unknown
    one, the nearest valid key (load_spec adds the file)."""


def nearest(word: str, valid: list[str] | tuple[str, ...] | set[str]) -> str:
    """' (did you mean X?)' for the valid key closest to `word`, or '' when none is close."""
    close = difflib.get_close_matches(word, sorted(valid), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _type_ok(value: Any, kind: str) -> bool:
    if kind == STRING:
        return isinstance(value, str)
    if kind == INTEGER:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == NUMBER:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == BOOLEAN:
        return isinstance(value, bool)
    if kind == STRINGS:
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    if kind in (TABLE, FREE_TABLE):
        return isinstance(value, dict)
    if kind == TABLES:
        return isinstance(value, list) and all(isinstance(v, dict) for v in value)
    if kind == DTYPE_TABLE:
        return isinstance(value, dict) and all(_type_ok(v, NUMBER) for v in value.values())
    return True


def _where(table: str, item: dict[str, Any] | None = None) -> str:
    if table == "":
        return "the file's top level"
    name = item.get("name", item.get("case")) if item is not None else None
    shown = table.replace(".*", "")
    return f"[[{shown}]] {name!r}" if item is not None and name is not None else (f"[[{shown}]]" if item is not None else f"[{shown}]")


def _check_table(data: dict[str, Any], table: str, where: str, settings: set[str] | None = None, partial: bool = False) -> None:
    keys = SCHEMA[table]
    for key, value in data.items():
        if key in keys:
            if not _type_ok(value, keys[key].type):
                raise FormatError(f"{where}: {key} must be a {keys[key].type}, not {type(value).__name__} {value!r:.60}")
            continue
        if settings is not None and key in settings:
            continue
        if table == "defaults":
            continue  # every other key of [defaults] declares a generator setting
        valid = set(keys) | (settings or set())
        hint = " (a generator setting must first be declared in [defaults])" if settings is not None else ""
        raise FormatError(f"{where} has an unknown key {key!r}{nearest(key, valid) or hint}")
    if partial:
        return
    for key, spec in keys.items():
        if spec.required and key not in data:
            raise FormatError(f"{where} lacks the required key {key!r}")


def check_format(data: dict[str, Any], partial: bool = False) -> None:
    """FormatError naming the first unknown key, wrongly typed value or missing required key.
    partial: the file extends another, which gives the keys it leaves out (checked once merged)."""
    if "policy" in data:
        raise FormatError("[policy] is no longer read: narrow the harness's allow-lists with [[rules.forbid]] tables (docs/problem-format.md)")
    _check_table(data, "", _where(""), partial=partial)
    for table in ("problem", "limits", "tolerance", "report", "diagnosis", "seeds", "scoring", "hints", "defaults", "rules"):
        if table in data:
            _check_table(data[table], table, _where(table), partial=partial)
    for table in ("parameters", "step_parameters", "outputs"):
        for item in data.get(table, []):
            _check_table(item, table, _where(table, item))
    settings = set(data.get("defaults", {})) - set(SCHEMA["defaults"])
    for table in SETTINGS_TABLES:
        for item in data.get(table, []):
            own = set(item) - set(SCHEMA[table]) if partial else settings  # a partial file's settings are checked once merged
            _check_table(item, table, _where(table, item), settings=own, partial=partial)
    for item in data.get("rules", {}).get("forbid", []) if isinstance(data.get("rules"), dict) else []:
        if isinstance(item, dict):
            _check_table(item, "rules.forbid", f"[[rules.forbid]] {item.get('what', '')!r}")
    diagnosis = data.get("diagnosis", {})
    for name, part in diagnosis.get("parts", {}).items():
        _check_table(part, "diagnosis.parts.*", f"[diagnosis.parts.{name}]")
    for name, premise in diagnosis.get("premises", {}).items():
        _check_table(premise, "diagnosis.premises.*", f"[diagnosis.premises.{name}]")
    for item in diagnosis.get("probe", []):
        _check_table(item, "diagnosis.probe", _where("diagnosis.probe", item))
    if "nonfinite" in diagnosis:
        _check_table(diagnosis["nonfinite"], "diagnosis.nonfinite", "[diagnosis.nonfinite]")
    for item in diagnosis.get("shapes", []):
        _check_table(item, "diagnosis.shapes", _where("diagnosis.shapes", item))
    if "gradient" in data.get("tolerance", {}):
        _check_gradient(data["tolerance"]["gradient"], partial)


def _check_gradient(table: dict[str, Any], partial: bool) -> None:
    for key in table:
        if key not in ("float32", "float64"):
            raise FormatError(f"[tolerance.gradient] has an unknown key {key!r}{nearest(key, ['float32', 'float64'])}")
    if not partial:
        for key in ("float32", "float64"):
            if key not in table:
                raise FormatError(f"[tolerance.gradient] lacks the required key {key!r}")


def merge(base: dict[str, Any], own: dict[str, Any]) -> dict[str, Any]:
    """A package that extends another: the other's data with this file's on top. Tables merge key by
    key; [[families]] and [[cases]] merge by name (a new name is added, an inherited one is replaced
    by this file's table, which may give only what differs: it is laid over the inherited table);
    every other array ([[parameters]], [[outputs]], lists of strings) is replaced whole. `drop`
    removes inherited families (with their cases) and cases by name. [problem] id and module are
    never inherited."""
    merged = {key: value for key, value in base.items() if key not in ("extends", "drop")}
    merged["problem"] = {key: value for key, value in base.get("problem", {}).items() if key not in NEVER_INHERITED}
    for key, value in own.items():
        if key in ("extends", "drop"):
            continue
        if key in SETTINGS_TABLES:
            merged[key] = _by_name(merged.get(key, []), value)
        elif isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _tables(merged[key], value)
        else:
            merged[key] = value
    dropped = set(own.get("drop", []))
    names = {item["name"] for table in SETTINGS_TABLES for item in merged.get(table, [])}
    if unknown := sorted(dropped - names):
        raise FormatError(f"drop names {unknown[0]!r}, which is no inherited family or case{nearest(unknown[0], names)}")
    merged["families"] = [family for family in merged.get("families", []) if family["name"] not in dropped]
    merged["cases"] = [case for case in merged.get("cases", []) if case["name"] not in dropped and case.get("family") not in dropped]
    return merged


def _tables(base: dict[str, Any], own: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in own.items():
        merged[key] = _tables(base[key], value) if isinstance(value, dict) and isinstance(base.get(key), dict) else value
    return merged


def _by_name(base: list[dict[str, Any]], own: list[dict[str, Any]]) -> list[dict[str, Any]]:
    merged = {item["name"]: item for item in base}
    for item in own:
        merged[item["name"]] = merged.get(item["name"], {}) | item
    return list(merged.values())
