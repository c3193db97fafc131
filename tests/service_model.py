"""Answers checked against botocore's service models: what an SDK reads, typed as the model types it (the members
a structure has and must have, each value's type, an enum's values), the JSON protocol's own way (a timestamp a
number of seconds, a blob Base64 text)."""

from typing import Any


def problems(shape: Any, value: Any, where: str = "") -> list[str]:
    """Every way ``value`` departs from ``shape`` (empty: it conforms)."""
    kind, found = shape.type_name, []
    if kind == "structure":
        if not isinstance(value, dict):
            return [f"{where or '.'}: {type(value).__name__}, not an object"]
        for key, inner in value.items():
            if key not in shape.members:
                found.append(f"{where}.{key}: not a member of {shape.name}")
            else:
                found += problems(shape.members[key], inner, f"{where}.{key}")
        found += [f"{where}.{key}: required, missing" for key in shape.required_members if key not in value]
    elif kind == "list":
        if not isinstance(value, list):
            return [f"{where}: {type(value).__name__}, not a list"]
        for number, inner in enumerate(value):
            found += problems(shape.member, inner, f"{where}[{number}]")
    elif kind == "map":
        if not isinstance(value, dict):
            return [f"{where}: {type(value).__name__}, not a map"]
        for key, inner in value.items():
            found += problems(shape.value, inner, f"{where}.{key}")
    elif kind == "string":
        if not isinstance(value, str):
            return [f"{where}: {type(value).__name__}, not a string"]
        if shape.enum and value not in shape.enum:
            found.append(f"{where}: {value!r} not one of {shape.enum}")
    elif kind in ("integer", "long"):
        if type(value) is not int:
            found.append(f"{where}: {value!r} not an integer")
    elif kind in ("double", "float", "timestamp"):
        if type(value) not in (int, float):
            found.append(f"{where}: {value!r} not a number")
    elif kind == "boolean":
        if type(value) is not bool:
            found.append(f"{where}: {value!r} not a boolean")
    elif kind == "blob" and not isinstance(value, str):
        found.append(f"{where}: {type(value).__name__}, not Base64 text")
    return found


class Found(list):  # type: ignore[type-arg]
    """The problems found (a list), and how many answers were checked (``checked``)."""

    checked = 0


def checking(client: Any) -> Found:
    """Check every answer ``client`` reads against its operation's output shape (or, for an error, that it names
    one the operation may answer or a common one); the problems found are appended to the list returned."""
    import json

    found = Found()
    common = {"ValidationException", "UnknownOperationException", "SerializationException", "ServiceUnavailable"}

    def check(operation_model: Any, response_dict: Any, **_: Any) -> None:
        found.checked += 1
        body = json.loads(response_dict["body"] or b"{}")
        name = operation_model.name
        if response_dict["status_code"] >= 400:
            code = str(body.get("__type", "")).rpartition("#")[2]
            if code not in {shape.name for shape in operation_model.error_shapes} | common:
                found.append(f"{name}: the error {code} is not one the model gives {name}")
            return
        found.extend(f"{name}{problem}" for problem in problems(operation_model.output_shape, body))

    client.meta.events.register("before-parse.*.*", check)
    return found
