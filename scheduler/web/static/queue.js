// The queue (active jobs, array tasks folded, filtered, a page at a time) and the jobs that ended.

import { getJobs, session } from "./api.js";
import { $, el, fill, paged, td, when } from "./dom.js";
import { jobMatches } from "./filters.js";

const QUEUE_PAGE = 100;
const queuePage = {};
const unfolded = new Set(); // array ids whose tasks are listed one by one

export function jobLink(id) {
  return el("a", { href: "#job/" + encodeURIComponent(id) }, id);
}

/** Jobs in order, the tasks of an array that has several in the list folded into one entry. */
function fold(jobs) {
  const arrays = new Map();
  for (const j of jobs) {
    const [array, task] = j.id.split("_");
    if (task !== undefined) (arrays.get(array) || arrays.set(array, []).get(array)).push(j);
  }
  const out = [];
  const done = new Set();
  for (const j of jobs) {
    const array = j.id.split("_")[0];
    const tasks = arrays.get(array);
    if (!tasks || tasks.length < 2) out.push({ job: j });
    else if (unfolded.has(array)) out.push({ job: j, refold: tasks[0] === j ? array : null });
    else if (!done.has(array)) {
      done.add(array);
      out.push({ array, tasks });
    }
  }
  return out;
}

/** A job's row; ``refold`` (an array id) puts a button on it that folds the array's tasks again. */
function jobRow(j, refold, redraw) {
  const fold = refold && el("button", { type: "button", class: "fold", onclick: () => (unfolded.delete(refold), redraw()) }, "▾");
  return el(
    "tr",
    { "data-job": j.id, class: j.user === session.me.user ? "mine" : null },
    el("td", {}, ...(fold ? [fold, " "] : []), jobLink(j.id)),
    td(j.name),
    td(j.user),
    td(j.state, "state-" + j.state),
    td(j.reason),
    td(j.gpus * j.num_nodes, "num"),
    td(j.nodes.join(",")),
    td(j.start_time ? when(j.start_time) : j.estimated_start ? "≈ " + when(j.estimated_start) : ""),
    td(when(j.expected_end)),
    td(j.reservation),
  );
}

function arrayRow(array, tasks, redraw) {
  const counts = {};
  for (const t of tasks) counts[t.state_code] = (counts[t.state_code] || 0) + 1;
  const ids = tasks.map((t) => Number(t.id.split("_")[1]));
  const first = tasks[0];
  return el(
    "tr",
    { "data-array": array, class: "folded" },
    el(
      "td",
      {},
      el("button", { type: "button", class: "unfold", onclick: () => (unfolded.add(array), redraw()) }, "▸"),
      ` ${array}_[${Math.min(...ids)}-${Math.max(...ids)}]`,
    ),
    td(first.name),
    td(first.user),
    td(Object.entries(counts).map(([k, n]) => `${n} ${k}`).join(", ")),
    td(`${tasks.length} tasks`),
    td(tasks.reduce((k, t) => k + t.gpus * t.num_nodes, 0), "num"),
    td(""),
    td(""),
    td(""),
    td(first.reservation),
  );
}

export async function renderQueue() {
  const [{ jobs }, ended] = await Promise.all([getJobs("?state=active"), getJobs("?state=ended&limit=20")]);
  const me = session.me.user;
  const entries = fold(jobs.filter((j) => jobMatches(j, me)));
  const shown = paged(entries, $("#queue-pager"), queuePage, QUEUE_PAGE, renderQueue);
  $("#queue-count").textContent = `${jobs.length} active, ${jobs.filter((j) => j.user === me).length} yours`;
  fill(
    $("#queue-table tbody"),
    shown.map((e) => (e.job ? jobRow(e.job, e.refold, renderQueue) : arrayRow(e.array, e.tasks, renderQueue))),
  );
  fill(
    $("#ended-table tbody"),
    ended.jobs
      .filter((j) => jobMatches(j, me))
      .map((j) =>
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
