"""``python -m studylib data check [--data-dir DIR]``: the machine snapshots under the data folder,
whether today's code reuses them (``harness.data.snapshots``), and whether one serves this machine.

Every snapshot gets one line (current or STALE, and why); then this machine's key (the host it
poses as, under ``$STUDYLIB_CPUINFO``), whether a committed snapshot has that key, and the rows a
build at the preset ``$STUDYLIB_PRESET`` names (else "default") would measure: the chapters' plans
run under ``sweep.READ_ONLY``, so what counts as reused is decided by the store itself, and nothing
is measured or written. Exit status: 1 when a snapshot is stale, 2 on bad input, else 0 (a machine
no snapshot serves is not an error: a build measures it).
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict

from ..errors import StudyError
from .options import EXIT_USAGE, OneLineParser, UsageError


def unmeasured(preset: str, data_dir) -> tuple[dict, dict]:
    """What a build of every measured chapter at ``preset`` into ``data_dir`` would measure on this
    machine: items per data file (an item two chapters ask for counted once), and the chapters
    whose plans cannot be laid out before other rows are measured (chapter -> why; their
    predictions need this machine's calibration, say)."""
    from ..book.chapters import measured_chapters
    from ..harness.sweep import READ_ONLY, session

    items, blocked = defaultdict(set), {}

    def report(name, result):
        items[name] |= {json.dumps(s, sort_keys=True, default=str) for s in result.skipped}

    with session(engine=READ_ONLY, progress=False, log=lambda msg: None, report=report):
        for ch in measured_chapters():
            P = ch.params(preset=preset, data_dir=data_dir)
            for plan in ch.plans:
                try:
                    plan(P)
                except StudyError as e:
                    blocked[ch.name] = " ".join(str(e).split())
    return {name: len(found) for name, found in items.items() if found}, blocked


def this_machine(data_dir) -> list[str]:
    """The lines on this machine: its key, whether a committed snapshot serves it, and what a
    build would measure."""
    from ..harness.data import provenance
    from ..harness.presets import resolve_preset
    from ..harness.data.store import is_tracked

    key, posed = provenance.machine_key(), provenance.posed_cpuinfo()
    folder = data_dir / key
    preset = resolve_preset()
    counts, blocked = unmeasured(preset, data_dir)
    served = (f"{'partly' if counts or blocked else 'yes'}, by the committed snapshot {key}" if is_tracked(folder)
              else f"no (its folder {folder} is not committed)" if (folder / "machine.json").is_file()
              else "no (no committed snapshot has this key)")
    lines = [f"this machine: {key}" + (f" (posing as the host of $STUDYLIB_CPUINFO={posed})" if posed else ""),
             f"  served: {served}",
             f"  a build at preset {preset!r} would measure " + (
                 f"{sum(counts.values())} rows: " + ", ".join(f"{name} {n}" for name, n in counts.items())
                 if counts else "none")]
    lines += [f"  and the rows of {ch}, laid out once those are measured ({why})" for ch, why in blocked.items()]
    return lines


def main(argv=None, out=None) -> int:
    """Check the snapshots, then this machine; exit status as the module says."""
    from ..harness.presets import resolve_data_dir
    from ..harness.data.snapshots import snapshots

    out = out or sys.stdout
    parser = OneLineParser(prog="python -m studylib data", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", parser_class=OneLineParser)
    check = sub.add_parser("check", help="list the machine snapshots, the rows today's code would not reuse, "
                                         "and whether a snapshot serves this machine")
    check.add_argument("--data-dir", default=None,
                       help="data folder (default: $STUDYLIB_DATA_DIR, else the repository's data/)")
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help
        return e.code if isinstance(e.code, int) else 0
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    if args.command != "check":
        print("error: python -m studylib data: choose a command: check", file=sys.stderr)
        return EXIT_USAGE
    root = resolve_data_dir(args.data_dir)
    if not root.is_dir():
        print(f"error: no data folder {str(root)!r}", file=sys.stderr)
        return 2
    found = snapshots(root)
    for s in found:
        print(s.line(), file=out)
    if not found:
        print(f"no machine snapshot in {root}", file=out)
    stale = [s.key for s in found if not s.current]
    print(f"{len(found) - len(stale)} of {len(found)} snapshot(s) current" +
          (f"; stale: {', '.join(stale)}" if stale else ""), file=out)
    try:
        print("\n".join(this_machine(root)), file=out)
    except StudyError as e:
        print("error: " + " ".join(str(e).split()), file=sys.stderr)
        return 2
    return 1 if stale else 0
