"""Template overrides read only regular files inside their folder, a render that loops
is stopped, and every rendered report is redacted (issue 34, item 2)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lsp_server.surfaces.service import HandoffService
from tests.helpers import SCOPE, record_contract, record_work
from tests.reports.support import outcome, report

#: A GitHub token shape the redaction knows (not a real token).
TOKEN = "ghp_" + "aB3xK9" * 6
CANARY = "CANARY-OUTSIDE-7f3a"


def _templates(svc: HandoffService) -> Path:
    folder = svc.store.folder / "templates"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _outside(tmp_path: Path, text: str = f"aws_profile={CANARY}\n") -> Path:
    target = tmp_path / "outside" / "credentials"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return target


def _assert_builtin_with_warning(out: dict, *named: str) -> None:
    assert out["markdown"].startswith("# Work continuity: openapi-client")
    assert CANARY not in out["markdown"]
    warnings = out["warnings"]
    assert warnings and all("built-in template" in w for w in warnings), warnings
    for name in named:
        assert name in warnings[-1], warnings


def _cli(workspace: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 60):
    return subprocess.run(
        [sys.executable, "-m", "lsp_server.surfaces.cli.main", *args, "--workspace", str(workspace)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


# -- files outside the folder ----------------------------------------------------------------


def test_template_symlink_outside_is_refused(svc, walk, tmp_path):
    (_templates(svc) / "continuity.md.j2").symlink_to(_outside(tmp_path))
    out = report(svc, "continuity")
    _assert_builtin_with_warning(out, "continuity.md.j2", "symbolic link")


def test_template_symlink_to_proc_environ_is_refused_by_the_cli(svc, walk, workspace):
    (_templates(svc) / "continuity.md.j2").symlink_to("/proc/self/environ")
    proc = _cli(workspace, "report", "continuity", "--scope", SCOPE, env={"HANDOFF_CANARY": CANARY})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("# Work continuity: openapi-client")
    assert CANARY not in proc.stdout and "HANDOFF_CANARY" not in proc.stdout
    assert "symbolic link" in proc.stderr and "continuity.md.j2" in proc.stderr


def test_include_of_symlink_is_refused(svc, walk, tmp_path):
    folder = _templates(svc)
    (folder / "creds.txt").symlink_to(_outside(tmp_path))
    (folder / "continuity.md.j2").write_text("Creds: {% include 'creds.txt' %}\n")
    out = report(svc, "continuity")
    _assert_builtin_with_warning(out, "creds.txt", "symbolic link")


def test_partials_folder_that_is_a_symlink_is_refused(svc, walk, tmp_path):
    outside = _outside(tmp_path).parent
    (outside / "untrusted.md.j2").write_text(f"{CANARY}\n")
    (_templates(svc) / "partials").symlink_to(outside, target_is_directory=True)
    (_templates(svc) / "continuity.md.j2").write_text("{% include 'partials/untrusted.md.j2' %}")
    out = report(svc, "continuity")
    _assert_builtin_with_warning(out, "partials/untrusted.md.j2")


def test_template_folder_that_is_a_symlink_is_refused(svc, walk, tmp_path):
    outside = _outside(tmp_path).parent
    (outside / "continuity.md.j2").write_text(f"{CANARY}\n")
    (svc.store.folder / "templates").symlink_to(outside, target_is_directory=True)
    for kind in ("continuity", "history"):
        out = report(svc, kind)
        assert CANARY not in out["markdown"]
        assert any("symbolic link" in w for w in out["warnings"]), out.get("warnings")


@pytest.mark.parametrize(
    "name", ["/etc/hostname", "../../outside/credentials", "partials/../../../outside/credentials"]
)
def test_include_that_leaves_the_folder_is_refused(svc, walk, tmp_path, name):
    _outside(tmp_path)
    (_templates(svc) / "continuity.md.j2").write_text("{% include '" + name + "' %}")
    out = report(svc, "continuity")
    _assert_builtin_with_warning(out)


def test_template_that_is_a_fifo_is_refused_without_blocking(svc, walk, workspace):
    os.mkfifo(_templates(svc) / "continuity.md.j2")
    proc = _cli(workspace, "report", "continuity", "--scope", SCOPE, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("# Work continuity: openapi-client")
    assert "not a regular file" in proc.stderr


# -- redaction -------------------------------------------------------------------------------


def test_report_is_redacted(svc):
    contract = record_contract(svc)
    record_work(svc, contract, text=f"deployed with {TOKEN} from the vault")
    current = svc.call("handoff.handoffCurrentWork", {"scope": SCOPE})
    svc.call("handoff.commit", {"scope": SCOPE, "prepared": current["prepared"]})
    outcome(svc, None, summary=f"pushed using {TOKEN}")
    shown = {
        (kind, mode): report(svc, kind, render=mode)["markdown"]
        for kind in ("continuity", "history", "handoff")
        for mode in ("preview", "terminal")
    }
    for key, markdown in shown.items():
        assert TOKEN not in markdown, key
        assert "[REDACTED:github-token]" in markdown or "\\[REDACTED" in markdown, key


def test_report_by_an_override_is_redacted(svc, walk):
    outcome(svc, None, summary=f"pushed using {TOKEN}")
    (_templates(svc) / "continuity.md.j2").write_text(
        "{% for e in view.events %}{{ e.summary|safe }}\n{% endfor %}"
    )
    out = report(svc, "continuity")
    assert "warnings" not in out
    assert TOKEN not in out["markdown"] and "[REDACTED:github-token]" in out["markdown"]


# -- the time budget -------------------------------------------------------------------------

_LOOPS = {
    "nested_loops": """\
        Before the loop
        {% for i in range(100000) %}
        {% for j in range(100000) %}{% endfor %}
        {% endfor %}
        """,
    "recursive_macro": """\
        {% macro grow(n) %}{% if n < 60 %}{{ grow(n + 1) }}{{ grow(n + 1) }}{% endif %}{% endmacro %}
        Before the call
        {{ grow(0) }}
        """,
}
_LINE = {"nested_loops": 3, "recursive_macro": 1}


def _report_in_a_process(workspace: Path, kind: str, seconds: float) -> subprocess.CompletedProcess:
    """The report in a fresh process with a short budget (old code never returns)."""
    code = textwrap.dedent(
        f"""
        import json, sys
        from lsp_server.views import rendering
        from lsp_server.surfaces.service import HandoffService
        rendering.OVERRIDE_MAX_SECONDS = {seconds}
        svc = HandoffService(sys.argv[1])
        out = svc.call("handoff.report", {{"scope": {SCOPE!r}, "kind": {kind!r}}})
        print(json.dumps(out))
        """
    )
    return subprocess.run(
        [sys.executable, "-c", code, str(workspace)], capture_output=True, text=True, timeout=90
    )


@pytest.mark.parametrize("loop", sorted(_LOOPS))
def test_looping_override_falls_back(svc, walk, workspace, loop):
    import json

    (_templates(svc) / "continuity.md.j2").write_text(textwrap.dedent(_LOOPS[loop]))
    proc = _report_in_a_process(workspace, "continuity", 0.5)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    _assert_builtin_with_warning(out, "longer than 0.5 s")
    assert f"at continuity.md.j2 line {_LINE[loop]}" in out["warnings"][0]


def test_looping_summary_override_falls_back(svc, walk, workspace):
    import json

    (_templates(svc) / "partials").mkdir()
    (_templates(svc) / "partials" / "event_summary.txt.j2").write_text(
        "{% macro summary(e) %}\n"
        "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}\n"
        "{% endmacro %}\n"
    )
    proc = _report_in_a_process(workspace, "continuity", 0.5)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert len(out["warnings"]) == 1 and "event summaries" in out["warnings"][0]
    assert "partials/event_summary.txt.j2 line 2" in out["warnings"][0]
    assert out["data"]["events"][0]["summary"].startswith("Work Contract: ")
