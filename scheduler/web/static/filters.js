// The filter bar over every view: node, user, state, partition and "mine". Values live in the
// tab's sessionStorage, so they survive a reload; each view applies the ones it can.

import { $, el } from "./dom.js";

const KEY = "rota.filters";
export const filters = { node: "", user: "", state: "", partition: "", mine: false };

const has = (text, part) => !part || String(text || "").toLowerCase().includes(part.toLowerCase());

/** Whether node ``n`` passes the node, state and partition filters; ``users`` are the users
 * holding its GPUs or booking them (for the user filter and "mine"). */
export function nodeMatches(n, users, me) {
  if (!has(n.name, filters.node)) return false;
  if (filters.state && NODE_STATES.includes(filters.state) && n.state !== filters.state) return false;
  if (filters.partition && !(n.partitions || []).includes(filters.partition)) return false;
  if (filters.user && ![...users].some((u) => has(u, filters.user))) return false;
  if (filters.mine && !users.has(me)) return false;
  return true;
}

/** Whether job ``j`` passes the filters (its nodes, user or account, state, partition). */
export function jobMatches(j, me) {
  if (filters.node && !j.nodes.some((n) => has(n, filters.node))) return false;
  if (filters.user && !has(j.user, filters.user) && !has(j.account, filters.user)) return false;
  if (filters.state && JOB_STATES.includes(filters.state)) {
    if (filters.state === "held" ? !j.held : j.state !== filters.state) return false;
  }
  // a pending job's partition is those it may run in ("a,b")
  if (filters.partition && !(j.partition || "").split(",").includes(filters.partition)) return false;
  if (filters.mine && j.user !== me) return false;
  return true;
}

const NODE_STATES = ["IDLE", "MIXED", "ALLOCATED", "DRAINING", "DRAINED", "DOWN"];
const JOB_STATES = ["PENDING", "RUNNING", "held"];

/** The partitions seen in ``nodes`` become the partition filter's choices. */
export function notePartitions(nodes) {
  const select = $("#f-partition");
  const names = [...new Set(nodes.flatMap((n) => n.partitions || []))].sort();
  const have = [...select.options].slice(1).map((o) => o.value);
  if (names.join() === have.join()) return;
  select.replaceChildren(el("option", { value: "" }, "any partition"), ...names.map((p) => el("option", { value: p }, p)));
  select.value = names.includes(filters.partition) ? filters.partition : "";
}

/** Wire the bar: every change saves the filters and calls ``changed`` (a redraw). */
export function setupFilters(changed) {
  const state = $("#f-state");
  state.replaceChildren(
    el("option", { value: "" }, "any state"),
    el("optgroup", { label: "Nodes" }, ...NODE_STATES.map((s) => el("option", { value: s }, s))),
    el("optgroup", { label: "Jobs" }, ...JOB_STATES.map((s) => el("option", { value: s }, s))),
  );
  try {
    Object.assign(filters, JSON.parse(sessionStorage.getItem(KEY) || "{}"));
  } catch {
    // a damaged entry: start without filters
  }
  const inputs = { node: "#f-node", user: "#f-user", state: "#f-state", partition: "#f-partition", mine: "#f-mine" };
  for (const [k, sel] of Object.entries(inputs)) {
    const input = $(sel);
    if (k === "mine") input.checked = filters.mine;
    else if (k === "partition" && filters.partition) input.append(el("option", { value: filters.partition }, filters.partition));
    if (k !== "mine") input.value = filters[k];
  }
  let timer = null;
  const read = () => {
    for (const [k, sel] of Object.entries(inputs)) filters[k] = k === "mine" ? $(sel).checked : $(sel).value.trim();
    sessionStorage.setItem(KEY, JSON.stringify(filters));
    clearTimeout(timer);
    timer = setTimeout(changed, 250);
  };
  $("#filters").addEventListener("input", read);
  $("#filters").addEventListener("change", read);
  $("#f-clear").addEventListener("click", () => {
    for (const [k, sel] of Object.entries(inputs)) {
      if (k === "mine") $(sel).checked = false;
      else $(sel).value = "";
    }
    read();
  });
}
