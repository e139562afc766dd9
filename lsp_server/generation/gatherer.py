"""The one pass over a transcript that gathers its session facts (``gather``): requests,
changes, runs, git events, the plan, and how the session ended."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from . import shell
from .asks import FILE_MENTION, request_text
from .ending import choose_goal, compaction_sections, final_state
from .facts import Change, GitEvent, PlanItem, Request, Run, SessionFacts
from .signals import (
    BAD_PATH,
    BULLET_FILE,
    COMMIT,
    CREATED_WORD,
    DIFFSTAT,
    ENV_TAG,
    FAIL_COUNT,
    FORGE_KEYS,
    GH_NUMBER,
    GH_URL,
    GIT_EVENT_KEYS,
    HARNESS_TOOLS,
    LOG_LINE,
    MUTATING_TOOL,
    PUSHED,
    READ_TOOLS,
    REJECTED,
    SHA,
    STATE_FOLDER,
    TODO_TOOLS,
    TOOL_FILES,
    URL,
    WRITE_TOOLS,
    ZERO_FAIL,
    announced_next,
    command_shape,
    failure_marked,
    lasting,
    listed_next,
    one_line,
    readable,
    recent_start,
    says_nothing,
    success_verdict,
    test_counts,
    within,
)
from .transcript import SHELL_TOOLS, Message, ToolCall, Transcript, call_command, call_path


class _Gatherer:
    def __init__(self, t: Transcript, workspace: Path | None) -> None:
        self.t = t
        self.recent = 0
        self._lasting: dict[str, bool] = {}
        #: Older writes waiting for their results: call id → (verb, path, message, …).
        self.writes: dict[str, tuple[str, str, Message, int, ToolCall]] = {}
        #: Reads by a file tool awaiting their result (counted once it is no error).
        self.reads_pending: dict[str, str] = {}
        self.f = SessionFacts(t)
        self.roots = [r.rstrip("/\\") for r in (t.cwd, str(workspace) if workspace else None) if r]
        self._rel: dict[str, str] = {}
        self.pending: dict[str, Run] = {}
        self.current: Request | None = None

    def rel(self, path: str) -> str:
        done = self._rel.get(path)
        if done is None:
            p = path.strip().strip("'\"")
            for root in self.roots:
                if p.startswith(root + "/") or p.startswith(root + "\\"):
                    p = p[len(root) + 1 :]
                    break
            done = self._rel[path] = p.removeprefix("./").removeprefix(".\\")
        return done

    def within(self, folder: str | None, path: str) -> str:
        return within(self.t.cwd, folder, path)

    def outside(self, rel: str) -> bool:
        return (
            os.path.isabs(rel)
            or rel.startswith(("~", ".."))
            or bool(re.match(r"^[A-Za-z]:[\\/]", rel))
        )

    def change(self, verb: str, path: str, m: Message, position: int) -> Change | None:
        rel = self.rel(path)
        c = self.f.changes.get(rel)
        if c is None:
            if (
                not rel
                or rel in ("/dev/null", ".", "-")
                or rel == STATE_FOLDER
                or rel.startswith(STATE_FOLDER + "/")
                or rel.startswith("-")
                or BAD_PATH.search(rel)
            ):
                return None
            c = self.f.changes[rel] = Change(rel, outside=self.outside(rel))
        else:
            self.f.changes.move_to_end(rel)
        c.add(verb, m.entry, position)
        owner = self.owner(position)
        if owner is not None and verb != "merged in":
            owner.changes += 1
        return c

    def owner(self, position: int) -> Request | None:
        """The request whose turn holds ``position`` (a result may come after a queued
        prompt; the call it answers belongs to the turn before)."""
        for r in reversed(self.f.requests[-4:]):
            if r.position <= position:
                return r
        return self.current

    def gather(self) -> SessionFacts:
        """The facts of the transcript, in one pass over its history."""
        f, t = self.f, self.t
        calls: dict[str, ToolCall] = {}
        summary: Message | None = None
        self.recent = recent_start(t.history)
        for position, m in enumerate(t.history):
            role = m.role
            if role == "user":
                self.user_message(m, position)
            elif role == "assistant":
                self.assistant_message(m, position, calls)
            elif role == "tool":
                self.tool_result(m, calls)
            elif role == "summary" and m.kind == "compaction" and m.text.strip():
                summary = m  # only the newest is read (below)
            elif role == "context" and not f.environment and "<environment_context" in m.text:
                f.environment = {k: v.strip() for k, v in ENV_TAG.findall(m.text)}
            elif role == "custom" and m.kind in ("queued", "steer", "follow-up", "followUp"):
                found = request_text(m)
                if found:
                    r = Request(found[0], m.entry, position, queued=True)
                    f.requests.append(r)
                    self.current = r
        return self.conclude(summary)

    def user_message(self, m: Message, position: int) -> None:
        """A user's message: a shell command they ran, or a request (one per delivery)."""
        f = self.f
        if m.kind == "bash" and m.command:
            run = self.run_for(m.command, m, None, position)
            if run is not None:
                self.finish(run, m)
            return
        if m.kind not in (None, "queued"):
            return
        found = request_text(m)  # secrets are replaced where a request is shown
        if found is None:
            return
        text, via = found
        if m.kind == "queued" and any(x.text == text for x in f.requests[-3:]):
            return  # delivered again as a plain prompt: one request
        r = Request(
            text,
            m.entry,
            position,
            via,
            queued=m.kind == "queued",
            mentions=tuple(FILE_MENTION.findall(text)) if "@" in text else (),
        )
        f.requests.append(r)
        self.current = r

    def assistant_message(self, m: Message, position: int, calls: dict[str, ToolCall]) -> None:
        """An agent's message: its report to the current request, and its tool calls."""
        f = self.f
        text = m.text
        said = bool(text) and not text.isspace()
        if said or m.stop_reason:
            f.last_assistant = m
            if said:
                f.last_report = m
                if self.current is not None:
                    self.current.answered = True
                    self.current.report = m
                    self.current.report_at = position
        if m.tool_calls:
            for c in m.tool_calls:
                if c.id and c.name == "TaskCreate":
                    calls[c.id] = c
                self.tool_call(m, c, position)

    def tool_result(self, m: Message, calls: dict[str, ToolCall]) -> None:
        """A tool's result: it finishes its run, confirms an older write, or creates a task."""
        key = m.tool_call_id or ""
        run = self.pending.pop(key, None)
        if run is not None:
            self.finish(run, m)
        elif key in self.reads_pending:
            rel = self.reads_pending.pop(key)
            if not m.is_error:  # a file that could not be read was not read
                self.f.reads[rel] = self.f.reads.get(rel, 0) + 1
        elif key in self.writes:
            verb, path, at, where, call = self.writes.pop(key)
            if not m.is_error and not m.exit_code:
                c = self.change(verb, path, at, where)
                if c is not None:
                    c.edits.append(call)
                    if len(c.edits) > 12:
                        del c.edits[0]
        call = calls.get(key)
        if call is not None and call.name == "TaskCreate":
            self.task_created(call, m)

    def conclude(self, summary: Message | None) -> SessionFacts:
        """After the pass: the compaction, written paths, resolutions, goal and final state."""
        f, t = self.f, self.t
        if summary is not None:
            f.compaction = compaction_sections(t.clean(summary).text)
        for path in t.written_paths:
            rel = self.rel(path)
            if rel not in f.changes and not rel.startswith(STATE_FOLDER + "/"):
                f.changes[rel] = Change(rel, outside=self.outside(rel))
        self.resolve()
        if f.last_assistant is not None and f.last_assistant.text:
            said = t.clean(f.last_assistant).text
            f.agent_next = listed_next(said)
            if not f.agent_next and _hands_back(t, f.last_assistant):
                # "I'll run the benchmark now." as the agent hands back: not done.
                announced = announced_next(said)
                f.agent_next = [announced] if announced else []
                f.agent_announced = announced is not None
        f.goal = choose_goal(f.requests)
        f.final = final_state(f)
        return f

    # -- tool calls --------------------------------------------------------------

    def tool_call(self, m: Message, c: ToolCall, position: int) -> None:
        """Follow one tool call: a command, a patch, a write, the plan, a look or a tool."""
        name = c.name.lower()
        command = call_command(c) if name in SHELL_TOOLS else None
        if command is not None:
            self.shell_call(command, m, c, position)
            return
        if name in ("apply_patch", "applypatch") or (
            name in ("patch",) and isinstance(c.arguments, str)
        ):
            self.patch_call(m, c, position)
            return
        path = call_path(c)
        if name in WRITE_TOOLS and path and position < self.recent and c.id:
            # An older write: only whether it succeeded matters (its result says).
            self.writes[c.id] = (WRITE_TOOLS[name], path, m, position, c)
        elif name in WRITE_TOOLS and path:
            self.write_call(name, path, m, c, position)
        elif name in TODO_TOOLS:
            self.todo_list(c.arguments, m.entry)
        elif c.name == "TaskUpdate" and isinstance(c.arguments, dict):
            self.task_updated(c.arguments, m)
        elif name in READ_TOOLS:
            if path and name in ("read", "view", "read_file", "cat", "open"):
                rel = self.rel(path)
                if c.id:  # counted when its result says the file was read
                    self.reads_pending[c.id] = rel
                else:
                    self.f.reads[rel] = self.f.reads.get(rel, 0) + 1
            pass  # a look-up: its failure blocks nothing, so it is no step to follow
        elif position >= self.recent or MUTATING_TOOL.search(name):
            if name not in HARNESS_TOOLS:
                self.f.own_tools[c.name] = self.f.own_tools.get(c.name, 0) + 1
            target = self.rel(path) if path else ""
            if MUTATING_TOOL.search(name) and self.current is not None:
                self.current.work += 1  # an agent's own tool that changes something
            run = Run(
                f"{name} {target}".strip(),
                f"{name} {target}".strip(),
                "tool",
                c.name,
                position,
                m.entry,
                message=m,
                call=c,
            )
            self.add_run(run, c)

    def shell_call(self, command: str, m: Message, c: ToolCall, position: int) -> None:
        """A shell command the agent ran: a run to follow, unless old and nothing lasting."""
        keep = self._lasting.get(command)
        if keep is None:  # sessions run the same few commands again and again
            keep = self._lasting[command] = lasting(command)
        if position < self.recent and not keep:
            return  # older than the recent steps and changes nothing that lasts
        run = self.run_for(command, m, c, position)
        if run is not None and c.id:
            self.pending[c.id] = run
        elif run is not None:
            run.outcome = "unknown"

    def patch_call(self, m: Message, c: ToolCall, position: int) -> None:
        """A patch the agent applied: a run with the files the patch changes."""
        patch = (
            c.arguments
            if isinstance(c.arguments, str)
            else (c.arguments or {}).get("input", "")
            if isinstance(c.arguments, dict)
            else ""
        )
        run = Run(
            "apply_patch",
            "apply_patch",
            "other",
            "apply_patch",
            position,
            m.entry,
            message=m,
            call=c,
        )
        run.changes = shell.patch_changes(str(patch))
        self.add_run(run, c)

    def write_call(self, name: str, path: str, m: Message, c: ToolCall, position: int) -> None:
        """A recent write of a file tool: a run that changes its file."""
        run = Run(
            f"write {self.rel(path)}",
            f"write {self.rel(path)}",
            "other",
            f"{c.name} {self.rel(path)}",
            position,
            m.entry,
            message=m,
            call=c,
        )
        run.changes = [(WRITE_TOOLS[name], path)]
        self.add_run(run, c)

    def task_updated(self, args: dict[str, Any], m: Message) -> None:
        """A ``TaskUpdate``: the new status or subject of a plan item."""
        task = str(args.get("taskId", ""))
        item = self.f.plan.get(task)
        if item is not None:
            if isinstance(args.get("status"), str):
                item.status = args["status"]
            if isinstance(args.get("subject"), str):
                item.text = args["subject"]
            item.entry = m.entry or item.entry

    def add_run(self, run: Run, c: ToolCall) -> None:
        self.f.runs.append(run)
        if c.id:
            self.pending[c.id] = run
        else:
            run.outcome = "unknown"
            self.apply_changes(run)

    def run_for(self, command: str, m: Message, c: ToolCall | None, position: int) -> Run | None:
        shape = command_shape(command, self.t.cwd)
        if shape is None:
            return None
        key, family, kind, targets, git, masked, keys, folder, changes, reads, gitish = shape
        run = Run(
            key,
            family,
            kind,
            command,
            position,
            m.entry,
            targets=targets,
            message=m,
            call=c,
            git=git,
        )
        run.keys, run.folder, run.masked, run.gitish = keys, folder, masked, gitish
        run.changes = list(changes)
        run.reads = reads  # counted once the run succeeded
        self.f.runs.append(run)
        if self.current is not None and kind not in ("probe", "search"):
            self.current.work += 1
        return run

    def finish(self, run: Run, result: Message) -> None:
        """A run's outcome from its result."""
        run.result = result
        if run.kind == "tool" and run.call is not None and not result.is_error:
            self.tool_effects(run, result)
        if (
            not result.is_error
            and not result.exit_code
            and not run.masked
            and not run.changes
            and not run.gitish
            and run.kind != "test"
        ):
            run.exit_code = result.exit_code
            run.outcome = "ok"  # the common case: nothing more to read in it
            self.count_reads(run)
            return
        text = result.text or ""
        failed = result.is_error or (result.exit_code is not None and result.exit_code != 0)
        run.exit_code = result.exit_code
        masked = run.masked
        if run.kind == "test" or run.family.startswith("test:"):
            run.counts = test_counts(text)
        if masked and not failed:
            # A filter's status: the step's own shows only in what it printed.
            if run.counts:
                failed = bool(FAIL_COUNT.search(run.counts)) and not ZERO_FAIL.search(run.counts)
                run.outcome = "failed" if failed else "ok"
            elif failure_marked(readable(text)[-3000:]):
                run.outcome = "failed"
                failed = True
            elif success_verdict(readable(text[-1500:])):  # no failure mark, seen above
                run.outcome = "ok"  # the output carries the verdict
            else:
                run.outcome = "unknown"
        elif failed and REJECTED.search(text[:400]):
            run.outcome = "rejected"  # the user declined the call: nothing to fix
        elif failed:
            if run.kind == "search" and (result.exit_code == 1 or says_nothing(text)):
                run.outcome = "no-match"
            elif run.kind == "test" and run.counts and ZERO_FAIL.search(run.counts):
                run.outcome = "ok"
            else:
                run.outcome = "failed"
                run.clean = self.t.clean
        else:
            run.outcome = "ok"
        if run.outcome in ("ok", "unknown"):
            self.count_reads(run)
            self.apply_changes(run)
            self.git_event(run, text)
            if "git merge" in run.keys or "git pull" in run.keys:
                for path in DIFFSTAT.findall(readable(text)):
                    self.change(
                        "merged in", self.within(run.folder, path), run.message, run.position
                    )
            if run.git == "status":
                self.f.last_status = run
            if "git log" in run.keys and run.outcome == "ok":
                head = LOG_LINE.search(readable(text))
                if head:
                    self.f.last_head = f"{head.group(1)} {one_line(head.group(2), 90)}"

    def tool_effects(self, run: Run, result: Message) -> None:
        """What an agent's own tool (an extension's ``create_note``, ``commit_changes``)
        says it did: the files its result names as created, written or deleted, and a
        commit with its hash."""
        call = run.call
        assert call is not None
        name = call.name.lower()
        if not MUTATING_TOOL.search(name):
            return
        text = readable(result.text or "")[:20000]
        if "commit" in name:
            sha = SHA.search(text)
            if sha:
                args = call.arguments if isinstance(call.arguments, dict) else {}
                subject = str(args.get("message") or args.get("subject") or "").strip()
                detail = f"`{sha.group(0)}` {one_line(subject, 120)}".strip()
                self.f.git_events.append(GitEvent("commit", detail, run.entry, run.position))
        for verb, path in TOOL_FILES.findall(text):
            verb = verb.lower()
            kind = (
                "deleted"
                if verb.startswith(("delet", "remov"))
                else ("created" if verb.startswith(("creat", "add", "wr", "sav")) else "edited")
            )
            self.change(kind, path.strip("`'\"."), run.message, run.position)
        for path in BULLET_FILE.findall(text) if CREATED_WORD.search(text) else ():
            self.change("created", path, run.message, run.position)

    def count_reads(self, run: Run) -> None:
        for word in run.reads:
            self.f.reads[word] = self.f.reads.get(word, 0) + 1

    def apply_changes(self, run: Run) -> None:
        for verb, path in run.changes:
            if verb == "moved" and " → " in path:
                src, dst = path.split(" → ", 1)
                self.change("moved away", src, run.message, run.position)
                self.change("moved here", dst, run.message, run.position)
            else:
                c = self.change(verb, path, run.message, run.position)
                if c is not None and run.call is not None and call_command(run.call) is None:
                    c.edits.append(run.call)  # what it defines is read when it is shown
                    if len(c.edits) > 12:
                        del c.edits[0]

    def git_event(self, run: Run, output: str) -> None:
        """Commits, pushes, merges, pulls and forge operations a command line made."""
        f = self.f
        keys = run.keys or (run.key,)
        if not run.gitish:
            return  # most steps: nothing to read in their output
        forge = [key for key in keys if key.startswith(FORGE_KEYS)]
        if not forge and not any(key in keys for key in GIT_EVENT_KEYS):
            return  # a look (``git status``, ``git log``): no event to read
        text = readable(output)
        entry, at = run.entry, run.position

        def add(kind: str, detail: str) -> None:
            f.git_events.append(GitEvent(kind, detail, entry, at))

        if "git commit" in keys:
            for branch, sha, subject in COMMIT.findall(text):
                add("commit", f"`{sha}` on `{branch}`: {one_line(subject, 100)}")
        if "git push" in keys:
            pushed = PUSHED.findall(text)
            remote = next(
                (ln.split("To ", 1)[1].strip() for ln in text.splitlines() if ln.startswith("To ")),
                None,
            )
            if pushed or remote:
                where = ", ".join(f"`{a}` → `{b}`" for a, b in pushed) or "the branch"
                add("push", f"{where}{' to ' + remote if remote else ''}")
            elif "Everything up-to-date" in text:
                add("push", "nothing new (everything up to date)")
        for key in ("git pull", "git merge"):
            if key in keys:
                line = next(
                    (
                        ln.strip()
                        for ln in text.splitlines()
                        if re.match(r"^\s*(Updating [0-9a-f]|Merge made|Already up to date)", ln)
                    ),
                    None,
                )
                if line:
                    add(key.split()[1], one_line(line, 100))
        if not forge:
            return
        head = run.command.split("\n", 1)[0]
        numbers = iter(GH_NUMBER.findall(head))
        urls = iter(GH_URL.findall(text))
        for key in forge:
            parts = key.split()
            if len(parts) < 3 or parts[2] in ("view", "list", "status", "diff", "checks"):
                continue
            what = f"{parts[1]} {parts[2]}"
            number = next(numbers, None) if parts[2] not in ("create",) else None
            url = next(urls, None) if parts[2] in ("create",) else None
            if parts[1] == "repo" and parts[2] == "create":
                url = next(iter(URL.findall(text)), None)
            detail = what + (f" #{number}" if number else "") + (f" {url}" if url else "")
            add(parts[1], detail)

    # -- plans -----------------------------------------------------------------

    def todo_list(self, args: Any, entry: str | None) -> None:
        items = None
        if isinstance(args, dict):
            for key in ("todos", "plan", "items", "tasks", "steps"):
                if isinstance(args.get(key), list):
                    items = args[key]
                    break
        if items is None:
            return
        self.f.plan.clear()
        self.f.plan_entry = entry
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                continue
            text = next(
                (
                    item[k]
                    for k in ("content", "step", "text", "title", "subject", "task", "description")
                    if isinstance(item.get(k), str)
                ),
                None,
            )
            if text:
                status = item.get("status") if isinstance(item.get("status"), str) else "pending"
                self.f.plan[f"list-{i}"] = PlanItem(self.t.clean_text(text) or "", status, entry)

    def task_created(self, call: ToolCall, result: Message) -> None:
        args = call.arguments if isinstance(call.arguments, dict) else {}
        m = re.search(r"#(\d+)", result.text)
        subject = args.get("subject") or args.get("description")
        if m and isinstance(subject, str):
            self.f.plan[m.group(1)] = PlanItem(
                self.t.clean_text(subject) or "", "pending", result.entry
            )

    # -- outcomes ---------------------------------------------------------------

    def resolve(self) -> None:
        """Mark each failed run that a later run resolved, or that the session moved past."""
        runs = self.f.runs
        later_ok: dict[str, Run] = {}
        later_tests: dict[str, list[Run]] = {}
        checkpoint: Run | None = None
        for r in reversed(runs):
            if r.outcome == "failed":
                if r.kind in ("probe", "search"):
                    r.resolved_by = "a look-up only: nothing depends on it"
                elif (
                    ok := later_ok.get(r.key)
                    or (later_ok.get(r.family) if not r.family.startswith("test:") else None)
                ) is not None:
                    r.resolved_by = f"a later run succeeded: {one_line(ok.command, 120)}"
                elif r.family.startswith("test:") and (
                    ok := next(
                        (
                            x
                            for x in later_tests.get(r.family, [])
                            if not x.targets or set(r.targets) <= set(x.targets)
                        ),
                        None,
                    )
                ):
                    r.resolved_by = f"a later test run passed: {one_line(ok.command, 120)}"
                elif checkpoint is not None:
                    r.resolved_by = f"the session moved past it ({checkpoint.key} succeeded later)"
            elif r.outcome == "ok":
                later_ok.setdefault(r.key, r)
                later_ok.setdefault(r.family, r)
                if r.family.startswith("test:"):
                    later_tests.setdefault(r.family, []).append(r)
                if checkpoint is None and (
                    r.key in ("git commit", "git push", "git merge")
                    or r.key.startswith(("gh pr merge", "gh pr create"))
                ):
                    checkpoint = r


def gather(t: Transcript, workspace: Path | None = None) -> SessionFacts:
    """The session facts of ``t`` (one pass over its history)."""
    return _Gatherer(t, workspace).gather()


def _hands_back(t: Transcript, message: Message) -> bool:
    """Whether ``message`` ends the session's history as the agent's last word: no tool
    call in it and nothing after it but the harness's own notes."""
    if message.tool_calls:
        return False
    for m in reversed(t.history):
        if m is message:
            return True
        if m.role in ("user", "assistant", "tool"):
            return False
    return False
