"""Side views of MuJoCo models, drawn from MuJoCo's own kinematics: no renderer, no OpenGL.

``side_view`` compiles (or takes) a model, sets its pose, runs ``mj_forward`` and reads each
geom's world position and orientation (``data.geom_xpos``, ``data.geom_xmat``) and its size
(``model.geom_size``), projected onto the x–z plane (seen from −y: x to the right, z up). Each
geom becomes one segment with a radius:

* a capsule or a cylinder: its axis (local z) from −h to +h, h = size[1], radius size[0];
* a sphere: a point, radius size[0];
* a box or an ellipsoid: the local axis whose projection is longest, radius the largest
  projection of the other two (a box is exact when it is seen square on);
* a plane that some geom can touch (the floor under a walker): a ground line at its height;
  scenery that collides with nothing (the chain's floor 3 m below the rail), meshes, height fields
  and invisible geoms are left out.

``picture`` draws one or several such views as an Altair chart at one scale in x and z (metres per
pixel the same in both), capsules as round-capped strokes as thick as the geom, spheres as discs,
in the model's own colours, a floor as a grey line. Everything is computed from the compiled
model: the same picture on every machine, offline.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

COLUMNS = ["geom", "kind", "x0", "z0", "x1", "z1", "radius", "depth", "color"]
DEFAULT_RGBA = (0.5, 0.5, 0.5, 1.0)  # MuJoCo's geom rgba when none is given (a material's then shows)
HIDDEN_GROUPS = 3  # MuJoCo's viewer shows geom groups 0-2 by default
GROUND_COLOR = "#999999"  # a floor is drawn as a grey line, whatever its (usually pale) colour


def _compiled(model):
    """An ``MjModel`` from an ``MjModel`` or MJCF text."""
    import mujoco

    if isinstance(model, mujoco.MjModel):
        return model
    if isinstance(model, str):
        return mujoco.MjModel.from_xml_string(model)
    raise TypeError(f"a MuJoCo model or MJCF text, got {type(model).__name__}")


def _hex(rgba) -> str:
    r, g, b = (int(round(255 * float(np.clip(c, 0.0, 1.0)))) for c in rgba[:3])
    return f"#{r:02x}{g:02x}{b:02x}"


def _touchable(m, g: int) -> bool:
    """Whether geom ``g`` passes the contype/conaffinity test with some geom of another body."""
    ct, ca, body = m.geom_contype, m.geom_conaffinity, m.geom_bodyid
    other = body != body[g]
    return bool(np.any(other & (((ct[g] & ca) != 0) | ((ca[g] & ct) != 0))))


def side_view(model, qpos=None) -> pd.DataFrame:
    """One row per visible geom of ``model`` (an ``MjModel`` or MJCF text) at ``qpos`` (None: the
    model's ``qpos0``, as ``mj_resetData`` leaves it): ``COLUMNS``, the segment (x0, z0)–(x1, z1)
    in metres, its radius, ``depth`` its centre's y (larger is farther from the viewer) and
    ``color`` the geom's (or its material's) colour. A ground plane is a row of kind "plane" with
    z0 = z1 its height and x0, x1 NaN (``picture`` spans the panel with it)."""
    import mujoco

    m = _compiled(model)
    d = mujoco.MjData(m)
    mujoco.mj_resetData(m, d)
    if qpos is not None:
        qpos = np.asarray(qpos, dtype=np.float64)
        if qpos.shape != (m.nq,):
            raise ValueError(f"qpos has shape {qpos.shape}, the model has nq = {m.nq}")
        d.qpos[:] = qpos
    mujoco.mj_forward(m, d)
    G = mujoco.mjtGeom
    rows = []
    for g in range(m.ngeom):
        rgba = m.geom_rgba[g]
        if m.geom_matid[g] >= 0 and np.allclose(rgba, DEFAULT_RGBA):
            rgba = m.mat_rgba[m.geom_matid[g]]
        if rgba[3] == 0 or m.geom_group[g] >= HIDDEN_GROUPS:
            continue
        name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_GEOM, g) or f"geom{g}"
        kind, size = int(m.geom_type[g]), m.geom_size[g]
        centre, axes = d.geom_xpos[g], d.geom_xmat[g].reshape(3, 3)  # axes' columns: the geom's local x, y, z
        if kind == G.mjGEOM_PLANE:
            up = axes[:, 2]
            if abs(up[2]) > 1 - 1e-9 and _touchable(m, g):  # a horizontal floor something stands on
                rows.append((name, "plane", np.nan, centre[2], np.nan, centre[2], 0.0, centre[1], _hex(rgba)))
            continue
        if kind in (G.mjGEOM_CAPSULE, G.mjGEOM_CYLINDER):
            half, radius = axes[:, 2] * size[1], float(size[0])
            label = "capsule" if kind == G.mjGEOM_CAPSULE else "cylinder"
        elif kind == G.mjGEOM_SPHERE:
            half, radius, label = np.zeros(3), float(size[0]), "sphere"
        elif kind in (G.mjGEOM_BOX, G.mjGEOM_ELLIPSOID):
            spans = axes * size[None, :3]  # each local half-axis in world coordinates
            reach = np.hypot(spans[0], spans[2])  # its length seen from -y
            k = int(np.argmax(reach))
            half, radius = spans[:, k], float(np.delete(reach, k).max())
            label = "box" if kind == G.mjGEOM_BOX else "ellipsoid"
        else:  # meshes, height fields, ...: no shape from their size alone
            continue
        a, b = centre - half, centre + half
        rows.append((name, label, a[0], a[2], b[0], b[2], radius, centre[1], _hex(rgba)))
    return pd.DataFrame(rows, columns=COLUMNS)


def picture(views: pd.DataFrame, panel: str = "panel", order=None, columns: int | None = None,
            px_per_m: float | None = None, panel_height: float = 220.0, pad: float = 0.15):
    """An Altair chart of ``views`` (``side_view`` frames, concatenated with a ``panel`` column
    naming each one's panel, and optionally an ``opacity`` column), one panel per value of
    ``panel`` in ``order`` (default: as they come), ``columns`` to a row. Every panel has the same
    x and z scale, metres per pixel equal in both (``px_per_m``; None: the tallest panel's
    bodies ``panel_height`` pixels tall), so sizes compare across panels; ``pad`` metres around."""
    import altair as alt

    from .charts import _altair

    _altair()
    v = views.copy()
    if panel not in v:
        v[panel] = ""
    if "opacity" not in v:
        v["opacity"] = 1.0
    order = list(dict.fromkeys(v[panel])) if order is None else list(order)
    body = v[v["kind"] != "plane"]
    if body.empty:
        raise ValueError("nothing to draw: no geom with a shape")
    lo_x = float(np.minimum(body["x0"], body["x1"]).sub(body["radius"]).min()) - pad
    hi_x = float(np.maximum(body["x0"], body["x1"]).add(body["radius"]).max()) + pad
    lo_z = float(np.minimum(body["z0"], body["z1"]).sub(body["radius"]).min())
    hi_z = float(np.maximum(body["z0"], body["z1"]).add(body["radius"]).max()) + pad
    grounds = v.loc[v["kind"] == "plane", "z0"]
    lo_z = min([lo_z] + [z for z in grounds if z > lo_z - 1.0]) - pad  # a floor just below shows
    v = v[(v["kind"] != "plane") | (v["z0"] >= lo_z)].copy()
    if px_per_m is None:
        px_per_m = panel_height / (hi_z - lo_z)
    plane = v["kind"] == "plane"
    v.loc[plane, "x0"], v.loc[plane, "x1"], v.loc[plane, "color"] = lo_x, hi_x, GROUND_COLOR
    v["width_px"] = np.where(plane, 1.5, 2 * v["radius"] * px_per_m)
    v["area_px"] = np.pi * (v["radius"] * px_per_m) ** 2
    # far geoms first (larger y), then the model's own order
    v["draw"] = np.lexsort((np.arange(len(v)), -v["depth"].to_numpy()))
    v["draw"] = np.argsort(v["draw"].to_numpy())

    x = alt.X("x0:Q", scale=alt.Scale(domain=[lo_x, hi_x], nice=False, zero=False),
              axis=alt.Axis(title="x (m)", grid=False, tickMinStep=0.5))
    z = alt.Y("z0:Q", scale=alt.Scale(domain=[lo_z, hi_z], nice=False, zero=False),
              axis=alt.Axis(title="z (m)", grid=False, tickMinStep=0.5))
    common = [x, z, alt.Color("color:N", scale=None), alt.Opacity("opacity:Q", scale=None),
              alt.Order("draw:Q"), [alt.Tooltip("geom:N", title="geom"), alt.Tooltip("kind:N", title="shape")]]
    base = alt.Chart().encode(*common)
    segment = base.encode(alt.X2("x1:Q"), alt.Y2("z1:Q"), alt.StrokeWidth("width_px:Q", scale=None))
    layers = [
        segment.mark_rule(strokeCap="butt", clip=True).transform_filter(alt.datum.kind == "plane"),
        segment.mark_rule(strokeCap="butt").transform_filter(
            alt.FieldOneOfPredicate(field="kind", oneOf=["box", "cylinder", "ellipsoid"])),
        segment.mark_rule(strokeCap="round").transform_filter(alt.datum.kind == "capsule"),
        base.mark_circle().encode(alt.Size("area_px:Q", scale=None)).transform_filter(alt.datum.kind == "sphere"),
    ]
    width, height = (hi_x - lo_x) * px_per_m, (hi_z - lo_z) * px_per_m
    chart = alt.layer(*layers, data=v.drop(columns=["radius"])).properties(width=width, height=height)
    facet = alt.Facet(f"{panel}:N", sort=order, title=None, header=alt.Header(labelFontSize=12, labelOrient="bottom"))
    return chart.facet(facet=facet, columns=columns or len(order)).resolve_scale(x="shared", y="shared")
