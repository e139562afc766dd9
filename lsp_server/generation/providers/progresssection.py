"""The Progress section of the extractive document: what was done (files, runs, turns),
what is in progress, and what is pending."""

from __future__ import annotations

import os
import re
from typing import Any

from ..chain import is_continuation
from ..facts import Change, Request, Run
from ..signals import ACTIVE, DONE, is_noise, one_line, readable
from .wording import code, quote


class ProgressSection:
    """Progress: done, in progress, pending (a part of ``extractive.Writer``)."""

    # -- Progress ----------------------------------------------------------------------

    def done(self) -> list[str]:
        """What the session did: files changed, git events, passing runs, plan items done."""
        f = self.f
        changes = [
            c
            for c in f.changes.values()
            if not c.path.startswith(("/tmp/", "/dev/", "/var/folders/"))
        ]
        scratch = [c for c in changes if "created" in c.verbs and c.last == "deleted"]
        out = self.changed_files([c for c in changes if c not in scratch])
        if scratch:
            names = ", ".join(code(self.text(os.path.basename(c.path)), 60) for c in scratch[:6])
            more = f" and {len(scratch) - 6} more" if len(scratch) > 6 else ""
            out.append(f"Scratch files created and deleted again: {names}{more}")
        labels = {"commit": "Committed", "push": "Pushed", "pull": "Pulled:", "merge": "Merged:"}
        for g in f.git_events[-self.n.events :]:
            out.append(f"{labels.get(g.kind, 'Forge:')} {self.text(g.detail)}")
        out += self.after_last_commit(changes)
        for test in self.last_tests():
            if test.outcome == "ok":
                counts = f" → {code(test.counts, 120)}" if test.counts else " (passed)"
                out.append(f"Last run of {self.cmd(test, 100)}{counts}")
        out += self.runs_done()
        done = [
            one_line(self.text(p.text), 120) for p in f.plan.values() if p.status.lower() in DONE
        ]
        if len(done) > 3:
            out.append(f"Plan items done ({len(done)}): " + "; ".join(done))
        else:
            out += [f"Plan item done: {d}" for d in done]
        return out

    def after_last_commit(self, changes: list[Change]) -> list[str]:
        """The files the session changed after its last commit: no commit of the session
        holds those changes (a reader of "Committed …" above would think otherwise)."""
        commits = [g for g in self.f.git_events if g.kind == "commit"]
        if not commits:
            return []
        last = commits[-1].position
        later = [c for c in changes if not c.outside and c.position > last and c.last != "deleted"]
        if not later:
            return []
        names = ", ".join(code(self.text(c.path), 80) for c in later[:6])
        more = f" and {len(later) - 6} more" if len(later) > 6 else ""
        return [f"Changed after the session's last commit, and not committed in it: {names}{more}"]

    def changed_files(self, kept: list[Change]) -> list[str]:
        """The files changed (the top ones each on a line, the rest by folder), and which
        of them this workspace does not have now."""
        out: list[str] = []
        # What exists now before what went away; the newest change first.
        order = sorted(kept, key=lambda c: (set(c.verbs) <= {"moved away", "deleted"}, -c.position))
        inside = self.ranked([c for c in order if not c.outside], lambda c: c.path)
        outside = self.ranked([c for c in order if c.outside], lambda c: c.path)
        top = self.n.files
        listed = (inside + outside)[:top]
        for c in listed:
            how = ", ".join(f"{v} {n}×" if n > 1 else v for v, n in c.verbs.items()) or "written"
            symbols = ", ".join(code(x, 60) for x in c.symbols[-4:])
            where = ", outside the workspace" if c.outside else ""
            out.append(
                f"{code(self.text(c.path), 120)} ({how}{'; defines ' + symbols if symbols else ''}{where})"
            )
            self.shown.add(c.path)
        rest = [c for c in inside + outside if c not in listed]
        if rest:
            out.append(self.more_files(rest))
        gone = [
            c.path
            for c in listed
            if not c.outside
            and not self.exists(c.path)
            and not set(c.verbs) <= {"deleted", "moved away"}
        ]
        if gone:
            if len(gone) == len([c for c in listed if not c.outside]):
                out.append(
                    "None of the files above is in this workspace now (the session ran elsewhere, or they were removed)."
                )
            else:
                out.append(
                    "Not in this workspace now: "
                    + ", ".join(code(self.text(p), 80) for p in gone[:5])
                    + (" and more" if len(gone) > 5 else "")
                )
        return out

    def more_files(self, rest: list[Change]) -> str:
        """The files past the top ones, counted, with the folders most of them are in."""
        folders: dict[str, list[Change]] = {}
        for c in rest:
            folders.setdefault(os.path.dirname(c.path.rstrip("/")) or ".", []).append(c)
        # Folders with new files first, then the biggest; new files first in each.
        biggest = sorted(
            folders.items(),
            key=lambda kv: (not any("created" in c.verbs for c in kv[1]), -len(kv[1])),
        )[:4]

        def names(group: list[Change]) -> str:
            made = sorted(group, key=lambda c: "created" not in c.verbs)
            shown = ", ".join(code(os.path.basename(c.path), 40) for c in made[:3])
            return shown + (f" +{len(group) - 3}" if len(group) > 3 else "")

        named = "; ".join(f"{code(self.text(d), 80)}: {names(g)}" for d, g in biggest)
        return f"… and {len(rest)} more file(s) changed, most in {named}"

    def runs_done(self) -> list[str]:
        """The last three distinct builds and commands that succeeded, oldest first."""
        seen: set[str] = set()
        runs: list[str] = []
        for r in reversed(self.f.runs):
            if (
                r.outcome != "ok"
                or r.kind not in ("build", "other")
                or r.key in seen
                or r.call is None
                and r.message is None
            ):
                continue
            if (
                r.key.startswith(("write ", "apply_patch", "["))
                or r.changes
                or r.command.startswith("[")
            ):
                continue
            if re.search(
                r"\b(?:python|node|ruby|perl|bun|deno|php)\d*(?:\.\d+)? -[ce]\b", r.command
            ):
                continue  # an inline script: its text is no step a successor repeats
            seen.add(r.key)
            runs.append(f"Ran {self.cmd(r)} (exit {r.exit_code if r.exit_code is not None else 0})")
            if len(runs) >= 3:
                break
        return runs[::-1]

    def exists(self, rel: str) -> bool:
        try:
            return (self.workspace / rel).is_file()
        except (OSError, ValueError):
            return False

    def last_tests(self, limit: int = 3) -> list[Run]:
        """The last run of each of the newest test steps, oldest first."""
        seen: dict[str, Run] = {}
        for r in reversed(self.f.tests):
            if r.key not in seen:
                seen[r.key] = r
            if len(seen) >= limit:
                break
        return sorted(seen.values(), key=lambda r: r.position)

    def turns(self) -> list[str]:
        """What the agent reported back for each request it worked on (the last turn's
        report is quoted whole in Critical Context)."""
        f = self.f
        worked = [
            r
            for r in f.requests
            if r.report is not None
            and (r.acted_on or r is f.goal)
            and r.report is not f.last_report
        ]
        limit = self.n.turns
        chosen = worked[-limit:]
        if worked and worked[0] is f.goal and worked[0] not in chosen:
            chosen = [worked[0], *worked[-(limit - 1) :]] if limit > 1 else [worked[0]]
        out = []
        for r in chosen:
            self.t.clean(r.report)
            said = " ".join(
                ln.strip(" #*-|>")
                for ln in readable(r.report.text).splitlines()
                if ln.strip() and not is_noise(ln)
            )
            out.append(
                f"For “{one_line(self.text(r.text), 70)}”, the agent reported: “{one_line(said, self.n.turn_chars)}”"
            )
        return out

    def in_progress(self) -> list[str]:
        f, final = self.f, self.f.final
        out: list[str] = []
        if final is not None and final.status != "done":
            out.append(f"{final.status.capitalize()}: {self.text(final.reason)}.")
        out += [
            f"Plan item in progress: {one_line(self.text(p.text), 200)}"
            for p in f.plan.values()
            if p.status.lower() in ACTIVE
        ]
        blocker = final.blocker if final is not None else None
        for r in self.open_failures():
            if r is blocker:
                continue
            status = f"exit {r.exit_code}" if r.exit_code is not None else "error"
            error = f": {code(r.error, 200)}" if r.error else ""
            out.append(f"{self.cmd(r)} failed ({status}){error}; no later run of it succeeded")
        for r in self.masked_unknown():
            out.append(
                f"{self.cmd(r)}: its own status is unknown (its output went through a filter and shows no error)"
            )
        return out

    def open_failures(self) -> list[Run]:
        """Failed steps no later run resolved and the session did not move past (the
        newest two, and never when the session reports its work finished)."""
        final = self.f.final
        if final is not None and final.status == "done":
            return []
        newest: dict[str, Run] = {}  # a step that failed again is one open failure, its last
        for r in self.f.open_failures:
            if r.kind not in ("probe", "search"):
                newest.pop(r.key, None)
                newest[r.key] = r
        return list(newest.values())[-2:]

    def masked_unknown(self) -> list[Run]:
        """Build and test steps near the end whose status a filter hid, with no later
        run of the same step that succeeded."""
        out: list[Run] = []
        later_ok: set[str] = set()
        for r in reversed(self.f.runs[-30:]):
            if r.outcome == "ok":
                later_ok.add(r.key)
            elif (
                r.outcome == "unknown"
                and r.masked
                and r.kind in ("build", "test")
                and r.key not in later_ok
            ):
                out.append(r)
        return out[:2][::-1]

    def pending(self) -> list[str]:
        carried = self.earlier.open_items if self.earlier is not None else []
        return [
            one_line(self.text(p.text), 240)
            for p in self.f.plan.values()
            if p.status.lower() not in DONE | ACTIVE
        ] + [
            f"From the earlier handoff (unless this session finished it): {one_line(self.text(x), 240)}"
            for x in carried
        ]

    def carried_goal(self, g: Request | None) -> dict[str, Any]:
        """The earlier handoff's goal, carried forward; a request that only says to go
        on with it is not shown as the goal."""
        e = self.earlier
        if e is None or not e.goal:
            return {"carried": None}
        out: dict[str, Any] = {
            "carried": quote(self.text(e.goal), self.n.summary),
            "carried_from": f" (generated from {code(self.text(e.source), 200)})"
            if e.source
            else "",
        }
        if g is not None and is_continuation(g.text):
            out["request"] = None
        return out
