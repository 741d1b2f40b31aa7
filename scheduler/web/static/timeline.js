// The reservation timeline: one row per node, expanding to one row per GPU, against local
// time (day or week). Every bar names whom it is for and is coloured mine / my group / others
// / maintenance; unavailable GPUs are greyed. A card tells the details of a bar.

import { getJobs, getNodes, getReservation, getReservations, session } from "./api.js";
import { $, confirmButton, el, fill, gpuText, paged, td, when } from "./dom.js";
import { HOUR, hourTicks, midnights, viewBounds, zoneName } from "./calendar.js";
import { nodeMatches, notePartitions } from "./filters.js";
import * as booking from "./booking.js";

export const tl = {
  span: "day",
  anchor: null, // a time in the day or week shown (null: now)
  firstDay: Number(localStorage.getItem("rota.weekStart") ?? 1), // Monday unless chosen
  toggled: new Set(), // nodes opened or closed against the default
  page: {},
  resvPage: {},
  bars: new Map(), // data-key -> the booking or job a bar shows
  cells: new Map(), // "node:index" -> [{s, e, key}] of what the GPU holds in view
  from: 0,
  to: 0,
};
const NODE_PAGE = 25;
const RESV_PAGE = 50;
const OPEN_UP_TO = 8; // with this many nodes shown or fewer, every node starts opened

/** mine, group (one of my accounts), other, or maint. */
function resvKind(v) {
  if (v.flags.includes("MAINT")) return "maint";
  if (v.mine) return "mine";
  if (v.accounts.some((a) => session.me.accounts.includes(a))) return "group";
  return "other";
}

function jobKind(j) {
  if (j.user === session.me.user) return "mine";
  if (session.me.accounts.includes(j.account)) return "group";
  return "other";
}

/** Whom a booking is for: its users, its accounts as groups; maintenance for MAINT. */
export function forWhom(v) {
  if (v.flags.includes("MAINT")) return "maintenance";
  const parts = [...v.users, ...v.accounts.map((a) => `group ${a}`)];
  return parts.join(", ") || v.created_by;
}

/** Node -> what it holds in view: bookings' windows and running jobs (start to expected end). */
function itemsByNode(reservations, jobs, to) {
  const out = new Map();
  const add = (node, item) => (out.get(node) || out.set(node, []).get(node)).push(item);
  for (const v of reservations) {
    const key = "r:" + v.name;
    tl.bars.set(key, { resv: v });
    for (const [ws, we] of v.windows) {
      for (const [node, idx] of Object.entries(v.gpus)) {
        add(node, { key, s: Date.parse(ws), e: Date.parse(we), idx, kind: "resv " + resvKind(v), label: `${forWhom(v)} · ${v.name}`, resv: v, win: ws });
      }
    }
  }
  for (const j of jobs) {
    if (!j.start_time) continue;
    const key = "j:" + j.id;
    tl.bars.set(key, { job: j });
    for (const [node, idx] of Object.entries(j.gpu_ids)) {
      const e = j.expected_end ? Date.parse(j.expected_end) : to;
      add(node, { key, s: Date.parse(j.start_time), e, idx, kind: "job " + jobKind(j), label: `${j.user} · ${j.id}`, job: j });
    }
  }
  return out;
}

export const x = (ms) => (100 * (Math.max(tl.from, Math.min(tl.to, ms)) - tl.from)) / (tl.to - tl.from);

function bar(item, now, top) {
  const attrs = {
    class: "tl-bar " + item.kind,
    "data-key": item.key,
    style: `left:${x(item.s)}%;width:${Math.max(0.2, x(item.e) - x(item.s))}%` + (top == null ? "" : `;top:${top}px;height:16px`),
  };
  if (item.resv) Object.assign(attrs, { "data-resv": item.resv.name, "data-win": item.win });
  else Object.assign(attrs, { "data-job": item.job.id, "data-user": item.job.user });
  const node = el("div", attrs);
  if (item.job && item.e > now && item.s < item.e) {
    const at = Math.max(0, Math.min(100, (100 * (now - item.s)) / (item.e - item.s)));
    node.append(el("div", { class: "tl-expected", style: `left:${at}%` }));
  }
  node.append(el("span", { class: "tl-name", text: item.label }));
  if (item.resv && item.resv.may_delete && top == null) {
    if (item.s >= tl.from) node.append(el("div", { class: "tl-edge l", title: "drag to move the start" }));
    if (item.e <= tl.to) node.append(el("div", { class: "tl-edge r", title: "drag to move the end" }));
  }
  return node;
}

const gpus = (n) => `${n} GPU${n > 1 ? "s" : ""}`;

/** A closed node's items: a booking's window once, and the overlapping jobs of one user as
 * one bar ("ann · 3 jobs (4 GPUs)"), each saying how many GPUs it covers. */
function merged(items) {
  const out = [];
  const seen = new Set();
  const last = new Map(); // user -> their latest merged job bar
  for (const it of [...items].sort((a, b) => a.s - b.s)) {
    if (it.resv) {
      if (!seen.has(it.key + it.s) && seen.add(it.key + it.s)) out.push({ ...it, label: `${it.label} (${gpus(it.idx.length)})` });
      continue;
    }
    const m = last.get(it.job.user);
    if (m && it.s < m.e) {
      Object.assign(m, { e: Math.max(m.e, it.e), jobs: m.jobs + 1, count: m.count + it.idx.length });
      m.label = `${it.job.user} · ${m.jobs} jobs (${gpus(m.count)})`;
      continue;
    }
    const fresh = { ...it, jobs: 1, count: it.idx.length, label: `${it.label} (${gpus(it.idx.length)})` };
    last.set(it.job.user, fresh);
    out.push(fresh);
  }
  return out;
}

/** The lanes of a closed node's row: items packed so that none overlaps another. */
function lanes(items) {
  const ends = [];
  const placed = [];
  for (const it of [...items].sort((a, b) => a.s - b.s)) {
    let lane = ends.findIndex((e) => e <= it.s);
    if (lane < 0) lane = ends.push(0) - 1;
    ends[lane] = it.e;
    placed.push([it, lane]);
  }
  return [placed, Math.max(1, ends.length)];
}

function gridLines(track) {
  for (const t of midnights(tl.from, tl.to)) {
    track.append(el("div", { class: "tl-midnight", style: `left:${x(t)}%` }));
  }
}

function header() {
  const ticks = el("div", { class: "tl-track" });
  const narrow = $("#timeline").clientWidth < 700; // a phone
  const day = tl.span === "week" ? { weekday: narrow ? "narrow" : "short", day: "numeric" } : { weekday: "short", day: "numeric", month: "short" };
  for (const t of midnights(tl.from, tl.to)) {
    const d = new Date(t);
    ticks.append(el("div", { class: "tl-tick midnight", "data-t": new Date(t).toISOString(), style: `left:${x(t)}%`, text: d.toLocaleDateString([], day) }));
  }
  if (tl.span === "day") {
    const every = narrow ? 6 : 2; // hours between labels (phones: 6)
    for (const t of hourTicks(tl.from, tl.to, every)) {
      ticks.append(el("div", { class: "tl-tick", "data-t": new Date(t).toISOString(), style: `left:${x(t)}%`, text: new Date(t).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" }) }));
    }
  }
  return el("div", { class: "tl-row head" }, el("div", { class: "tl-label", text: zoneName() }), ticks);
}

function nodeUsers(items) {
  const users = new Set();
  for (const it of items) {
    if (it.job) users.add(it.job.user);
    else for (const u of [...it.resv.users, it.resv.created_by]) users.add(u);
  }
  return users;
}

export async function renderTimeline() {
  if (booking.busy()) return; // a drag is in progress: keep the rows under the pointer
  if (tl.anchor == null) tl.anchor = Date.now();
  const [from, to] = viewBounds(tl.anchor, tl.span, tl.firstDay);
  const [{ nodes }, { jobs }, { reservations }] = await Promise.all([getNodes(), getJobs("?state=active"), getReservations(from, to)]);
  if (booking.busy()) return;
  Object.assign(tl, { from, to });
  tl.bars.clear();
  tl.cells.clear();
  $("#tl-range").textContent = `${when(new Date(from).toISOString())} – ${when(new Date(to - 1).toISOString())} (${zoneName()})`;
  const now = Date.now();
  const byNode = itemsByNode(reservations, jobs, to);
  notePartitions(nodes);
  const matching = nodes.filter((n) => nodeMatches(n, nodeUsers(byNode.get(n.name) || []), session.me.user));
  const shown = paged(matching, $("#tl-pager"), tl.page, NODE_PAGE, renderTimeline);
  const body = [header()];
  for (const n of shown) {
    const items = (byNode.get(n.name) || []).filter((it) => it.e > from && it.s < to);
    const open = (matching.length <= OPEN_UP_TO) !== tl.toggled.has(n.name);
    body.push(nodeRow(n, items, open, now));
    if (open) for (const g of n.gpus) body.push(gpuRow(n, g, items, now));
  }
  const grid = $("#timeline");
  grid.replaceChildren(...body);
  grid.dataset.from = from;
  grid.dataset.to = to;
  booking.drawSelection();
  bookingsTable(reservations, new Set(matching.map((n) => n.name)));
}

function nodeRow(n, items, open, now) {
  const toggle = el("button", { type: "button", class: "toggle", "aria-expanded": String(open), onclick: () => {
    tl.toggled.has(n.name) ? tl.toggled.delete(n.name) : tl.toggled.add(n.name);
    renderTimeline();
  } }, open ? "▾" : "▸");
  const down = ["DRAINING", "DRAINED", "DOWN"].includes(n.state);
  const label = el("div", { class: "tl-label" }, toggle, ` ${n.name} `, el("span", { class: "hint", text: `${n.gpus_free}/${n.gpus_total} free${down ? " · " + n.state : ""}` }));
  const track = el("div", { class: "tl-track summary" + (down ? " unavail" : ""), "data-summary": n.name, title: down ? `${n.name} is ${n.state}` : null });
  gridLines(track);
  let height = 26;
  if (!open) {
    const [placed, count] = lanes(merged(items));
    for (const [it, lane] of placed) track.append(bar(it, now, 3 + lane * 19));
    height = 6 + count * 19;
  }
  if (now >= tl.from && now < tl.to) track.append(el("div", { class: "tl-now", style: `left:${x(now)}%` }));
  return el("div", { class: "tl-row node" + (open ? " open" : ""), style: `height:${height}px`, "data-node-row": n.name }, label, track);
}

function gpuRow(n, g, items, now) {
  const why = g.unavailable;
  const track = el("div", { class: "tl-track" + (why ? " unavail" : ""), "data-node": n.name, "data-index": g.index, title: why ? `${n.name}:${g.index} ${why}` : null });
  gridLines(track);
  const held = [];
  for (const it of items) {
    if (!it.idx.includes(g.index)) continue;
    track.append(bar(it, now));
    held.push({ s: it.s, e: it.e, key: it.key });
  }
  tl.cells.set(`${n.name}:${g.index}`, held);
  if (now >= tl.from && now < tl.to) track.append(el("div", { class: "tl-now", style: `left:${x(now)}%` }));
  return el("div", { class: "tl-row gpu" }, el("div", { class: "tl-label", text: `${n.name}:${g.index}` + (why ? " ⊘" : "") }), track);
}

function bookingsTable(reservations, nodes) {
  if (document.querySelector("#resv-table .confirm .question")) return; // keep a question asked
  const shown = paged(reservations.filter((v) => Object.keys(v.gpus).some((n) => nodes.has(n))), $("#resv-pager"), tl.resvPage, RESV_PAGE, renderTimeline);
  fill(
    $("#resv-table tbody"),
    shown.map((v) =>
      el(
        "tr",
        { "data-resv": v.name, class: resvKind(v) },
        td(v.name),
        td(forWhom(v)),
        td(v.created_by),
        td(when(v.start)),
        td(when(v.end)),
        td(gpuText(v.gpus)),
        td(v.flags.join(",")),
        td(when(v.given_back)),
        el("td", {}, v.may_delete ? confirmButton("Cancel", `Cancel ${v.name}?`, () => booking.cancel(v.name)) : ""),
      ),
    ),
  );
}

// ------------------------------------------------------------ the card

/** Show the details of the bar ``key`` near (px, py); ``pinned`` keeps it until closed. */
export function showCard(key, px, py, pinned) {
  const found = tl.bars.get(key);
  const card = $("#tl-card");
  if (!found) return;
  card.dataset.pinned = pinned ? "1" : "";
  card.dataset.key = key;
  const rows = (pairs) => el("dl", {}, ...pairs.filter(([, v]) => v !== "" && v != null).flatMap(([k, v]) => [el("dt", { text: k }), el("dd", { text: v })]));
  const close = el("button", { type: "button", class: "close", onclick: hideCard }, "×");
  if (found.job) {
    const j = found.job;
    card.replaceChildren(close, el("h3", {}, el("a", { href: "#job/" + encodeURIComponent(j.id) }, `job ${j.id}`), ` ${j.name}`), rows([
      ["User", j.user], ["Account", j.account], ["State", j.state], ["Started", when(j.start_time)],
      ["Expected end", when(j.expected_end)], ["GPUs", gpuText(j.gpu_ids)],
    ]));
  } else {
    const v = found.resv;
    const extend = () => booking.change(v, { end: new Date(Date.parse(v.end) + HOUR).toISOString() });
    card.replaceChildren(close, el("h3", { text: v.name }), rows([
      ["For", forWhom(v)], ["Booked by", v.created_by], ["From", when(v.start)], ["To", when(v.end)],
      ["GPUs", gpuText(v.gpus)], ["Flags", v.flags.join(", ")], ["Running jobs", v.running_jobs.join(", ")],
      ["If unused", v.unused === "release" ? "released" : "lent to the queue"], ["Given back", when(v.given_back)],
    ]), v.may_delete ? el("p", { class: "actions" }, el("button", { type: "button", class: "extend", onclick: extend }, "End 1 h later"), " ", confirmButton("Cancel booking", `Cancel ${v.name}?`, () => booking.cancel(v.name))) : "");
  }
  card.hidden = false;
  if (pinned && found.resv) usageLine(card, key, found.resv.name);
  const w = Math.min(320, window.innerWidth - 16);
  card.style.left = `${Math.max(8, Math.min(px + 12, window.innerWidth - w - 8))}px`;
  card.style.top = `${py + 12}px`;
}

/** Add a pinned booking card's GPU-hours of its current window (``GET /reservations/NAME``). */
async function usageLine(card, key, name) {
  let usage;
  try {
    ({ usage } = await getReservation(name));
  } catch {
    return; // gone or unreachable: the card keeps what it shows
  }
  if (card.hidden || card.dataset.key !== key || card.querySelector(".usage")) return;
  const h = (k) => `${k} ${usage[k].toFixed(1)}`;
  const text = `GPU-hours: ${["booked", "used", "lent", "idle", "released"].map(h).join(" · ")}`;
  card.querySelector("dl").after(el("p", { class: "usage", text }));
}

export function hideCard() {
  const card = $("#tl-card");
  card.hidden = true;
  card.dataset.pinned = "";
}
