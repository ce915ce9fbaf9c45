"""Sphinx extension: Altair charts that render offline.

Altair's default HTML output loads vega, vega-lite and vega-embed from a CDN unless they are
already on the page (it checks ``VEGA_DEBUG.<lib>_version`` and then uses the global
``vegaEmbed``). This extension writes one bundle of the three libraries (built by
vl-convert-python, matched to the installed Altair's Vega-Lite version) into the site's
``_static/`` and loads it synchronously in every page's <head>, before any chart script runs.
Cost: ~0.9 MB once per site. The bundle is cached in ``_build/.vega-bundle/`` by version.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

BUNDLE = "vega-offline.js"


def _versions() -> dict:
    import altair as alt

    # The exact strings Altair's template compares against (see altair/utils/html.py).
    return {
        "vega_version": alt.VEGA_VERSION,
        "vegalite_version": alt.VEGALITE_VERSION,
        "vegaembed_version": alt.VEGAEMBED_VERSION,
    }


def _bundle_text() -> str:
    import altair as alt
    import vl_convert as vlc

    vl = ".".join(alt.VEGALITE_VERSION.split(".")[:2])
    snippet = (
        "window.vegaEmbed = vegaEmbed; window.vega = vega; window.vegaLite = vegaLite;\n"
        f"window.VEGA_DEBUG = Object.assign(window.VEGA_DEBUG || {{}}, {json.dumps(_versions())});\n"
    )
    return vlc.javascript_bundle(snippet, vl_version=vl)


def _cached_bundle(cache_dir: Path) -> Path:
    import altair as alt
    import vl_convert as vlc

    key = f"altair-{alt.__version__}_vlc-{vlc.__version__ if hasattr(vlc, '__version__') else vlc.get_vega_version()}"
    path = cache_dir / key / BUNDLE
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(_bundle_text(), encoding="utf-8")
        tmp.replace(path)
    return path


def _copy_bundle(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    src = _cached_bundle(Path(app.outdir).parent / ".vega-bundle")
    dest = Path(app.outdir) / "_static" / BUNDLE
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dest)


def setup(app):
    # priority < 500: before Sphinx's own scripts; no async/defer, so it runs before chart scripts.
    app.add_js_file(BUNDLE, priority=100)
    app.connect("build-finished", _copy_bundle)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
