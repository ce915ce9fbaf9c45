"""The command line, by subcommand group (``python -m studylib``: ``studylib/__main__.py`` assembles the
parser): ``options`` (parsing and the shared options), ``measuring`` (sweep, measure, profile, peers,
atari), ``machine`` (machine, advise), ``data`` (data check)."""
