"""`t`: the topology screen opens over the monitor, follows each tick's NVLink traffic, and `esc` closes it."""

from __future__ import annotations

from gputui.ui.screens.main import MainScreen
from gputui.ui.screens.topo import TopoScreen, TopoView
from tests.topologies import nvswitch8, pcie_box4
from tests.ui.monitor_helpers import nvlink_snapshot, plain, scripted_app


async def test_t_opens_the_topology_and_esc_returns() -> None:
    app, _ = scripted_app([nvlink_snapshot(0.0, nvswitch8())])
    async with app.run_test(size=(120, 40)) as pilot:
        await app.tick()
        await pilot.press("t")
        await pilot.pause()
        assert isinstance(app.screen, TopoScreen)
        text = plain(app.screen.query_one(TopoView).lines)
        assert "GPU3  NV18  NV18  NV18  X     NV18" in text
        assert "16/18" in text and "0-55,112-167" in text and "P2P: OK between every pair" in text
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)


async def test_nvlink_traffic_follows_the_ticks() -> None:
    app, _ = scripted_app([nvlink_snapshot(0.0, nvswitch8(), rx=10e9), nvlink_snapshot(1.0, nvswitch8(), rx=20e9)])
    async with app.run_test(size=(120, 40)) as pilot:
        await app.tick()
        await pilot.press("t")
        await pilot.pause()
        view = app.screen.query_one(TopoView)
        assert plain(view.lines).splitlines()[2].split()[-5:] == ["18/18", "10.0", "GB/s", "5.0", "GB/s"]
        await app.tick()
        await pilot.pause()
        assert plain(view.lines).splitlines()[2].split()[-5:] == ["18/18", "20.0", "GB/s", "10.0", "GB/s"]


async def test_80x24_with_8_gpus_fits_and_moves_affinity_below() -> None:
    app, _ = scripted_app([nvlink_snapshot(0.0, nvswitch8())])
    async with app.run_test(size=(80, 24)) as pilot:
        await app.tick()
        await pilot.press("t")
        await pilot.pause()
        view = app.screen.query_one(TopoView)
        lines = plain(view.lines).splitlines()
        assert all(len(line) <= 80 for line in lines)
        assert len(lines) <= view.size.height
        assert "CPUs near GPU4,GPU5,GPU6,GPU7: 56-111,168-223" in lines


async def test_pairs_without_p2p_and_unknown_paths_are_named() -> None:
    app, _ = scripted_app([nvlink_snapshot(0.0, pcie_box4(), gpus=4)])
    async with app.run_test(size=(120, 40)) as pilot:
        await app.tick()
        await pilot.press("t")
        await pilot.pause()
        view = app.screen.query_one(TopoView)
        text = plain(view.lines)
        assert "GPU1  PIX   X     SYS   n/a" in text
        assert "no P2P GPU0-GPU2 GPU0-GPU3 GPU1-GPU2 GPU1-GPU3" in text
        styles = {text: style for line in view.lines for text, style in line}
        assert styles["SYS "] == "red" and styles["PIX "] == "yellow" and styles["n/a "] == "bright_black"


async def test_without_a_topology_it_says_so_and_still_shows_nvlink() -> None:
    app, _ = scripted_app([nvlink_snapshot(0.0, None, gpus=2)])
    async with app.run_test(size=(120, 40)) as pilot:
        await app.tick()
        await pilot.press("t")
        await pilot.pause()
        text = plain(app.screen.query_one(TopoView).lines)
        assert "No topology" in text and "GPU1  18/18" in text
