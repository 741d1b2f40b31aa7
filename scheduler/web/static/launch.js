// "Start a session" on the queue page: an interactive session (a shell, as grun starts one)
// submitted through POST /api/v1/interactive; the page then shows the job, whose terminal
// opens by itself once it runs.

import { api } from "./api.js";
import { $ } from "./dom.js";
import { openWhenRunning } from "./terminal.js";

export function setupLaunch() {
  $("#launch-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const out = $("#launch-result");
    const body = {
      image: $("#launch-image").value.trim(),
      gpus: Number($("#launch-gpus").value || 0),
      time_limit: $("#launch-time").value.trim(),
      reservation: $("#launch-reservation").value.trim(),
      client_request_id: crypto.randomUUID(),
    };
    try {
      const { id } = await api("POST", "/interactive", body);
      out.className = "ok";
      out.textContent = `job ${id} submitted`;
      openWhenRunning(id);
      location.hash = `#job/${id}`;
    } catch (err) {
      out.className = "bad";
      out.textContent = err.message;
    }
  });
}
