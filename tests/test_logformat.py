"""``--log-format json``: every daemon line is one JSON object naming the job or node it concerns."""

from __future__ import annotations

import json
import logging
import sys

import pytest

from rota.logformat import JsonFormatter, NodeStamp
from tests.cluster import Cluster, wait_for


def _record(**extra: object) -> logging.LogRecord:
    record = logging.LogRecord(
        "rota.agent", logging.WARNING, __file__, 1, "job %s: %s", ("7", "x"), None
    )
    record.__dict__.update(extra)
    return record


def test_a_line_has_time_level_logger_message_and_the_job_it_concerns() -> None:
    line = json.loads(JsonFormatter().format(_record(job="7_1", attempt=2)))
    assert line["level"] == "WARNING"
    assert line["logger"] == "rota.agent"
    assert line["message"] == "job 7: x"
    assert line["job"] == "7_1" and line["attempt"] == 2
    assert line["time"].endswith("Z") and "T" in line["time"]
    assert "node" not in line


def test_the_agent_stamps_its_node_unless_the_line_names_one() -> None:
    stamp = NodeStamp("gpu01")
    plain, named = _record(), _record(node="gpu02")
    assert stamp.filter(plain) and stamp.filter(named)
    assert json.loads(JsonFormatter().format(plain))["node"] == "gpu01"
    assert json.loads(JsonFormatter().format(named))["node"] == "gpu02"


def test_a_traceback_stays_inside_the_json_line() -> None:
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        record = _record()
        record.exc_info = sys.exc_info()
    text = JsonFormatter().format(record)
    assert "\n" not in text
    assert "RuntimeError: boom" in json.loads(text)["exception"]


def _json_lines(text: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@pytest.mark.docker
def test_both_daemons_log_json_lines(cluster: Cluster) -> None:
    cluster.start_scheduler("--open-registration", "--log-format", "json")
    cluster.start_agent("n1", 1, "--log-format", "json")
    node = cluster.node_name("n1")
    job_id = cluster.submit('image: rota-no-such-image:0\ncommand: ["true"]\npull: never\n')
    cluster.wait_state(job_id, "FAILED")
    scheduler = _json_lines(cluster.log("scheduler"))  # a line that is not JSON fails here
    assert any("listening on" in str(line["message"]) for line in scheduler)
    assert all({"time", "level", "logger", "message"} <= line.keys() for line in scheduler)
    agent = wait_for(
        lambda: (
            (lines := _json_lines(cluster.log("agent-n1")))
            and any(line.get("job") for line in lines)
            and lines
        ),
        20,
        what="an agent line about the job",
    )
    assert all(line["node"] == node for line in agent)
    failed = [line for line in agent if line.get("job")]
    assert str(failed[0]["job"]) == job_id and failed[0]["level"] == "WARNING"
