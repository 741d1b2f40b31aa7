"""TLS end to end with real processes: ``rota certs init``, a scheduler serving TLS and mutual
TLS, the CLI and agents verifying it, and the wrong certificates refused."""

from __future__ import annotations

import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cluster import Cluster, wait_for
from tests.faults_support import spawn_agent


def _certs(cluster: Cluster, name: str, *args: str) -> Path:
    directory = cluster.root / name
    out = cluster.cli("rota", "certs", "init", "--dir", str(directory), *args)
    assert out.returncode == 0, out.stderr
    return directory


@pytest.fixture
def tls(cluster: Cluster) -> Path:
    """Certificates for the scheduler, nodes n1 and n2 of this cluster, and user ann."""
    nodes = [a for short in ("n1", "n2") for a in ("--node", cluster.node_name(short))]
    return _certs(cluster, "tls", *nodes, "--user", "ann")


def _cli_env(cluster: Cluster, ca: Path | None, cert: Path | None = None) -> dict[str, str]:
    env = dict(cluster.env)
    if ca is not None:
        env["ROTA_CA"] = str(ca)
    if cert is not None:
        env.update(ROTA_CERT=f"{cert}.pem", ROTA_KEY=f"{cert}-key.pem")
    return env


def _ginfo(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rota.cli.ginfo", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_certs_init_writes_private_keys_and_keeps_the_ca(cluster: Cluster, tls: Path) -> None:
    for key in ("ca-key.pem", "scheduler-key.pem", f"node-{cluster.node_name('n1')}-key.pem"):
        assert stat.S_IMODE((tls / key).stat().st_mode) == 0o600, key
    assert stat.S_IMODE(tls.stat().st_mode) == 0o700
    ca = (tls / "ca.pem").read_bytes()
    more = cluster.cli("rota", "certs", "init", "--dir", str(tls), "--node", "later")
    assert more.returncode == 0, more.stderr
    assert (tls / "node-later.pem").exists() and (tls / "ca.pem").read_bytes() == ca
    again = cluster.cli("rota", "certs", "init", "--dir", str(tls), "--node", "later")
    assert again.returncode == 2 and "exists" in again.stderr


def test_tls_clients_and_agents_verify_the_scheduler(cluster: Cluster, tls: Path) -> None:
    cluster.start_scheduler(
        "--open-registration",
        "--tls-cert",
        str(tls / "scheduler.pem"),
        "--tls-key",
        str(tls / "scheduler-key.pem"),
    )
    assert "serving TLS" in cluster.log("scheduler")
    assert _ginfo(_cli_env(cluster, tls / "ca.pem")).returncode == 0
    plain = _ginfo(_cli_env(cluster, None))
    assert plain.returncode == 1 and "cannot reach" in plain.stderr
    assert "if the scheduler serves TLS, give its CA: --ca, ROTA_CA" in plain.stderr
    other = _certs(cluster, "other")
    forged = _ginfo(_cli_env(cluster, other / "ca.pem"))
    assert forged.returncode == 1 and "TLS with the rota scheduler" in forged.stderr

    cluster.env_extra = {"ROTA_CA": str(tls / "ca.pem")}
    cluster.start_agent("n1", 1, "--ca", str(tls / "ca.pem"))
    wrong = spawn_agent(cluster, "wrong-ca", cluster.node_name("n2"), "--ca", str(other / "ca.pem"))
    wait_for(lambda: "retrying" in cluster.log("wrong-ca"), 20, what="the agent to fail TLS")
    assert wrong.poll() is None  # it keeps trying, and never gets in
    nodes = _ginfo(_cli_env(cluster, tls / "ca.pem")).stdout
    assert cluster.node_name("n1") in nodes and cluster.node_name("n2") not in nodes


def test_mutual_tls_needs_a_certificate_and_a_node_certificate_speaks_for_its_node(
    cluster: Cluster, tls: Path
) -> None:
    cluster.start_scheduler(
        "--open-registration",
        "--tls-cert",
        str(tls / "scheduler.pem"),
        "--tls-key",
        str(tls / "scheduler-key.pem"),
        "--tls-client-ca",
        str(tls / "ca.pem"),
    )
    ca = tls / "ca.pem"
    no_cert = _ginfo(_cli_env(cluster, ca))
    assert no_cert.returncode == 1, no_cert.stdout
    assert "if the scheduler requires client certificates, give yours: cert: and key:" in (
        no_cert.stderr
    )
    assert _ginfo(_cli_env(cluster, ca, tls / "user-ann")).returncode == 0

    cluster.env_extra = {
        "ROTA_CA": str(ca),
        "ROTA_CERT": str(tls / "user-ann.pem"),
        "ROTA_KEY": str(tls / "user-ann-key.pem"),
    }
    n1, n2 = cluster.node_name("n1"), cluster.node_name("n2")
    n1_cert = ["--ca", str(ca), "--cert", str(tls / f"node-{n1}.pem")]
    n1_cert += ["--key", str(tls / f"node-{n1}-key.pem")]
    cluster.start_agent("n1", 1, *n1_cert)

    impostor = spawn_agent(cluster, "impostor", n2, *n1_cert)
    assert impostor.wait(timeout=60) == 1
    assert f"the client certificate is for node {n1!r}, not for node {n2!r}" in cluster.log(
        "impostor"
    )
    spawn_agent(cluster, "bare", n2, "--ca", str(ca))
    wait_for(lambda: "retrying" in cluster.log("bare"), 20, what="the agent without a cert")
    assert "if the scheduler requires client certificates (tls_client_ca), set cert and key" in (
        cluster.log("bare")
    )
    cluster.kill("bare")
    user = spawn_agent(
        cluster,
        "user",
        n2,
        "--ca",
        str(ca),
        "--cert",
        str(tls / "user-ann.pem"),
        "--key",
        str(tls / "user-ann-key.pem"),
    )
    assert user.wait(timeout=60) == 1
    assert "is not a node certificate" in cluster.log("user")
    other = _certs(cluster, "other", "--node", n2)
    foreign = spawn_agent(
        cluster,
        "foreign",
        n2,
        "--ca",
        str(ca),
        "--cert",
        str(other / f"node-{n2}.pem"),
        "--key",
        str(other / f"node-{n2}-key.pem"),
    )
    wait_for(lambda: "retrying" in cluster.log("foreign"), 20, what="the handshake to fail")
    assert foreign.poll() is None
    nodes = _ginfo(_cli_env(cluster, ca, tls / "user-ann")).stdout
    assert n1 in nodes and n2 not in nodes


def test_without_tls_the_scheduler_listens_on_loopback_only(cluster: Cluster) -> None:
    args = [sys.executable, "-m", "rota.cli.rota_main", "scheduler", "--db", "sqlite://"]
    exposed = subprocess.run(
        [*args, "--listen", f"0.0.0.0:{cluster.port}"],
        env=cluster.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert exposed.returncode == 1
    assert "refusing to serve" in exposed.stderr and "--insecure" in exposed.stderr
    cluster.start_scheduler("--open-registration", "--insecure")
    assert "INSECURE: serving" in cluster.log("scheduler")
