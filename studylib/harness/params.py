"""Typed parameters: a frozen dataclass whose every field is parsed from its type annotation, once,
where the object is made (``TypedParams.__post_init__``), so a value of the wrong type is refused
with one line before anything runs.

    @dataclass(frozen=True, kw_only=True)
    class Run(TypedParams):
        num_envs: Sizes                 # a non-empty tuple of positive integers, sorted, no repeats
        seeds: Seeds = ()               # integers ≥ 0 (possibly none), in the order given
        budget_s: PositiveFloat = 1.0   # a positive number
        gpu_flops_per_s: PositiveFloat | None = None

    Run(num_envs="[64, 8]", seeds="0,1")   # Run(num_envs=(8, 64), seeds=(0, 1), ...)
    Run(num_envs="abc")                     # ConfigError: parameter 'num_envs' must be a list of positive integers, got 'abc'

Values may be Python objects or the strings a papermill ``-p`` or a command line passes ("[1, 2]",
"1,2", "8", "0.5"). The annotations understood: int, float, str, Path, ``tuple[X, ...]``,
``dict[str, X]``, ``X | None``, and ``Annotated`` with ``Bound`` / ``NON_EMPTY`` / ``SORTED``;
a field of any other type (a settings object, say) must already be an instance of it.
"""

from __future__ import annotations

import ast
import functools
import types
import typing
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Annotated, Union

from ..errors import ConfigError


@dataclass(frozen=True)
class Bound:
    """A number's lower bound: > low, or ≥ low with ``inclusive``."""

    low: float
    inclusive: bool = False

    def ok(self, v) -> bool:
        return v >= self.low if self.inclusive else v > self.low

    def text(self) -> str:
        return "positive" if (self.low, self.inclusive) == (0, False) else f"≥ {self.low:g}" if self.inclusive \
            else f"> {self.low:g}"


NON_EMPTY = "non-empty"  # a tuple with at least one item
SORTED = "sorted"  # a tuple sorted, each value once

PositiveInt = Annotated[int, Bound(0)]
Seed = Annotated[int, Bound(0, inclusive=True)]
PositiveFloat = Annotated[float, Bound(0)]
Sizes = Annotated[tuple[PositiveInt, ...], NON_EMPTY, SORTED]  # N, K, S, C: a grid's values
Ordered = Annotated[tuple[PositiveInt, ...], NON_EMPTY]  # positive integers in the order given
Names = tuple[str, ...]
Seeds = tuple[Seed, ...]
Caps = dict[str, PositiveInt]  # implementation (or "*") -> a bound


def _items(value) -> list:
    """A list from a list, a scalar, or the strings papermill ``-p`` passes ("[1, 2]", "1,2")."""
    if isinstance(value, str):
        try:
            value = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            value = [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, (int, float, str)):
        value = [value]
    return list(value)


def _literal(value):
    """A string that spells a Python literal as that literal ("8" -> 8, "[1]" -> [1]); else as is."""
    if isinstance(value, str):
        try:
            return ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            return value
    return value


def _split(hint):
    """(base type, its Annotated markers)."""
    if typing.get_origin(hint) is Annotated:
        base, *markers = typing.get_args(hint)
        return base, markers
    return hint, []


def _optional(hint):
    """``X`` for ``X | None``; None for a hint that does not admit None."""
    if typing.get_origin(hint) in (Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) < len(typing.get_args(hint)):
            return args[0] if len(args) == 1 else Union[tuple(args)]
    return None


def kind(hint, plural: bool = False) -> str:
    """What a value of ``hint`` is, in words ("a list of positive integers")."""
    inner = _optional(hint)
    if inner is not None:
        return f"{kind(inner, plural)} or None"
    base, markers = _split(hint)
    bound = next((m.text() for m in markers if isinstance(m, Bound)), "")
    origin = typing.get_origin(base)
    if origin is tuple:
        least = " (at least one)" if NON_EMPTY in markers else ""
        return f"a list of {kind(typing.get_args(base)[0], True)}{least}"
    if origin is dict:
        return f"a dict of names -> {kind(typing.get_args(base)[1], True)}"
    if base is int:
        if bound == "positive":
            return "positive integers" if plural else "a positive integer"
        return f"integers {bound}" if plural else f"an integer {bound}".rstrip()
    if base is float:
        return (f"{bound} numbers" if plural else f"a {bound} number") if bound else ("numbers" if plural else "a number")
    if base is str:
        return "names" if plural else "a name"
    if base is Path:
        return "folders" if plural else "a folder (a string)"
    return f"{'' if plural else 'a '}{getattr(base, '__name__', base)}"


class _Refused(ValueError):
    pass


def _parse(hint, value):
    inner = _optional(hint)
    if inner is not None:
        return None if value is None else _parse(inner, value)
    base, markers = _split(hint)
    origin = typing.get_origin(base)
    if origin is tuple:
        out = [_parse(typing.get_args(base)[0], v) for v in _items(value)]
        if SORTED in markers:
            out = sorted(set(out))
        if NON_EMPTY in markers and not out:
            raise _Refused
        return tuple(out)
    if origin is dict:
        value = _literal(value)
        if not isinstance(value, dict):
            raise _Refused
        key_hint, value_hint = typing.get_args(base)
        return {_parse(key_hint, k): _parse(value_hint, v) for k, v in value.items()}
    if base is int:
        value = _literal(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise _Refused
    elif base is float:
        value = _literal(value)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _Refused
        value = float(value)
    elif base is str:
        if not isinstance(value, str):
            raise _Refused
    elif base is Path:
        if not isinstance(value, (str, Path)):
            raise _Refused
        value = Path(value).expanduser()
    elif not isinstance(value, base):
        raise _Refused
    for m in markers:
        if isinstance(m, Bound) and not m.ok(value):
            raise _Refused
    return value


def parse(name: str, hint, value):
    """``value`` as a value of ``hint``; ConfigError (one line) naming ``name`` when it is not one."""
    try:
        return _parse(hint, value)
    except (_Refused, TypeError, ValueError):
        raise ConfigError(f"parameter {name!r} must be {kind(hint)}, got {value!r}") from None


@functools.cache
def hints(cls) -> dict:
    return typing.get_type_hints(cls, include_extras=True)


@dataclass(frozen=True)
class TypedParams:
    """A frozen parameter object: each field parsed from its annotation when made, then ``check``."""

    def __post_init__(self):
        h = hints(type(self))
        for f in fields(self):
            object.__setattr__(self, f.name, parse(f.name, h[f.name], getattr(self, f.name)))
        self.check()

    def check(self) -> None:
        """Rules between fields (a subclass's); raise ConfigError."""

    @classmethod
    def parameters(cls) -> tuple[str, ...]:
        """The names a caller may give (every field but those marked ``metadata={"given": False}``)."""
        return tuple(f.name for f in fields(cls) if f.init and f.metadata.get("given", True))
