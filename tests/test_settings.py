"""Settings of the scheduler and the agent: the example files load, values are typed and
checked, and every problem is one line naming the setting (exit 2 from the daemons)."""

from __future__ import annotations

import re
from dataclasses import fields
from pathlib import Path

import pytest
import yaml

from rota.agent.config import AgentConfig, load_agent_config
from rota.cli.rota_main import main
from rota.scheduler.config import (
    LimitSettings,
    SchedulerConfig,
    WeightSettings,
    load_config,
    policy_config,
)
from rota.scheduler.policy.config import Limits, Weights
from rota.settings import SettingsError

DEPLOY = Path(__file__).resolve().parent.parent / "deploy"


def test_the_scheduler_example_loads_with_its_values() -> None:
    cfg = load_config(DEPLOY / "scheduler.example.yaml")
    assert cfg.listen == "0.0.0.0:9717" and cfg.max_time_limit == 7 * 86400
    assert cfg.node_grace == 300 and cfg.gpu_dirty_memory == 512 * 2**20
    assert cfg.master_port_range == (29500, 29999)
    policy = policy_config(cfg)
    assert policy.limits.max_gpus_per_user == 16 and policy.weights.qos == 4000
    assert policy.account_shares == {"vision": 2.0, "nlp": 1.0}


def test_the_agent_example_loads_with_its_values(tmp_path: Path) -> None:
    raw = yaml.safe_load((DEPLOY / "agent.example.yaml").read_text())["agent"]
    token = tmp_path / "node-token"
    token.write_text("s3cret\n")
    token.chmod(0o600)
    example = tmp_path / "agent.yaml"
    example.write_text(yaml.safe_dump({"agent": {**raw, "token_file": str(token)}}))
    cfg = load_agent_config(example, {})
    assert (cfg.node, cfg.scheduler, cfg.token) == ("gpu01", "sched.example.org:9717", "s3cret")
    assert cfg.labels == {"rack": "r7", "ib": "true"} and cfg.kill_grace == 10
    assert cfg.data_dir == Path("/var/lib/rota-agent")
    assert "s3cret" not in repr(cfg)


def test_an_agent_never_sends_its_join_token_in_plaintext_off_this_machine(
    tmp_path: Path,
) -> None:
    """Issue 22: without a CA the agent dialled any scheduler in plaintext, its node token
    readable on the way. Now only a loopback scheduler, unless ``insecure: true`` says so."""
    env = {"ROTA_NODE_TOKEN": "s3cret"}
    with pytest.raises(ValueError, match="join token would cross the network in plaintext"):
        load_agent_config(None, env, scheduler="sched.example.org:9717")
    assert load_agent_config(None, env, scheduler="127.0.0.1:9717").ca == ""
    tls = load_agent_config(None, env, scheduler="sched.example.org:9717", ca="ca.pem")
    assert tls.ca == "ca.pem"
    path = tmp_path / "agent.yaml"
    path.write_text("agent:\n  scheduler: sched.example.org:9717\n  insecure: true\n")
    assert load_agent_config(path, env).insecure


def test_the_policy_sections_know_exactly_the_policys_keys() -> None:
    assert set(WeightSettings.model_fields) == {f.name for f in fields(Weights)}
    assert set(LimitSettings.model_fields) == {f.name for f in fields(Limits)}


def test_durations_and_sizes_take_the_documented_forms(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(
        "node_timeout: 45\nnode_grace: '1:30'\nkill_grace: '0.5'\nmax_age: 2-00\n"
        "gpu_hot_for: 2m\ngpu_dirty_memory: 1G\n"
    )
    cfg = load_config(path)
    assert (cfg.node_timeout, cfg.node_grace, cfg.kill_grace) == (45, 90, 0.5)
    assert (cfg.max_age, cfg.gpu_hot_for, cfg.gpu_dirty_memory) == (2 * 86400, 120, 10**9)


def test_flags_win_over_the_file(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("scheduler:\n  listen: 0.0.0.0:9000\n  policy: fifo\n")
    cfg = load_config(path, listen="127.0.0.1:9100", policy=None)
    assert (cfg.listen, cfg.policy) == ("127.0.0.1:9100", "fifo")


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"listen": "9717"}, "listen must be HOST:PORT"),
        ({"listen": "0.0.0.0:70000"}, "listen must be HOST:PORT"),
        ({"listen": "::1:9717"}, "listen must be HOST:PORT"),
        ({"master_port_range": [29999, 29500]}, "master_port_range must be [LOW, HIGH]"),
        ({"master_port_range": [0, 10]}, "master_port_range[0] must be >= 1, got 0"),
        ({"node_timeout": 2}, "node_timeout (2s) must be longer than heartbeat_interval (2s)"),
        ({"max_time_limit": "1h"}, "default_time_limit (86400s) must be <= max_time_limit"),
        ({"gpu_dirty_memory": "lots"}, "gpu_dirty_memory must be a size such as 512Mi"),
        ({"heartbeat_interval": "-1s"}, "heartbeat_interval must be a duration"),
        ({"kill_grace": -3}, "kill_grace must be >= 0, got -3"),
        ({"max_requeue": True}, "max_requeue must be a number, got true"),
        ({"max_requeue": 1.5}, "max_requeue must be a number (an integer), got 1.5"),
        ({"open_registration": 7}, "open_registration must be true or false, got 7"),
        ({"qos_levels": {"urgent": 2}}, "qos_levels.urgent must be <= 1, got 2"),
        ({"account_shares": {"vision": 0}}, "account_shares.vision must be > 0"),
        ({"database_url": "not a url"}, "database_url must be empty or a SQLAlchemy URL"),
        ({"tick_interval": 0}, "tick_interval must be > 0, got 0"),
        ({"node_grace": "inf"}, "node_grace must be a finite number, got inf"),
        ({"node_grace": 0}, "node_grace (0s) must be at least node_timeout (30s) + 5s"),
        ({"node_grace": "34s"}, "node_grace (34s) must be at least node_timeout (30s) + 5s"),
        ({"lisen": 1, "polcy": 2}, "unknown scheduler settings 'lisen', 'polcy'; known: "),
    ],
)
def test_bad_scheduler_settings_are_named_in_one_line(values: dict, message: str) -> None:
    with pytest.raises(SettingsError) as caught:
        load_config(None, **values)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_every_problem_is_reported_at_once() -> None:
    with pytest.raises(SettingsError) as caught:
        load_config(None, kill_grace="soon", backfill_depth=-1, weights={"agee": 1})
    text = str(caught.value)
    assert (
        "kill_grace" in text and "backfill_depth" in text and "unknown weights key 'agee'" in text
    )


def test_the_scheduler_refuses_bad_settings_with_exit_2_and_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("scheduler:\n  node_timeout: soon\n")
    assert main(["scheduler", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rota scheduler: error: node_timeout must be a duration")
    assert err.count("\n") == 1 and "Traceback" not in err
    path.write_text("scheduler: [\n")
    assert main(["scheduler", "--config", str(path)]) == 2
    assert f"--config {path}: invalid YAML at line 2" in capsys.readouterr().err


def test_agent_layers_file_then_environment_then_flags(tmp_path: Path) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text(
        "agent:\n  scheduler: file:1\n  node: filenode\n  heartbeat_interval: 5s\n  ca: ca.pem\n"
    )
    env = {"ROTA_SCHEDULER": "env:2", "ROTA_NODE_TOKEN": "from-env"}
    cfg = load_agent_config(path, env, node="flagnode", heartbeat_interval="0.5")
    assert (cfg.scheduler, cfg.node, cfg.heartbeat_interval) == ("env:2", "flagnode", 0.5)
    assert cfg.token == "from-env" and cfg.data_dir.name == "agent-flagnode"
    assert load_agent_config(path, env, scheduler="flag:3").scheduler == "flag:3"
    assert (
        load_agent_config(None, {}).heartbeat_interval
        == AgentConfig.model_fields["heartbeat_interval"].default
    )


def test_agent_labels_from_the_flag_form_and_token_from_its_file(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("abc\n")
    token.chmod(0o600)
    cfg = load_agent_config(
        None, {"ROTA_NODE_TOKEN": "env"}, labels="rack=r7, ib=1", token_file=str(token)
    )
    assert cfg.labels == {"rack": "r7", "ib": "1"} and cfg.token == "abc"


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ({"node": "gpu 01"}, "node must be a node name"),
        ({"scheduler": "sched.example.org"}, "scheduler must be HOST:PORT"),
        ({"labels": "rack"}, "labels must be k=v[,k=v...]"),
        ({"gpu_mode": "cuda"}, "gpu_mode must be one of 'auto', 'nvidia' or 'env', got 'cuda'"),
        ({"simulate_gpus": -1}, "simulate_gpus must be >= 0"),
        ({"docker_host": "/var/run/docker.sock"}, "docker_host must be a Docker engine URL"),
        ({"address": "not a host"}, "address must be a host name or an IP address"),
        ({"token_file": "/nonexistent/token"}, "token_file /nonexistent/token cannot be read"),
    ],
)
def test_bad_agent_settings_are_named(flags: dict, message: str) -> None:
    with pytest.raises(SettingsError) as caught:
        load_agent_config(None, {}, **flags)
    assert message in str(caught.value)


def test_the_agent_refuses_bad_settings_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text("agent:\n  heartbeat: 2\n")
    assert main(["agent", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rota agent: error: unknown agent setting 'heartbeat'; known: ")
    assert "heartbeat_interval" in err and err.count("\n") == 1
    assert main(["agent", "--heartbeat", "soon", "--config", str(tmp_path / "none.yaml")]) == 2
    assert "--config" in capsys.readouterr().err


def test_the_agent_refuses_a_token_file_others_can_read_and_a_token_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    token = tmp_path / "node-token"
    token.write_text("s3cret\n")
    token.chmod(0o640)
    assert main(["agent", "--node", "n1", "--token-file", str(token)]) == 2
    err = capsys.readouterr().err
    assert "can be read by others (mode 0640)" in err and "s3cret" not in err
    config = tmp_path / "agent.yaml"
    config.write_text(f"agent:\n  token_file: {token}\n")
    with pytest.raises(SettingsError, match="can be read by others"):
        load_agent_config(config, {})
    with pytest.raises(SystemExit) as flag:  # a token on the command line shows in ps
        main(["agent", "--node", "n1", "--token", "s3cret"])
    assert flag.value.code == 2


def test_attained_service_settings_reach_the_policy(tmp_path: Path) -> None:
    path = tmp_path / "scheduler.yaml"
    path.write_text(
        "attained_thresholds: [10h, 1h]\nmin_runtime: 5m\nmin_runtime_qos: {high: 1h}\n"
        "partitions: {gpu: {default: true, min_runtime: 2h}, debug: {}}\n"
    )
    policy = policy_config(load_config(path))
    assert policy.attained_thresholds == (3600.0, 36000.0)
    assert (policy.min_runtime, policy.min_runtime_qos) == (300.0, {"high": 3600.0})
    assert policy.min_runtime_partition == {"gpu": 7200.0}
    assert policy.min_runtime_of("high", "gpu") == 7200.0
    assert policy.min_runtime_of("low", "debug") == 300.0
    path.write_text("attained_thresholds: [0]\n")
    with pytest.raises(SettingsError, match="attained_thresholds"):
        load_config(path)


@pytest.mark.parametrize(
    ("example", "settings"),
    [
        ("scheduler.example.yaml", set(SchedulerConfig.model_fields)),
        ("agent.example.yaml", set(AgentConfig.model_fields) - {"token"}),  # token_file holds it
    ],
)
def test_the_examples_name_every_setting(example: str, settings: set[str]) -> None:
    """docs/admin.md calls them "every setting, with its default"; 21 scheduler and 8 agent
    settings were missing."""
    text = (DEPLOY / example).read_text()
    named = set(re.findall(r"^\s*#?\s*([a-z_]+):", text, re.MULTILINE))
    assert settings <= named, sorted(settings - named)
