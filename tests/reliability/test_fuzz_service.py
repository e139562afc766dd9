"""Fuzzed input through the service layer: every command gets random and adversarial
params (wrong types, huge strings, deep nesting, unicode edge cases, unknown keys,
forged or edited PreparedHandoffs, digests that do not match, revision references
that do not exist or belong to another scope). Every answer is a result or a
HandoffError with a fixed code; failed calls and reads leave the store's bytes alone;
afterwards a fresh store holds exactly what the successful calls wrote."""

from __future__ import annotations

import copy
import shutil
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, note
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from lsp_server.model import lifecycle as lc
from lsp_server.model.errors import HandoffError
from lsp_server.model.evidence import sha256_file
from lsp_server.surfaces.service import HandoffService, ServiceConfig

from ..conftest import sizes
from ..helpers import refused
from .support import (
    EDGE_STRINGS,
    Model,
    check_answer,
    check_store_matches,
    edge_text,
    fingerprint,
    fuzz_settings,
    hostile,
    invoke,
    json_junk,
    make_hostile_workspace,
    maybe,
    rarely,
    with_unknown_keys,
)

pytestmark = pytest.mark.usefixtures("same_examples_in_every_process")

SCOPES = ["openapi-client", "a/b.c_d-e", "default"]
PATHS = [
    "client/pets_client.py",
    "openapi.yaml",
    "client//pets_client.py",
    "ünïcode név.md",
    "link_in.yaml",
    "./openapi.yaml",
    "./client/../openapi.yaml",
    "link_out.txt",
    "link_dir/secret.txt",
    "../outside/secret.txt",
    "/etc/passwd",
    "client",
    "missing.txt",
    "a\x00b",
    "C:\\x",
]
COMMANDS = list(HandoffService.COMMANDS)
TALLY: Counter[tuple[str, str]] = Counter()
LOCAL_COMMANDS = [c for c in COMMANDS if c not in ("handoff.generate", "handoff.sessions")]


def scope_s() -> st.SearchStrategy:
    return rarely(st.sampled_from(SCOPES), st.sampled_from(EDGE_STRINGS), 8)


def text_s() -> st.SearchStrategy:
    """Text a command accepts (never blank), with room for novelty."""
    return st.one_of(
        st.sampled_from(["run contract tests", "client generated", "ok"]),
        st.text(min_size=1, max_size=40).filter(str.strip),
    )


def any_text_s() -> st.SearchStrategy:
    """Text that may also be blank, huge or hostile."""
    return st.one_of(text_s(), edge_text)


class ServiceFuzz(RuleBasedStateMachine):
    """Two long-lived services over one hostile workspace, driven with fuzzed calls."""

    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="handoff-fuzz-"))
        self.workspace = make_hostile_workspace(self.tmp)
        self.services = [HandoffService(self.workspace, ServiceConfig()) for _ in range(2)]
        self.folder = self.workspace / ".handoff"
        self.hashes = {
            p: sha256_file(self.workspace / p) for p in PATHS[:6] if (self.workspace / p).is_file()
        }
        self.model = Model()
        self.sources: list[tuple[str, str]] = []  # (ref, scope)
        self.revisions: list[tuple[str, str]] = []  # (ref, scope)
        self.prepared: list[dict[str, Any]] = []
        self.receipts: list[tuple[str, str]] = []
        self.work: list[tuple[str, str]] = []
        self.contracts: list[tuple[str, str]] = []
        self.heads: dict[str, str] = {}
        self.calls = self.refusals = 0

    def teardown(self) -> None:
        try:
            check_store_matches(self.workspace, self.model)
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)

    # -- the one way in ---------------------------------------------------------

    def begin(self, data: st.DataObject) -> None:
        """Each call is calm (valid values, to get deep into the lifecycle) or hostile."""
        hostile(data.draw(st.integers(0, 2), label="hostile") == 1)

    def call(self, data: st.DataObject, command: str, params: Any) -> Any:
        hostile(True)
        svc = data.draw(st.sampled_from(self.services), label="service")
        before = fingerprint(self.folder)
        outcome = invoke(svc, command, params)
        check_answer(command, params, outcome)
        self.calls += 1
        if isinstance(outcome, HandoffError):
            self.refusals += 1
            TALLY[(command, outcome.code)] += 1
            note(f"{command} → {outcome.code}: {outcome.message[:160]}")
            assert fingerprint(self.folder) == before, f"refused {command} changed the store"
            return None
        TALLY[(command, "ok")] += 1
        if command == "handoff.commit" and outcome["idempotent"]:
            TALLY[(command, "idempotent")] += 1
        if command in HandoffService.MUTATIONS:
            self.model.record(command, params, outcome)
        else:
            assert fingerprint(self.folder) == before, f"read-only {command} changed the store"
        return outcome

    # -- references the calls can point at ----------------------------------------

    def draw_scope(self, data: st.DataObject) -> str | None:
        """Mostly a valid scope (``None``: the default), sometimes a hostile one."""
        return data.draw(maybe(st.sampled_from([*SCOPES[:2], None]), 12), label="scope")

    def source_s(self, scope: str | None) -> st.SearchStrategy:
        """A Source reference: usually one of this scope's, sometimes another scope's,
        one that does not exist, or not a reference at all."""
        mine = [ref for ref, sc in self.sources if sc == (scope or "default")]
        theirs = [ref for ref, sc in self.sources if sc != (scope or "default")]
        return rarely(
            st.sampled_from(mine) if mine else st.just("source/0123456789abcdef0123"),
            st.one_of(
                st.sampled_from(theirs) if theirs else st.just("source/"),
                st.sampled_from(["source/0123456789abcdef0123", "source/", "source/../../x"]),
                edge_text,
            ),
            4,
        )

    def citation_s(self, scope: str | None) -> st.SearchStrategy:
        path = rarely(st.sampled_from(PATHS[:6]), st.sampled_from(PATHS), 5)
        extra = rarely(
            st.just({}),
            st.fixed_dictionaries(
                {},
                optional={
                    "sha256": st.one_of(
                        st.sampled_from(sorted(self.hashes.values())),
                        st.just("A" * 64),
                        st.text("0123456789abcdef", min_size=64, max_size=64),
                    ),
                    "lines": st.one_of(st.just([1, 2]), st.lists(st.integers(-2, 2**65), max_size=3)),
                },
            ),
            4,
        )
        artifact = st.builds(lambda p, e: {"kind": "artifact", "path": p, **e}, path, extra)
        source = st.fixed_dictionaries({"kind": st.just("source"), "ref": self.source_s(scope)})
        if not any(sc == (scope or "default") for _, sc in self.sources):
            return maybe(rarely(artifact, source, 5))
        return maybe(st.one_of(source, artifact))

    def fact_s(self, scope: str | None) -> st.SearchStrategy:
        return maybe(
            st.fixed_dictionaries(
                {"text": maybe(text_s()),
                 "citations": maybe(st.lists(self.citation_s(scope), min_size=1, max_size=3))}
            ),
        )

    def draft_s(self, scope: str | None) -> st.SearchStrategy:
        return st.fixed_dictionaries(
            {
                "objective": maybe(text_s()),
                "state": self.fact_s(scope),
                "disposition": maybe(st.sampled_from(["continuable", "blocked", "done"])),
                "nextActions": maybe(st.lists(self.fact_s(scope), min_size=1, max_size=3)),
            },
            optional={"document": maybe(st.one_of(text_s(), st.just("# Goal\n\nship it\n")))},
        )

    def revision_s(self) -> st.SearchStrategy:
        own = [ref for ref, _ in self.revisions]
        return rarely(
            st.sampled_from(own) if own else st.just("handoff/abcdef012345@1"),
            st.one_of(
                st.sampled_from(["handoff/abcdef012345@1", "handoff/abc@0", "handoff/@1"]),
                st.sampled_from(own).map(lambda r: r.rsplit("@", 1)[0] + "@999") if own else st.just("x"),
                edge_text,
            ),
            4,
        )

    def draw_prepared(self, data: st.DataObject) -> Any:
        """One of the prepared values seen so far, intact, edited or forged; or junk."""
        if not self.prepared or data.draw(st.integers(0, 19), label="junk prepared?") == 10:
            return data.draw(json_junk, label="prepared")
        chosen = data.draw(st.sampled_from(self.prepared), label="prepared")
        # Half the time intact (a retry, or a commit of a fresh prepared value).
        how = data.draw(st.integers(0, 24), label="forgery")
        how = how if how <= 12 else 0
        return forge(chosen, how, data, self.heads.get(chosen["scope"]))

    def with_scope(self, params: Any, scope: str | None) -> Any:
        if isinstance(params, dict) and scope is not None:
            params["scope"] = scope
        return params

    # -- a calm start, then rules: one per command -------------------------------------

    @initialize(data=st.data())
    def calm_start(self, data):
        """Three runs in four start with one scope ready to hand off (a valid Work
        Contract and work state), so the fuzz reaches deep into the lifecycle by
        construction rather than by the luck of its draws (the fourth starts from an
        empty store); every call after it is fuzzed."""
        if data.draw(st.integers(0, 3), label="calm start?") == 2:
            return
        scope = data.draw(st.sampled_from(SCOPES[:2]), label="calm scope")
        contract = self.call(
            data,
            "handoff.contract",
            {"scope": scope, "objective": "ship the client", "inScope": ["client/"],
             "acceptance": ["contract tests pass"]},
        )
        assert contract is not None, "a valid Work Contract was refused"
        self.sources.append((contract["source"], scope))
        self.contracts.append((contract["source"], scope))
        work = self.call(
            data,
            "handoff.recordWork",
            {"scope": scope,
             "state": {"text": "client generated",
                       "citations": [{"kind": "artifact", "path": "openapi.yaml"}]},
             "disposition": "continuable",
             "nextActions": [{"text": "run contract tests",
                              "citations": [{"kind": "source", "ref": contract["source"]}]}]},
        )
        assert work is not None, "a valid work state was refused"
        self.sources.append((work["source"], scope))
        self.work.append((work["source"], scope))


    @rule(data=st.data())
    def contract(self, data):
        self.begin(data)
        scope = self.draw_scope(data)
        params = data.draw(
            with_unknown_keys(
                st.fixed_dictionaries(
                    {"objective": maybe(text_s()), "inScope": maybe(st.lists(text_s(), min_size=1, max_size=3)),
                     "acceptance": maybe(st.lists(text_s(), min_size=1, max_size=3))},
                    optional={"outOfScope": maybe(st.lists(text_s(), max_size=2))},
                )
            ),
            label="params",
        )
        result = self.call(data, "handoff.contract", self.with_scope(params, scope))
        if result:
            self.sources.append((result["source"], result["scope"]))
            self.contracts.append((result["source"], result["scope"]))

    @rule(data=st.data())
    def record_work(self, data):
        self.begin(data)
        scope = self.draw_scope(data)
        params = data.draw(
            with_unknown_keys(
                st.fixed_dictionaries(
                    {"state": self.fact_s(scope),
                     "disposition": maybe(st.sampled_from(["continuable", "blocked", "done"])),
                     "nextActions": maybe(st.lists(self.fact_s(scope), min_size=1, max_size=3))},
                )
            ),
            label="params",
        )
        result = self.call(data, "handoff.recordWork", self.with_scope(params, scope))
        if result:
            self.sources.append((result["source"], result["scope"]))
            self.work.append((result["source"], result["scope"]))

    @rule(data=st.data())
    def prepare(self, data):
        self.begin(data)
        scope = self.draw_scope(data)
        params = data.draw(with_unknown_keys(st.fixed_dictionaries({"draft": maybe(self.draft_s(scope))})))
        result = self.call(data, "handoff.prepare", self.with_scope(params, scope))
        if result:
            self.prepared.append(result["prepared"])

    @rule(data=st.data())
    def handoff_current_work(self, data):
        self.begin(data)
        ready = sorted({sc for _, sc in self.contracts} & {sc for _, sc in self.work})
        scope = self.draw_scope(data)
        if ready and data.draw(st.integers(0, 3), label="ready scope") != 2:
            scope = data.draw(st.sampled_from(ready), label="scope")
        params = data.draw(
            with_unknown_keys(st.fixed_dictionaries({}, optional={"document": maybe(text_s())})),
            label="params",
        )
        result = self.call(data, "handoff.handoffCurrentWork", self.with_scope(params, scope))
        if result:
            self.prepared.append(result["prepared"])
            self.sources.append((result["boundary"], result["scope"]))

    @precondition(lambda self: self.prepared)
    @rule(data=st.data())
    def commit_newest(self, data):
        """The ordinary path: commit the newest prepared value as it was returned."""
        prepared = self.prepared[-1]
        result = self.call(data, "handoff.commit", {"scope": prepared["scope"], "prepared": prepared})
        if result and not result["idempotent"]:
            self.revisions.append((result["revision"], result["scope"]))
            self.heads[result["scope"]] = result["revision"]

    @precondition(lambda self: self.prepared)
    @rule(data=st.data())
    def commit(self, data):
        self.begin(data)
        self.begin(data)
        prepared = self.draw_prepared(data)
        own = prepared.get("scope") if isinstance(prepared, dict) else None
        other = st.sampled_from([sc for sc in SCOPES if sc != own])
        scope = data.draw(rarely(st.just(own), st.one_of(other, scope_s()), 4), label="scope")
        params = {"prepared": prepared} | ({"scope": scope} if scope is not None else {})
        result = self.call(data, "handoff.commit", params)
        if result and not result["idempotent"]:
            self.revisions.append((result["revision"], result["scope"]))
            self.heads[result["scope"]] = result["revision"]

    def draw_target(self, data: st.DataObject, modes: list[str]) -> dict[str, Any]:
        """What continue/acknowledge/report point at: a revision or a prepared value,
        usually in its own scope, sometimes in another one, sometimes junk."""
        usable = [
            m
            for m in modes
            if (m != "prepared" or self.prepared) and (m != "exact" or self.revisions)
        ]
        mode = data.draw(maybe(st.sampled_from(usable or modes)), label="mode")
        params: dict[str, Any] = {"mode": mode}
        scope = None
        if mode == "exact" or (mode not in modes and data.draw(st.booleans())):
            if self.revisions and data.draw(st.integers(0, 4)) != 2:
                ref, scope = data.draw(st.sampled_from(self.revisions), label="revision")
            else:
                ref = data.draw(self.revision_s(), label="revision")
            params["revision"] = ref
        if mode == "prepared" or data.draw(st.integers(0, 9)) == 5:
            params["prepared"] = prepared = self.draw_prepared(data)
            if isinstance(prepared, dict) and isinstance(prepared.get("scope"), str):
                scope = prepared["scope"]
        if scope is None or data.draw(st.integers(0, 7)) == 4:
            scope = self.draw_scope(data)
        return self.with_scope(params, scope)

    @rule(data=st.data())
    def continue_(self, data):
        self.begin(data)
        params = self.draw_target(data, ["prepared", "exact", "latest"])
        self.call(data, "handoff.continue", data.draw(with_unknown_keys(st.just(params))))

    @precondition(lambda self: self.prepared or self.revisions)
    @rule(data=st.data())
    def acknowledge(self, data):
        self.begin(data)
        checks = st.fixed_dictionaries(
            {},
            optional={
                k: maybe(st.booleans())
                for k in ("evidenceAvailable", "liveStateConfirmed", "capabilityConfirmed", "authorizationConfirmed")
            },
        )
        modes = data.draw(rarely(st.just(["prepared", "exact"]), st.just(["latest"]), 10))
        params = self.draw_target(data, modes)
        params |= data.draw(
            st.fixed_dictionaries(
                {"status": maybe(st.sampled_from(["accepted", "needs_clarification", "declined", "ok"])),
                 "checks": maybe(checks)},
                optional={"note": maybe(text_s()), "actor": maybe(text_s())},
            ),
            label="ack",
        )
        result = self.call(data, "handoff.acknowledge", data.draw(with_unknown_keys(st.just(params))))
        if result:
            self.sources.append((result["receipt"], result["scope"]))
            self.receipts.append((result["receipt"], result["scope"]))

    @rule(data=st.data())
    def record_outcome(self, data):
        self.begin(data)
        scope = self.draw_scope(data)
        check = st.fixed_dictionaries(
            {"name": maybe(text_s()),
             "status": maybe(st.sampled_from(["passed", "failed", "skipped", "timed_out", "succeeded"]))},
            optional={"detail": maybe(text_s())},
        )
        receipts = [ref for ref, _ in self.receipts]
        receipt = rarely(st.sampled_from(receipts), self.source_s(scope), 4) if receipts else self.source_s(scope)
        params = data.draw(
            with_unknown_keys(
                st.fixed_dictionaries(
                    {"status": maybe(st.sampled_from(["succeeded", "partial", "blocked", "failed", "cancelled",
                                                      "unknown", "skipped"])),
                     "summary": maybe(text_s())},
                    optional={"checks": maybe(st.lists(check, max_size=3)), "receipt": receipt},
                )
            ),
            label="params",
        )
        result = self.call(data, "handoff.recordOutcome", self.with_scope(params, scope))
        if result:
            self.sources.append((result["source"], result["scope"]))

    @rule(data=st.data())
    def report(self, data):
        self.begin(data)
        params = self.draw_target(data, ["prepared", "exact", "latest"])
        params.pop("mode")
        kinds = ["handoff"] if "revision" in params or "prepared" in params else ["continuity", "history"]
        params["kind"] = data.draw(maybe(st.sampled_from(kinds)), label="kind")
        self.call(data, "handoff.report", data.draw(with_unknown_keys(st.just(params))))

    @rule(data=st.data(), command=st.sampled_from(LOCAL_COMMANDS + ["handoff.nope", ""]),
          params=st.one_of(json_junk, st.none()))
    def junk(self, data, command, params):
        self.call(data, command, params)

    @invariant()
    def store_holds_what_was_acknowledged(self):
        if self.calls % 8 == 0:
            check_store_matches(self.workspace, self.model)


def redigest(value: dict[str, Any]) -> dict[str, Any]:
    """The value with a digest that matches it (when it can be computed at all)."""
    try:
        return {**value, "digest": lc.digest_of(value)}
    except TypeError:
        return value


def forge(prepared: dict[str, Any], how: int, data: st.DataObject, head: str | None) -> Any:
    """A PreparedHandoff as a caller might hand it back: intact, edited, or forged
    (forgeries of evidence sit on the current ``head`` so they reach the evidence check)."""
    p = copy.deepcopy(prepared)
    if how in (5, 6, 11):
        p["base"] = head
    if how == 0:
        return p  # intact (a retry)
    if how == 1:
        p["content"]["objective"] += " (edited)"  # digest no longer matches
        return p
    if how == 2:
        p["digest"] = data.draw(st.sampled_from(["sha256:" + "0" * 64, "", "sha256:", None, 7]))
        return p
    if how == 3:
        p["base"] = data.draw(st.sampled_from(["handoff/abcdef012345@1", "handoff/x@0", None, 3]))
        return redigest(p)  # a forged base with a matching digest
    if how == 4:
        p["scope"] = data.draw(st.sampled_from(["other", "default", "../x", ""]))
        return redigest(p)
    if how == 5:
        path = data.draw(st.sampled_from(PATHS))
        fake = {"kind": "artifact", "path": path, "sha256": "0" * 64}
        p["content"]["state"]["citations"] = [fake]
        p["evidence"] = lc.collect_evidence(p["content"])
        return redigest(p)
    if how == 6:
        p["content"]["state"]["citations"] = [{"kind": "source", "ref": "source/0123456789abcdef0123"}]
        p["evidence"] = lc.collect_evidence(p["content"])
        return redigest(p)
    if how == 7:
        key = data.draw(st.sampled_from(sorted(p)))
        del p[key]
        return p
    if how == 8:
        p["extra"] = True
        return redigest(p)
    if how == 9:
        p["content"] = data.draw(json_junk)
        return redigest(p)
    if how == 10:
        p["type"] = data.draw(st.sampled_from(["revision", None, ["prepared_handoff"]]))
        return p
    if how == 11:
        p["content"]["nextActions"] = []
        p["evidence"] = lc.collect_evidence(p["content"])
        return redigest(p)
    # 12: a deep copy with a huge document, digest recomputed
    p["content"]["document"] = "y" * 900_000
    return redigest(p)


@pytest.mark.parametrize("examples", sizes(40, 200))
def test_fuzzed_calls_through_the_service_layer_lose_nothing_and_leak_nothing(examples):
    TALLY.clear()
    run_state_machine_as_test(ServiceFuzz, settings=fuzz_settings(examples, stateful_step_count=30))
    summary = ", ".join(f"{c.removeprefix('handoff.')}:{k}={n}" for (c, k), n in sorted(TALLY.items()))
    print(f"fuzz tally: {sum(TALLY.values())} calls; {summary}")
    # The fuzz reached deep into the lifecycle, not only the params edge.
    for command in ("contract", "recordWork", "prepare", "handoffCurrentWork", "commit",
                    "continue", "acknowledge", "recordOutcome", "report"):
        assert TALLY[(f"handoff.{command}", "ok")] > 0, f"no successful {command}"
    assert TALLY[("handoff.commit", "idempotent")] > 0
    codes = {k for (_, k), n in TALLY.items() if n and k not in ("ok", "idempotent")}
    assert len(codes) >= 8, f"the fuzz met only {sorted(codes)}"


@fuzz_settings(60)
@given(command=st.sampled_from(COMMANDS), params=st.one_of(json_junk, st.none()))
def test_every_command_answers_junk_with_a_fixed_code(tmp_path_factory, command, params):
    workspace = make_hostile_workspace(tmp_path_factory.mktemp("junk"))
    svc = HandoffService(workspace, ServiceConfig())
    before = fingerprint(workspace / ".handoff")
    outcome = invoke(svc, command, params)
    check_answer(command, params, outcome)
    if isinstance(outcome, HandoffError) or command not in HandoffService.MUTATIONS:
        assert fingerprint(workspace / ".handoff") == before


def _deep(n: int) -> Any:
    value: Any = []
    for _ in range(n):
        value = [value]
    return value


@pytest.mark.parametrize(
    "value,why",
    [("\ud800", "not valid Unicode"), (2**64, "64-bit"), (_deep(400), "nested too deeply")],
    ids=["lone-surrogate", "huge-integer", "deep-nesting"],
)
@pytest.mark.parametrize("command", [c for c in COMMANDS if c != "handoff.sessions"])
def test_params_that_are_not_plain_json_are_refused_at_the_edge(svc, command, value, why):
    """Found by the fuzz: a lone surrogate in a document reached orjson inside the
    transaction and escaped as a TypeError (a traceback for CLI and LSP clients)."""
    params = {"scope": "openapi-client", "objective": value, "document": value}
    err = refused(svc.call, command, params)
    assert err.code == "invalid_params" and why in err.message
    assert not (svc.workspace / ".handoff" / "state.json").exists()
