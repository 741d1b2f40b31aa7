// Local time for the timeline: day and week bounds, midnights and hour ticks in the browser's
// time zone (the server speaks UTC). Calendar steps go through Date's local fields, so a day
// is 23 or 25 hours long across a DST change and lines stay on local midnights.

export const HOUR = 3600 * 1000;

export const zoneName = () => Intl.DateTimeFormat().resolvedOptions().timeZone || "local time";

export function startOfDay(ms) {
  const d = new Date(ms);
  d.setHours(0, 0, 0, 0);
  return d.getTime();
}

/** The local midnight ``n`` days after the day of ``ms``. */
export function addDays(ms, n) {
  const d = new Date(startOfDay(ms));
  d.setDate(d.getDate() + n);
  d.setHours(0, 0, 0, 0);
  return d.getTime();
}

/** The local midnight that starts the week of ``ms``; ``firstDay``: 0 Sunday, 1 Monday, ... */
export function weekStart(ms, firstDay) {
  const day = new Date(startOfDay(ms)).getDay();
  return addDays(ms, -((day - firstDay + 7) % 7));
}

/** [from, to) of the day or week view that holds ``anchor``. */
export function viewBounds(anchor, span, firstDay) {
  if (span === "week") {
    const from = weekStart(anchor, firstDay);
    return [from, addDays(from, 7)];
  }
  const from = startOfDay(anchor);
  return [from, addDays(from, 1)];
}

/** Local midnights in [from, to). */
export function midnights(from, to) {
  const out = [];
  for (let t = startOfDay(from) < from ? addDays(from, 1) : startOfDay(from); t < to; t = addDays(t, 1)) out.push(t);
  return out;
}

/** Whole local hours in (from, to) divisible by ``every`` that are not midnights. */
export function hourTicks(from, to, every) {
  const out = [];
  const first = new Date(from);
  first.setMinutes(0, 0, 0);
  for (let t = first.getTime() + HOUR; t < to; t += HOUR) {
    const d = new Date(t);
    if (d.getMinutes() === 0 && d.getHours() % every === 0 && d.getHours() !== 0) out.push(t);
  }
  return out;
}
