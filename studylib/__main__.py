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
    python -m studylib train --sim chain --links 2 --collector fused --seed 0

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
import sys

from .cli.machine import cmd_advise, cmd_machine
from .cli.measuring import cmd_atari, cmd_measure, cmd_peers, cmd_profile, cmd_sweep
from .cli.options import (EXIT_USAGE, OneLineParser, UsageError, add_point_options, add_run_options, collected,
                          data_dir_of, points_of, positive, positive_float)
from .errors import StudyError

# the chapters `measure` takes, as book.chapters.measured_chapters() names them (a test keeps the two
# the same; spelled out so that the command line starts without importing the book layer)
MEASURED_CHAPTERS = ("cartpole", "vectorization", "overheads", "fusion", "complexity", "beyond", "chain", "engines",
                     "atari", "model", "training", "robot")

_data_dir = data_dir_of  # the name tests and scripts import from here


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="python -m studylib", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", parser_class=OneLineParser)

    b = sub.add_parser("bench", help="measure data-collection throughput (samples/s)")
    add_point_options(b)
    b.add_argument("--repeats", default="5", help="timed regions per point (median reported)")
    b.add_argument("--min-seconds", default="0.2", help="minimum length of one timed region")
    b.add_argument("--json", action="store_true", help="one JSON object per measurement on stdout")

    s = sub.add_parser("sweep", help="measure a grid into data/<machine>/<name>.json (resumable)")
    s.add_argument("name", help="sweep name (file name under the machine's data folder)")
    add_point_options(s)
    s.add_argument("--repeats", default="3")
    s.add_argument("--min-seconds", default="0.2")
    add_run_options(s)
    s.add_argument("--json", action="store_true", help="print the sweep's rows as JSON lines")

    m = sub.add_parser("measure", help="run the book's measurement plans into data/<machine>/ (no book toolchain)")
    m.add_argument("--chapters", default="all", help=f"comma list of {', '.join(MEASURED_CHAPTERS)} (default: all)")
    m.add_argument("--preset", default=None, help="tiny, default or paper (default: $STUDYLIB_PRESET, else default)")
    add_run_options(m)

    pr = sub.add_parser("profile", help="time breakdown and backend-call / kernel-launch counts (Fig 5, 6)")
    add_point_options(pr, steps_required=False)
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
    add_run_options(a)

    sub.add_parser("machine", help="print this machine's provenance (JSON)")

    a = sub.add_parser("advise", help="the cost model: which of vectorization, an ML compiler and fusion pays for "
                                      "a simulator (studylib.harness.model.costmodel)")
    a.add_argument("--flops-per-step", required=True, help="flops of one environment-step of the simulator")
    a.add_argument("--bytes-per-step", required=True, help="bytes of state read and written per environment-step")
    a.add_argument("--num-envs", required=True, help="N: parallel environments")
    a.add_argument("--steps", required=True, help="K: steps per call")
    a.add_argument("--policy", default="none", help="none (simulation only) or mlp (our 4-64-64-2 MLP each step)")
    a.add_argument("--gpu-tflops", default=None, help="a GPU's published peak FP32 in TFLOP/s (with --gpu-bandwidth-gbs)")
    a.add_argument("--gpu-bandwidth-gbs", default=None, help="that GPU's memory bandwidth in GB/s")
    a.add_argument("--data-dir", default=None, help="data folder holding this machine's calibration (measured if absent)")
    sub.add_parser("train", help="train PPO on CartPole-v1 (or, with --sim chain, the n-link chain) with one collector until solved (see train --help)",
                   add_help=False)
    sub.add_parser("data", help="data check: each machine snapshot, the rows today's code would not reuse, "
                               "and whether one serves this machine",
                   add_help=False)
    return parser


def _cmd_bench(args, out) -> int:
    from .harness.measure import check_feasible, measure
    from .harness.model.roofline import CeilingShares
    from .harness.table import format_roofline_report, format_table

    points = points_of(args, positive("--repeats", args.repeats), positive_float("--min-seconds", args.min_seconds))
    for p in points:  # everything checkable is checked before the first measurement
        check_feasible(p)
    shares = CeilingShares()
    rows = collected((shares.add(measure(p)) for p in points), out, args.json)
    if not args.json:
        out.write(format_table(rows) + "\n" + format_roofline_report(rows))
    return 0


def main(argv=None) -> int:
    """Run the CLI; return the exit status (0 ok, 2 bad input or a point that cannot run here)."""
    out = sys.stdout
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["train"]:  # PPO training has its own options (studylib/train/cli.py)
        from .train import cli

        return cli.main(argv[1:])
    if argv[:1] == ["data"]:  # the data folder's snapshots and this machine's (studylib/cli/data.py)
        from .cli import data

        return data.main(argv[1:])
    try:
        args = build_parser().parse_args(argv)
        if args.command is None:
            raise UsageError("python -m studylib: choose a command: bench, sweep, measure, profile, peers, atari, machine, data, "
                             "advise, train (see --help)")
        return {"bench": _cmd_bench, "sweep": cmd_sweep, "measure": cmd_measure, "profile": cmd_profile,
                "peers": cmd_peers, "atari": cmd_atari, "machine": cmd_machine,
                "advise": cmd_advise}[args.command](args, out)
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
