"""``python -m studylib.train ...`` (see studylib/train/cli.py)."""

from .cli import main

raise SystemExit(main())
