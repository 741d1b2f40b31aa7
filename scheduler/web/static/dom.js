// DOM and formatting helpers shared by the views (no state).

export const $ = (sel) => document.querySelector(sel);

/** An element with attributes (class, text, style, on*, others as attributes) and children. */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v == null || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k === "style") node.style.cssText = v; // CSSOM: allowed by the page's CSP
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(c ?? ""));
  return node;
}

export function fill(tbody, rows) {
  tbody.replaceChildren(...rows);
}

export function td(text, cls) {
  return el("td", cls ? { class: cls } : {}, text == null ? "" : String(text));
}

/** A time as the browser's zone shows it: "Nov 27, 09:30". */
export function when(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  return d.toLocaleString([], { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" });
}

export function hhmm(ms) {
  return new Date(ms).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
}

export function gib(bytes) {
  return bytes == null ? "?" : (bytes / 2 ** 30).toFixed(1) + " GiB";
}

export function pct(v) {
  return v == null ? "" : v.toFixed(0) + "%";
}

/** Seconds as "1d 02:03:04" / "02:03:04". */
export function duration(seconds) {
  if (seconds == null || !isFinite(seconds)) return "";
  const s = Math.max(0, Math.round(seconds));
  const p = (n) => String(n).padStart(2, "0");
  const d = Math.floor(s / 86400);
  const hms = `${p(Math.floor((s % 86400) / 3600))}:${p(Math.floor((s % 3600) / 60))}:${p(s % 60)}`;
  return d ? `${d}d ${hms}` : hms;
}

/** ``ms`` as a datetime-local input's value, in the browser's zone. */
export function localInput(ms) {
  const d = new Date(ms);
  const p = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
}

/** "node:0,1 node2:3" for a {node: [indices]} map. */
export function gpuText(gpus) {
  return Object.entries(gpus)
    .map(([n, ids]) => `${n}:${ids.join(",")}`)
    .join(" ");
}

/**
 * A button that asks before it acts: the first press turns it into "question Yes / No"; Yes
 * runs ``action``.
 */
export function confirmButton(label, question, action, cls = "cancel") {
  const box = el("span", { class: "confirm" });
  const ask = () =>
    box.replaceChildren(
      el("span", { class: "question", text: question + " " }),
      el("button", { type: "button", class: "yes", onclick: () => action() }, "Yes"),
      el("button", { type: "button", class: "no", onclick: reset }, "No"),
    );
  const reset = () => box.replaceChildren(el("button", { type: "button", class: cls, onclick: ask }, label));
  reset();
  return box;
}

/**
 * Show ``items`` a page at a time in ``pager`` (an element): "‹ 1–50 of 300 ›". ``store`` keeps
 * the page number between renders ({page}). Returns the items of the page shown.
 */
export function paged(items, pager, store, size, redraw) {
  const pages = Math.max(1, Math.ceil(items.length / size));
  store.page = Math.min(Math.max(0, store.page || 0), pages - 1);
  const first = store.page * size;
  const shown = items.slice(first, first + size);
  if (pages === 1) {
    pager.replaceChildren();
    return shown;
  }
  const go = (n) => () => {
    store.page = n;
    redraw();
  };
  pager.replaceChildren(
    el("button", { type: "button", class: "prev", disabled: store.page === 0, onclick: go(store.page - 1) }, "‹"),
    el("span", { text: ` ${first + 1}–${first + shown.length} of ${items.length} ` }),
    el("button", { type: "button", class: "next", disabled: store.page === pages - 1, onclick: go(store.page + 1) }, "›"),
  );
  return shown;
}
