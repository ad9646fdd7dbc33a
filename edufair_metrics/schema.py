"""The base of every settings model (``SettingsModel``, pydantic v2) and its one-line errors.

Each block of the ``edufair`` settings is a frozen pydantic model that forbids unknown keys, next
to the code that uses it: ``cache.CachePolicy``, ``protocol/placebo.PlaceboReplicate``,
``bank/sample.QuestionSample``, ``judge/settings.JudgeSettings``, and ``settings/`` (which composes
them into ``RunnerSettings`` and resolves the precedence chain). Models are strict: ``"3"`` is not
an integer, ``"no"`` is not false.

A pydantic ``ValidationError`` (several lines, with URLs) never reaches the user: it becomes ONE
``EduFairError`` line that names the setting by its path and says what was expected, e.g.
``--metadata: edufair.judge.concurrency must be a positive integer, got 0`` or
``unknown edufair setting 'student.model_arg' (did you mean 'model_args'?)``. What is expected is
read from the field's declaration (type, bounds, literal values) or from ``Field(json_schema_extra=
{"expected": ...})``; a missing field adds its ``description``.
"""

from __future__ import annotations

import difflib
import types
import typing
from typing import Any, Callable, ClassVar, Literal, Mapping, Union

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.fields import FieldInfo

from edufair_metrics.errors import EduFairError

Source = Union[str, Callable[[tuple[str, ...]], str]]


class SettingsModel(BaseModel):
    """A settings block: frozen, strict, and no key it does not know."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    # the block's dotted name in the settings, and what an error says the block must be when it is
    # given something else than a mapping
    PATH: ClassVar[str] = "edufair"
    EXPECTED: ClassVar[str] = "a mapping"

    @classmethod
    def from_setting(cls, data: Any, *, path: str | None = None, source: Source = "edufair settings"):
        """``model_validate`` with one-line errors: ``path`` is the block's dotted name (default
        :attr:`PATH`, e.g. ``edufair.judge``), ``source`` where the values came from (or a
        function of the path inside the block that says so)."""
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise settings_error(cls, exc, path or cls.PATH, source) from None


def did_you_mean(word: str, known: typing.Iterable[str]) -> str | None:
    """The closest of ``known`` to ``word`` (difflib), or None."""
    match = difflib.get_close_matches(str(word), list(known), n=1, cutoff=0.6)
    return match[0] if match else None


def unknown_key_message(path: str, key: str, known: typing.Iterable[str]) -> str:
    """``unknown edufair setting 'student.model_arg' (did you mean 'model_args'?)``."""
    known = sorted(known)
    full = f"{path}.{key}" if path else str(key)
    name = full[len("edufair."):] if full.startswith("edufair.") else full
    guess = did_you_mean(key, known)
    hint = f"did you mean '{guess}'?" if guess else f"known: {', '.join(known)}"
    return f"unknown edufair setting '{name}' ({hint})"


def block_model(annotation: Any) -> type[SettingsModel] | None:
    """The settings model a field holds (``X`` for ``X``, ``X | None``), or None."""
    if isinstance(annotation, type) and issubclass(annotation, SettingsModel):
        return annotation
    if typing.get_origin(annotation) in (Union, types.UnionType):
        for arg in typing.get_args(annotation):
            found = block_model(arg)
            if found is not None:
                return found
    return None


def check_keys(model: type[SettingsModel], data: Any, path: str, source: str) -> None:
    """The shape of one layer of settings, before merging: an unknown key anywhere in ``data``, or
    a block (``judge``, ``cache``, ...) that is not a mapping, is an error naming ``source``, the
    block and the closest known key. Other values are checked once merged."""
    if not isinstance(data, Mapping):
        return
    for key, value in data.items():
        field = model.model_fields.get(key) if isinstance(key, str) else None
        if field is None:
            raise EduFairError(f"{source}: {unknown_key_message(path, str(key), model.model_fields)}")
        inner = block_model(field.annotation)
        if inner is None:
            continue
        if value is not None and not isinstance(value, Mapping):
            raise EduFairError(f"{source}: {path}.{key} must be {field_expected(field)}, got {_short(value)}")
        check_keys(inner, value, f"{path}.{key}", source)


def _bounds(metadata: list[Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for m in metadata:
        for name in ("ge", "gt", "le", "lt", "min_length"):
            if getattr(m, name, None) is not None:
                out[name] = getattr(m, name)
    return out


def _number(kind: str, b: dict[str, Any]) -> str:
    lo = ("[", b["ge"]) if "ge" in b else ("(", b["gt"]) if "gt" in b else None
    hi = ("]", b["le"]) if "le" in b else (")", b["lt"]) if "lt" in b else None
    if kind == "an integer" and hi is None and lo in (("[", 1), ("(", 0)):
        return "a positive integer"
    if lo and hi:
        return f"{kind} in {lo[0]}{lo[1]}, {hi[1]}{hi[0]}"
    if lo:
        return f"{kind} {'>=' if lo[0] == '[' else '>'} {lo[1]}"
    if hi:
        return f"{kind} {'<=' if hi[0] == ']' else '<'} {hi[1]}"
    return kind


def expected(annotation: Any, metadata: list[Any] | None = None) -> str:
    """What a value of this type must be, in words ("a positive integer", "one of a, b")."""
    b = _bounds(metadata or [])
    origin = typing.get_origin(annotation)
    if origin in (Union, types.UnionType):
        args = typing.get_args(annotation)
        kept = [a for a in args if a is not type(None)]
        text = " or ".join(expected(a, metadata) for a in kept)
        return f"{text} or null" if len(kept) < len(args) else text
    if origin is Literal:
        return "one of " + ", ".join(str(v) for v in typing.get_args(annotation))
    if isinstance(annotation, type) and issubclass(annotation, SettingsModel):
        return annotation.EXPECTED
    if annotation is bool:
        return "true or false"
    if annotation is int:
        return _number("an integer", b)
    if annotation is float:
        return _number("a number", b)
    if annotation is str:
        return "a non-empty string" if b.get("min_length") else "a string"
    if annotation is dict or origin in (dict, Mapping):
        return "a mapping"
    if origin in (tuple, list) or annotation in (tuple, list):
        return "a list"
    return "a valid value"


def field_expected(field: FieldInfo) -> str:
    extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
    return str(extra.get("expected") or expected(field.annotation, field.metadata))


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _walk(model: type[SettingsModel], loc: tuple) -> tuple[list[str], FieldInfo | None, type[SettingsModel] | None]:
    """(the field names along ``loc``, the last field, the model that field holds). Union tags
    and keys inside free-form mappings (model_args, extra_body) end the walk."""
    names: list[str] = []
    field: FieldInfo | None = None
    owner: type[SettingsModel] | None = model
    for part in loc:
        if owner is None or not isinstance(part, str) or part not in owner.model_fields:
            break
        names.append(part)
        field = owner.model_fields[part]
        owner = block_model(field.annotation)
    return names, field, owner


def settings_error(model: type[SettingsModel], exc: ValidationError, path: str, source: Source) -> EduFairError:
    """ONE line for a pydantic ValidationError: the first problem (an unknown key first: a typo
    also makes the intended key look missing), the setting's dotted path, what was expected."""
    errors = sorted(exc.errors(include_url=False), key=lambda e: e["type"] != "extra_forbidden")
    err = errors[0]
    loc = tuple(err.get("loc") or ())
    kind = err["type"]
    if kind == "extra_forbidden":
        names, _, owner = _walk(model, loc[:-1])
        where = ".".join([path, *names])
        known = (owner or model).model_fields if len(names) == len(loc) - 1 else {}
        msg = unknown_key_message(where, str(loc[-1]), known)
    else:
        names, field, _ = _walk(model, loc)
        where = ".".join([path, *names])
        if kind == "missing":
            hint = f" ({field.description})" if field is not None and field.description else ""
            msg = f"{where} is missing{hint}"
        elif kind in ("value_error", "assertion_error"):
            cause = (err.get("ctx") or {}).get("error")
            msg = f"{where} {cause if cause is not None else err['msg']}"
        elif field is not None:
            msg = f"{where} must be {field_expected(field)}, got {_short(err.get('input'))}"
        elif not loc:
            msg = f"{where} must be {model.EXPECTED}, got {_short(err.get('input'))}"
        else:
            msg = f"{where}: {err['msg'][:1].lower()}{err['msg'][1:]}"
    src = source(tuple(names)) if callable(source) else source
    return EduFairError(f"{src}: {msg}")
