"""The Key Decisions and Critical Context sections of the extractive document: the
choices made, and the facts a successor must not lose (git, failures, names, links)."""

from __future__ import annotations

import re

from ..agents import format_label
from ..gitstate import GitState
from ..signals import is_noise, one_line, readable
from ..transcript import call_command, read_repairs
from .wording import (
    BULLET,
    CHOICE,
    CODE_SHAPED,
    FORCE_ADD,
    HOST_PORT,
    INLINE_CODE,
    LINK,
    NAME_MESSAGES,
    NARRATION,
    REASON,
    REASON_WORDS,
    SENTENCE,
    SHA_ONLY,
    code,
    quote,
)


class ContextSection:
    """Key Decisions and Critical Context (a part of ``extractive.Writer``)."""

    # -- Key Decisions -----------------------------------------------------------------

    def decisions(self) -> list[str]:
        limit = max(self.n.decisions - 1, 1)
        out: list[str] = []
        summary = self.f.compaction.get("decisions")
        if summary:
            lines = [
                one_line(BULLET.sub("", ln), 240)
                for ln in summary.splitlines()
                if BULLET.sub("", ln).strip()
            ]
            out += [f"{ln} (from the compaction summary)" for ln in lines[: self.n.decisions]]
        for task in self.f.tasks:
            for said, picked in task.selections:
                named = f": {self.text(picked)}" if picked else ""
                out.append(
                    f"The user chose “{one_line(self.text(said), 80)}” among the options the agent listed{named}"
                )
        found = self.f.cache.get("choices")
        if found is None:  # the same at every level of detail: looked for once
            found = self.f.cache["choices"] = self.stated_choices(6)
        return out + found[:limit][::-1]

    def stated_choices(self, limit: int) -> list[str]:
        """Statements of choice with a reason in the agent's messages, newest first."""
        found: list[str] = []
        looked = 0
        for m in reversed(self.t.history):
            if m.role == "assistant" and m.text:
                looked += 1
                if looked > 2000:
                    break  # older choices reach a handoff through the compaction summary
            if (
                m.role != "assistant"
                or not m.text
                or not any(w in m.text for w in REASON_WORDS)  # a cheap look first
                or not CHOICE.search(m.text)
                or not REASON.search(m.text)
            ):
                continue
            for sentence in SENTENCE.split(m.text):
                if not CHOICE.search(sentence):
                    continue
                # One sentence of prose, redacted whole before it is cut to a line.
                s = one_line(self.text(sentence).strip(" -*#>"), 260)
                if (
                    40 <= len(s) <= 260
                    and CHOICE.search(s)
                    and REASON.search(s)
                    and not NARRATION.match(s)
                    and not s.endswith("?")
                    and not is_noise(s)
                    and f"“{s}”" not in found
                ):
                    found.append(f"“{s}”")
            if len(found) >= limit:
                break
        return found

    # -- Critical Context ------------------------------------------------------------

    def critical(self, git: GitState | None) -> list[str]:
        """What the next agent must know: the final state, git, what was resolved, the
        files read, links, environment, the focus's facts and the source."""
        f = self.f
        items = self.final_state()
        items += self.git_facts(git)
        items += self.resolved_failures()
        read = [
            p
            for p, _ in sorted(f.reads.items(), key=lambda kv: -kv[1])
            if p not in f.changes and not p.startswith("/tmp/")
        ][: self.n.reads]
        if read:
            items.append(
                "Files the agent read most: " + ", ".join(code(self.text(p), 100) for p in read)
            )
        links = self.links()
        if links:
            items.append("Links the agent reported: " + ", ".join(links))
        forced = self.force_added()
        if forced:
            items.append(
                "Added to git past its ignore rules (`git add -f`): "
                + ", ".join(code(self.text(x), 100) for x in forced)
                + "; they are ignored, so a plain `git add` skips them."
            )
        tools = sorted(f.own_tools.items(), key=lambda kv: -kv[1])[: self.n.reads]
        if tools:
            items.append(
                "The agent's own tools (beyond files and the shell), by use: "
                + ", ".join(f"{code(name, 60)} ×{n}" for name, n in tools)
            )
        names = self.report_names()
        if names:
            items.append(
                "Names in the agent's recent messages not shown elsewhere here: "
                + ", ".join(code(n, 80) for n in names)
            )
        env = f.environment
        if env.get("shell"):
            items.append(
                f"The agent's environment: shell {code(env['shell'], 40)}"
                + (f", folder {code(env['cwd'], 120)}" if env.get("cwd") else "")
                + "."
            )
        if self.focus is not None:
            items += self.focus_facts()
        items += self.source_facts()
        return items

    def force_added(self) -> list[str]:
        """Files a successful ``git add -f`` added although ``.gitignore`` excludes them."""
        out: list[str] = []
        for r in self.f.runs:
            if r.outcome != "ok" or "git add" not in r.keys:
                continue
            for m in FORCE_ADD.finditer(r.command):
                for path in m.group(1).split():
                    if path not in out and not path.isdigit():
                        out.append(path)
        return out[:6]

    def report_names(self) -> list[str]:
        """Identifiers the agent's recent messages name (their inline code: functions,
        options, host:port addresses…) that the document does not otherwise show: the
        clipped quote of its last report, the files listed. The most named first."""
        cached = self.f.cache.get("names")
        if cached is None:
            cached = self.f.cache["names"] = self._agent_names()
        shown = self.report() or ""
        listed = set(self.f.changes) | set(self.f.reads)
        return [n for n in cached if n not in shown and n not in listed and f"`{n}`" not in shown][
            : self.n.reads * 2
        ]

    def _agent_names(self) -> list[str]:
        counts: dict[str, int] = {}
        last: set[str] = set()  # named in the last report, which the quote clips
        seen = 0
        for m in reversed(self.t.history):
            if m.role != "assistant" or not m.text.strip():
                continue
            seen += 1
            if seen > NAME_MESSAGES:
                break
            text = readable(self.t.clean(m).text)
            for name in [*INLINE_CODE.findall(text), *HOST_PORT.findall(text)]:
                name = name.strip()
                if (
                    2 <= len(name) <= 60
                    and len(name.split()) <= 3
                    and not name.startswith("#")
                    and not name.endswith(("-", "_", "/"))
                    and "\\" not in name
                    and re.search(r"[A-Za-z]", name)
                    and not is_noise(name)
                ):
                    counts[name] = counts.get(name, 0) + 1
                    if m is self.f.last_report:
                        last.add(name)
        # The last report's names first, then the earlier messages'; the most named first,
        # code-shaped names (snake_case, CamelCase, calls, paths, options) before plain
        # words; among equals, the newest (first seen: the walk goes newest first).
        names = [n for n in counts if not SHA_ONLY.fullmatch(n)]
        return sorted(names, key=lambda n: (n not in last, -counts[n], not CODE_SHAPED.search(n)))[
            :40
        ]

    def final_state(self) -> list[str]:
        """The session's final state and open blocker; a request made by slash command."""
        f = self.f
        final = f.final
        items: list[str] = []
        if final is not None:
            items.append(
                f"Final state of the session: **{final.status}** — {self.text(final.reason)}."
            )
            if final.blocker is not None and final.blocker.error:
                items.append(
                    f"The open blocker: {self.cmd(final.blocker)} fails with {code(final.blocker.error, 220)}"
                )
        if f.goal is not None and f.goal.via:
            items.append(
                f"The request came through the slash command {code(f.goal.via, 40)}; the prompt it expands to is how the work was invoked, not the task."
            )
        return items

    def git_facts(self, git: GitState | None) -> list[str]:
        """Git as the session last saw it and as this workspace is now."""
        f, t = self.f, self.t
        items: list[str] = []
        status = self.session_status()
        if status:
            items.append(f"The session's last `git status` showed: {status}")
        if f.last_head:
            items.append(
                f"The newest commit the session's last `git log` showed: {code(self.text(f.last_head), 120)}"
            )
        if git is None:
            items.append(
                "Git here: the workspace is not a git repository (or git is not installed)."
            )
        else:
            where = f"branch {code(git.branch)}" if git.branch else "a detached HEAD"
            if git.tracking:
                where += f" (tracking {code(git.tracking)})"
            if git.changes:
                listed = ", ".join(f"{code(p, 100)} [{s}]" for s, p in git.changes[:10])
                more = len(git.changes) - 10 + git.more
                listed += f" and {more} more" if more > 0 else ""
                items.append(f"Git here now: {where}; uncommitted changes: {listed}.")
            else:
                items.append(f"Git here now: {where}; the working tree is clean.")
        if (
            t.git_branch
            and t.git_branch != "HEAD"  # a detached head names no branch
            and git is not None
            and git.branch
            and t.git_branch != git.branch
        ):
            items.append(
                f"The session ran on branch {code(t.git_branch)}, not on the current {code(git.branch)}."
            )
        return items

    def resolved_failures(self) -> list[str]:
        """The newest three failures the session resolved afterwards, oldest first."""
        f = self.f
        items: list[str] = []
        resolved = f.cache.get("resolved")
        if resolved is None:  # the newest three, by step: the same at every level
            resolved = f.cache["resolved"] = []
            for r in reversed(f.failed_runs):
                if (
                    r.resolved_by
                    and r.kind not in ("probe", "search", "tool", "script")
                    and r.call is not None
                    and r.key not in {x.key for x in resolved}
                    and call_command(r.call)
                    and r.error  # last: it redacts the result
                ):
                    resolved.append(r)
                    if len(resolved) >= 3:
                        break
        for r in resolved[::-1]:
            items.append(
                f"Failed earlier, since resolved: {self.cmd(r, 80)} ({code(r.error or '', 100)}); {self.text(r.resolved_by)}."
            )
        return items

    def source_facts(self) -> list[str]:
        """The session read: its file, id and model; compactions; lines skipped."""
        t = self.t
        items: list[str] = []
        session = f"{format_label(t.format)} session {code(str(t.path), 200)} (id {code(t.id, 80)}, {t.message_count} messages"
        session += f", model {code(t.model, 60)})" if t.model else ")"
        items.append(f"Source: {session}")
        if t.compactions:
            items.append(
                f"The session was compacted {t.compactions} time(s); the summary's goal, constraints and decisions are used above."
            )
        skipped = t.stats.junk_lines + t.stats.unknown_entries
        if skipped:
            items.append(
                f"While reading the session, {t.stats.junk_lines} unreadable line(s) and "
                f"{t.stats.unknown_entries} entry(ies) of unknown type were skipped."
                + (
                    f" {t.stats.oversized} of those lines were over 64 MiB: only their links "
                    "to the entries around them were kept."
                    if t.stats.oversized
                    else ""
                )
            )
        items += read_repairs(t.stats)
        return items

    def links(self) -> list[str]:
        """URLs the agent's own messages named (newest last), not localhost ones."""
        if "links" in self.f.cache:
            return self.f.cache["links"]
        found: list[str] = self.f.cache.setdefault("links", [])
        for m in self.t.history:
            if m.role != "assistant" or "http" not in m.text:
                continue
            for url in LINK.findall(self.t.clean(m).text):
                url = url.rstrip(".,;:")
                if "localhost" in url or "127.0.0.1" in url:
                    continue
                if url in found:
                    found.remove(url)
                found.append(url)
        del found[:-5]
        return found

    def report(self) -> str | None:
        """The agent's last substantial message, quoted (it names what it did)."""
        m = self.f.last_report
        if m is None:
            return None
        return quote(self.t.clean(m).text, self.n.report)

    def session_status(self) -> str | None:
        run = self.f.last_status
        if run is None or run.result is None:
            return None
        text = readable(self.t.clean(run.result).text)
        changed: list[str] = []
        for line in text.splitlines():
            s = line.strip()
            m = re.match(r"^(modified|new file|deleted|renamed|both modified):\s+(.+)$", s)
            if m:
                changed.append(f"{m.group(1)} {code(m.group(2), 100)}")
            elif (
                re.match(r"^(?:[MADRCU?!]{1,2})\s+\S", line)
                and len(line) < 200
                and not line.startswith("##")
            ):
                changed.append(code(s, 100))
        changed = [c for c in changed if ".handoff/" not in c]
        if not changed:
            return (
                "a clean tree" if re.search(r"nothing to commit|working tree clean", text) else None
            )
        more = f" and {len(changed) - 8} more" if len(changed) > 8 else ""
        return ", ".join(changed[:8]) + more

    def focus_facts(self) -> list[str]:
        """Facts the focus names that the document does not show otherwise."""
        assert self.focus is not None
        pool: list[tuple[int, str]] = []
        for r in self.f.runs:
            if r.error:
                s = self.focus.score(r.command + " " + r.error)
                if s:
                    pool.append(
                        (
                            s,
                            f"Related to the focus: {self.cmd(r, 100)} → {code(r.error, 160)} ({r.outcome if not r.resolved_by else 'resolved'})",
                        )
                    )
        for path, n in self.f.reads.items():
            s = self.focus.score(path)
            if s and path not in self.shown:
                pool.append(
                    (s, f"Related to the focus: the agent read {code(self.text(path), 120)} ({n}×)")
                )
        for c in self.f.changes.values():
            s = self.focus.score(c.path)
            if s and c.path not in self.shown:
                pool.append(
                    (s, f"Related to the focus: {code(self.text(c.path), 120)} was changed")
                )
        for r in self.f.requests:
            s = self.focus.score(r.text)
            if s and r is not self.f.goal:
                pool.append(
                    (
                        s,
                        f"Related to the focus, the user said: “{one_line(self.text(r.text), 200)}”",
                    )
                )
        pool.sort(key=lambda p: -p[0])
        out: list[str] = []
        for _, line in pool:
            if line not in out:
                out.append(line)
        return out[:5]
