"""The measuring subcommands: ``sweep`` (a grid into a resumable data file), ``measure`` (the
book's plans), ``profile`` (Fig 5/6's breakdown), ``peers`` (ours against the peer libraries) and
``atari`` (frames per second of the Atari engines)."""

from __future__ import annotations

import json

from ..errors import ConfigError
from ..settings import MeasurePoint
from .options import (INT_RE, collected, data_dir_of, engine_of, log_line, lost_exit, parse_ints, parse_names,
                      points_of, positive, positive_float)


def cmd_sweep(args, out) -> int:
    from ..harness.data.store import check_name
    from ..harness.sweep import session, sweep
    from ..harness.table import format_table

    check_name(args.name)
    points = points_of(args, positive("--repeats", args.repeats), positive_float("--min-seconds", args.min_seconds))
    data_dir = data_dir_of(args)
    with engine_of(args) as engine, session(engine=engine):
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
    return lost_exit(len(df.attrs.get("lost", [])))


def cmd_measure(args, out) -> int:
    """The chapters' plans (``book.chapters.CHAPTERS``) at a preset: what a book build measures."""
    from ..book import brax_available, resolve_preset
    from ..book.chapters import CHAPTERS, measured_chapters
    from ..harness.sweep import session

    chapters = parse_names("--chapters", args.chapters, tuple(ch.name for ch in measured_chapters()), allow_all=True)
    preset = resolve_preset(args.preset)
    data_dir = data_dir_of(args)
    chapter_params = {ch: CHAPTERS[ch].params(preset=preset, data_dir=data_dir) for ch in chapters}  # all checked first
    lost = 0

    def report(name, result):
        nonlocal lost
        lost += len(result.lost)
        out.write(f"{result.reuse_line(name)}; {len(result.skipped)} skipped, {len(result.lost)} lost -> "
                  f"{result.path}\n")
        out.flush()

    with engine_of(args) as engine, session(engine=engine, progress=not args.no_progress, log=log_line, report=report):
        for ch in chapters:
            log_line(f"{ch} (preset {preset})")
            if ch == "cartpole" and not brax_available()[0]:
                log_line(f"fig2_brax: not measured ({brax_available()[1]})")
            for plan in CHAPTERS[ch].plans:
                plan(chapter_params[ch])
    return lost_exit(lost)


def cmd_profile(args, out) -> int:
    from ..harness import profiler
    from ..harness.measure import check_feasible
    from ..harness.table import format_profile_table

    points = points_of(args)
    for p in points:
        check_feasible(p)
    groups = {}  # one set of environments per (settings, policy), profiled at every K
    for p in points:
        groups.setdefault((p.env, p.policy), []).append(p.steps)
    ordered = sorted(groups.items(), key=lambda g: [str(v) for v in _group_order(*g[0])])
    rows = collected((row for (env, policy), steps in ordered
                      for row in profiler.profile_sweep(env, steps, policy).to_dict("records")), out, args.json)
    if not args.json:
        out.write(format_profile_table(rows) + "\n")
        kinds = sorted({r["kernel_counter"] for r in rows})
        out.write("kernel_launches counted as: " + "; ".join(kinds) + "\n")
    return 0


def _group_order(env, policy) -> tuple:
    return (env.impl, env.num_envs, env.state_factor, env.compute_factor, policy, env.device)


def cmd_peers(args, out) -> int:
    """cpp (K steps per call, no policy) against gymnasium's CartPoleVectorEnv, one N."""
    from ..harness.measure import check_feasible, measure

    m = INT_RE.match(args.log2_num_envs)
    if not m:
        raise ConfigError(f"--log2-num-envs must be a non-negative integer, got {args.log2_num_envs!r}")
    log2_n = int(m.group(1))
    n = 2**log2_n
    ours = MeasurePoint.of("cpp", n, positive("--steps", args.steps), policy="none", repeats=3)
    peer = MeasurePoint.of("gymnasium-vector", n, positive("--peer-steps", args.peer_steps), policy="none", repeats=3)
    for p in (ours, peer):
        check_feasible(p)
    ours_sps, peer_sps = measure(ours)["samples_per_s"], measure(peer)["samples_per_s"]
    out.write(f"N=2^{log2_n} S=1 C=1 policy=none device=cpu\n"
              f"  cpp, K={ours.steps} per call      {ours_sps:12.3e} steps/s\n"
              f"  gymnasium CartPoleVectorEnv {peer_sps:12.3e} steps/s\n"
              f"  ratio                       {ours_sps / peer_sps:12.1f}x\n")
    return 0


def cmd_atari(args, out) -> int:
    """Atari frames per second (``studylib.harness.atari.frames``): every point is checked (game id, ROM, envpool
    task) before the first measurement, so bad input writes nothing."""
    from ..harness.atari import frames as atari
    from ..harness.atari.engines import ENGINES
    from ..book.plans import atari_sweep
    from ..harness.data.store import check_name
    from ..harness.sweep import session

    check_name(args.name)
    games = [g.strip() for g in args.games.split(",") if g.strip()]
    impls = parse_names("--impl", args.impl, atari.IMPLS)
    policies = parse_names("--policy", args.policy, atari.POLICIES)
    sizes = parse_ints("--num-envs", args.num_envs)
    repeats, min_seconds = positive("--repeats", args.repeats), positive_float("--min-seconds", args.min_seconds)
    points = [atari.AtariPoint(g, impl, n, p, repeats=repeats, min_seconds=min_seconds) for g in games
              for impl in impls for n in (sizes if ENGINES[impl].vectorized else (1,)) for p in policies]
    if not points:
        raise ConfigError("--games names no game")
    data_dir = data_dir_of(args)
    with engine_of(args) as engine, session(engine=engine, progress=not args.no_progress):
        df = atari_sweep(args.name, points, data_dir)
    for r in df.to_dict("records"):
        out.write(f"{r['game']:>12} {r['impl']:>10} N={r['num_envs']:<5} policy={r['policy']:<4} "
                  f"{r['frames_per_s']:10.4g} frames/s ({r['frames_per_s_min']:.3g}..{r['frames_per_s_max']:.3g})\n")
    out.write(f"atari {args.name}: {len(df)} point(s) measured or resumed (frames = emulator frames, 4 per agent "
              f"step) -> {df.attrs.get('path')}\n")
    return 0
