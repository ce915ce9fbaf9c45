"""Side views of MuJoCo models (studylib/book/figures/model_pictures.py) and the two pages' pictures: the
geometry read from MuJoCo agrees with the chain's own kinematics (studylib.sims.chain), shapes
other than capsules project as stated, and the chart keeps one scale in x and z."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("mujoco")

from studylib.book.pages import chain as chain_chapter
from studylib.book.pages import engines as engines_chapter
from studylib.book.figures.model_pictures import COLUMNS, picture, side_view
from studylib.sims.chain import ChainParams, dynamics  # noqa: E402
from studylib.sims.chain.model import chain_mjcf  # noqa: E402


def _links(view: pd.DataFrame, cart_x: float = 0.0) -> pd.DataFrame:
    """The chain's links from the cart up, each as (x0, z0) its hinge and (x1, z1) its far end: a
    segment's two ends come in MuJoCo's order (a ``fromto`` capsule's z axis points from its ``to``
    to its ``from``), so each link's hinge is the end nearer the previous link's far end."""
    links = view[view["geom"].str.startswith("cpole")].reset_index(drop=True)
    joint, rows = np.array([cart_x, 0.0]), []
    for _, r in links.iterrows():
        a, b = np.array([r["x0"], r["z0"]]), np.array([r["x1"], r["z1"]])
        if np.linalg.norm(b - joint) < np.linalg.norm(a - joint):
            a, b = b, a
        rows.append({**r, "x0": a[0], "z0": a[1], "x1": b[0], "z1": b[1]})
        joint = b
    return pd.DataFrame(rows)


@pytest.mark.parametrize("n", [1, 3, 8])
def test_an_upright_chain_is_its_links_stacked_vertically_n_l_tall(n):
    p = ChainParams(links=n)
    view = side_view(chain_mjcf(n))
    assert list(view.columns) == COLUMNS
    links = _links(view)
    assert len(links) == n
    np.testing.assert_allclose(links[["x0", "x1"]].to_numpy(), 0.0, atol=1e-12)  # vertical
    np.testing.assert_allclose(links["z0"], np.arange(n) * p.link_length, atol=1e-12)  # stacked
    np.testing.assert_allclose(links["z1"], np.arange(1, n + 1) * p.link_length, atol=1e-12)
    assert links["z1"].max() == pytest.approx(p.length)  # n L
    np.testing.assert_allclose(links["radius"], p.link_radius)
    assert set(view["geom"]) == {"rail", "cart", *links["geom"]}  # the floor, touching nothing, is scenery


@pytest.mark.parametrize("qpos", [[0.0, 0.5], [0.3, 0.4, -0.7, 1.2], [-0.2, 1.0, 0.5, -0.3, 0.25, 2.0]])
def test_a_tilted_chains_links_end_where_the_chains_kinematics_put_its_tip(qpos):
    qpos = np.array(qpos)
    n = len(qpos) - 1
    p = ChainParams(links=n)
    links = _links(side_view(chain_mjcf(n), qpos), cart_x=qpos[0])
    tip_x, tip_z = dynamics.tip(qpos, p)
    assert links["x1"].iloc[-1] == pytest.approx(tip_x, abs=1e-9)
    assert links["z1"].iloc[-1] == pytest.approx(tip_z, abs=1e-9)
    assert links["x0"].iloc[0] == pytest.approx(qpos[0], abs=1e-12)  # the first hinge rides on the cart
    # each link starts where the one below ends, and keeps its length seen from the side (planar)
    np.testing.assert_allclose(links[["x0", "z0"]].to_numpy()[1:], links[["x1", "z1"]].to_numpy()[:-1], atol=1e-9)
    lengths = np.hypot(links["x1"] - links["x0"], links["z1"] - links["z0"])
    np.testing.assert_allclose(lengths, p.link_length, atol=1e-9)
    # the first link leans by the first hinge's angle: x grows with sin, as the chain's tip does
    assert np.sign(links["x1"].iloc[0] - links["x0"].iloc[0]) == np.sign(np.sin(qpos[1]))


SHAPES = """<mujoco>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1" pos="0 0 -0.5" rgba="0.8 0.9 0.8 1"/>
    <geom name="scenery" type="plane" size="5 5 0.1" pos="0 0 -2" contype="0" conaffinity="0"/>
    <body name="b" pos="1 0.3 2">
      <freejoint/>
      <geom name="box" type="box" size="0.5 0.1 0.2" rgba="1 0 0 1"/>
      <geom name="ball" type="sphere" size="0.25" pos="0 0 1" rgba="0 0 1 1"/>
      <geom name="edge_on" type="cylinder" size="0.1 0.4" pos="2 0 0" euler="90 0 0"/>
      <geom name="hidden" type="sphere" size="0.1" group="4"/>
      <geom name="clear" type="sphere" size="0.1" rgba="1 1 1 0"/>
    </body>
  </worldbody>
</mujoco>"""


def test_boxes_spheres_cylinders_and_floors_project_as_stated():
    view = side_view(SHAPES).set_index("geom")
    assert set(view.index) == {"floor", "box", "ball", "edge_on"}  # scenery, hidden and clear geoms left out
    box = view.loc["box"]
    assert (box["kind"], box["x0"], box["x1"], box["z0"], box["z1"]) == ("box", 0.5, 1.5, 2.0, 2.0)
    assert box["radius"] == pytest.approx(0.2) and box["depth"] == pytest.approx(0.3) and box["color"] == "#ff0000"
    ball = view.loc["ball"]
    assert (ball["kind"], ball["x0"], ball["x1"], ball["z0"], ball["z1"], ball["radius"]) == ("sphere", 1, 1, 3, 3, 0.25)
    edge = view.loc["edge_on"]  # its axis along y: a point from the side, as thick as the cylinder
    assert edge["kind"] == "cylinder" and edge["x0"] == pytest.approx(edge["x1"]) == pytest.approx(3.0)
    assert edge["z0"] == pytest.approx(edge["z1"]) == pytest.approx(2.0) and edge["radius"] == pytest.approx(0.1)
    floor = view.loc["floor"]
    assert floor["kind"] == "plane" and floor["z0"] == floor["z1"] == -0.5 and np.isnan(floor["x0"])


def test_a_pose_of_the_wrong_size_is_refused():
    with pytest.raises(ValueError, match="nq = 3"):
        side_view(chain_mjcf(2), np.zeros(4))


def _layer_data(spec: dict) -> pd.DataFrame:
    return pd.DataFrame(next(iter(spec["datasets"].values())))


def test_a_picture_has_one_scale_in_x_and_z_and_strokes_as_thick_as_the_geoms():
    views = pd.concat([side_view(chain_mjcf(n)).assign(panel=f"n = {n}") for n in (1, 3)])
    spec = picture(views, order=["n = 1", "n = 3"], px_per_m=50.0).to_dict()
    inner = spec["spec"]
    x_domain = inner["layer"][0]["encoding"]["x"]["scale"]["domain"]
    z_domain = inner["layer"][0]["encoding"]["y"]["scale"]["domain"]
    assert inner["width"] == pytest.approx(50.0 * (x_domain[1] - x_domain[0]))
    assert inner["height"] == pytest.approx(50.0 * (z_domain[1] - z_domain[0]))
    assert z_domain[1] > 3 * ChainParams().link_length > z_domain[1] - 0.5  # the tallest chain fits, padded
    data = _layer_data(spec)
    links = data[data["geom"].str.startswith("cpole")]
    np.testing.assert_allclose(links["width_px"], 2 * ChainParams().link_radius * 50.0)
    assert spec["facet"]["sort"] == ["n = 1", "n = 3"] and spec["columns"] == 2


def test_a_picture_of_nothing_is_refused():
    with pytest.raises(ValueError, match="nothing to draw"):
        picture(pd.DataFrame(columns=COLUMNS))


@pytest.mark.parametrize("n", chain_chapter.PICTURE_LINKS)
def test_the_chapters_chain_falls_until_its_episode_ends(n):
    p = ChainParams(links=n)
    poses = chain_chapter.first_episode(n)
    heights = np.array([dynamics.tip(q, p)[1] for q in poses])
    assert len(poses) >= 3 and poses.shape[1] == n + 1
    # the tip is above the termination height at every pose but the last (the step that ended it)
    assert dynamics.is_terminated(heights[-1], p) and not np.any(dynamics.is_terminated(heights[:-1], p))


def test_the_chapters_chain_picture_shows_three_poses_and_one_rail_per_panel():
    views = chain_chapter.chain_views()
    for n in chain_chapter.PICTURE_LINKS:
        v = views[views["panel"] == f"n = {n}"]
        last = len(chain_chapter.first_episode(n)) - 1
        assert sorted(set(v["pose"])) == [0, last // 2, last]
        assert (v["geom"] == "rail").sum() == 1 and (v["geom"] == "cart").sum() == 3
        assert v.loc[v["pose"] == last, "opacity"].eq(1.0).all() and v["opacity"].min() < 0.5
    assert chain_chapter.chain_picture().to_dict()["facet"]["sort"] == [f"n = {n}" for n in chain_chapter.PICTURE_LINKS]


def test_the_engines_picture_draws_every_model_it_is_given_in_the_tables_order():
    from studylib.harness.robotics import engine_models

    class P:
        models = ["hopper", "inverted_pendulum"]

    names = engines_chapter.pictured_models(P, pd.DataFrame({"model": ["humanoid", "hopper"]}))
    assert names == sorted(names, key=lambda m: engine_models.load(m).nv) == ["inverted_pendulum", "hopper", "humanoid"]
    spec = engines_chapter.models_picture(names).to_dict()
    data = _layer_data(spec)
    assert spec["facet"]["sort"] == names and set(data["panel"]) == set(names)
    floors = data[data["kind"] == "plane"]
    assert set(floors["panel"]) == {"hopper", "humanoid"}  # the pendulum's floor-less, the others stand on one
