// The data-fetch layer: every request of the page to the JSON API (/api/v1, docs/web.md), with
// the session's CSRF token on changes. The views read the cluster through the get* functions
// only, so how they fetch (whole lists now) can change in this one module.

export const session = { me: null, onLoggedOut: () => {} };

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
  if (method !== "GET") headers["X-CSRF-Token"] = session.me ? session.me.csrf : "";
  if (body !== undefined) headers["Content-Type"] = "application/json";
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
    if (res.status === 401 && path !== "/login") session.onLoggedOut();
    throw new HttpError(res.status, message);
  }
  return data;
}

export const getNodes = () => api("GET", "/nodes");
export const getJobs = (query) => api("GET", "/jobs" + query);
export const getJob = (id) => api("GET", "/jobs/" + encodeURIComponent(id));
export const getLog = (id) => api("GET", `/jobs/${encodeURIComponent(id)}/log`);
export const getReservations = (from, to) =>
  api("GET", `/reservations?start=${new Date(from).toISOString()}&end=${new Date(to).toISOString()}`);
