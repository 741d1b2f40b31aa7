// A running job's terminal (a shell in its container, as gattach opens one) in xterm.js,
// served by the scheduler itself, over a WebSocket to /api/v1/jobs/ID/terminal; and a link to
// one of the job's web ports (/jobs/ID/port/PORT/). Both for the job's owner or an admin.

import { Terminal } from "./vendor/xterm.mjs";
import { pinned } from "./api.js";
import { $ } from "./dom.js";

const open = { id: "", term: null, socket: null }; // the terminal on screen, if any
const pending = { id: "" }; // a session started from the page: its terminal opens once it runs

/** Open job ``id``'s terminal by itself the first time its page shows it running. */
export function openWhenRunning(id) {
  pending.id = id;
}

/** Show the terminal's controls on ``job``'s page when ``may`` (owner or admin) and it runs. */
export function showInteractive(job, may) {
  if (open.id && open.id !== job.id) closeTerminal();
  const running = may && job.state === "RUNNING";
  $("#job-interactive").hidden = !running && !open.term;
  $("#terminal-open").hidden = !running || Boolean(open.term);
  $("#terminal-open").onclick = () => openTerminal(job);
  $("#terminal-close").hidden = !open.term;
  $("#terminal-close").onclick = closeTerminal;
  const port = $("#web-port");
  const link = $("#web-port-open");
  port.oninput = () => {
    const n = Number(port.value);
    link.hidden = !(Number.isInteger(n) && n >= 1 && n <= 65535);
    // the pinned CSRF token: the door's proof that this page asked, where the browser sends
    // no Sec-Fetch-Site (plain HTTP off loopback); the door drops it
    link.href = `/jobs/${encodeURIComponent(job.id)}/port/${n}/?rota_csrf=${pinned()}`;
  };
  if (running && pending.id === job.id && !open.term) {
    pending.id = "";
    openTerminal(job);
  }
}

/** The rows and columns of characters that fit the terminal's box. */
function fit(box) {
  const probe = document.createElement("span");
  probe.className = "xterm";
  probe.style.cssText = "position:absolute;visibility:hidden;font:15px monospace";
  probe.textContent = "W".repeat(50);
  document.body.append(probe);
  const { width, height } = probe.getBoundingClientRect();
  probe.remove();
  const cols = Math.max(20, Math.floor((box.clientWidth - 20) / (width / 50)));
  const rows = Math.max(5, Math.floor((box.clientHeight - 10) / (height * 1.2)));
  return { cols, rows };
}

/** A terminal on ``job``: its own shell for an interactive session (as grun), else a new one
 * in its container (as gattach). */
function openTerminal(job) {
  const id = job.id;
  const box = $("#terminal");
  const state = $("#terminal-state");
  box.hidden = false;
  box.replaceChildren();
  const { cols, rows } = fit(box);
  const term = new Terminal({ cols, rows, fontFamily: "monospace", fontSize: 15, convertEol: false });
  term.open(box);
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const url = `${scheme}://${location.host}/api/v1/jobs/${encodeURIComponent(id)}/terminal?rows=${rows}&cols=${cols}${job.interactive ? "&attach=1" : ""}&csrf=${pinned()}`;
  const socket = new WebSocket(url);
  socket.binaryType = "arraybuffer";
  Object.assign(open, { id, term, socket });
  const encoder = new TextEncoder();
  state.textContent = "(connecting)";
  socket.onmessage = (msg) => {
    if (typeof msg.data !== "string") {
      term.write(new Uint8Array(msg.data));
      return;
    }
    const event = JSON.parse(msg.data);
    if (event.started) state.textContent = `(on ${event.started})`;
    else if (event.state) state.textContent = `(job ${event.state}${event.reason ? ": " + event.reason : ""})`;
    else if ("exited" in event) state.textContent = `(ended, exit code ${event.exited})`;
    else if (event.error) state.textContent = `(${event.error})`;
  };
  socket.onclose = () => {
    if (open.socket === socket && !state.textContent.startsWith("(ended")) state.textContent += " (closed)";
  };
  socket.onerror = () => {
    state.textContent = "(could not connect: only the job's owner or an admin may open it while it runs)";
  };
  term.onData((text) => socket.readyState === WebSocket.OPEN && socket.send(encoder.encode(text)));
  box.dataset.size = `${rows}x${cols}`;
  term.onResize(({ cols: c, rows: r }) => {
    box.dataset.size = `${r}x${c}`;
    if (socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify({ rows: r, cols: c }));
  });
  window.onresize = () => {
    if (open.term !== term) return;
    const size = fit(box);
    term.resize(size.cols, size.rows);
  };
  term.focus();
  $("#terminal-open").hidden = true;
  $("#terminal-close").hidden = false;
}

function closeTerminal() {
  if (open.socket) open.socket.close();
  if (open.term) open.term.dispose();
  Object.assign(open, { id: "", term: null, socket: null });
  $("#terminal").hidden = true;
  $("#terminal").replaceChildren();
  $("#terminal-close").hidden = true;
  $("#terminal-state").textContent = "";
}
