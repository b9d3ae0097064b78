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
