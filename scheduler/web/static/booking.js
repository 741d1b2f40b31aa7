// Booking on the timeline: drag (or, on touch screens, tap twice) to pick GPUs and a time
// range, then book for yourself or an account, once or repeating; drag a booking's edges to
// move its start or end. Every change goes through the API, so the scheduler's checks decide;
// conflicts are highlighted while dragging. The form is kept in localStorage until it is sent.

import { api, session } from "./api.js";
import { $, localInput } from "./dom.js";
import { HOUR } from "./calendar.js";
import { hideCard, renderTimeline, showCard, tl, x } from "./timeline.js";

const FORM_KEY = "rota.booking";
const FIELDS = ["book-name", "book-gpus", "book-start", "book-end", "book-for", "book-repeat", "book-user"];
const HALF = HOUR / 2;
const drag = { select: null, edit: null, sel: null, anchor: null, moved: false };

/** A drag is in progress (the timeline keeps its rows until it ends). */
export const busy = () => Boolean(drag.select || drag.edit);

function result(ok, text) {
  const out = $("#book-result");
  out.className = ok ? "ok" : "bad";
  out.textContent = text;
}

function snap(ms) {
  return tl.from + Math.round((ms - tl.from) / HALF) * HALF;
}

function timeAt(track, clientX) {
  const box = track.getBoundingClientRect();
  return tl.from + ((clientX - box.left) / box.width) * (tl.to - tl.from);
}

function gridPoint(event) {
  const track = event.target.closest(".tl-track[data-node]");
  if (!track) return null;
  return { node: track.dataset.node, index: Number(track.dataset.index), ms: snap(timeAt(track, event.clientX)) };
}

function rowsBetween(a, b) {
  const tracks = [...document.querySelectorAll("#timeline .tl-track[data-node]")];
  const find = (p) => tracks.findIndex((t) => t.dataset.node === p.node && Number(t.dataset.index) === p.index);
  const ia = find(a);
  const ib = find(b);
  if (ia < 0 || ib < 0) return [];
  return tracks.slice(Math.min(ia, ib), Math.max(ia, ib) + 1);
}

/** Mark the bars whose windows meet [s, e) on ``cells`` ("node:index"), but ``self``; true if any. */
function markConflicts(cells, s, e, self) {
  for (const b of document.querySelectorAll("#timeline .tl-bar.conflict")) b.classList.remove("conflict");
  let found = false;
  for (const cell of cells) {
    for (const held of tl.cells.get(cell) || []) {
      if (held.key === self || held.e <= s || held.s >= e) continue;
      found = true;
      for (const b of document.querySelectorAll(`#timeline .tl-bar[data-key="${CSS.escape(held.key)}"]`)) b.classList.add("conflict");
    }
  }
  return found;
}

export function drawSelection() {
  for (const old of document.querySelectorAll(".tl-select")) old.remove();
  const sel = drag.sel;
  if (!sel) return markConflicts([], 0, 0, "");
  const s = Math.min(sel.a.ms, sel.b.ms);
  const e = Math.max(sel.a.ms, sel.b.ms, s + HALF);
  const rows = rowsBetween(sel.a, sel.b);
  const clash = markConflicts(rows.map((t) => `${t.dataset.node}:${t.dataset.index}`), s, e, "");
  for (const t of rows) {
    t.append(Object.assign(document.createElement("div"), { className: "tl-select" + (clash ? " conflict" : "") }));
    t.lastChild.style.cssText = `left:${x(s)}%;width:${x(e) - x(s)}%`;
  }
}

/** The selection into the form's GPUs, start and end. */
function fillForm() {
  const { a, b } = drag.sel;
  const byNode = {};
  for (const t of rowsBetween(a, b)) (byNode[t.dataset.node] ||= []).push(Number(t.dataset.index));
  $("#book-gpus").value = Object.entries(byNode).map(([n, ids]) => `${n}:${ids.join(",")}`).join(" ");
  const s = Math.min(a.ms, b.ms);
  const e = Math.max(a.ms, b.ms);
  $("#book-start").value = localInput(s);
  $("#book-end").value = localInput(e > s ? e : s + HOUR);
  if (!$("#book-name").value) $("#book-name").value = `${session.me.user}-${localInput(s).slice(5, 10)}`;
  saveForm();
}

const tapMode = () => $("#tl-tap").checked;

function down(event) {
  drag.moved = false;
  hideUnpinned();
  const edge = event.target.closest(".tl-edge");
  if (edge) return startEdit(event, edge);
  if (tapMode() || event.pointerType === "touch" || event.button !== 0) return;
  const p = gridPoint(event);
  if (!p) return;
  event.preventDefault();
  drag.select = p;
  drag.moved = false;
  drag.sel = { a: p, b: p };
  drawSelection();
}

function move(event) {
  if (drag.edit) return; // the document's listener follows an edge drag
  if (drag.select) {
    const p = gridPoint(event);
    if (!p) return;
    drag.moved ||= p.ms !== drag.select.ms || p.index !== drag.select.index;
    drag.sel = { a: drag.select, b: p };
    drawSelection();
    return;
  }
  const barEl = event.target.closest(".tl-bar");
  if (event.pointerType === "mouse" && barEl && $("#tl-card").dataset.pinned !== "1") showCard(barEl.dataset.key, event.clientX, event.clientY, false);
  else if (!barEl) hideUnpinned();
}

function up(event) {
  if (drag.edit) return endEdit(event);
  if (!drag.select) return;
  drag.select = null;
  const barEl = event.target.closest(".tl-bar");
  if (!drag.moved && barEl) {
    drag.sel = null;
    drawSelection();
    showCard(barEl.dataset.key, event.clientX, event.clientY, true);
    return;
  }
  fillForm();
}

/** A click or tap on a bar pins its card. In tap mode (touch screens) a first tap on a GPU
 * row marks one corner, the second the other, and the form is filled. */
function tap(event) {
  const barEl = event.target.closest(".tl-bar");
  if (barEl && !drag.moved && !event.target.closest(".tl-edge")) {
    return showCard(barEl.dataset.key, event.clientX, event.clientY, true); // any bar, any mode
  }
  if (!tapMode() && event.pointerType !== "touch") return;
  const p = gridPoint(event);
  if (!p) return;
  if (!drag.anchor) {
    drag.anchor = p;
    drag.sel = { a: p, b: p };
    drawSelection();
    $("#book-result").className = "";
    $("#book-result").textContent = "tap the other corner of the range";
    return;
  }
  drag.sel = { a: drag.anchor, b: p };
  drag.anchor = null;
  drawSelection();
  fillForm();
  $("#book-result").textContent = "";
}

function hideUnpinned() {
  if ($("#tl-card").dataset.pinned !== "1") hideCard();
}

// ------------------------------------------------------------ moving a booking's edges

function startEdit(event, edge) {
  const barEl = edge.closest(".tl-bar");
  const found = tl.bars.get(barEl.dataset.key);
  if (!found || !found.resv) return;
  event.preventDefault();
  event.stopPropagation();
  const v = found.resv;
  const s = Date.parse(barEl.dataset.win);
  const win = v.windows.find(([ws]) => ws === barEl.dataset.win);
  drag.edit = { v, left: edge.classList.contains("l"), s, e: Date.parse(win[1]), track: barEl.parentElement, at: timeAt(barEl.parentElement, event.clientX), delta: 0, win: barEl.dataset.win };
}

function moveEdit(event) {
  const ed = drag.edit;
  const delta = Math.round((timeAt(ed.track, event.clientX) - ed.at) / HALF) * HALF;
  const s = ed.left ? Math.min(ed.s + delta, ed.e - HALF) : ed.s;
  const e = ed.left ? ed.e : Math.max(ed.e + delta, ed.s + HALF);
  ed.delta = ed.left ? s - ed.s : e - ed.e;
  const bars = document.querySelectorAll(`#timeline .tl-bar[data-resv="${CSS.escape(ed.v.name)}"][data-win="${CSS.escape(ed.win)}"]`);
  for (const b of bars) {
    b.style.left = `${x(s)}%`;
    b.style.width = `${x(e) - x(s)}%`;
  }
  const cells = Object.entries(ed.v.gpus).flatMap(([n, ids]) => ids.map((i) => `${n}:${i}`));
  const clash = markConflicts(cells, s, e, "r:" + ed.v.name);
  for (const b of bars) b.classList.toggle("conflict", clash);
}

async function endEdit() {
  const ed = drag.edit;
  drag.edit = null;
  if (!ed.delta) return renderTimeline();
  const field = ed.left ? "start" : "end";
  await change(ed.v, { [field]: new Date(Date.parse(ed.v[field]) + ed.delta).toISOString() });
}

/** Change booking ``v`` (``fields``: start, end...) as ``greserve update`` does. */
export async function change(v, fields) {
  try {
    const r = await api("PATCH", "/reservations/" + encodeURIComponent(v.name), fields);
    result(true, `changed ${r.name}: ${new Date(r.start).toLocaleString()} – ${new Date(r.end).toLocaleString()}`);
    hideCard();
  } catch (err) {
    result(false, err.message);
  }
  await renderTimeline();
}

export async function cancel(name) {
  try {
    await api("DELETE", "/reservations/" + encodeURIComponent(name));
    result(true, `cancelled ${name}`);
    hideCard();
  } catch (err) {
    result(false, err.message);
  }
  await renderTimeline();
}

// ------------------------------------------------------------ the form

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
  result(true, "");
  const body = {
    name: $("#book-name").value.trim(),
    gpus: parseGpus($("#book-gpus").value),
    start: new Date($("#book-start").value).toISOString(),
    end: new Date($("#book-end").value).toISOString(),
  };
  const forWhom = $("#book-for").value;
  if (forWhom.startsWith("account:")) body.accounts = [forWhom.slice(8)];
  const flags = [];
  if ($("#book-repeat").value) flags.push($("#book-repeat").value);
  if (session.me.admin) {
    const user = $("#book-user").value.trim();
    if (user) body.users = [user];
    if ($("#book-maint").checked) flags.push("MAINT");
  }
  if (flags.length) body.flags = flags;
  try {
    const r = await api("POST", "/reservations", body);
    result(true, `booked ${r.name}`);
    drag.sel = null;
    $("#book-name").value = "";
    localStorage.removeItem(FORM_KEY);
    await renderTimeline();
  } catch (err) {
    result(false, err.message);
  }
}

function saveForm() {
  const kept = Object.fromEntries(FIELDS.map((id) => [id, $("#" + id).value]));
  localStorage.setItem(FORM_KEY, JSON.stringify(kept));
}

/** The form's "for" choices (me, my accounts) and repeat rule, for the user logged in. */
export function formFor(me) {
  const select = $("#book-for");
  select.replaceChildren(new Option(`me (${me.user})`, ""), ...me.accounts.map((a) => new Option(`account ${a} (group)`, "account:" + a)));
  const repeat = $("#book-repeat");
  repeat.disabled = !me.may_repeat;
  repeat.title = me.may_repeat ? "" : "DAILY and WEEKLY bookings are for admins only here (setting reservations.users_may_repeat is false)";
  let kept = {};
  try {
    kept = JSON.parse(localStorage.getItem(FORM_KEY) || "{}");
  } catch {
    // a damaged entry: an empty form
  }
  for (const id of FIELDS) if (kept[id] != null && kept[id] !== "") $("#" + id).value = kept[id];
  if (!me.may_repeat) repeat.value = "";
}

export function setupBooking() {
  const grid = $("#timeline");
  grid.addEventListener("pointerdown", down);
  grid.addEventListener("pointermove", move);
  grid.addEventListener("click", tap);
  document.addEventListener("pointermove", (e) => drag.edit && moveEdit(e));
  document.addEventListener("pointerup", up);
  $("#book-form").addEventListener("submit", book);
  $("#book-form").addEventListener("input", saveForm);
  $("#book-form").addEventListener("change", saveForm);
  $("#tl-tap").checked = window.matchMedia("(pointer: coarse)").matches;
}
