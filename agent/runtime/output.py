"""An attempt's output, read from its container: the agent's log file per attempt (live while
it runs, complete at its end) and the job's own ``--output``/``--error`` files, written as the
job's user (``outfiles``). Each file keeps at most ``max_output`` bytes.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from docker.errors import DockerException

from rota.agent.runtime import outfiles
from rota.agent.runtime.engine_args import ENGINE_DOWN, engine_message
from rota.agent.runtime.outfiles import OutputFiles

log = logging.getLogger("rota.agent")

Spawn = Callable[..., threading.Thread]  # spawn(target, *args): a started worker thread


class OutputSaver:
    """Writes attempts' output under ``log_dir``; ``spawn`` runs the per-file followers."""

    def __init__(self, log_dir: Path, max_output: int, node: str, spawn: Spawn) -> None:
        self.log_dir = log_dir
        self.max_output = max_output
        self._node = node
        self._spawn = spawn

    def log_path(self, job_id: int, attempt: int) -> Path:
        return self.log_dir / str(job_id) / f"{attempt}.log"

    def follow(self, job_id: int, attempt: int, container: Any) -> None:
        """Copy the output into the log and the job's files as it comes, until the container
        ends. Errors are dropped: the whole output is fetched again when the attempt ends."""
        path = self.log_path(job_id, attempt)
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            files = [
                self._spawn(self._follow_file, container, target, stdout, stderr, start)
                for target, stdout, stderr, start in OutputFiles.from_labels(
                    container.labels
                ).streams()
            ]
            with path.open("wb") as out:
                capped = outfiles.CappedWriter(out, self.max_output)
                for chunk in container.logs(stream=True, follow=True):
                    if not capped.write(chunk):
                        break
            for follower in files:  # done before the complete output is written over them
                follower.join(timeout=5)
        except (DockerException, *ENGINE_DOWN, OSError):
            pass

    def save(self, job_id: int, attempt: int, container: Any) -> list[str]:
        """The complete output of an ended attempt into its log and the job's files; a note
        for the final report per file that was cut or could not be written. Raises the
        engine's connection errors (saved again once the engine answers)."""
        return self._save_log(job_id, attempt, container) + self._write_files(container)

    def _follow_file(
        self, container: Any, path: str, stdout: bool, stderr: bool, start: int
    ) -> None:
        """The job's own output file (``--output``/``--error``) as the output comes."""
        try:
            uid, gid = outfiles.owner(container.attrs.get("Config", {}).get("User", ""))
            stream = container.logs(stdout=stdout, stderr=stderr, stream=True, follow=True)
            outfiles.write(path, uid, gid, stream, self.max_output, start)
        except (DockerException, *ENGINE_DOWN, OSError):
            pass  # written whole when the attempt ends, which reports why it cannot be

    def _write_files(self, container: Any) -> list[str]:
        """The job's output files, complete (the attempt has ended); a note for the final
        report per file that could not be written or was cut at ``max_output``."""
        notes = []
        for path, stdout, stderr, start in OutputFiles.from_labels(container.labels).streams():
            try:
                uid, gid = outfiles.owner(container.attrs.get("Config", {}).get("User", ""))
                stream = container.logs(stdout=stdout, stderr=stderr, stream=True, follow=False)
                if outfiles.write(path, uid, gid, stream, self.max_output, start):
                    notes.append(f"output file {path} {outfiles.truncation_note(self.max_output)}")
            except ENGINE_DOWN:
                raise  # written again once the engine answers
            except (DockerException, OSError) as exc:
                is_os = isinstance(exc, OSError)
                reason = (exc.strerror or str(exc)) if is_os else engine_message(exc)
                log.warning("cannot write the job's output file %s: %s", path, reason)
                notes.append(f"output file {path} not written: {reason}")
        return notes

    def _save_log(self, job_id: int, attempt: int, container: Any) -> list[str]:
        """The attempt's complete output into its log file (at most ``max_output`` bytes,
        streamed, never whole in memory); a note for the final report when it was cut."""
        path = self.log_path(job_id, attempt)
        tmp = path.with_suffix(".tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with tmp.open("wb") as out:
                capped = outfiles.CappedWriter(out, self.max_output)
                for chunk in container.logs(stdout=True, stderr=True, stream=True, follow=False):
                    if not capped.write(chunk):
                        break
            tmp.replace(path)
        except ENGINE_DOWN:
            raise  # saved again once the engine answers
        except OSError as exc:
            log.warning("cannot save the output of job %d: %s", job_id, exc)
            return [f"output not saved on node {self._node}: {exc.strerror or exc}"]
        return [f"output {outfiles.truncation_note(self.max_output)}"] if capped.truncated else []
