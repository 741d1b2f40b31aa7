// The overview (one row per node) and the GPU heat map (one cell per GPU, by state).

import { getNodes, session } from "./api.js";
import { $, el, fill, gib, paged, pct, td, when } from "./dom.js";
import { nodeMatches, notePartitions } from "./filters.js";

const overviewPage = {};
const heatPage = {};
const NODE_PAGE = 50;
const HEAT_PAGE = 16;

/** The users holding a node's GPUs (the user filter's and "mine"'s view of a node). */
function holders(n) {
  return new Set(n.gpus.map((g) => g.user).filter(Boolean));
}

export function shownNodes(nodes) {
  notePartitions(nodes);
  return nodes.filter((n) => nodeMatches(n, holders(n), session.me.user));
}

export async function renderOverview() {
  const { nodes, summary } = await getNodes();
  const reserved = nodes.reduce((k, n) => k + n.gpus_reserved, 0);
  $("#totals").replaceChildren(
    ...[
      ["Nodes", summary.nodes],
      ["GPUs free", summary.gpus_free],
      ["GPUs total", summary.gpus_total],
      ["Unhealthy", summary.gpus_unhealthy],
      ["Reserved now", reserved],
    ].map(([k, v]) => el("div", { class: "card", "data-card": k }, el("b", { text: v }), k)),
  );
  const shown = paged(shownNodes(nodes), $("#nodes-pager"), overviewPage, NODE_PAGE, renderOverview);
  fill(
    $("#nodes-table tbody"),
    shown.map((n) =>
      el(
        "tr",
        { "data-node": n.name },
        td(n.name),
        td(n.state, "state-" + n.state),
        td(n.gpus_free, "num"),
        td(n.gpus_total, "num"),
        td(n.gpus_allocated, "num"),
        td(n.gpus_unhealthy, "num"),
        td(n.gpus_reserved, "num"),
        td(n.reason),
        td(when(n.last_heartbeat) + (n.stale ? " (stale)" : "")),
      ),
    ),
  );
}

function heat(u) {
  const v = Math.max(0, Math.min(100, u ?? 0));
  return `hsl(${40 - (v * 40) / 100}, ${85}%, ${74 - v * 0.14}%)`;
}

/** What the heat map shows a GPU as: unavailable, reserved, free, idle (allocated, < 10 %) or busy. */
export function gpuKind(g) {
  if (g.unavailable) return "unavail";
  if (g.job) return (g.utilization ?? 0) < 10 ? "alloc-idle" : "busy";
  if (g.reserved) return "reserved";
  return "free";
}

const KIND_TEXT = { unavail: "unavailable", reserved: "reserved", free: "free", "alloc-idle": "allocated, idle", busy: "busy" };

export async function renderGpus() {
  const { nodes } = await getNodes();
  const shown = paged(shownNodes(nodes), $("#heat-pager"), heatPage, HEAT_PAGE, renderGpus);
  $("#heatmap").replaceChildren(
    ...shown.map((n) =>
      el(
        "div",
        { class: "node" },
        el("h2", {}, n.name + " ", el("span", { class: "hint", text: n.state + (n.reason ? ` · ${n.reason}` : "") })),
        el("div", { class: "cells" }, ...n.gpus.map((g) => gpuCell(n, g))),
      ),
    ),
  );
}

function gpuCell(n, g) {
  const kind = gpuKind(g);
  const cell = el(
    "div",
    { class: `gpu-cell ${kind}` + (g.stale ? " stale" : ""), "data-gpu": n.name + ":" + g.index, "data-kind": kind, title: g.uuid },
    el("b", { text: `GPU ${g.index} · ${pct(g.utilization) || "no reading"}` }),
    el("div", { class: "kind", text: KIND_TEXT[kind] + (g.unavailable ? ` (${g.unavailable})` : "") }),
    el("div", { text: g.model }),
    el("div", { text: `mem ${gib(g.memory_used)} / ${gib(g.memory_total)}` }),
    el("div", { text: g.temperature == null ? "" : `${g.temperature.toFixed(0)} °C` }),
    el("div", { class: "holder", text: g.job ? `job ${g.job} · ${g.user}` : g.reserved ? `booked: ${g.reserved}` : "" }),
  );
  if (kind === "busy") cell.style.background = heat(g.utilization);
  if (g.stale) cell.append(el("span", { class: "tag stale", text: "stale" }));
  for (const p of g.foreign_processes) {
    cell.append(el("div", { class: "tag bad", text: `foreign pid ${p.pid} ${gib(p.memory_used)}` }));
  }
  return cell;
}
