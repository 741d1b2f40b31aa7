// rota dashboard: plain JavaScript modules over the JSON API (/api/v1, docs/web.md). The view
// on screen polls the API while the tab is visible, every 2 s after a change and less often
// while nothing changes (up to every 8 s); an outage keeps the data shown and says since when
// it is old.

import { PINNED, api, isOutage, pace, pinned, session } from "./api.js";
import { $, hhmm } from "./dom.js";
import { renderGpus, renderOverview } from "./cluster.js";
import { renderQueue } from "./queue.js";
import { renderJob } from "./job.js";
import { setupLaunch } from "./launch.js";
import { hideCard, renderTimeline, tl } from "./timeline.js";
import { formFor, setupBooking } from "./booking.js";
import { renderAccounting } from "./accounting.js";
import { setupFilters } from "./filters.js";

const POLL_MS = 2000; // the poll's wait after a round that brought a change, or a user's action
const POLL_MAX_MS = 8000; // each round that brings nothing doubles the wait, up to this
const RETRY_MS = [2000, 4000, 8000, 15000]; // waits between tries while the scheduler is away
const run = { view: "", timer: null, next: null, wait: POLL_MS, lastOk: 0, failures: 0, seq: 0 };

const VIEWS = {
  overview: renderOverview,
  gpus: renderGpus,
  queue: renderQueue,
  job: renderJob,
  timeline: renderTimeline,
  accounting: renderAccounting,
};

const REPLACED =
  "This browser's dashboard login was replaced by another (a page on another port of this host, " +
  "such as a job's web port, can set this site's cookies): log in again.";

function showError(message) {
  const box = $("#error");
  box.textContent = message || "";
  box.hidden = !message;
}

/** The connection line: hidden while the API answers, else since when the data is old. */
function showConnection(down) {
  const line = $("#conn");
  line.hidden = !down;
  if (down) {
    const since = run.lastOk ? `last updated ${hhmm(run.lastOk)}` : "no data yet";
    line.textContent = `disconnected — retrying — ${since}`;
  }
}

// ------------------------------------------------------------------ login

/** Back to the login form; ``why``: the server's refusal, shown unless it only asks for a
 * login (several session cookies, a replaced login: the person must act on it). */
function loggedOut(why) {
  if (typeof why === "string" && why && !why.startsWith("log in first")) showError(why);
  session.me = null;
  clearTimeout(run.timer);
  run.next = null;
  $("#nav").hidden = true;
  $("#whoami").hidden = true;
  $("#filters").hidden = true;
  for (const s of document.querySelectorAll("main > section")) s.hidden = true;
  $("#login-view").hidden = false;
}

function loggedIn(me) {
  session.me = me;
  $("#login-view").hidden = true;
  $("#nav").hidden = false;
  $("#whoami").hidden = false;
  $("#user-name").textContent = me.user + (me.admin ? " (admin)" : "");
  for (const e of document.querySelectorAll(".admin-only")) e.hidden = !me.admin;
  formFor(me);
  showFeed();
  route();
}

async function login(event) {
  event.preventDefault();
  try {
    const me = await api("POST", "/login", { token: $("#login-token").value.trim() });
    localStorage.setItem(PINNED, me.csrf);
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
    localStorage.removeItem(PINNED);
    loggedOut();
  }
}

/** The caller's iCalendar feed address beside the bookings (hidden when they have none). */
async function showFeed() {
  try {
    const { path } = await api("GET", "/ical");
    $("#ical-link").href = path ? location.origin + path : "";
    $("#ical").hidden = !path;
  } catch {
    $("#ical").hidden = true;
  }
}

// ------------------------------------------------------------------ views and polling

function route() {
  if (!session.me) return;
  const [name, arg] = (location.hash.slice(1) || "overview").split("/");
  const view = VIEWS[name] ? name : "overview";
  for (const s of document.querySelectorAll("main > section")) s.hidden = true;
  $("#" + view + "-view").hidden = false;
  $("#filters").hidden = view === "job" || view === "accounting";
  for (const a of document.querySelectorAll("#nav a")) {
    a.classList.toggle("on", a.dataset.view === view || (view === "job" && a.dataset.view === "queue"));
  }
  if (run.view !== location.hash) {
    showError("");
    hideCard();
  }
  run.view = location.hash;
  refresh(view, decodeURIComponent(arg || ""));
}

/** Poll at the quickest again (the user acted, or the page sent a change): a poll waiting
 * longer is brought forward. Retries while the scheduler is away keep their own pace. */
function quicken() {
  if (run.wait === POLL_MS) return;
  run.wait = POLL_MS;
  if (!run.next) return;
  clearTimeout(run.timer);
  run.timer = setTimeout(run.next, POLL_MS);
}

async function refresh(view, arg) {
  clearTimeout(run.timer);
  run.next = null;
  const shown = location.hash;
  const seq = ++run.seq; // a newer refresh (a click, a route) supersedes this one's timer
  let wait = POLL_MS;
  try {
    await VIEWS[view](arg);
    wait = pace.changed ? POLL_MS : Math.min(run.wait * 2, POLL_MAX_MS);
    pace.changed = false;
    run.wait = wait;
    run.lastOk = Date.now();
    run.failures = 0;
    showConnection(false);
    showError("");
  } catch (err) {
    if (isOutage(err)) {
      showConnection(true);
      run.wait = POLL_MS; // the first round after the outage ends brings it back quickly
      wait = RETRY_MS[Math.min(run.failures++, RETRY_MS.length - 1)];
    } else if (err.status !== 401) {
      showError(err.message);
    }
  }
  if (seq !== run.seq || !session.me || shown !== location.hash || view === "accounting") return;
  if (document.hidden) return; // polling stops in hidden tabs; visibilitychange resumes it
  run.next = () => refresh(view, arg);
  run.timer = setTimeout(run.next, wait);
}

function timelineControls() {
  const span = (s) => () => {
    tl.span = s;
    $("#tl-day").classList.toggle("on", s === "day");
    $("#tl-week").classList.toggle("on", s === "week");
    route();
  };
  $("#tl-day").addEventListener("click", span("day"));
  $("#tl-week").addEventListener("click", span("week"));
  const shift = (sign) => () => {
    const d = new Date(tl.anchor ?? Date.now());
    d.setDate(d.getDate() + sign * (tl.span === "week" ? 7 : 1));
    tl.anchor = d.getTime();
    route();
  };
  $("#tl-prev").addEventListener("click", shift(-1));
  $("#tl-next").addEventListener("click", shift(1));
  $("#tl-now").addEventListener("click", () => {
    tl.anchor = null;
    route();
  });
  const first = $("#tl-weekstart");
  first.value = String(tl.firstDay);
  first.addEventListener("change", () => {
    tl.firstDay = Number(first.value);
    localStorage.setItem("rota.weekStart", first.value);
    route();
  });
  setupBooking();
}

// ------------------------------------------------------------------ start

document.addEventListener("DOMContentLoaded", async () => {
  session.onLoggedOut = loggedOut;
  pace.onAction = quicken;
  for (const type of ["click", "keydown", "focusin"]) document.addEventListener(type, quicken, true);
  window.addEventListener("focus", quicken);
  $("#login-form").addEventListener("submit", login);
  $("#logout").addEventListener("click", logout);
  $("#acct-form").addEventListener("submit", (e) => {
    e.preventDefault();
    route();
  });
  setupFilters(route);
  timelineControls();
  setupLaunch();
  window.addEventListener("hashchange", route);
  document.addEventListener("visibilitychange", () => {
    if (document.hidden) {
      clearTimeout(run.timer); // no poll is left waiting in a hidden tab
      run.next = null;
    } else {
      run.wait = POLL_MS;
      route();
    }
  });
  for (;;) {
    try {
      const me = await api("GET", "/session");
      if (me.csrf !== pinned()) {
        showError(me.csrf && pinned() ? REPLACED : "");
        return loggedOut();
      }
      loggedIn(me);
      return;
    } catch (err) {
      if (!isOutage(err)) return loggedOut();
      showConnection(true);
      await new Promise((done) => setTimeout(done, RETRY_MS[1]));
    }
  }
});
