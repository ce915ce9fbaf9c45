"""``python -m studylib.book rerun <chapter> ...`` (see ``studylib.book.rerun``)."""

from .rerun import main

raise SystemExit(main())
