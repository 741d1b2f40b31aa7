"""The load generator's report as a two-column table (the JSON holds everything)."""

from __future__ import annotations

from typing import Any


def _ms(q: dict[str, Any]) -> str:
    if not q["n"]:
        return "no samples"
    return f"p50 {q['p50_ms']} ms, p99 {q['p99_ms']} ms, max {q['max_ms']} ms (n={q['n']})"


def _process(p: dict[str, Any] | None) -> str:
    if not p:
        return "not measured (no pid)"
    return f"{p['cpu_percent']} % of a core, RSS {p['rss_mean_mib']} MiB mean, {p['rss_max_mib']} MiB max"


def _beats(h: dict[str, Any]) -> str:
    return (
        f"{h['sent']} sent ({h['sent_per_s']}/s, {h['keepalives']} of them keepalives; "
        f"telemetry every {h['telemetry_period_s']:g} s, expected "
        f"{h['expected_telemetry_per_s']}/s), {h['answered']} answered ({h['answered_per_s']}/s)"
    )


def _ginfo(g: dict[str, Any]) -> str:
    return _ms(g) + (f", {g['failed']} failed" if g["failed"] else "")


def _shed(count: int | None) -> str:
    if count is None:
        return "not measured (no /metrics)"
    return f"{count} heartbeats' telemetry shed in the window (rota_telemetry_shed_total)"


def _streams(s: dict[str, Any]) -> str:
    codes = ", ".join(f"{n} {c}" for c, n in sorted(s.get("dial_codes", {}).items()))
    return (
        f"{s['disconnects_window']} disconnects in the window ({s['disconnects_total']} in all), "
        f"{s['reconnects_total']} reconnects, {s['dial_failures']} failed dials"
        f"{f' ({codes})' if codes else ''}, {s['watchdog_drops']} watchdog drops"
    )


def rows(report: dict[str, Any]) -> list[tuple[str, str]]:
    o, s = report["options"], report["scheduler"]
    out = [
        ("nodes x GPUs", f"{o['nodes']} x 8, {o['workers']} load processes"),
        ("window / ramp", f"{o['window']:g} s / {o['ramp']:g} s (+{o['settle']:g} s settle)"),
        ("registration", f"{s['registration_s']} s"),
        ("all connected after", f"{s['all_connected_s']} s" if s["all_connected_s"] else "NEVER"),
        ("scheduler process", _process(s["process"])),
        ("load generator CPU", f"{s['loadgen_cpu_percent']} % of a core"),
        ("heartbeats", _beats(s["heartbeats"])),
        ("heartbeat round trip", _ms(s["heartbeats"]["round_trip"])),
        ("telemetry shed", _shed(s.get("telemetry_shed_window"))),
        ("streams", _streams(s["streams"])),
    ]
    for name, q in s["unary"].items():
        extra = f", reply {q['reply_mib']} MiB" if "reply_mib" in q else ""
        errors = f", {q['errors']} errors" if q["errors"] else ""
        slowest = ", ".join(f"{ms:.0f} ms at {at:.0f} s" for at, ms in q.get("slowest", []))
        out.append((name, _ms(q) + extra + errors + (f"; slowest {slowest}" if slowest else "")))
    out.append(("ginfo whole process", _ginfo(s["ginfo"])))
    j = s["jobs"]
    out += [
        (
            f"{j['submitted']} jobs: launch orders",
            f"{j['launched']} launched, all after {j['all_launched_s']} s, median "
            f"{j['launch_median_s']} s (submitting took {j['submit_s']} s); "
            f"{j['on_stopped_nodes']} sent to stopped nodes",
        ),
        (
            f"{j['submitted']} jobs: completed",
            f"{j['completed']} completed, all after {j['all_completed_s']} s; "
            f"scheduler says {j['scheduler_states']}",
        ),
    ]
    d = s["down"]
    out.append(
        (
            f"{d['stopped']} stopped nodes ({d['mode']})",
            f"{d['marked_down']} marked DOWN, the last after {d['max_s']} s "
            f"(node_timeout {d['node_timeout_s']:g} s, tick {d['tick_interval_s']:g} s)",
        )
    )
    if "floor" in report:
        f, r = report["floor"], report["ratios"]
        out += [
            ("floor process", _process(f["process"])),
            ("floor heartbeats", _beats(f["heartbeats"])),
            ("floor round trip", _ms(f["heartbeats"]["round_trip"])),
            ("floor streams", _streams(f["streams"])),
            *((f"floor {name} (empty reply)", _ms(q)) for name, q in f.get("unary", {}).items()),
            *((("floor ginfo (empty replies)", _ginfo(f["ginfo"])),) if "ginfo" in f else ()),
            (
                "scheduler / floor",
                f"CPU {r.get('cpu_percent')}x, RSS {r.get('rss_mean_mib')}x mean, "
                f"{r.get('rss_max_mib')}x max",
            ),
        ]
    return out


def table(report: dict[str, Any]) -> str:
    lines = rows(report)
    width = max(len(k) for k, _ in lines)
    return "\n".join(f"{k.ljust(width)}  {v}" for k, v in lines)
