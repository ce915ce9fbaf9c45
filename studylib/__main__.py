"""Command line: ``python -m studylib bench|sweep|measure|profile|peers|machine|train ...``.

    python -m studylib bench --impl jax --num-envs 4096 --steps 1,100 [--policy mlp,none] [--json]
    python -m studylib sweep fig4 --impl cpp,torch,jax --num-envs 2^8..2^16 --steps 1,100 [--ray ADDRESS]
    python -m studylib measure [--chapters fusion,complexity] [--preset paper] [--ray ADDRESS]
    python -m studylib profile --impl jax,torch --num-envs 4096 --steps 1,10,100
    python -m studylib peers [--log2-num-envs 20 --steps 1000 --peer-steps 50]
    python -m studylib atari --games breakout,pong --impl ale-vector,envpool --num-envs 1,4,16 [--policy none,cnn]
    python -m studylib machine
    python -m studylib advise --flops-per-step 26 --bytes-per-step 48 --num-envs 2^20 --steps 1000 \
        [--gpu-tflops 67 --gpu-bandwidth-gbs 3350]
    python -m studylib train --collector fused --num-envs 4096 --seed 0 [--json] [--save policy.npz]

``measure`` runs the book's measurement plans (the same points and files as ``jupyter-book build
book/``, which then only reads them) without the book's toolchain. ``sweep`` and ``measure`` write
into ``--data-dir``, else ``$STUDYLIB_DATA_DIR``, else the repository's ``data/``; ``--ray local``
(a one-node cluster started here) or ``--ray HOST:PORT`` (a running cluster) measures every point
as a Ray task holding a whole node (``studylib.harness.ray_engine``).

Every numeric option takes one value, a comma list (``1,10,100``) or a power-of-two range
(``2^8..2^16``, both ends included); ``--impl`` and ``--policy`` take comma lists (``all`` for
every implementation). Several values measure their cartesian product. Bad input prints one line
on stderr and exits with status 2; nothing is measured or written before the input is checked.
The options become ``MeasurePoint``s (``studylib.settings``), checked once where they are built,
and the harness (``studylib.harness``) measures them.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import sys

from .errors import ConfigError, StudyError
from .settings import IMPLEMENTATIONS, PEERS, POLICIES, MeasurePoint

EXIT_USAGE = 2


class UsageError(StudyError):
    """argparse's complaints, turned into one line."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse would print the usage block and exit; we want one line
        raise UsageError(f"{self.prog}: {message}")


_INT = re.compile(r"^\s*(\d+)\s*$")
_POW = re.compile(r"^\s*2\s*(?:\^|\*\*)\s*(\d+)\s*$")


def _one_int(flag: str, token: str) -> int:
    m = _INT.match(token)
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


def _positive_float(flag: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ConfigError(f"{flag} must be a positive number, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise ConfigError(f"{flag} must be a positive number, got {text!r}")
    return value


def _add_point_options(p: argparse.ArgumentParser, steps_required=True):
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


def _grid(args) -> dict:
    return {
        "impl": parse_names("--impl", args.impl, IMPLEMENTATIONS, allow_all=True, also_valid=PEERS),
        "num_envs": parse_ints("--num-envs", args.num_envs),
        "steps": parse_ints("--steps", args.steps),
        "state_factor": parse_ints("--state-factor", args.state_factor),
        "compute_factor": parse_ints("--compute-factor", args.compute_factor),
        "policy": parse_names("--policy", args.policy, POLICIES),
        "device": [None] if args.device is None else parse_names("--device", args.device, ("cpu", "cuda")),
    }


def _points(args, repeats=5, min_seconds=0.2) -> list[MeasurePoint]:
    from .harness.sweep import grid_points

    return grid_points(_grid(args), repeats=repeats, min_seconds=min_seconds, seed=_seed(args))


def _seed(args) -> int:
    m = _INT.match(str(args.seed))
    if not m:  # the range is checked with the other settings
        raise ConfigError(f"--seed must be an integer in [0, 2**32 - 1], got {args.seed!r}")
    return int(m.group(1))


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m studylib", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)

    b = sub.add_parser("bench", help="measure data-collection throughput (samples/s)")
    _add_point_options(b)
    b.add_argument("--repeats", default="5", help="timed regions per point (median reported)")
    b.add_argument("--min-seconds", default="0.2", help="minimum length of one timed region")
    b.add_argument("--json", action="store_true", help="one JSON object per measurement on stdout")

    s = sub.add_parser("sweep", help="measure a grid into data/<machine>/<name>.json (resumable)")
    s.add_argument("name", help="sweep name (file name under the machine's data folder)")
    _add_point_options(s)
    s.add_argument("--repeats", default="3")
    s.add_argument("--min-seconds", default="0.2")
    _add_run_options(s)
    s.add_argument("--json", action="store_true", help="print the sweep's rows as JSON lines")

    m = sub.add_parser("measure", help="run the book's measurement plans into data/<machine>/ (no book toolchain)")
    m.add_argument("--chapters", default="all", help="comma list of cartpole, vectorization, overheads, fusion, "
                                                     "complexity, beyond, atari, model, training (default: all)")
    m.add_argument("--preset", default=None, help="tiny, default or paper (default: $STUDYLIB_PRESET, else default)")
    _add_run_options(m)

    pr = sub.add_parser("profile", help="time breakdown and backend-call / kernel-launch counts (Fig 5, 6)")
    _add_point_options(pr, steps_required=False)
    pr.add_argument("--json", action="store_true")

    pe = sub.add_parser("peers", help="cpp (K steps per call, no policy) vs gymnasium's CartPoleVectorEnv")
    pe.add_argument("--log2-num-envs", default="20", help="N = 2^this")
    pe.add_argument("--steps", default="1000", help="K per call for cpp")
    pe.add_argument("--peer-steps", default="50", help="K per call for the (slower) peer")

    a = sub.add_parser("atari", help="Atari frames/s (emulator frames) into data/<machine>/<name>.json (resumable)")
    a.add_argument("--games", default="breakout,pong", help="comma list of ALE game ids (breakout, pong, ...)")
    a.add_argument("--impl", default="ale-vector,envpool", help="comma list of gym, gym-async, ale-vector, envpool")
    a.add_argument("--num-envs", default="1,4,16", help="N: 1,4,16 or 2^0..2^8 (gym: 1 only)")
    a.add_argument("--policy", default="none,cnn", help="none (random actions), cnn (Nature CNN) or both")
    a.add_argument("--repeats", default="3")
    a.add_argument("--min-seconds", default="0.2")
    a.add_argument("--name", default="atari_cli", help="data file name under the machine's data folder")
    _add_run_options(a)

    sub.add_parser("machine", help="print this machine's provenance (JSON)")

    a = sub.add_parser("advise", help="the cost model: which of vectorization, an ML compiler and fusion pays for "
                                      "a simulator (studylib.harness.costmodel)")
    a.add_argument("--flops-per-step", required=True, help="flops of one environment-step of the simulator")
    a.add_argument("--bytes-per-step", required=True, help="bytes of state read and written per environment-step")
    a.add_argument("--num-envs", required=True, help="N: parallel environments")
    a.add_argument("--steps", required=True, help="K: steps per call")
    a.add_argument("--policy", default="none", help="none (simulation only) or mlp (our 4-64-64-2 MLP each step)")
    a.add_argument("--gpu-tflops", default=None, help="a GPU's published peak FP32 in TFLOP/s (with --gpu-bandwidth-gbs)")
    a.add_argument("--gpu-bandwidth-gbs", default=None, help="that GPU's memory bandwidth in GB/s")
    a.add_argument("--data-dir", default=None, help="data folder holding this machine's calibration (measured if absent)")
    sub.add_parser("train", help="train PPO on CartPole-v1 with one collector until solved (see train --help)",
                   add_help=False)
    sub.add_parser("data", help="data check: each machine snapshot and the rows today's code would not reuse",
                   add_help=False)
    return parser


def _add_run_options(p: argparse.ArgumentParser):
    p.add_argument("--data-dir", default=None, help="data folder (default: $STUDYLIB_DATA_DIR, else the repository's data/)")
    p.add_argument("--ray", default=None, metavar="ADDRESS",
                   help="measure on a Ray cluster: 'local' (start one here), 'auto' or HOST:PORT of its head node")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")


def _data_dir(args):
    from .harness.presets import resolve_data_dir

    return resolve_data_dir(args.data_dir)


def _stderr(msg: str) -> None:
    from tqdm.auto import tqdm

    tqdm.write(msg, file=sys.stderr)


def _engine(args):
    """The Ray cluster of ``--ray`` (a context manager yielding the engine), or no engine."""
    if args.ray is None:
        return contextlib.nullcontext()
    try:
        from .harness import ray_engine
    except ImportError as e:
        raise ConfigError(f"--ray needs the ray package (pip install 'ray==2.60.0'): {e}") from None
    return ray_engine.connect(args.ray, log=_stderr)


def _lost_exit(lost: int) -> int:
    if lost:
        _stderr(f"{lost} point(s) lost with their worker or node; run the same command again to measure them")
    return 1 if lost else 0


def _positive(flag, text) -> int:
    values = parse_ints(flag, text)
    if len(values) != 1:
        raise ConfigError(f"{flag} takes one positive integer, got {text!r}")
    return values[0]


def _cmd_bench(args, out) -> int:
    from .harness.measure import check_feasible, measure
    from .harness.table import format_table

    points = _points(args, _positive("--repeats", args.repeats), _positive_float("--min-seconds", args.min_seconds))
    for p in points:  # everything checkable is checked before the first measurement
        check_feasible(p)
    rows = []
    for p in points:
        row = measure(p)
        rows.append(row)
        if args.json:
            out.write(json.dumps(row, default=str) + "\n")
            out.flush()
    if not args.json:
        out.write(format_table(rows) + "\n")
    return 0


def _cmd_sweep(args, out) -> int:
    from .harness.store import check_name
    from .harness.sweep import session, sweep
    from .harness.table import format_table

    check_name(args.name)
    points = _points(args, _positive("--repeats", args.repeats), _positive_float("--min-seconds", args.min_seconds))
    data_dir = _data_dir(args)
    with _engine(args) as engine, session(engine=engine):
        df = sweep(args.name, points, data_dir=data_dir, progress=not args.no_progress)
    rows = df.to_dict("records")
    if args.json:
        for row in rows:
            out.write(json.dumps(row, default=str) + "\n")
    else:
        if rows:
            out.write(format_table(rows) + "\n")
        skipped = df.attrs.get("skipped", [])
        out.write(f"sweep {args.name}: {df.attrs.get('reused', 0)} point(s) reused, {df.attrs.get('measured', 0)} "
                  f"measured, {len(skipped)} skipped -> {df.attrs.get('path')}\n")
    return _lost_exit(len(df.attrs.get("lost", [])))


def _cmd_measure(args, out) -> int:
    """The chapters' plans (``book.chapters.CHAPTERS``) at a preset: what a book build measures."""
    from .book import brax_available, resolve_preset
    from .book.chapters import CHAPTERS, measured_chapters
    from .harness.sweep import session

    chapters = parse_names("--chapters", args.chapters, tuple(ch.name for ch in measured_chapters()), allow_all=True)
    preset = resolve_preset(args.preset)
    data_dir = _data_dir(args)
    chapter_params = {ch: CHAPTERS[ch].params(preset=preset, data_dir=data_dir) for ch in chapters}  # all checked first
    lost = 0

    def report(name, result):
        nonlocal lost
        lost += len(result.lost)
        out.write(f"{result.reuse_line(name)}; {len(result.skipped)} skipped, {len(result.lost)} lost -> "
                  f"{result.path}\n")
        out.flush()

    with _engine(args) as engine, session(engine=engine, progress=not args.no_progress, log=_stderr, report=report):
        for ch in chapters:
            _stderr(f"{ch} (preset {preset})")
            if ch == "cartpole" and not brax_available()[0]:
                _stderr(f"fig2_brax: not measured ({brax_available()[1]})")
            for plan in CHAPTERS[ch].plans:
                plan(chapter_params[ch])
    return _lost_exit(lost)


def _cmd_profile(args, out) -> int:
    from .harness import profiler
    from .harness.measure import check_feasible
    from .harness.table import format_profile_table

    points = _points(args)
    for p in points:
        check_feasible(p)
    rows = []
    groups = {}  # one set of environments per (settings, policy), profiled at every K
    for p in points:
        groups.setdefault((p.env, p.policy), []).append(p.steps)
    for (env, policy), steps in sorted(groups.items(), key=lambda g: [str(v) for v in _group_order(*g[0])]):
        for row in profiler.profile_sweep(env, steps, policy).to_dict("records"):
            rows.append(row)
            if args.json:
                out.write(json.dumps(row, default=str) + "\n")
                out.flush()
    if not args.json:
        out.write(format_profile_table(rows) + "\n")
        kinds = sorted({r["kernel_counter"] for r in rows})
        out.write("kernel_launches counted as: " + "; ".join(kinds) + "\n")
    return 0


def _group_order(env, policy) -> tuple:
    return (env.impl, env.num_envs, env.state_factor, env.compute_factor, policy, env.device)


def _cmd_peers(args, out) -> int:
    """cpp (K steps per call, no policy) against gymnasium's CartPoleVectorEnv, one N."""
    from .harness.measure import check_feasible, measure

    m = _INT.match(args.log2_num_envs)
    if not m:
        raise ConfigError(f"--log2-num-envs must be a non-negative integer, got {args.log2_num_envs!r}")
    log2_n = int(m.group(1))
    n = 2**log2_n
    ours = MeasurePoint.of("cpp", n, _positive("--steps", args.steps), policy="none", repeats=3)
    peer = MeasurePoint.of("gymnasium-vector", n, _positive("--peer-steps", args.peer_steps), policy="none", repeats=3)
    for p in (ours, peer):
        check_feasible(p)
    ours_sps, peer_sps = measure(ours)["samples_per_s"], measure(peer)["samples_per_s"]
    out.write(f"N=2^{log2_n} S=1 C=1 policy=none device=cpu\n"
              f"  cpp, K={ours.steps} per call      {ours_sps:12.3e} steps/s\n"
              f"  gymnasium CartPoleVectorEnv {peer_sps:12.3e} steps/s\n"
              f"  ratio                       {ours_sps / peer_sps:12.1f}x\n")
    return 0


def _cmd_atari(args, out) -> int:
    """Atari frames per second (``studylib.harness.atari``): every point is checked (game id, ROM, envpool
    task) before the first measurement, so bad input writes nothing."""
    from .harness import atari
    from .harness.atari_engines import ENGINES
    from .book.plans import atari_sweep
    from .harness.store import check_name
    from .harness.sweep import session

    check_name(args.name)
    games = [g.strip() for g in args.games.split(",") if g.strip()]
    impls = parse_names("--impl", args.impl, atari.IMPLS)
    policies = parse_names("--policy", args.policy, atari.POLICIES)
    sizes = parse_ints("--num-envs", args.num_envs)
    repeats, min_seconds = _positive("--repeats", args.repeats), _positive_float("--min-seconds", args.min_seconds)
    points = [atari.AtariPoint(g, impl, n, p, repeats=repeats, min_seconds=min_seconds) for g in games
              for impl in impls for n in (sizes if ENGINES[impl].vectorized else (1,)) for p in policies]
    if not points:
        raise ConfigError("--games names no game")
    data_dir = _data_dir(args)
    with _engine(args) as engine, session(engine=engine, progress=not args.no_progress):
        df = atari_sweep(args.name, points, data_dir)
    for r in df.to_dict("records"):
        out.write(f"{r['game']:>12} {r['impl']:>10} N={r['num_envs']:<5} policy={r['policy']:<4} "
                  f"{r['frames_per_s']:10.4g} frames/s ({r['frames_per_s_min']:.3g}..{r['frames_per_s_max']:.3g})\n")
    out.write(f"atari {args.name}: {len(df)} point(s) measured or resumed (frames = emulator frames, 4 per agent "
              f"step) -> {df.attrs.get('path')}\n")
    return 0


def _cmd_machine(args, out) -> int:
    from .harness.provenance import machine_info

    out.write(json.dumps(machine_info(), indent=1) + "\n")
    return 0


def _cmd_advise(args, out) -> int:
    """The cost model's advice for one simulator, on this machine (calibrated by microbenchmarks,
    measured once into the data folder) or with a GPU's published figures (a projection)."""
    from .harness import costmodel
    from .harness import calibrate

    flops = _nonnegative_float("--flops-per-step", args.flops_per_step)
    nbytes = _nonnegative_float("--bytes-per-step", args.bytes_per_step)
    n, k = _positive("--num-envs", args.num_envs), _positive("--steps", args.steps)
    policy = parse_names("--policy", args.policy, POLICIES)
    if len(policy) != 1:
        raise ConfigError(f"--policy takes one of {', '.join(POLICIES)}, got {args.policy!r}")
    if (args.gpu_tflops is None) != (args.gpu_bandwidth_gbs is None):
        raise ConfigError("--gpu-tflops and --gpu-bandwidth-gbs go together")
    gpu = None
    if args.gpu_tflops is not None:
        gpu = costmodel.Processor(_positive_float("--gpu-tflops", args.gpu_tflops) * 1e12,
                                  _positive_float("--gpu-bandwidth-gbs", args.gpu_bandwidth_gbs) * 1e9,
                                  launch_s=costmodel.LAUNCH_S, is_gpu=True)
    data_dir = _data_dir(args)
    machine = costmodel.machine_from_calibration(calibrate.calibration_rows(data_dir), calibrate.ceiling_rows(data_dir))
    label = "this machine (measured microbenchmarks)"
    if gpu is not None:
        machine = costmodel.with_gpu(machine, gpu, "this host with the GPU given", "figures given on the command line")
        label = (f"this host with a GPU of {args.gpu_tflops} TFLOP/s and {args.gpu_bandwidth_gbs} GB/s: "
                 "projection (model), not a measurement")
    out.write(f"simulator: {flops:g} flops and {nbytes:g} bytes per environment-step, N={n}, K={k}, policy {policy[0]}\n"
              f"on {label}\n")
    for a in costmodel.advise(machine, flops_per_step=flops, bytes_per_step=nbytes, num_envs=n, steps=k,
                              policy=policy[0]):
        verdict = "pays" if a.pays else "does not pay"
        out.write(f"  {a.optimization:<14} {verdict:<13} {a.speedup:10.3g}x  "
                  f"({a.faster.impl}: {a.faster.samples_per_s:.3g} samples/s, {a.faster.regime}; "
                  f"{a.slower.impl}: {a.slower.samples_per_s:.3g}, {a.slower.regime})\n")
    return 0


def _nonnegative_float(flag: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ConfigError(f"{flag} must be a non-negative number, got {text!r}") from None
    if not 0 <= value < float("inf"):
        raise ConfigError(f"{flag} must be a non-negative number, got {text!r}")
    return value


def main(argv=None) -> int:
    """Run the CLI; return the exit status (0 ok, 2 bad input or a point that cannot run here)."""
    out = sys.stdout
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["train"]:  # PPO training has its own options (studylib/train/cli.py)
        from .train import cli

        return cli.main(argv[1:])
    if argv[:1] == ["data"]:  # the data folder's snapshots (studylib/harness/snapshots.py)
        from .harness import snapshots

        return snapshots.main(argv[1:])
    try:
        args = build_parser().parse_args(argv)
        if args.command is None:
            raise UsageError("python -m studylib: choose a command: bench, sweep, measure, profile, peers, atari, machine, data, "
                             "advise, train (see --help)")
        return {"bench": _cmd_bench, "sweep": _cmd_sweep, "measure": _cmd_measure, "profile": _cmd_profile,
                "peers": _cmd_peers, "atari": _cmd_atari, "machine": _cmd_machine,
                "advise": _cmd_advise}[args.command](args, out)
    except SystemExit as e:  # --help
        return e.code if isinstance(e.code, int) else 0
    except StudyError as e:
        print("error: " + " ".join(str(e).split()), file=sys.stderr)
        return EXIT_USAGE
    except RuntimeError as e:
        from .native import NativeBuildError

        if isinstance(e, NativeBuildError):
            print(f"error: {str(e).splitlines()[0]}", file=sys.stderr)
            return EXIT_USAGE
        raise
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
