"""The README's Python example, as written there, on the built-in vehicle."""

from conftest import SPEED


def test_readme_snippet():
    import nexus_uav as nx
    from nexus_uav.px4 import OffboardClient

    # The README's Sim() listens on the default ports (instance 0); here instance 90.
    with nx.Sim(instance=90, speed=SPEED) as sim:
        sim.start()
        with OffboardClient.connect(sim, 10.0) as op:
            op.takeoff(2.0)
            sim.wait_until(op.at_target, sim_timeout=60.0)
            assert sim.snapshot().height_m >= 1.0
            assert op.is_armed()


def test_readme_snippet_verbatim_body():
    """The body exactly as the README has it: Sim() then sim.start() inside the with."""
    import nexus_uav as nx
    from nexus_uav.px4 import OffboardClient

    with nx.Sim("astro_max_base", scene="empty", instance=91, speed=SPEED) as sim:
        sim.start()
        with OffboardClient.connect(sim, 10.0) as op:
            op.takeoff(2.0)
            sim.wait_until(op.at_target, sim_timeout=60.0)


# The python blocks of these pages run as written (tests/tests/docs_blocks.rs checks that
# every page with one is listed here).
PAGES = ["docs/python.md"]


def test_docs_python_blocks(monkeypatch):
    """Every python block of PAGES, except that the vehicle is instance 90 (not the default
    ports, which a QGroundControl or a SITL may hold) at the tests' speed."""
    import re

    import nexus_uav as nx
    from conftest import REPO

    real_sim = nx.Sim

    def sim(*args, **kwargs):
        kwargs.setdefault("instance", 90)
        kwargs.setdefault("speed", SPEED)
        return real_sim(*args, **kwargs)

    monkeypatch.setattr(nx, "Sim", sim)
    n = 0
    for page in PAGES:
        text = (REPO / page).read_text()
        for block in re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M):
            exec(compile(block, page, "exec"), {})
            n += 1
    assert n, "no python blocks in " + ", ".join(PAGES)
