"""The cost model's current version (``harness.model.costmodel.VERSION``) checked out of sample on
the chain: its predictions of points it has not seen first, the measurements after, in two runs.

    python benchmarks/chain_model_check.py predict    # saves the version's predictions, measures nothing
    git add data/ && git commit                        # (the snapshot: the predictions, committed first)
    python benchmarks/chain_model_check.py measure    # then measures the same points

The points are the chain chapter's grid (the default preset's N, K, caps and implementations,
every policy) at the version's n, ``book.pages.chain.model_check.MODEL_CHECK_LINKS[VERSION]``,
which neither the chapter's grid nor an earlier version's check holds. Both files are this machine's under the data folder (``$STUDYLIB_DATA_DIR``,
``data/.local/<machine>/``): ``chain_predictions.json`` and ``chain.json``, whose provenance
records when each row was made; a saved prediction is never rewritten, and ``measure`` refuses
to run where a point has no saved prediction. The chain chapter then reads them ("Predicted
before measured") where a machine's data hold them.
"""

from __future__ import annotations

import argparse


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("step", choices=("predict", "measure"))
    ap.add_argument("--preset", default="default")
    args = ap.parse_args(argv)

    from studylib.book.pages import chain
    from studylib.book.pages.chain.model_check import model_check_params
    from studylib.book.plans import _measured
    from studylib.book.presets import ChainParams
    from studylib.errors import ConfigError
    from studylib.harness.model import costmodel
    from studylib.harness.robotics import chain_study
    from studylib.harness.sweep import read_saved

    P = model_check_params(ChainParams.resolve("chain", preset=args.preset), costmodel.VERSION)
    points, dropped = chain.chain_points(P)
    if args.step == "predict":
        predicted = chain.chain_predictions(P, points)
        print(f"{len(predicted)} predictions saved (model version {sorted(set(predicted.get('model_version', [])))})"
              f" under {P.data_dir}")
        return
    saved = read_saved(chain_study.PREDICTIONS, points, chain_study.KEYING, data_dir=P.data_dir, machine=P.data_machine)
    if saved.skipped:
        raise ConfigError(f"{len(saved.skipped)} points have no saved prediction: run 'predict' (and commit) first")
    measured = _measured(chain_study.MEASUREMENTS, P, points, dropped)
    print(f"{len(measured)} points measured or read under {P.data_dir}")


if __name__ == "__main__":
    main()
