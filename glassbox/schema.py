"""The one config checker: YAML in, typed dataclasses out, every mistake named by its key with the fix.

Both halves describe their settings as dataclasses whose fields say their type in the annotation and their
range with ``setting(...)``; ``build`` fills such a dataclass (nested ones included) from a parsed mapping,
refusing unknown keys, wrong types, values out of range and anything not finite, before any heavy import or
any Spark or DeepSpeed work. Numbers read alike everywhere: the YAML loader here reads ``3e-4`` as a float
(PyYAML's YAML 1.1 rules want a dot in the mantissa and would give the string "3e-4"), an integer where a
float is expected is that float, a quoted "10" is a string, and a boolean is never a number. Standard
library and PyYAML only.
"""
from __future__ import annotations

import dataclasses
import difflib
import json
import keyword
import math
import re
import types
import typing
from pathlib import Path
from typing import Any, Callable

import yaml


class ConfigError(ValueError):
    """A config mistake, with the key path and what to do about it."""


def setting(default: Any = dataclasses.MISSING, *, default_factory: Callable | None = None, ge: float | None = None,
            gt: float | None = None, le: float | None = None, lt: float | None = None,
            choices: tuple | None = None, check: Callable[[Any], str | None] | None = None, why: str | None = None):
    """A dataclass field with its range: ``ge``/``gt``/``le``/``lt`` bounds (for numbers, and for every number in
    a list), ``choices`` (the allowed values), ``check`` (a function returning what is wrong, or None), ``why``
    (the reason for the range, added to the message)."""
    meta = {k: v for k, v in (("ge", ge), ("gt", gt), ("le", le), ("lt", lt), ("choices", choices),
                              ("check", check), ("why", why)) if v is not None}
    if default_factory is not None:
        return dataclasses.field(default_factory=default_factory, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


# --- reading YAML: 1e-3 is a number ------------------------------------------------------------------------

class _Loader(yaml.SafeLoader):
    pass


# YAML 1.2's float: an exponent without a dot in the mantissa (1e-3, 5E+2) is a float too.
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
                    |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
                    |\.[0-9_]+(?:[eE][-+][0-9]+)?
                    |[-+]?\.(?:inf|Inf|INF)
                    |\.(?:nan|NaN|NAN))$""", re.X),
    list("-+0123456789."))


def load_file(path: str | Path) -> Any:
    """A YAML (or .json) file, parsed; ConfigError naming the file when it is missing or malformed."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"{path}: config file not found")
    try:
        text = p.read_text(encoding="utf-8")
        return json.loads(text) if p.suffix == ".json" else yaml.load(text, Loader=_Loader)
    except (yaml.YAMLError, json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: not valid {'JSON' if p.suffix == '.json' else 'YAML'}: {e}") from None


def load_yaml_text(text: str) -> Any:
    """A YAML value (e.g. the right side of ``--set key=value``), with the same number rules."""
    return yaml.load(text, Loader=_Loader)


# --- values -------------------------------------------------------------------------------------------------

_NAMES = {bool: "a boolean (true/false)", int: "an integer", float: "a number", str: "a string", list: "a list",
          dict: "a mapping"}


def _strip_optional(tp) -> tuple[Any, bool]:
    """(the type without None, whether None is allowed)."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) != len(typing.get_args(tp)):
            return (args[0] if len(args) == 1 else typing.Union[tuple(args)]), True
    return tp, False


def _number(key: str, value: Any, expected: type) -> Any:
    if isinstance(value, bool):
        raise ConfigError(f"{key}: expected {_NAMES[expected]}, got the boolean {value!r}")
    if expected is float:
        if not isinstance(value, (int, float)):
            raise ConfigError(f"{key}: expected a number, got {type(value).__name__} {value!r}")
        if not math.isfinite(value):
            raise ConfigError(f"{key}: must be a finite number, got {value!r}")
        return float(value)
    if isinstance(value, float) and value.is_integer() and math.isfinite(value):
        return int(value)                       # 1e3 written for an integer count
    if not isinstance(value, int):
        raise ConfigError(f"{key}: expected an integer, got {type(value).__name__} {value!r}")
    return value


def _range(key: str, value: Any, meta: dict) -> None:
    why = f" ({meta['why']})" if "why" in meta else ""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        for bound, ok, word in (("ge", lambda v, b: v >= b, ">="), ("gt", lambda v, b: v > b, ">"),
                                ("le", lambda v, b: v <= b, "<="), ("lt", lambda v, b: v < b, "<")):
            if bound in meta and not ok(value, meta[bound]):
                raise ConfigError(f"{key}: must be {word} {meta[bound]:g}, got {value!r}{why}")
    if "choices" in meta and value not in meta["choices"]:
        raise ConfigError(f"{key}: must be one of {', '.join(map(str, meta['choices']))}, got {value!r}{why}")


def coerce(key: str, value: Any, tp, meta: dict | None = None) -> Any:
    """``value`` as the annotated type ``tp`` within the field's range, or ConfigError naming ``key``."""
    meta = meta or {}
    tp, nullable = _strip_optional(tp)
    if value is None:
        if nullable:
            return None
        raise ConfigError(f"{key}: must be set (null is not allowed here)")
    if dataclasses.is_dataclass(tp):
        return validate(value, key) if isinstance(value, tp) else build(tp, value, key)
    origin = typing.get_origin(tp) or tp
    if origin in (int, float):
        value = _number(key, value, origin)
    elif origin is bool or origin is str:
        if not isinstance(value, origin):
            raise ConfigError(f"{key}: expected {_NAMES[origin]}, got {type(value).__name__} {value!r}")
    elif origin is list:
        if not isinstance(value, list):
            raise ConfigError(f"{key}: expected a list, got {type(value).__name__} {value!r}")
        (item,) = typing.get_args(tp) or (Any,)
        if item is not Any:
            value = [coerce(f"{key}[{i}]", v, item, {k: m for k, m in meta.items() if k not in ("check",)})
                     for i, v in enumerate(value)]
        meta = {k: m for k, m in meta.items() if k in ("check",)}
    elif origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{key}: expected a mapping, got {type(value).__name__} {value!r}")
    elif tp is not Any:
        raise TypeError(f"{key}: unsupported config type {tp!r}")
    _range(key, value, meta)
    if "check" in meta and (problem := meta["check"](value)):
        raise ConfigError(f"{key}: {problem}")
    return value


def unknown_key(key: str, given: Any, known: list[str]) -> str:
    """The message for a key the section does not have: the likely meant one first, then every known key."""
    close = difflib.get_close_matches(str(given), known, n=1)
    return (f"{key}: unknown key{f' (did you mean {close[0]}?)' if close else ''}. "
            f"Known keys: {', '.join(known)}")


def build(cls, raw: Any, section: str = ""):
    """An instance of the config dataclass ``cls`` from ``raw`` (a mapping, or None for the defaults); keys are
    named ``section.key`` in errors (just ``key`` at the top level)."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{section or 'the file'}: expected a mapping of settings, got {type(raw).__name__} "
                          f"{raw!r}")
    fields = {key_name(f.name): f for f in dataclasses.fields(cls) if f.init}
    name = (lambda k: f"{section}.{k}") if section else str
    unknown = [k for k in raw if k not in fields]
    if unknown:
        raise ConfigError(unknown_key(name(unknown[0]), unknown[0], list(fields)))
    hints = typing.get_type_hints(cls)
    return _cross_check(cls(**{fields[k].name: coerce(name(k), v, hints[fields[k].name], dict(fields[k].metadata))
                               for k, v in raw.items()}), section)


def key_name(field_name: str) -> str:
    """The key a file spells a field with: a field named after a Python keyword plus ``_`` (``async_``) is the
    keyword itself (``checkpoint.async``)."""
    bare = field_name[:-1]
    return bare if field_name.endswith("_") and keyword.iskeyword(bare) else field_name


def _cross_check(obj, section: str):
    """A dataclass may have a ``check()`` for rules between its fields, returning "key: problem" or None."""
    problem = obj.check() if hasattr(obj, "check") else None
    if problem:
        raise ConfigError(f"{section}.{problem}" if section else problem)
    return obj


def validate(obj, section: str = ""):
    """Check a config dataclass built in code (tests, benches) as ``build`` checks one read from a file."""
    for name, tp, meta in settings(type(obj)):
        setattr(obj, name, coerce(f"{section}.{name}" if section else name, getattr(obj, name), tp, meta))
    return _cross_check(obj, section)


def settings(cls) -> list[tuple[str, Any, dict]]:
    """(name, annotated type, range metadata) of every field of a config dataclass (for docs and tests)."""
    hints = typing.get_type_hints(cls)
    return [(f.name, hints[f.name], dict(f.metadata)) for f in dataclasses.fields(cls) if f.init]
