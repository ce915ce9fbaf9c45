"""The n-link chain's model: its constants (``ChainParams``: gymnasium's inverted_double_pendulum.xml
at n = 2), its bodies in closed form (what MuJoCo's compiler derives from the capsules), and the
MJCF the package generates for any n (``chain_mjcf``), which MuJoCo compiles as the reference.
The dynamics that step it are in ``studylib.sims.chain.dynamics``."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ...errors import ConfigError


MAX_LINKS = 32  # the longest chain the study builds, measures and tests (every language, every n up to it)
MAX_EPISODE_STEPS = 2**24 - 1  # the C builds read the time limit as a float32, exact up to 2^24
ENVIRONMENT_STEP = 0.05  # s: v5's timestep 0.01 x frame_skip 5, kept at every n
# (largest n, timestep): the chain is stiffer as n grows, and MuJoCo's RK4 at the file's 0.01 s
# diverges from v5's reset distribution under random controls (a bad-acceleration warning within
# 1000 environment steps, tests/test_chain_conformance.py): measured here over 10 episodes of 1000 steps
# each, n = 12 at 0.01 s: 1 of 10 diverged; n = 16: 9 of 10; at 0.005 s, n = 16: none, n = 24:
# 5 of 10, n = 32: 10 of 10; at 0.002 s none up to n = 32.
TIMESTEP_RULE = ((8, 0.01), (16, 0.005), (MAX_LINKS, 0.002))


def check_links(name: str, values) -> None:
    """A chapter's list of n: ConfigError (one line) naming parameter ``name`` where one of ``values``
    is not a chain's number of links (1 to MAX_LINKS), before anything runs."""
    if any(not 1 <= n <= MAX_LINKS for n in values):
        raise ConfigError(f"parameter {name!r} must be a list of links from 1 to {MAX_LINKS}, got {list(values)}")


def stable_timestep(links: int) -> tuple[float, int]:
    """(timestep, frame_skip) of an n-link chain: the file's 0.01 s up to n = 8 and a smaller
    step above (``TIMESTEP_RULE``), with frame_skip such that an environment step stays
    ``ENVIRONMENT_STEP`` (0.05 s, v5's), so the reward's time scale is v5's at every n."""
    for largest, timestep in TIMESTEP_RULE:
        if links <= largest:
            return timestep, round(ENVIRONMENT_STEP / timestep)
    raise ConfigError(f"a chain has at most {MAX_LINKS} links, got {links}")


@dataclass(frozen=True)
class ChainParams:
    """The chain's constants: gymnasium's inverted_double_pendulum.xml at ``links`` = 2 (derived
    constants are properties, never typed in)."""

    links: int = 2  # n hinged links on the cart
    link_length: float = 0.6  # m, each link's capsule from its hinge to its end (fromto 0 0 0 0 0 0.6)
    link_radius: float = 0.045  # m
    cart_radius: float = 0.1  # m, the cart's capsule (size="0.1 0.1": radius, half-length)
    cart_half_length: float = 0.1  # m
    density: float = 1000.0  # kg/m^3, MuJoCo's default geom density (inertiafromgeom)
    damping: float = 0.05  # N s/m or N m s/rad, every joint's (the <default> joint damping), slider too
    gear: float = 500.0  # N per unit control (the motor on the slider)
    # s, one mj_step (RK4), and mj_steps per environment step: None takes ``stable_timestep``'s
    # rule for ``links`` (the file's 0.01 s and v5's 5 up to n = 8)
    timestep: float | None = None
    gravity: tuple = (1e-5, 0.0, -9.81)  # m/s^2, as the file states it (x not quite 0)
    frame_skip: int | None = None
    max_episode_steps: int = 1000  # InvertedDoublePendulum-v5's TimeLimit
    healthy_reward: float = 10.0  # v5's alive bonus

    def __post_init__(self):
        if isinstance(self.links, bool) or not isinstance(self.links, int) or not 1 <= self.links <= MAX_LINKS:
            raise ConfigError(f"a chain has an integer number of links from 1 to {MAX_LINKS}, got {self.links!r}")
        steps = self.max_episode_steps
        if isinstance(steps, bool) or not isinstance(steps, int) or not 1 <= steps <= MAX_EPISODE_STEPS:
            raise ConfigError(f"a chain's max_episode_steps is an integer from 1 to 2^24 - 1, got {steps!r}")
        rule_timestep, rule_frame_skip = stable_timestep(self.links)
        if self.timestep is None:
            object.__setattr__(self, "timestep", rule_timestep)
        if self.frame_skip is None:
            object.__setattr__(self, "frame_skip", rule_frame_skip)
        # An attribute, not a field (not compared, hashed or shown), computed once here: the dynamics read
        # it every RK4 stage, torch.compile's trace included (where an lru_cache drew dynamo's warning).
        object.__setattr__(self, "mass_coefficients", self._mass_coefficients())

    def _mass_coefficients(self) -> tuple:
        """(β, diag, total mass, total mass × g_x): the mass matrix's constant coefficients
        (studylib/sims/chain/dynamics.py's notation), Python floats folded once."""
        n, L, m = self.links, self.link_length, self.link_mass
        c = L / 2
        beta = tuple(m * (c + L * (n - 1 - j)) for j in range(n))
        diag = tuple(m * (c * c + L * L * (n - 1 - j)) + self.link_inertia for j in range(n))
        return beta, diag, self.total_mass, self.total_mass * self.gravity[0]

    def with_links(self, links: int) -> "ChainParams":
        """These constants for a chain of ``links`` links, its timestep and frame_skip by the rule
        (``stable_timestep``), whatever this chain's were."""
        return replace(self, links=links, timestep=None, frame_skip=None)

    @property
    def length(self) -> float:
        """The chain's full length (the tip's height upright): n L."""
        return self.links * self.link_length

    @property
    def link_mass(self) -> float:
        return capsule_mass(self.link_radius, self.link_length / 2, self.density)

    @property
    def link_inertia(self) -> float:
        """A link's moment of inertia about the hinge axis (y) through its centre of mass."""
        return capsule_inertia(self.link_radius, self.link_length / 2, self.density)[0]

    @property
    def cart_mass(self) -> float:
        return capsule_mass(self.cart_radius, self.cart_half_length, self.density)

    @property
    def total_mass(self) -> float:
        return self.cart_mass + self.links * self.link_mass

    @property
    def state_size(self) -> int:
        return 2 * (self.links + 1)  # qpos (cart x, n hinge angles), qvel

    @property
    def observation_size(self) -> int:
        return 1 + 2 * self.links + (self.links + 1) + 1  # x, sin, cos, qvel, qfrc_constraint[0]


# ---- the bodies, in closed form (MuJoCo's compiler: inertiafromgeom, a capsule of uniform density) ----

def capsule_mass(radius: float, half_length: float, density: float) -> float:
    """A cylinder of length 2h and two hemispheres of radius r."""
    return density * math.pi * radius**2 * (2 * half_length + 4 * radius / 3)


def capsule_inertia(radius: float, half_length: float, density: float) -> tuple[float, float, float]:
    """(I_perp, I_perp, I_axis) about the centre of mass: the cylinder's, plus the two hemispheres'
    (each ⅖ m r² about its centre's axis and 83/320 m r² across it, its centroid 3r/8 from the flat
    face, moved to the cylinder's end: together m_s (⅖ r² + h²/4 + 3hr/8), with h = 2 half_length)."""
    r, h = radius, 2 * half_length
    m_cyl = density * math.pi * r**2 * h
    m_sph = density * 4 / 3 * math.pi * r**3
    perp = m_cyl * (3 * r**2 + h**2) / 12 + m_sph * (2 * r**2 / 5 + h**2 / 4 + 3 * h * r / 8)
    axis = m_cyl * r**2 / 2 + m_sph * 2 * r**2 / 5
    return perp, perp, axis


INVERTED_DOUBLE_PENDULUM = ChainParams()  # (made after the capsule formulas: its mass coefficients use them)

# ---- the model MuJoCo compiles: gymnasium's inverted_double_pendulum.xml at n = 2, less the slider's limit ----

def _num(v: float) -> str:
    return f"{v:g}"


def chain_mjcf(n: int, p: ChainParams = INVERTED_DOUBLE_PENDULUM) -> str:
    """The MJCF of a cart carrying ``n`` links (ConfigError for n < 1 or not an int).

    At n = 2 it is gymnasium's ``inverted_double_pendulum.xml`` element for element and attribute
    for attribute (the floor and rail, contype 0, are the file's scenery and collide with nothing)
    EXCEPT the slider's range limit: the file's ``limited="true" margin="0.01" range="-1 1"`` is a
    constraint MuJoCo's solver enforces (the ``qfrc_constraint`` v5 observes), which the chain omits
    so that its dynamics are the smooth ones below. Each link is the same capsule (``p``'s length
    and radius), body ``pole``, ``pole2``, ... with hinge ``hinge``, ``hinge2``, ... relative to its
    parent; the ``tip`` site ends the last link: the chain is n L long and weighs n link masses on
    the cart. The ``frame_skip`` numeric is the file's (2), which v5 ignores (it passes 5); ``p``'s
density is not written (the file leaves MuJoCo's default, 1000, as ChainParams does).
    """
    p = replace(p, links=n) if p.links == n else p.with_links(n)  # checks n (an int from 1 to 32)
    L, r = _num(p.link_length), _num(p.link_radius)
    links, close = [], []
    for k in range(1, n + 1):
        suffix = "" if k == 1 else str(k)
        pos = "0 0 0" if k == 1 else f"0 0 {L}"
        indent = "  " * (k + 2)
        links.append(
            f'{indent}<body name="pole{suffix}" pos="{pos}">\n'
            f'{indent}  <joint axis="0 1 0" name="hinge{suffix}" pos="0 0 0" type="hinge"/>\n'
            f'{indent}  <geom fromto="0 0 0 0 0 {L}" name="cpole{suffix}" rgba="0 0.7 0.7 1" '
            f'size="{r} {_num(p.link_length / 2)}" type="capsule"/>\n')
        close.insert(0, f"{indent}</body>\n")
    tip = "  " * (n + 3) + f'<site name="tip" pos="0 0 {L}" size="0.01 0.01"/>\n'
    g = " ".join(_num(v) for v in p.gravity)
    return (
        '<mujoco model="cartpole">\n'
        '  <compiler coordinate="local" inertiafromgeom="true"/>\n'
        '  <custom>\n    <numeric data="2" name="frame_skip"/>\n  </custom>\n'
        f'  <default>\n    <joint damping="{_num(p.damping)}"/>\n'
        '    <geom contype="0" friction="1 0.1 0.1" rgba="0.7 0.7 0 1"/>\n  </default>\n'
        f'  <option gravity="{g}" integrator="RK4" timestep="{_num(p.timestep)}"/>\n'
        '  <size nstack="3000"/>\n'
        '  <worldbody>\n'
        '    <geom name="floor" pos="0 0 -3.0" rgba="0.8 0.9 0.8 1" size="40 40 40" type="plane"/>\n'
        '    <geom name="rail" pos="0 0 0" quat="0.707 0 0.707 0" rgba="0.3 0.3 0.7 1" size="0.02 1" type="capsule"/>\n'
        '    <body name="cart" pos="0 0 0">\n'
        '      <joint axis="1 0 0" name="slider" pos="0 0 0" type="slide"/>\n'
        f'      <geom name="cart" pos="0 0 0" quat="0.707 0 0.707 0" '
        f'size="{_num(p.cart_radius)} {_num(p.cart_half_length)}" type="capsule"/>\n'
        + "".join(links) + tip + "".join(close) +
        '    </body>\n'
        '  </worldbody>\n'
        '  <actuator>\n'
        f'    <motor ctrllimited="true" ctrlrange="-1 1" gear="{_num(p.gear)}" joint="slider" name="slide"/>\n'
        '  </actuator>\n'
        '</mujoco>\n')
