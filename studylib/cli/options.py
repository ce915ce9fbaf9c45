"""The command line's options: parsing numbers, lists and ranges into checked values (one line and
exit status 2 on bad input), the point options every measuring command shares, and the run
options (data folder, Ray engine, progress). The subcommands (``cli.measuring``, ``cli.machine``,
``__main__``) build their settings from these."""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import sys

from .. import sims
from ..errors import ConfigError, StudyError
from ..settings import IMPLEMENTATIONS, PEERS, POLICIES, MeasurePoint


EXIT_USAGE = 2


class UsageError(StudyError):
    """argparse's complaints, turned into one line."""


class OneLineParser(argparse.ArgumentParser):
    def error(self, message):  # argparse would print the usage block and exit; we want one line
        raise UsageError(f"{self.prog}: {message}")


INT_RE = re.compile(r"^\s*(\d+)\s*$")


_POW = re.compile(r"^\s*2\s*(?:\^|\*\*)\s*(\d+)\s*$")


def _one_int(flag: str, token: str) -> int:
    m = INT_RE.match(token)
    if m:
        value = int(m.group(1))
    else:
        m = _POW.match(token)
        if not m:
            raise ConfigError(f"{flag} must be a positive integer (or a list like 1,10,100, or a range "
                              f"2^8..2^12), got {token.strip()!r}")
        value = 2 ** int(m.group(1))
    if value < 1:
        raise ConfigError(f"{flag} must be a positive integer, got {value}")
    return value


def parse_ints(flag: str, text: str) -> list[int]:
    """'4096' | '2^12' | '1,10,100' | '2^8..2^12' (powers of two, both ends included)."""
    values = []
    for token in str(text).split(","):
        if ".." in token:
            lo_text, hi_text = token.split("..", 1)
            lo, hi = _one_int(flag, lo_text), _one_int(flag, hi_text)
            if lo & (lo - 1) or hi & (hi - 1) or lo > hi:
                raise ConfigError(f"{flag} range {token.strip()!r} must go from a power of two up to a power of two")
            while lo <= hi:
                values.append(lo)
                lo *= 2
        else:
            values.append(_one_int(flag, token))
    return list(dict.fromkeys(values))


def parse_names(flag: str, text: str, valid, allow_all=False, also_valid=()) -> list[str]:
    """Comma list of names from ``valid`` ("all" = every one of them) or ``also_valid``."""
    names = [t.strip() for t in str(text).split(",") if t.strip()]
    if allow_all and names == ["all"]:
        return list(valid)
    bad = [n for n in names if n not in valid and n not in also_valid]
    if bad or not names:
        what = {"--impl": "implementation", "--policy": "policy", "--device": "device"}.get(flag, flag)
        raise ConfigError(f"unknown {what} {(bad or [text])[0]!r}; valid: {', '.join((*valid, *also_valid))}")
    return list(dict.fromkeys(names))


def positive_float(flag: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ConfigError(f"{flag} must be a positive number, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise ConfigError(f"{flag} must be a positive number, got {text!r}")
    return value


def nonnegative_float(flag: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ConfigError(f"{flag} must be a non-negative number, got {text!r}") from None
    if not 0 <= value < float("inf"):
        raise ConfigError(f"{flag} must be a non-negative number, got {text!r}")
    return value


def positive(flag, text) -> int:
    values = parse_ints(flag, text)
    if len(values) != 1:
        raise ConfigError(f"{flag} takes one positive integer, got {text!r}")
    return values[0]


def add_point_options(p: argparse.ArgumentParser, steps_required=True):
    p.add_argument("--impl", required=True, help=f"comma list of {', '.join(IMPLEMENTATIONS)} (or all), "
                                                  f"or peers: {', '.join(PEERS)} (simulation only)")
    p.add_argument("--num-envs", required=True, help="N: 4096, 2^12, 1024,4096 or 2^8..2^16")
    p.add_argument("--steps", required=steps_required, default="1,10,100",
                   help="K: steps per backend call (list allowed)")
    p.add_argument("--state-factor", default="1", help="S (list allowed)")
    p.add_argument("--compute-factor", default="1", help="C (list allowed)")
    p.add_argument("--policy", default="mlp", help="mlp, none or mlp,none")
    p.add_argument("--device", default=None, help="cpu or cuda (default: the implementation's default)")
    p.add_argument("--seed", default="0", help="environment seed")
    p.add_argument("--sim", default=sims.DEFAULT, help=f"the simulator: {', '.join(sims.names())} (studylib.sims)")
    for column, text in dict(flag for name in sims.names() for flag in sims.sim(name).variant_flags).items():
        p.add_argument(f"--{column.replace('_', '-')}", dest=column, default=None, help=text)


def grid_of(args) -> dict:
    return {
        "impl": parse_names("--impl", args.impl, IMPLEMENTATIONS, allow_all=True, also_valid=PEERS),
        "num_envs": parse_ints("--num-envs", args.num_envs),
        "steps": parse_ints("--steps", args.steps),
        "state_factor": parse_ints("--state-factor", args.state_factor),
        "compute_factor": parse_ints("--compute-factor", args.compute_factor),
        "policy": parse_names("--policy", args.policy, POLICIES),
        "device": [None] if args.device is None else parse_names("--device", args.device, ("cpu", "cuda")),
        "sim": parse_names("--sim", args.sim, sims.names()),
        "params": params_of(args),
    }


def params_of(args) -> list:
    """The simulator's parameter sets the options name: its record's variant flags (the chain's
    --links, a list allowed), each value checked by the parameters it makes; [None] (its reference
    constants) without them."""
    names = parse_names("--sim", args.sim, sims.names())
    given = {column: getattr(args, column) for name in sims.names() for column, _ in sims.sim(name).variant_flags
             if getattr(args, column, None) is not None}
    if not given:
        return [None]
    records = [sims.sim(n) for n in names]
    flags = ", ".join(f"--{c.replace('_', '-')}" for c in given)
    if len(records) != 1 or not set(given) <= {c for c, _ in records[0].variant_flags}:
        raise ConfigError(f"{flags} is for one simulator that takes it, got --sim {args.sim}")
    (column, text), = given.items()  # one variant flag per simulator today (the chain's --links)
    return [records[0].params_of({column: v}) for v in parse_ints(f"--{column.replace('_', '-')}", text)]


def points_of(args, repeats=5, min_seconds=0.2) -> list[MeasurePoint]:
    from ..harness.sweep import grid_points

    return grid_points(grid_of(args), repeats=repeats, min_seconds=min_seconds, seed=seed_of(args))


def seed_of(args) -> int:
    m = INT_RE.match(str(args.seed))
    if not m:  # the range is checked with the other settings
        raise ConfigError(f"--seed must be an integer in [0, 2**32 - 1], got {args.seed!r}")
    return int(m.group(1))


def add_run_options(p: argparse.ArgumentParser):
    p.add_argument("--data-dir", default=None, help="data folder (default: $STUDYLIB_DATA_DIR, else the repository's data/)")
    p.add_argument("--ray", default=None, metavar="ADDRESS",
                   help="measure on a Ray cluster: 'local' (start one here), 'auto' or HOST:PORT of its head node")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")


def data_dir_of(args):
    from ..harness.presets import resolve_data_dir

    return resolve_data_dir(args.data_dir)


def log_line(msg: str) -> None:
    from tqdm.auto import tqdm

    tqdm.write(msg, file=sys.stderr)


def engine_of(args):
    """The Ray cluster of ``--ray`` (a context manager yielding the engine), or no engine."""
    if args.ray is None:
        return contextlib.nullcontext()
    try:
        from ..harness import ray_engine
    except ImportError as e:
        raise ConfigError(f"--ray needs the ray package (pip install 'ray==2.60.0'): {e}") from None
    return ray_engine.connect(args.ray, log=log_line)


def lost_exit(lost: int) -> int:
    if lost:
        log_line(f"{lost} point(s) lost with their worker or node; run the same command again to measure them")
    return 1 if lost else 0


def collected(rows, out, as_json: bool) -> list[dict]:
    """The rows of a measuring command, each written at once as a JSON line with --json (a long run
    shows what it has measured so far; the table comes at the end otherwise)."""
    kept = []
    for row in rows:
        kept.append(row)
        if as_json:
            out.write(json.dumps(row, default=str) + "\n")
            out.flush()
    return kept
