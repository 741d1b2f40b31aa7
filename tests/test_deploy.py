"""deploy/: the systemd units pass ``systemd-analyze verify`` and its offline security review,
the compose file passes the compose tool's ``config``, the Dockerfile copies what exists, and
the head-node and GPU-node example settings load as the daemons load them."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import tomllib
from collections import defaultdict
from pathlib import Path

import pytest
import yaml

from rota.agent.config import load_agent_config
from rota.cli.rota_main import build_parser
from rota.scheduler.config import load_config, policy_config

REPO = Path(__file__).resolve().parent.parent
DEPLOY = REPO / "deploy"
UNITS = ("rota-scheduler.service", "rota-agent.service")

# Options that give a service its own mount namespace (or a closed device list): on the agent
# each would hide its staged bind mounts from dockerd, or /dev/nvidia* from NVML.
NAMESPACING = {
    "PrivateMounts", "PrivateTmp", "PrivateDevices", "ProtectSystem", "ProtectHome",
    "ProtectKernelTunables", "ProtectKernelModules", "ProtectKernelLogs",
    "ProtectControlGroups", "ProtectHostname", "ProtectClock", "ProtectProc", "ReadOnlyPaths",
    "ReadWritePaths", "InaccessiblePaths", "TemporaryFileSystem", "BindPaths", "DeviceAllow",
    "DevicePolicy", "RootDirectory", "DynamicUser",
}  # fmt: skip


def unit(name: str) -> dict[str, list[str]]:
    """``Section.Key`` -> every value given, in order (systemd keys may repeat)."""
    options: dict[str, list[str]] = defaultdict(list)
    section = ""
    for line in (DEPLOY / "systemd" / name).read_text().splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line.strip("[]")
        elif line and not line.startswith(("#", ";")):
            key, _, value = line.partition("=")
            options[f"{section}.{key.strip()}"].append(value.strip())
    return options


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A file system root for ``systemd-analyze --root``: this host's systemd units, stand-ins
    for docker.service and postgresql.service, an executable /usr/local/bin/rota, and ours."""
    shutil.copytree("/usr/lib/systemd/system", tmp_path / "usr/lib/systemd/system", symlinks=True)
    units = tmp_path / "etc/systemd/system"
    units.mkdir(parents=True)
    for name in ("docker.service", "postgresql.service"):
        (units / name).write_text("[Service]\nExecStart=/usr/local/bin/rota\n")
    for name in UNITS:
        shutil.copy(DEPLOY / "systemd" / name, units / name)
    rota = tmp_path / "usr/local/bin/rota"
    rota.parent.mkdir(parents=True)
    rota.write_text("#!/bin/sh\n")
    rota.chmod(0o755)
    return tmp_path


def analyze(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["systemd-analyze", *args, f"--root={root}"], capture_output=True, text=True, timeout=60
    )


def test_both_units_pass_systemd_analyze_verify_without_a_warning(root: Path) -> None:
    done = analyze(root, "verify", "--man=no", *UNITS)
    assert (done.returncode, done.stdout + done.stderr) == (0, "")


def test_verify_would_report_a_misspelt_option(root: Path) -> None:
    path = root / "etc/systemd/system/rota-scheduler.service"
    path.write_text(path.read_text().replace("ProtectHome=yes", "ProtectHome=yse"))
    done = analyze(root, "verify", "--man=no", "rota-scheduler.service")
    assert "rota-scheduler.service:" in done.stderr and "ignoring: yse" in done.stderr


def test_the_scheduler_is_sandboxed_as_an_unprivileged_user(root: Path) -> None:
    """Exposure 1.6 of 10 in systemd's own review (threshold 2.0); the old unit scored 9.2."""
    review = analyze(root, "security", "--offline=yes", "--threshold=20", UNITS[0])
    assert review.returncode == 0, review.stdout[-2000:]
    options = unit(UNITS[0])
    assert options["Service.User"] == ["rota"] and options["Service.CapabilityBoundingSet"] == [""]
    assert options["Service.StateDirectory"] == ["rota"]
    assert options["Service.Environment"] == ["XDG_DATA_HOME=/var/lib"]  # data: /var/lib/rota
    assert options["Service.ProtectSystem"] == ["strict"]
    assert options["Service.SystemCallFilter"][0] == "@system-service"
    assert options["Service.LimitNOFILE"] == ["1048576"]


def test_the_agent_stays_root_in_the_host_mount_namespace_with_what_it_needs(root: Path) -> None:
    review = analyze(root, "security", "--offline=yes", "--threshold=60", UNITS[1])
    assert review.returncode == 0, review.stdout[-2000:]
    options = unit(UNITS[1])
    assert not {key.split(".", 1)[1] for key in options} & NAMESPACING
    assert "Service.User" not in options and options["Service.KillMode"] == ["process"]
    caps = set(options["Service.CapabilityBoundingSet"][0].split())
    assert {"CAP_SYS_ADMIN", "CAP_SETUID", "CAP_SETGID", "CAP_KILL"} <= caps
    assert "@mount" in options["Service.SystemCallFilter"][0].split()
    assert options["Service.NoNewPrivileges"] == ["yes"]
    assert options["Service.LimitNOFILE"] == ["65536"]
    # its data directory is its own, not inside the scheduler's (StateDirectory chowns)
    assert options["Service.StateDirectory"] == ["rota-agent"]


def test_the_units_start_the_daemons_with_flags_they_accept() -> None:
    for name in UNITS:
        argv = shlex.split(unit(name)["Service.ExecStart"][0])
        assert argv[0] == "/usr/local/bin/rota"
        build_parser().parse_args(argv[1:])


def compose_command() -> list[str]:
    """``docker-compose`` (Debian's package), else the ``docker compose`` plugin."""
    return ["docker-compose"] if shutil.which("docker-compose") else ["docker", "compose"]


def test_the_compose_file_is_a_valid_cluster_of_two_schedulers_and_simulated_agents() -> None:
    path = DEPLOY / "docker" / "compose.yaml"
    base = [*compose_command(), "-f", str(path), "config"]
    quiet = subprocess.run([*base, "-q"], capture_output=True, text=True, timeout=60)
    assert (quiet.returncode, quiet.stderr) == (0, "")
    resolved = subprocess.run(base, capture_output=True, text=True, timeout=60, check=True)
    services = yaml.safe_load(resolved.stdout)["services"]
    assert set(services) == {"db", "scheduler", "scheduler-2", "agent-1", "agent-2"}
    for name in ("scheduler", "scheduler-2"):
        assert services[name]["depends_on"]["db"]["condition"] == "service_healthy"
        port = services[name]["ports"][0]  # a string from docker-compose 1, a map from 2
        assert (port["host_ip"] if isinstance(port, dict) else port.split(":")[0]) == "127.0.0.1"
        args = build_parser().parse_args(services[name]["command"])
        assert args.ha and args.ha_advertise == f"{name}:9717"
    nodes = []
    for name in ("agent-1", "agent-2"):
        args = build_parser().parse_args(services[name]["command"])
        nodes.append(args.node)
        assert args.simulate_gpus == 4
        assert args.scheduler == "scheduler:9717,scheduler-2:9717"
    assert nodes == ["sim01", "sim02"]


def test_the_dockerfile_copies_what_exists_and_installs_a_known_extra() -> None:
    text = (DEPLOY / "docker" / "Dockerfile").read_text()
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert "postgres" in extras["optional-dependencies"] and '".[postgres]"' in text
    for line in text.splitlines():
        if line.startswith(("COPY", "ADD")):
            *sources, _ = line.split()[1:]
            assert all((REPO / source).exists() for source in sources), line
    ignored = (REPO / ".dockerignore").read_text().split()
    assert {".git", ".venv"} <= set(ignored)
    assert not {"pyproject.toml", "README.md"} & set(ignored)
    assert "\nUSER rota\n" in text


def test_the_head_node_example_loads_with_tls_postgresql_mounts_and_limits() -> None:
    cfg = load_config(DEPLOY / "examples" / "head-node" / "scheduler.yaml")
    assert cfg.database_url.startswith("postgresql+psycopg://")
    assert cfg.db_password_file == "/etc/rota/db-password"
    assert (cfg.tls_cert, cfg.tls_key, cfg.tls_client_ca) == (
        "/etc/rota/tls/scheduler.pem",
        "/etc/rota/tls/scheduler-key.pem",
        "/etc/rota/tls/ca.pem",
    )
    assert tuple(cfg.allowed_mounts) == ("/data", "/scratch")
    assert cfg.ha and cfg.ha_advertise == "sched1.example.org:9717"
    limits = policy_config(cfg).limits
    assert (limits.max_gpus_per_user, limits.max_pending_per_user) == (16, 1000)


def test_the_gpu_node_example_loads_with_tls_and_the_units_data_directory(tmp_path: Path) -> None:
    raw = yaml.safe_load((DEPLOY / "examples" / "gpu-node" / "agent.yaml").read_text())["agent"]
    assert raw["token_file"] == "/etc/rota/node-token"
    token = tmp_path / "node-token"
    token.write_text("s3cret\n")
    token.chmod(0o600)
    path = tmp_path / "agent.yaml"
    path.write_text(yaml.safe_dump({"agent": {**raw, "token_file": str(token)}}))
    cfg = load_agent_config(path, {})
    assert (cfg.scheduler, cfg.token, cfg.gpu_mode) == (
        "sched1.example.org:9717,sched2.example.org:9717",
        "s3cret",
        "nvidia",
    )
    assert cfg.ca and cfg.cert and cfg.key and not cfg.insecure
    assert tuple(cfg.allowed_mounts) == ("/data", "/scratch")
    assert cfg.data_dir == Path("/var/lib/rota-agent")  # the unit's StateDirectory
