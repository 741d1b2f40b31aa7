// A job's page: its fields, the actions its owner or an admin may take, its events, and its
// output, which grows by appending (a selection in it survives the refresh) and can be
// downloaded whole.

import { api, getJob, getLog } from "./api.js";
import { $, confirmButton, duration, el, fill, td, when } from "./dom.js";
import { showInteractive } from "./terminal.js";

const DOWNLOAD_TAIL = 256 * 2 ** 20; // bytes of output the download link asks for
const KEY = 2048; // characters of the shown output's end looked for in the next reading
const shown = { id: "", attempt: 0, tail: "" }; // the output on screen: whose, and its end

function seconds(iso) {
  return iso ? Date.parse(iso) / 1000 : null;
}

function elapsed(job) {
  const start = seconds(job.start_time);
  if (!start) return "";
  return duration((seconds(job.end_time) || Date.now() / 1000) - start);
}

/** The buttons for what may be done to ``job`` now. */
function actions(job, may) {
  if (!may) return [];
  const act = (action) => async () => {
    const out = $("#job-action-result");
    try {
      await api("POST", `/jobs/${encodeURIComponent(job.id)}/${action}`);
      out.className = "ok";
      out.textContent = `${action}: done`;
    } catch (err) {
      out.className = "bad";
      out.textContent = err.message;
    }
    renderJob(job.id);
  };
  const ended = ["COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED"].includes(job.state);
  const buttons = [];
  if (!ended) buttons.push(confirmButton("Cancel job", `Cancel job ${job.id}?`, act("cancel"), "cancel-job"));
  if (job.state === "PENDING" && !job.held) buttons.push(el("button", { type: "button", class: "hold", onclick: act("hold") }, "Hold"));
  if (job.held) buttons.push(el("button", { type: "button", class: "release", onclick: act("release") }, "Release"));
  if (["RUNNING", "CONFIGURING"].includes(job.state)) {
    buttons.push(confirmButton("Requeue", `Stop job ${job.id} and queue it again?`, act("requeue"), "requeue"));
  }
  return buttons;
}

export async function renderJob(id) {
  const { job, events, may_read_log, may_act, image } = await getJob(id);
  $("#job-id").textContent = job.id;
  const fields = [
    ["Name", job.name],
    ["User", job.user],
    ["Account", job.account],
    ["State", job.state + (job.reason ? ` (${job.reason})` : "") + (job.held ? ` · held (${job.held})` : "")],
    ["Exit code", job.exit_code],
    ["Image", image],
    ["Command", (job.command || []).join(" ")],
    ["Attempts", job.attempt],
    ["GPUs", Object.entries(job.gpu_ids).map(([n, ids]) => `${n}:${ids.join(",")}`).join(" ") || job.gpus],
    ["Partition", job.partition],
    ["Time limit", duration(job.time_limit)],
    ["Elapsed", elapsed(job)],
    ["Submitted", when(job.submit_time)],
    ["Started", when(job.start_time) || (job.estimated_start ? "≈ " + when(job.estimated_start) : "")],
    ["Ended", when(job.end_time) || (job.expected_end ? "expected " + when(job.expected_end) : "")],
    ["Reservation", job.reservation],
    ["Warning", job.warning],
  ];
  $("#job-fields").replaceChildren(
    ...fields.filter(([, v]) => v !== "" && v != null).flatMap(([k, v]) => [el("dt", { text: k }), el("dd", { text: v })]),
  );
  showInteractive(job, may_act);
  const buttons = actions(job, may_act);
  const bar = $("#job-actions");
  if (bar.dataset.for !== `${job.id}/${job.state}/${job.held}`) {
    bar.dataset.for = `${job.id}/${job.state}/${job.held}`;
    bar.replaceChildren(...buttons);
  }
  fill(
    $("#job-events tbody"),
    events.map((e) => el("tr", {}, td(when(e.time)), td(e.attempt, "num"), td(e.kind === "state" ? `${e.old_state || "·"} → ${e.new_state}` : e.kind), td(e.reason))),
  );
  await showLog(job, may_read_log);
}

async function showLog(job, mayRead) {
  const log = $("#job-log");
  const note = $("#job-log-state");
  const download = $("#job-log-download");
  download.hidden = !mayRead || job.attempt === 0;
  download.href = `/api/v1/jobs/${encodeURIComponent(job.id)}/log?tail=${DOWNLOAD_TAIL}`;
  download.setAttribute("download", `job-${job.id}.log`);
  if (shown.id !== job.id || shown.attempt !== job.attempt) {
    Object.assign(shown, { id: job.id, attempt: job.attempt, tail: "" });
    log.textContent = "";
  }
  if (!mayRead) {
    note.textContent = `only ${job.user} or an admin may read this job's output`;
    return;
  }
  if (job.attempt === 0) {
    note.textContent = "(not started yet)";
    return;
  }
  let text;
  try {
    text = await getLog(job.id);
  } catch (err) {
    if (err.status === 401) throw err;
    note.textContent = "(" + err.message + ")";
    return;
  }
  const atEnd = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
  const fresh = newPart(shown.tail, text);
  if (fresh === null) {
    log.textContent = text;
  } else if (fresh) {
    log.append(document.createTextNode(fresh));
  }
  shown.tail = (fresh === null ? text : shown.tail + fresh).slice(-KEY);
  if (atEnd) log.scrollTop = log.scrollHeight;
  note.textContent = job.end_time ? "(ended)" : "(live, last 64 KiB)";
}

/** What ``text`` (the output's latest tail) adds to an output that ends with ``tail``: "" for
 * nothing new, null when they do not join (the output restarted: show ``text`` alone). */
function newPart(tail, text) {
  if (!tail) return text ? null : "";
  if (text.endsWith(tail)) return "";
  const at = text.lastIndexOf(tail);
  if (at >= 0) return text.slice(at + tail.length);
  return null;
}
