// rota dashboard: plain JavaScript over the JSON API (/api/v1, docs/web.md). The page polls the
// API every few seconds for the view on screen; every change sends the session's CSRF token.
"use strict";

const POLL_MS = 2000;
const state = { me: null, view: "", timer: null, tl: { span: "day", start: null, sel: null } };

const $ = (sel) => document.querySelector(sel);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k === "style") node.style.cssText = v; // CSSOM: allowed by the page's CSP
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(c ?? ""));
  return node;
}

function fill(tbody, rows) {
  tbody.replaceChildren(...rows);
}

function td(text, cls) {
  return el("td", cls ? { class: cls } : {}, text == null ? "" : String(text));
}

function when(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  return d.toLocaleString([], { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" });
}

function gib(bytes) {
  return bytes == null ? "?" : (bytes / 2 ** 30).toFixed(1) + " GiB";
}

function pct(v) {
  return v == null ? "" : v.toFixed(0) + "%";
}

function showError(message) {
  const box = $("#error");
  box.textContent = message || "";
  box.hidden = !message;
}

class HttpError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

// Listings follow the API's change feed (?since=VERSION, docs/web.md): after the first answer
// only changed rows travel; the page still gets whole listings, rebuilt here.
const FEEDS = { "/nodes": ["nodes", "name"], "/jobs": ["jobs", "id"], "/reservations": ["reservations", "name"] };
const feeds = new Map(); // path -> { version, rows: Map(id -> row), order, extras }

async function follow(path, [key, id]) {
  const known = feeds.get(path);
  const sep = path.includes("?") ? "&" : "?";
  const d = await api("GET", `${path}${sep}since=${known ? known.version : 0}`, undefined, true);
  const { version, full, removed, order, [key]: changed, ...extras } = d;
  const f = full || !known ? { rows: new Map(), order: [], extras: {} } : known;
  for (const r of changed) f.rows.set(String(r[id]), r);
  for (const gone of removed) f.rows.delete(gone);
  if (order) f.order = order;
  Object.assign(f.extras, extras);
  f.version = version;
  feeds.delete(path);
  feeds.set(path, f);
  if (feeds.size > 8) feeds.delete(feeds.keys().next().value);
  return { ...f.extras, [key]: f.order.map((i) => f.rows.get(i)).filter(Boolean) };
}

async function api(method, path, body, raw) {
  const listing = method === "GET" && !raw && FEEDS[path.split("?")[0]];
  if (listing) return follow(path, listing);
  const headers = {};
  if (method !== "GET") headers["X-CSRF-Token"] = state.me ? state.me.csrf : "";
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch("/api/v1" + path, {
    method,
    headers,
    credentials: "same-origin",
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const type = res.headers.get("Content-Type") || "";
  const data = type.startsWith("application/json") ? await res.json() : await res.text();
  if (!res.ok) {
    const message = typeof data === "object" ? data.error : data;
    if (res.status === 401 && path !== "/login") loggedOut();
    throw new HttpError(res.status, message);
  }
  return data;
}

// ------------------------------------------------------------------ login

function loggedOut() {
  state.me = null;
  clearTimeout(state.timer);
  $("#nav").hidden = true;
  $("#whoami").hidden = true;
  for (const s of document.querySelectorAll("main > section")) s.hidden = true;
  $("#login-view").hidden = false;
}

function loggedIn(me) {
  state.me = me;
  $("#login-view").hidden = true;
  $("#nav").hidden = false;
  $("#whoami").hidden = false;
  $("#user-name").textContent = me.user + (me.admin ? " (admin)" : "");
  for (const e of document.querySelectorAll(".admin-only")) e.hidden = !me.admin;
  route();
}

async function login(event) {
  event.preventDefault();
  try {
    const me = await api("POST", "/login", { token: $("#login-token").value.trim() });
    $("#login-token").value = "";
    showError("");
    loggedIn(me);
  } catch (err) {
    showError(err.message);
  }
}

async function logout() {
  try {
    await api("POST", "/logout");
  } finally {
    loggedOut();
  }
}

// ------------------------------------------------------------------ views

const VIEWS = {
  overview: renderOverview,
  gpus: renderGpus,
  queue: renderQueue,
  job: renderJob,
  timeline: renderTimeline,
  accounting: renderAccounting,
};

function route() {
  if (!state.me) return;
  const [name, arg] = (location.hash.slice(1) || "overview").split("/");
  const view = VIEWS[name] ? name : "overview";
  for (const s of document.querySelectorAll("main > section")) s.hidden = true;
  $("#" + view + "-view").hidden = false;
  for (const a of document.querySelectorAll("#nav a")) {
    a.classList.toggle("on", a.dataset.view === view || (view === "job" && a.dataset.view === "queue"));
  }
  if (state.view !== location.hash) showError("");
  state.view = location.hash;
  refresh(view, decodeURIComponent(arg || ""));
}

async function refresh(view, arg) {
  clearTimeout(state.timer);
  const shown = location.hash;
  try {
    await VIEWS[view](arg);
    if (!$("#error").dataset.sticky) showError("");
  } catch (err) {
    if (err.status !== 401) showError(err.message);
  }
  if (state.me && shown === location.hash && view !== "accounting") {
    state.timer = setTimeout(() => refresh(view, arg), POLL_MS);
  }
}

async function renderOverview() {
  const { nodes } = await api("GET", "/nodes");
  const sum = (k) => nodes.reduce((n, x) => n + x[k], 0);
  // a scheduler without reservations has no gpus_reserved: the column is left out
  const reserved = nodes.length > 0 && "gpus_reserved" in nodes[0];
  for (const e of document.querySelectorAll(".reserved-col")) e.hidden = !reserved;
  $("#totals").replaceChildren(
    ...[
      ["Nodes", nodes.length],
      ["GPUs free", sum("gpus_free")],
      ["GPUs total", sum("gpus_total")],
      ["Unhealthy", sum("gpus_unhealthy")],
      ...(reserved ? [["Reserved now", sum("gpus_reserved")]] : []),
    ].map(([k, v]) => el("div", { class: "card" }, el("b", { text: v }), k)),
  );
  fill(
    $("#nodes-table tbody"),
    nodes.map((n) =>
      el(
        "tr",
        { "data-node": n.name },
        td(n.name),
        td(n.state, "state-" + n.state),
        td(n.gpus_free, "num"),
        td(n.gpus_total, "num"),
        td(n.gpus_allocated, "num"),
        td(n.gpus_unhealthy, "num"),
        ...(reserved ? [td(n.gpus_reserved, "num")] : []),
        td(n.reason),
        td(when(n.last_heartbeat) + (n.stale ? " (stale)" : "")),
      ),
    ),
  );
}

function heat(u) {
  if (u == null) return "hsl(210, 10%, 88%)";
  const v = Math.max(0, Math.min(100, u));
  return v < 50
    ? `hsl(${210 - (170 * v) / 50}, ${30 + v * 1.2}%, ${94 - v * 0.48}%)`
    : `hsl(${40 - ((v - 50) * 40) / 50}, ${90 - (v - 50) * 0.1}%, ${70 - (v - 50) * 0.16}%)`;
}

async function renderGpus() {
  const { nodes } = await api("GET", "/nodes");
  $("#heatmap").replaceChildren(
    ...nodes.map((n) =>
      el(
        "div",
        { class: "node" },
        el("h2", {}, n.name + " ", el("span", { class: "hint", text: n.state })),
        el(
          "div",
          { class: "cells" },
          ...n.gpus.map((g) => {
            const cell = el(
              "div",
              {
                class: "gpu-cell" + (g.stale ? " stale" : "") + (g.state === "unhealthy" ? " unhealthy" : ""),
                "data-gpu": n.name + ":" + g.index,
                title: g.uuid,
              },
              el("b", { text: `GPU ${g.index} · ${pct(g.utilization) || "no reading"}` }),
              el("div", { text: g.model }),
              el("div", { text: `mem ${gib(g.memory_used)} / ${gib(g.memory_total)}` }),
              el("div", { text: g.temperature == null ? "" : `${g.temperature.toFixed(0)} °C` }),
              el("div", { class: "holder", text: g.job ? `job ${g.job} · ${g.user}` : g.state }),
            );
            cell.style.background = heat(g.utilization);
            if (g.stale) cell.append(el("span", { class: "tag stale", text: "stale" }));
            if (g.reason) cell.append(el("div", { class: "tag bad", text: g.reason }));
            for (const p of g.foreign_processes) {
              cell.append(el("div", { class: "tag bad", text: `foreign pid ${p.pid} ${gib(p.memory_used)}` }));
            }
            return cell;
          }),
        ),
      ),
    ),
  );
}

function jobLink(id) {
  return el("a", { href: "#job/" + encodeURIComponent(id) }, id);
}

async function renderQueue() {
  const [{ jobs }, ended] = await Promise.all([
    api("GET", "/jobs?state=active"),
    api("GET", "/jobs?state=ended&limit=20"),
  ]);
  fill(
    $("#queue-table tbody"),
    jobs.map((j) =>
      el(
        "tr",
        { "data-job": j.id },
        el("td", {}, jobLink(j.id)),
        td(j.name),
        td(j.user),
        td(j.state, "state-" + j.state),
        td(j.reason),
        td(j.gpus * j.num_nodes, "num"),
        td(j.nodes.join(",")),
        td(j.start_time ? when(j.start_time) : j.estimated_start ? "≈ " + when(j.estimated_start) : ""),
        td(when(j.expected_end)),
        td(j.reservation),
      ),
    ),
  );
  fill(
    $("#ended-table tbody"),
    ended.jobs.map((j) =>
      el(
        "tr",
        { "data-job": j.id },
        el("td", {}, jobLink(j.id)),
        td(j.name),
        td(j.user),
        td(j.state, "state-" + j.state),
        td(j.exit_code),
        td(j.gpus * j.num_nodes, "num"),
        td(when(j.end_time)),
      ),
    ),
  );
}

async function renderJob(id) {
  const { job, events, may_read_log } = await api("GET", "/jobs/" + encodeURIComponent(id));
  $("#job-id").textContent = job.id;
  const fields = [
    ["Name", job.name],
    ["User", job.user],
    ["Account", job.account],
    ["State", job.state + (job.reason ? ` (${job.reason})` : "")],
    ["Exit code", job.exit_code],
    ["Attempt", job.attempt],
    ["GPUs", Object.entries(job.gpu_ids).map(([n, ids]) => `${n}:${ids.join(",")}`).join(" ") || job.gpus],
    ["Submitted", when(job.submit_time)],
    ["Started", when(job.start_time) || (job.estimated_start ? "≈ " + when(job.estimated_start) : "")],
    ["Ended", when(job.end_time) || (job.expected_end ? "expected " + when(job.expected_end) : "")],
    ["Reservation", job.reservation],
    ["Warning", job.warning],
  ];
  $("#job-fields").replaceChildren(
    ...fields.filter(([, v]) => v !== "" && v != null).flatMap(([k, v]) => [el("dt", { text: k }), el("dd", { text: v })]),
  );
  fill(
    $("#job-events tbody"),
    events.map((e) =>
      el(
        "tr",
        {},
        td(when(e.time)),
        td(e.attempt, "num"),
        td(e.kind === "state" ? `${e.old_state || "·"} → ${e.new_state}` : e.kind),
        td(e.reason),
      ),
    ),
  );
  const log = $("#job-log");
  const note = $("#job-log-state");
  if (!may_read_log) {
    log.textContent = "";
    note.textContent = `only ${job.user} or an admin may read this job's output`;
    return;
  }
  if (job.attempt === 0) {
    log.textContent = "";
    note.textContent = "(not started yet)";
    return;
  }
  try {
    const text = await api("GET", `/jobs/${encodeURIComponent(id)}/log`);
    const atEnd = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
    log.textContent = text;
    if (atEnd) log.scrollTop = log.scrollHeight;
    note.textContent = job.end_time ? "(ended)" : "(live, last 64 KiB)";
  } catch (err) {
    if (err.status === 401) throw err;
    note.textContent = "(" + err.message + ")";
  }
}

// ------------------------------------------------------------------ timeline

const HOUR = 3600 * 1000;

function tlBounds() {
  const span = state.tl.span === "week" ? 7 * 24 * HOUR : 24 * HOUR;
  if (state.tl.start == null) {
    const d = new Date();
    d.setMinutes(0, 0, 0);
    state.tl.start = d.getTime() - 2 * HOUR;
  }
  return [state.tl.start, state.tl.start + span];
}

function localInput(ms) {
  const d = new Date(ms);
  const p = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
}

async function renderTimeline() {
  const [from, to] = tlBounds();
  const q = `?start=${new Date(from).toISOString()}&end=${new Date(to).toISOString()}`;
  const [{ nodes }, { jobs }, { reservations }] = await Promise.all([
    api("GET", "/nodes"),
    api("GET", "/jobs?state=active"),
    api("GET", "/reservations" + q),
  ]);
  $("#tl-range").textContent = `${when(new Date(from).toISOString())} – ${when(new Date(to).toISOString())}`;
  const x = (ms) => (100 * (Math.max(from, Math.min(to, ms)) - from)) / (to - from);
  const rows = [];
  for (const n of nodes) for (const g of n.gpus) rows.push({ node: n.name, index: g.index });
  const head = el("div", { class: "tl-row head" }, el("div", { class: "tl-label", text: "GPU" }));
  const ticks = el("div", { class: "tl-track" });
  const step = state.tl.span === "week" ? 24 * HOUR : 2 * HOUR;
  for (let t = Math.ceil(from / step) * step; t < to; t += step) {
    const d = new Date(t);
    const label = state.tl.span === "week" ? d.toLocaleDateString([], { weekday: "short", day: "numeric" }) : d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
    ticks.append(el("div", { class: "tl-tick", style: `left:${x(t)}%`, text: label }));
  }
  head.append(ticks);
  const body = [head];
  const now = Date.now();
  for (const r of rows) {
    const track = el("div", { class: "tl-track", "data-node": r.node, "data-index": r.index });
    for (const v of reservations) {
      if (!(v.gpus[r.node] || []).includes(r.index)) continue;
      const cls = "tl-bar resv" + (v.mine ? " mine" : "") + (v.flags.includes("MAINT") ? " maint" : "");
      for (const [ws, we] of v.windows) {
        const s = Date.parse(ws);
        const e = Date.parse(we);
        if (e <= from || s >= to) continue;
        track.append(
          el("div", { class: cls, "data-resv": v.name, style: `left:${x(s)}%;width:${x(e) - x(s)}%`, title: `${v.name} (${v.created_by}) ${when(ws)} – ${when(we)}` }, v.name),
        );
      }
    }
    for (const j of jobs) {
      if (!j.start_time || !(j.gpu_ids[r.node] || []).includes(r.index)) continue;
      const s = Date.parse(j.start_time);
      const e = j.expected_end ? Date.parse(j.expected_end) : to;
      track.append(el("div", { class: "tl-bar job", style: `left:${x(s)}%;width:${x(Math.min(now, e)) - x(s)}%`, title: `job ${j.id} (${j.user})` }, `${j.id} ${j.user}`));
      if (e > now) {
        track.append(el("div", { class: "tl-bar job expected", style: `left:${x(now)}%;width:${x(e) - x(now)}%`, title: `job ${j.id} may run until ${when(j.expected_end)}` }, ""));
      }
    }
    if (now >= from && now <= to) track.append(el("div", { class: "tl-now", style: `left:${x(now)}%` }));
    body.push(el("div", { class: "tl-row" }, el("div", { class: "tl-label", text: `${r.node}:${r.index}` }), track));
  }
  const grid = $("#timeline");
  grid.replaceChildren(...body);
  grid.dataset.from = from;
  grid.dataset.to = to;
  drawSelection();
  fill(
    $("#resv-table tbody"),
    reservations.map((v) =>
      el(
        "tr",
        { "data-resv": v.name },
        td(v.name),
        td(v.created_by),
        td(when(v.start)),
        td(when(v.end)),
        td(Object.entries(v.gpus).map(([n, ids]) => `${n}:${ids.join(",")}`).join(" ")),
        td(v.flags.join(",")),
        el("td", {}, v.may_delete ? el("button", { type: "button", class: "cancel", onclick: () => cancelBooking(v.name) }, "Cancel") : ""),
      ),
    ),
  );
}

// A drag over the grid selects GPU rows and a time range (snapped to half hours).
function gridPoint(event) {
  const track = event.target.closest(".tl-track[data-node]");
  if (!track) return null;
  const box = track.getBoundingClientRect();
  const grid = $("#timeline");
  const from = Number(grid.dataset.from);
  const to = Number(grid.dataset.to);
  const ms = from + ((event.clientX - box.left) / box.width) * (to - from);
  const half = HOUR / 2;
  return { node: track.dataset.node, index: Number(track.dataset.index), ms: Math.round(ms / half) * half };
}

function rowsBetween(a, b) {
  const tracks = [...document.querySelectorAll("#timeline .tl-track[data-node]")];
  const ia = tracks.findIndex((t) => t.dataset.node === a.node && Number(t.dataset.index) === a.index);
  const ib = tracks.findIndex((t) => t.dataset.node === b.node && Number(t.dataset.index) === b.index);
  return tracks.slice(Math.min(ia, ib), Math.max(ia, ib) + 1);
}

function startDrag(event) {
  const p = gridPoint(event);
  if (!p) return;
  event.preventDefault();
  state.tl.drag = p;
  state.tl.sel = { a: p, b: p };
  drawSelection();
}

function moveDrag(event) {
  if (!state.tl.drag) return;
  const p = gridPoint(event);
  if (!p) return;
  state.tl.sel = { a: state.tl.drag, b: p };
  drawSelection();
}

function endDrag(event) {
  if (!state.tl.drag) return;
  moveDrag(event);
  state.tl.drag = null;
  const { a, b } = state.tl.sel;
  const byNode = {};
  for (const t of rowsBetween(a, b)) (byNode[t.dataset.node] ||= []).push(Number(t.dataset.index));
  $("#book-gpus").value = Object.entries(byNode).map(([n, ids]) => `${n}:${ids.join(",")}`).join(" ");
  const s = Math.min(a.ms, b.ms);
  const e = Math.max(a.ms, b.ms);
  $("#book-start").value = localInput(s);
  $("#book-end").value = localInput(e > s ? e : s + HOUR);
  if (!$("#book-name").value) $("#book-name").value = `${state.me.user}-${new Date(s).toISOString().slice(5, 10)}`;
}

function drawSelection() {
  for (const old of document.querySelectorAll(".tl-select")) old.remove();
  const sel = state.tl.sel;
  if (!sel) return;
  const grid = $("#timeline");
  const from = Number(grid.dataset.from);
  const to = Number(grid.dataset.to);
  const s = Math.min(sel.a.ms, sel.b.ms);
  const e = Math.max(sel.a.ms, sel.b.ms, s + HOUR / 2);
  for (const t of rowsBetween(sel.a, sel.b)) {
    const l = (100 * (s - from)) / (to - from);
    const w = (100 * (e - s)) / (to - from);
    t.append(el("div", { class: "tl-select", style: `left:${l}%;width:${w}%;top:0;bottom:0` }));
  }
}

function parseGpus(text) {
  const gpus = {};
  for (const part of text.trim().split(/\s+/)) {
    if (!part) continue;
    const [node, ids] = part.split(":");
    gpus[node] = ids ? ids.split(",").filter((s) => s !== "").map(Number) : [];
  }
  return gpus;
}

async function book(event) {
  event.preventDefault();
  const out = $("#book-result");
  out.className = "";
  out.textContent = "";
  const body = {
    name: $("#book-name").value.trim(),
    gpus: parseGpus($("#book-gpus").value),
    start: new Date($("#book-start").value).toISOString(),
    end: new Date($("#book-end").value).toISOString(),
  };
  if (state.me.admin) {
    const user = $("#book-user").value.trim();
    if (user) body.users = [user];
    if ($("#book-maint").checked) body.flags = ["MAINT"];
  }
  try {
    const r = await api("POST", "/reservations", body);
    out.className = "ok";
    out.textContent = `booked ${r.name}`;
    state.tl.sel = null;
    $("#book-name").value = "";
    await renderTimeline();
  } catch (err) {
    out.className = "bad";
    out.textContent = err.message;
  }
}

async function cancelBooking(name) {
  const out = $("#book-result");
  try {
    await api("DELETE", "/reservations/" + encodeURIComponent(name));
    out.className = "ok";
    out.textContent = `cancelled ${name}`;
    await renderTimeline();
  } catch (err) {
    out.className = "bad";
    out.textContent = err.message;
  }
}

function timelineControls() {
  const span = (s) => () => {
    state.tl.span = s;
    $("#tl-day").classList.toggle("on", s === "day");
    $("#tl-week").classList.toggle("on", s === "week");
    route();
  };
  $("#tl-day").addEventListener("click", span("day"));
  $("#tl-week").addEventListener("click", span("week"));
  const shift = (sign) => () => {
    state.tl.start += sign * (state.tl.span === "week" ? 7 * 24 : 24) * HOUR;
    route();
  };
  $("#tl-prev").addEventListener("click", shift(-1));
  $("#tl-next").addEventListener("click", shift(1));
  $("#tl-now").addEventListener("click", () => {
    state.tl.start = null;
    route();
  });
  const grid = $("#timeline");
  grid.addEventListener("mousedown", startDrag);
  grid.addEventListener("mousemove", moveDrag);
  document.addEventListener("mouseup", endDrag);
  $("#book-form").addEventListener("submit", book);
}

// ------------------------------------------------------------------ accounting

function isoDay(input, endOfDay) {
  if (!input.value) return "";
  return new Date(input.value + (endOfDay ? "T23:59:59" : "T00:00:00")).toISOString();
}

async function renderAccounting() {
  const start = isoDay($("#acct-start"), false);
  const end = isoDay($("#acct-end"), true);
  const q = `?start=${encodeURIComponent(start)}&end=${encodeURIComponent(end)}`;
  const [summary, eff] = await Promise.all([api("GET", "/accounting/summary" + q), api("GET", "/accounting/efficiency" + q)]);
  const totals = (rows) =>
    rows.map((t) => el("tr", {}, td(t.name), td(t.jobs, "num"), td(t.gpu_hours.toFixed(2), "num"), td(pct(t.gpu_utilization), "num")));
  fill($("#acct-users tbody"), totals(summary.users));
  fill($("#acct-accounts tbody"), totals(summary.accounts));
  fill(
    $("#acct-efficiency tbody"),
    eff.jobs.map((j) =>
      el(
        "tr",
        {},
        el("td", {}, jobLink(j.id)),
        td(j.user),
        td(j.account),
        td(j.gpus, "num"),
        td(j.gpu_hours.toFixed(2), "num"),
        td(pct(j.gpu_utilization), "num"),
        td(j.gpu_memory_total ? `${gib(j.gpu_memory_peak)} / ${gib(j.gpu_memory_total)}` : "", "num"),
        td(j.flags.join(",")),
      ),
    ),
  );
}

// ------------------------------------------------------------------ start

document.addEventListener("DOMContentLoaded", async () => {
  $("#login-form").addEventListener("submit", login);
  $("#logout").addEventListener("click", logout);
  $("#acct-form").addEventListener("submit", (e) => {
    e.preventDefault();
    route();
  });
  timelineControls();
  window.addEventListener("hashchange", route);
  try {
    loggedIn(await api("GET", "/session"));
  } catch (err) {
    loggedOut();
  }
});
