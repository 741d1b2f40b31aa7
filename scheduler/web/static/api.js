// The data-fetch layer: every request of the page to the JSON API (/api/v1, docs/web.md), with
// the session's CSRF token on changes. The views read the cluster through the get* functions
// only. Listings follow the API's change feed (?since=VERSION, docs/web.md): after the first
// answer only changed rows travel, and the views still get whole listings, rebuilt here.

export const session = { me: null, onLoggedOut: () => {} };

/** The CSRF token of the session this page logged in, kept in this origin's own storage: a
 * page on another port of this host (a job's web port) can replace the session cookie
 * (cookies are not kept apart by port), never this. A session whose token is another is not
 * this browser's login (app.js logs out); changes and the terminal carry this one, so they
 * are refused under a replaced cookie. */
export const PINNED = "rota.csrf";
export const pinned = () => localStorage.getItem(PINNED) || "";

/** What the poll loop paces itself by: ``changed`` is set when a read brought something new (a
 * listing's rows, or a detail view, which is always live) and cleared by the loop once it has
 * looked; ``onAction`` is called when the page sends a change (submit, cancel, booking). */
export const pace = { changed: false, onAction: () => {} };

export class HttpError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

/** The request never got an answer (the scheduler is down or the network is). */
export class Disconnected extends Error {}

/** The scheduler could not be reached, or a proxy in front of it answered that it is down. */
export function isOutage(err) {
  return err instanceof Disconnected || (err instanceof HttpError && [502, 504].includes(err.status));
}

export async function api(method, path, body) {
  const headers = {};
  if (method !== "GET") headers["X-CSRF-Token"] = pinned();
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (method !== "GET") pace.onAction();
  let res, data;
  try {
    res = await fetch("/api/v1" + path, {
      method,
      headers,
      credentials: "same-origin",
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const type = res.headers.get("Content-Type") || "";
    data = type.startsWith("application/json") ? await res.json() : await res.text();
  } catch (err) {
    throw new Disconnected(err.message);
  }
  if (!res.ok) {
    const message = typeof data === "object" ? data.error : data;
    if (res.status === 401 && path !== "/login") session.onLoggedOut(message);
    throw new HttpError(res.status, message);
  }
  return data;
}

const feeds = new Map(); // path -> { version, rows: Map(id -> row), order, extras }
const MAX_FEEDS = 8; // listings remembered; the least recently asked is forgotten first

/** The listing at ``path`` (rows under ``key``, each named by its ``id`` field) in full, asking
 * the server only for what changed since this page's last answer for the same path. */
async function follow(path, key, id) {
  const known = feeds.get(path);
  const sep = path.includes("?") ? "&" : "?";
  const d = await api("GET", `${path}${sep}since=${known ? known.version : 0}`);
  const { version, full, removed, order, [key]: changed, ...extras } = d;
  const f = full || !known ? { rows: new Map(), order: [], extras: {} } : known;
  if (full || !known || changed.length || removed.length) pace.changed = true;
  for (const r of changed) f.rows.set(String(r[id]), r);
  for (const gone of removed) f.rows.delete(gone);
  if (order) f.order = order;
  Object.assign(f.extras, extras);
  f.version = version;
  feeds.delete(path);
  feeds.set(path, f);
  if (feeds.size > MAX_FEEDS) feeds.delete(feeds.keys().next().value);
  return { ...f.extras, [key]: f.order.map((i) => f.rows.get(i)).filter(Boolean) };
}

export const getNodes = () => follow("/nodes", "nodes", "name");
export const getJobs = (query) => follow("/jobs" + query, "jobs", "id");
/** A detail read: the job view follows a live job, so it keeps the poll at its quickest. */
async function detail(path) {
  const d = await api("GET", path);
  pace.changed = true;
  return d;
}

export const getJob = (id) => detail("/jobs/" + encodeURIComponent(id));
export const getLog = (id) => detail(`/jobs/${encodeURIComponent(id)}/log`);
export const getReservation = (name) => api("GET", "/reservations/" + encodeURIComponent(name));
export const getReservations = (from, to) =>
  follow(`/reservations?start=${new Date(from).toISOString()}&end=${new Date(to).toISOString()}`, "reservations", "name");
