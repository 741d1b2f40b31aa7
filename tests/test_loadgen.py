"""The load generator (bench/loadgen) against the real scheduler with a handful of nodes: its
accounting adds up, so the tool that measures scale does not rot unnoticed."""

from __future__ import annotations

import asyncio

from bench.loadgen.report import table
from bench.loadgen.run import Options, run


def test_loadgen_accounts_for_heartbeats_jobs_and_a_stopped_node() -> None:
    options = Options(
        nodes=5,
        window=4.0,
        ramp=0.5,
        settle=0.5,
        workers=2,
        jobs=12,
        job_runtime=0.5,
        submit_batch=5,
        stop_nodes=1,
        ginfo_runs=1,
        drain=30.0,
        # 5 nodes at 2.5 telemetry messages/s: telemetry every 2 s, keepalives every 1 s
        settings={
            "heartbeat_interval": 0.5,
            "node_timeout": 3,
            "tick_interval": 0.5,
            "max_telemetry_rate": 2.5,
        },
        floor_window=2.0,
    )
    report = asyncio.run(run(options))
    s = report["scheduler"]

    assert s["all_connected_s"] is not None
    beats = s["heartbeats"]
    assert beats["interval_s"] == 0.5  # the welcome's periods are the ones the nodes keep
    assert beats["telemetry_period_s"] == 2.0 and beats["keepalive_interval_s"] == 1.0
    assert beats["sent"] >= 15
    assert 0 < beats["keepalives"] < beats["sent"]  # telemetry every 2 s, keepalives between
    assert beats["answered"] == beats["sent"]
    assert beats["round_trip"]["n"] == beats["answered"]
    assert s["telemetry_shed_window"] is not None  # read from the scheduler's /metrics
    assert s["streams"]["disconnects_total"] == 0 and s["streams"]["reconnects_total"] == 0

    jobs = s["jobs"]
    assert jobs["submitted"] == jobs["launched"] == jobs["completed"] == 12
    assert jobs["scheduler_states"] == {"COMPLETED": 12}
    assert jobs["on_stopped_nodes"] == 0  # nodes are stopped only once every job was placed
    assert 0 < jobs["all_launched_s"] <= jobs["all_completed_s"]

    assert s["down"]["stopped"] == s["down"]["marked_down"] == 1
    for name in ("ListNodes", "GetJob", "ListJobs"):
        assert s["unary"][name]["n"] >= 2 and s["unary"][name]["errors"] == 0
    assert s["ginfo"]["n"] == 1
    assert s["process"]["cpu_percent"] > 0 and s["process"]["rss_max_mib"] > 0

    floor = report["floor"]
    assert floor["heartbeats"]["telemetry_period_s"] == 2.0  # the same message rate
    assert floor["heartbeats"]["keepalives"] > 0
    assert floor["heartbeats"]["sent"] >= 6
    assert floor["heartbeats"]["answered"] == floor["heartbeats"]["sent"]
    assert floor["process"]["rss_max_mib"] > 0
    for name in ("ListNodes", "GetJob", "ListJobs"):  # the floor answers the same probes
        assert floor["unary"][name]["n"] >= 1 and floor["unary"][name]["errors"] == 0
    assert floor["ginfo"]["n"] == 1 and floor["ginfo"]["failed"] == 0  # and the same command
    assert report["ratios"]["rss_mean_mib"] > 0
    assert "scheduler / floor" in table(report)
    assert "floor GetJob (empty reply)" in table(report)
    assert "floor ginfo (empty replies)" in table(report)
