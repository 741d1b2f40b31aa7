// Accounting: GPU-hours per user (with their bookings' unused GPU-hours) and account (gacct
// --summary) and the efficiency list.

import { api } from "./api.js";
import { $, el, fill, gib, pct, td } from "./dom.js";
import { jobLink } from "./queue.js";

function isoDay(input, endOfDay) {
  if (!input.value) return "";
  return new Date(input.value + (endOfDay ? "T23:59:59" : "T00:00:00")).toISOString();
}

export async function renderAccounting() {
  const start = isoDay($("#acct-start"), false);
  const end = isoDay($("#acct-end"), true);
  const q = `?start=${encodeURIComponent(start)}&end=${encodeURIComponent(end)}`;
  const [summary, eff] = await Promise.all([api("GET", "/accounting/summary" + q), api("GET", "/accounting/efficiency" + q)]);
  const totals = (rows, unused) =>
    rows.map((t) =>
      el(
        "tr",
        { "data-name": t.name },
        td(t.name),
        td(t.jobs, "num"),
        td(t.gpu_hours.toFixed(2), "num"),
        td(pct(t.gpu_utilization), "num"),
        ...(unused ? [td(t.booked_unused.toFixed(2), "num")] : []),
      ),
    );
  fill($("#acct-users tbody"), totals(summary.users, true));
  fill($("#acct-accounts tbody"), totals(summary.accounts, false));
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
