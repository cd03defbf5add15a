"""Writes app/records/model.py, the typed record, from data/record.schema.json.

The schema file stays the one source of truth: import, the API and CI validate records with
it, keyword for keyword. The pydantic model is derived from it here, so the two cannot drift:
tests/test_records_model.py regenerates the module and fails when a byte differs.
Run `python -m app.records.codegen` after changing the schema.

Only the keywords the schema uses are translated; any other keyword stops the generator, so
a new constraint cannot be silently left out of the model.
"""

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from pydantic.alias_generators import to_camel, to_snake

from app.config import PROJECT_ROOT

SCHEMA_PATH = PROJECT_ROOT / "data" / "record.schema.json"
MODEL_PATH = PROJECT_ROOT / "app" / "records" / "model.py"
_TOP_KEYWORDS = {
    "$schema",
    "$id",
    "title",
    "description",
    "type",
    "additionalProperties",
    "required",
    "properties",
}
_FIELD_KEYWORDS = {"description"}
_SCALARS = {"string": "str", "integer": "int"}
_CONSTRAINTS = {
    "pattern": "pattern",
    "minLength": "min_length",
    "maxLength": "max_length",
    "minimum": "ge",
    "maximum": "le",
    "maxItems": "max_length",
}
_ID_PATTERN = re.compile(r"\^\[0-9a-f\]\{(\d+)\}\$")

_HEADER = '''\
# ruff: noqa: E501 (descriptions are the schema's, one line each)
"""The typed error record: generated from data/record.schema.json, do not edit.

Regenerate with `python -m app.records.codegen`; tests/test_records_model.py fails when this
file and the schema disagree. It moves to app/records/model.py with the records package.
Readers use attribute names (`record.error_message`); the wire, the files and the stored
text keep the schema's camelCase keys (`errorMessage`).
"""

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel, to_snake

_DATE_TIME = re.compile(
    r"(\\d{4})-(\\d{2})-(\\d{2})[Tt](\\d{2}):(\\d{2}):(\\d{2})(?:\\.\\d+)?"
    r"(?:[Zz]|[+-](\\d{2}):?(\\d{2}))"
)


def _date_time(value: str) -> str:
    """JSON Schema's `format: date-time` (RFC 3339) as fastjsonschema checks it: a real
    calendar day (leap years too), hours to 23, minutes to 59, seconds to 60."""
    parts = _DATE_TIME.fullmatch(value)
    if parts is None:
        raise ValueError("is not a valid date-time")
    year, month, day, hour, minute, second = (int(part) for part in parts.groups()[:6])
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    month_days = (31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
    offset = [int(part) for part in parts.groups()[6:] if part is not None]
    if not (
        1 <= month <= 12
        and 1 <= day <= month_days[month - 1]
        and hour <= 23
        and minute <= 59
        and second <= 60
        and (not offset or (offset[0] <= 23 and offset[1] <= 59))
    ):
        raise ValueError("is not a valid date-time")
    return value


def _unique_items(items: list[str]) -> list[str]:
    """JSON Schema's `uniqueItems: true`."""
    if len(set(items)) != len(items):
        raise ValueError("has repeated items")
    return items


'''

_FOOTER = '''
LOGGED_TYPES: frozenset[ErrorType] = frozenset({"log", "warning"})
"""The error types of sites that log or warn rather than raise."""


def max_chars(alias: str) -> int:
    """The schema's maxLength of a string field, by its camelCase name (`errorMessage`)."""
    for constraint in ErrorRecord.model_fields[to_snake(alias)].metadata:
        if getattr(constraint, "max_length", None) is not None:
            return constraint.max_length
    raise KeyError(f"{alias} has no maxLength")


def parse_record(document: str) -> ErrorRecord:
    """The typed record of a stored or exported JSON text."""
    return ErrorRecord.model_validate_json(document)
'''


def _literal(values: list[Any]) -> str:
    return "Literal[" + ", ".join(json.dumps(value) for value in values) + "]"


def _string(value: str) -> str:
    """A Python literal for a pattern: raw where that reads the same."""
    if '"' not in value and not value.endswith("\\"):
        return f'r"{value}"'
    return repr(value)


def _annotated(base: str, spec: dict[str, Any], consumed: set[str]) -> str:
    """`base` with the spec's constraints, as an Annotated type (or `base` alone)."""
    arguments = []
    for keyword, argument in _CONSTRAINTS.items():
        if keyword in spec:
            consumed.add(keyword)
            value = spec[keyword]
            arguments.append(f"{argument}={_string(value) if keyword == 'pattern' else value}")
    extra: dict[str, object] = {}
    validators = []
    if spec.get("uniqueItems"):
        consumed.add("uniqueItems")
        extra["uniqueItems"] = True
        validators.append("AfterValidator(_unique_items)")
    if "format" in spec:
        consumed.add("format")
        if spec["format"] != "date-time":
            raise ValueError(f"format {spec['format']!r} has no check in the model")
        extra["format"] = "date-time"
        validators.append("AfterValidator(_date_time)")
    if extra:
        arguments.append(f"json_schema_extra={extra!r}")
    if not arguments and not validators:
        return base
    field = [f"Field({', '.join(arguments)})"] if arguments else []
    return f"Annotated[{', '.join([base, *field, *validators])}]"


def _field_type(key: str, spec: dict[str, Any], aliases: dict[str, str]) -> str:
    """The Python type of one property; raises on a keyword the model would not enforce."""
    consumed = set(_FIELD_KEYWORDS)
    if "enum" in spec or "const" in spec:
        values = spec["enum"] if "enum" in spec else [spec["const"]]
        consumed |= {"enum", "const"}
        choices = [value for value in values if value is not None]
        name = aliases.get(key)
        typed = name or _literal(choices)
        result = f"{typed} | None" if None in values else typed
    else:
        types = spec["type"] if isinstance(spec["type"], list) else [spec["type"]]
        consumed.add("type")
        (kind,) = [kind for kind in types if kind != "null"]
        if kind == "array":
            consumed.add("items")
            item = _field_type(f"{key}[]", spec["items"], aliases)
            base = f"list[{item}]"
        else:
            base = _SCALARS[kind]
        result = _annotated(base, spec, consumed)
        if "null" in types:
            result = f"{result} | None"
    unknown = set(spec) - consumed
    if unknown:
        raise ValueError(f"{key}: keywords {sorted(unknown)} have no translation in the model")
    return result


def model_source(schema: dict[str, Any]) -> str:
    """The Python source of app/records/model.py for this schema, before formatting."""
    unknown = set(schema) - _TOP_KEYWORDS
    if unknown or schema["type"] != "object" or schema["additionalProperties"] is not False:
        raise ValueError(f"the schema's top level is not one the generator knows: {unknown}")
    properties: dict[str, dict[str, Any]] = schema["properties"]
    if set(schema["required"]) != set(properties):
        raise ValueError("every property must be required (a record has every key)")
    id_length = _ID_PATTERN.fullmatch(properties["id"]["pattern"])
    if id_length is None:
        raise ValueError("the id pattern is not `^[0-9a-f]{N}$`")
    aliases = {key: key[0].upper() + key[1:] for key, spec in properties.items() if "enum" in spec}
    lines = [_HEADER]
    for key, name in aliases.items():
        lines.append(f"{name} = {_literal([v for v in properties[key]['enum'] if v is not None])}")
    lines.append("")
    lines.append(f"ID_PATTERN = {_string(properties['id']['pattern'])}")
    lines.append(f"ID_LENGTH = {id_length.group(1)}")
    lines.append(f"SCHEMA_VERSION = {properties['schemaVersion']['const']}")
    lines.append("\n")
    lines.append("class ErrorRecord(BaseModel):")
    lines.append(f'    """{schema["description"]}"""')
    lines.append("")
    lines.append(
        "    model_config = ConfigDict(alias_generator=to_camel, serialize_by_alias=True, "
        'extra="forbid", strict=True, frozen=True, title="ErrorRecord")'
    )
    lines.append("")
    for key, spec in properties.items():
        name = to_snake(key)
        if to_camel(name) != key:
            raise ValueError(f"{key} is not camelCase of {name}")
        typed = _field_type(key, spec, aliases)
        if key == "id":
            typed = typed.replace(_string(spec["pattern"]), "ID_PATTERN")
        description = spec.get("description")
        default = f" = Field(description={description!r})" if description else ""
        lines.append(f"    {name}: {typed}{default}")
    return "\n".join(lines) + "\n" + _FOOTER


def formatted(source: str) -> str:
    """The source as `ruff format` writes it, so the generated file passes the lint."""
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--stdin-filename", str(MODEL_PATH), "-"],
        input=source,
        capture_output=True,
        text=True,
        check=True,
        cwd=PROJECT_ROOT,
    )
    return result.stdout


def generate(schema_path: Path = SCHEMA_PATH) -> str:
    """The text app/records/model.py must hold for this schema."""
    return formatted(model_source(json.loads(schema_path.read_text(encoding="utf-8"))))


def main() -> None:
    """Rewrite app/records/model.py from the schema."""
    MODEL_PATH.write_text(generate(), encoding="utf-8")
    print(f"wrote {MODEL_PATH.relative_to(PROJECT_ROOT)}")


if __name__ == "__main__":
    main()
