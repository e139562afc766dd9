"""The secret pattern set: one test per documented pattern (the secret is gone, its
surroundings stay, the count is right), and ordinary code is left alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from lsp_server.support.redaction import MARKER, PATTERNS, redact, redact_counts

REPO = Path(__file__).resolve().parents[2]

# name → (text holding the secret, the secret itself, text that must survive)
SAMPLES: dict[str, list[tuple[str, str, str]]] = {
    "private-key": [
        (
            "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAx4UbaDzY\n"
            "b3BlbnNzaC1rZXktdjEAAAAA==\n-----END RSA PRIVATE KEY-----\nthen ran ssh-add",
            "MIIEowIBAAKCAQEAx4UbaDzY",
            "then ran ssh-add",
        ),
        (  # no END line (a truncated paste): the base64 lines go, the next paragraph stays
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU\nAAAAB3NzaC\n\n"
            "Next we rebuilt the image.",
            "b3BlbnNzaC1rZXktdjEAAAAABG5vbmU",
            "Next we rebuilt the image.",
        ),
        (  # inside a JSON string with literal \n escapes
            '{"private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0B\\n'
            '-----END PRIVATE KEY-----\\n", "client_email": "bot@example.iam"}',
            "MIIEvQIBADANBgkqhkiG9w0B",
            '"client_email": "bot@example.iam"',
        ),
    ],
    "jwt": [
        (
            "the cookie was eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
            "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c and it expired",
            "eyJzdWIiOiIxMjM0NTY3ODkwIn0",
            "and it expired",
        )
    ],
    "anthropic-key": [
        (
            "ANTHROPIC_API_KEY=sk-ant-api03-Zx9_kLmN0pQrStUvWxYz-AbCdEf0123456789 claude -p",
            "sk-ant-api03-Zx9_kLmN0pQrStUvWxYz-AbCdEf0123456789",
            "claude -p",
        )
    ],
    "openai-key": [
        (
            "export OPENAI_API_KEY=sk-proj-4fGh7JkLmN0pQ2rStUvW9xYzA1bC3dE5 && python run.py",
            "sk-proj-4fGh7JkLmN0pQ2rStUvW9xYzA1bC3dE5",
            "&& python run.py",
        ),
        (
            "client = OpenAI(api_key='sk-3xAmPlEk3yW1thD1g1tsAndLettersXYZ0123')",
            "sk-3xAmPlEk3yW1thD1g1tsAndLettersXYZ0123",
            "client = OpenAI(api_key=",
        ),
    ],
    "github-token": [
        (
            "git clone https://ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8@github.com/o/r",
            "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
            "@github.com/o/r",
        ),
        (
            "GH_TOKEN: github_pat_11AAAAAAA0aBcDeFgHiJkL_mNoPqRsTuVwXyZ0123456789abcdEFGH",
            "github_pat_11AAAAAAA0aBcDeFgHiJkL_mNoPqRsTuVwXyZ0123456789abcdEFGH",
            "GH_TOKEN:",
        ),
        (
            "oauth gho_ZyXwVuTsRqPoNmLkJiHgFeDcBa9876543210 ok",
            "gho_ZyXwVuTsRqPoNmLkJiHgFeDcBa9876543210",
            "ok",
        ),
    ],
    "gitlab-token": [
        ("PRIVATE-TOKEN: glpat-xY7zQ2wE9rT4uI1oP6aS", "glpat-xY7zQ2wE9rT4uI1oP6aS", "PRIVATE-TOKEN")
    ],
    "aws-access-key-id": [
        (
            "aws_access_key_id = AKIAIOSFODNN7EXAMPLE\nregion = eu-west-1",
            "AKIAIOSFODNN7EXAMPLE",
            "region = eu-west-1",
        )
    ],
    "aws-secret-key": [
        (
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\nregion = eu-west-1",
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "region = eu-west-1",
        ),
        (
            '{"Region": "eu-west-1", "SecretAccessKey": '
            '"9drTJvcXLB89EXAMPLEkEyL1tGfe8+QhoVcvxRzK"}',
            "9drTJvcXLB89EXAMPLEkEyL1tGfe8+QhoVcvxRzK",
            '"SecretAccessKey": "',
        ),
    ],
    "slack-token": [
        (
            "SLACK_BOT=xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx posted",
            "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
            "posted",
        ),
        (
            "curl https://hooks.slack.com/services/T0AAAAAAA/B0BBBBBBB/abcdEFGHijklMNOPqrstUVWX",
            "T0AAAAAAA/B0BBBBBBB/abcdEFGHijklMNOPqrstUVWX",
            "curl ",
        ),
    ],
    "google-api-key": [
        (
            "maps?key=AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q&zoom=3",
            "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
            "&zoom=3",
        )
    ],
    "google-oauth-client-secret": [
        (
            '{"installed": {"client_id": "1234-abc.apps.googleusercontent.com", '
            '"client_secret": "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"}}',
            "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",
            '"client_id": "1234-abc.apps.googleusercontent.com"',
        )
    ],
    "gcp-private-key-id": [
        (
            '{"type": "service_account", "private_key_id": "8f2c1d9e4b7a6f3e0d5c2b1a9e8f7d6c5b4a3e2f",'
            ' "project_id": "demo"}',
            "8f2c1d9e4b7a6f3e0d5c2b1a9e8f7d6c5b4a3e2f",
            '"project_id": "demo"',
        )
    ],
    "azure-storage-key": [
        (
            "DefaultEndpointsProtocol=https;AccountName=demo;AccountKey="
            "Zm9vYmFyYmF6cXV4cXV1eGNvcmdlZ3JhdWx0Z2FycGx5d2FsZG9mcmVkcGx1Z3h5enp5Wm9vYmFyYmF6cXV4cXU=="
            ";EndpointSuffix=core.windows.net",
            "Zm9vYmFyYmF6cXV4cXV1eGNvcmdlZ3JhdWx0Z2FycGx5d2FsZG9mcmVkcGx1Z3h5enp5",
            ";EndpointSuffix=core.windows.net",
        ),
        (
            "az storage blob list --account-name demo --account-key 9xQ2Lm+Vb7Rt/Kp3Zs8Wn5Yc1Fd6Gh== -c logs",
            "9xQ2Lm+Vb7Rt/Kp3Zs8Wn5Yc1Fd6Gh==",
            "-c logs",
        ),
    ],
    "telegram-bot-token": [
        (
            "curl https://api.telegram.org/bot7212345678:AAHfiqksKZ8WmR2zSjiQ7_v4TMAKdiHm9T0/getMe",
            "7212345678:AAHfiqksKZ8WmR2zSjiQ7_v4TMAKdiHm9T0",
            "/getMe",
        )
    ],
    "twilio-auth-token": [
        (
            "client = Client('AC0123456789abcdef0123456789abcdef', '9f8e7d6c5b4a39281706f5e4d3c2b1a0')",
            "9f8e7d6c5b4a39281706f5e4d3c2b1a0",
            "client = Client('AC0123456789abcdef0123456789abcdef', '",
        )
    ],
    "vault-token": [
        ("vault token lookup hvs.CAESIJq3xZ8bN2mK7pQ4rT6vW9yA1cE5", "hvs.CAESIJq3xZ8bN2mK7pQ4rT6vW9yA1cE5", "vault token lookup")
    ],
    "pypi-token": [
        (
            "twine upload -u __token__ -p pypi-AgENdGVzdC5weXBpLm9yZwIkZjQ5YjNhZTAtN2M1Ni00ZDk3LWI5NjAtNGQ2 dist/*",
            "pypi-AgENdGVzdC5weXBpLm9yZwIkZjQ5YjNhZTAtN2M1Ni00ZDk3LWI5NjAtNGQ2",
            "dist/*",
        )
    ],
    "stripe-key": [
        ("stripe.api_key = 'sk_live_4eC39HqLyjWDarjtT1zdp7dc'", "4eC39HqLyjWDarjtT1zdp7dc", "stripe")
    ],
    "huggingface-token": [
        (
            "HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh huggingface-cli",
            "hf_AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh",
            "huggingface-cli",
        )
    ],
    "npm-token": [
        (
            "//registry.npmjs.org/:_authToken=npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
            "npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
            "//registry.npmjs.org/",
        )
    ],
    "bearer-token": [
        (
            'curl -H "Authorization: Bearer 7f3a9c2e1b8d4f6a0e5c9b2d7a1f3e8c" https://api.example.com',
            "7f3a9c2e1b8d4f6a0e5c9b2d7a1f3e8c",
            "Authorization: Bearer ",
        ),
        (
            "Authorization: Basic dXNlcjpodW50ZXIyMg== was sent",
            "dXNlcjpodW50ZXIyMg==",
            "was sent",
        ),
    ],
    "url-password": [
        (
            "DATABASE_URL=postgres://admin:s3cr3t!pw@db.internal:5432/app",
            "s3cr3t!pw",
            "postgres://admin:",
        ),
        (
            "pip install --index-url https://deploy:Tr0ub4dor&3@pypi.corp.example/simple pkg",
            "Tr0ub4dor&3",
            "@pypi.corp.example/simple pkg",
        ),
    ],
    "cli-password": [
        ("curl -u deploy:Wq8rTz3p https://api.example.com/v1", "Wq8rTz3p", "curl -u deploy:"),
        ("mysql -h db -uroot -pS3cretPw app < dump.sql", "S3cretPw", "app < dump.sql"),
        ("sshpass -p 'hunter two' ssh ops@host", "hunter two", "ssh ops@host"),
    ],
    "cli-flag": [
        ("mysql -u root --password 'c0rrect horse' app", "c0rrect horse", "mysql -u root --password"),
        ("vault login --token=s.Xy12Ab34Cd56Ef78", "s.Xy12Ab34Cd56Ef78", "vault login --token="),
    ],
    "assignment": [
        ("DB_PASSWORD=hunter\nDB_HOST=localhost", "hunter", "DB_HOST=localhost"),
        ('settings = {"api_key": "q9W8e7R6t5Y4"}', "q9W8e7R6t5Y4", '"api_key": "'),
        ("password: hunter22\nuser: admin", "hunter22", "user: admin"),
        ("client_secret = 'wQ9-zX8_cV7'", "wQ9-zX8_cV7", "client_secret = '"),
        ("REFRESH_TOKEN=1//0gAbCdEfGh", "1//0gAbCdEfGh", "REFRESH_TOKEN="),
    ],
}


def test_every_documented_pattern_has_a_test():
    assert set(SAMPLES) == {p.name for p in PATTERNS}
    doc = (REPO / "docs" / "reliability.md").read_text(encoding="utf-8")
    for p in PATTERNS:
        assert f"`{p.name}`" in doc, f"{p.name} is not documented in docs/reliability.md"


@pytest.mark.parametrize(
    "name,text,secret,kept",
    [(name, *sample) for name, samples in SAMPLES.items() for sample in samples],
    ids=[f"{name}-{i}" for name, samples in SAMPLES.items() for i in range(len(samples))],
)
def test_pattern_redacts_its_secret(name, text, secret, kept):
    out, counts = redact_counts(text)
    assert secret not in out
    assert MARKER.format(name=name) in out
    assert kept in out
    assert counts == {name: 1}
    assert redact(text) == (out, 1)
    # Redaction is idempotent: the marker itself is never redacted again.
    assert redact(out) == (out, 0)


def test_several_secrets_in_one_document_are_counted():
    text = "\n".join(samples[0][0] for samples in SAMPLES.values())
    out, count = redact(text)
    assert count == len(SAMPLES)
    for samples in SAMPLES.values():
        assert samples[0][1] not in out


ORDINARY = """\
def login(user: str, password: Optional[str] = None, token: SecretStr | None = None) -> bool:
    password = password or get_password()
    secret = os.environ["APP_SECRET"]
    self.api_key = api_key
    if password == "admin":
        raise ValueError("Enter your password")
    headers = {"Authorization": f"Bearer {token}"}
    max_tokens = 100000
    for token in tokens:
        print(token)
    url = "https://example.com:8080/v1/items?page=2"
    return check(password, token=token)

DB_URL=postgres://${DB_USER}:${DB_PASS}@localhost:5432/app
API_KEY=${API_KEY}
PASSWORD=<your password here>
api_key: str
token_count = 42
ssh git@github.com:org/repo.git
run `pytest -k test_tokenizer --maxfail=1`; task-list sk-learn-compatible-estimator
commit 5936894a1b2c3d4e5f60718293a4b5c6d7e8f901 on branch feature/secrets-ui
sha256:3f2a9c0e5b7d1f4a8c6e2b0d9f7a5c3e1b8d6f4a2c0e9b7d5f3a1c8e6b4d2f0a
"""


def test_ordinary_code_is_left_alone():
    assert redact(ORDINARY) == (ORDINARY, 0)


def test_this_projects_own_sources_are_left_alone():
    checked = 0
    for path in sorted((REPO / "lsp_server").rglob("*.py")):
        if path.name == "redaction.py":
            continue  # it spells the patterns out
        text = path.read_text(encoding="utf-8")
        out, count = redact(text)
        assert count == 0, f"{path} had {count} false positive(s)"
        assert out == text
        checked += 1
    assert checked >= 8


def _growth(unit: str, small: int, tries: int = 5, prefix: str = "") -> float:
    """How much longer redacting ``unit`` repeated 4 × ``small`` times takes than
    repeated ``small`` times: about 4 for a linear cost, 16 for a quadratic one. Both
    sizes are timed side by side (the fastest of ``tries``), so the machine's speed
    and load cancel out."""
    import time

    texts = (prefix + unit * small, prefix + unit * (4 * small))
    best = [float("inf"), float("inf")]
    for _ in range(tries):  # interleaved: a burst of load hits both sizes alike
        for i, text in enumerate(texts):
            started = time.perf_counter()
            redact(text)
            best[i] = min(best[i], time.perf_counter() - started)
    return best[1] / max(best[0], 1e-6)


def _linear_growth(unit: str, small: int, prefix: str = "", rounds: int = 3) -> float:
    """The smallest growth over up to ``rounds`` measurements, stopping at the first
    linear one: a loaded machine can slow one measurement, but a quadratic cost is
    16 in every one of them."""
    grown = float("inf")
    for _ in range(rounds):
        grown = min(grown, _growth(unit, small, prefix=prefix))
        if grown <= NOT_LINEAR:
            break
    return grown


#: The growth above which a cost is not linear (linear: 4; quadratic: 16).
NOT_LINEAR = 8.0


def test_redaction_cost_stays_linear_on_hostile_text():
    hostile = {  # (prefix, unit): repeats of the smaller text (about 100,000 characters)
        ("", "-----BEGIN PRIVATE KEY-----"): 4_000,
        ("", "password: "): 10_000,
        ("", "a"): 100_000,
        ("", "bearer "): 15_000,
        ("x://", "b:"): 50_000,
    }
    grown = {
        pre + unit: round(_linear_growth(unit, n, prefix=pre), 1)
        for (pre, unit), n in hostile.items()
    }
    assert all(g <= NOT_LINEAR for g in grown.values()), grown


def test_every_rule_stays_linear_on_its_own_keywords():
    """Go's regex engine is linear, Python's backtracks: each keyword of every rule
    (gitleaks' included), repeated into 20,000 characters with a separator that joins
    it into one name or one line, is timed once (``cohere_`` × 2,800 took 57 s and
    ``curl `` × 10,000 25 s before the rewrites of ``_anchored``); the slowest ones, and
    any far slower than the run's median, must cost about 4 times as much at 4 times
    the length, never the 16 of a quadratic rule. Only times from this run are
    compared, so the machine's speed and load cancel out."""
    import statistics
    import time

    from lsp_server.support.redaction import RULES

    took = {}
    for keyword in sorted({k for r in RULES for k in r.keywords}):
        for sep in ("_", " ", "="):
            unit = keyword + sep
            started = time.perf_counter()
            redact(unit * (20_000 // len(unit)))
            took[unit] = time.perf_counter() - started
    median = statistics.median(took.values())
    slowest = sorted(took, key=took.get, reverse=True)
    suspects = set(slowest[:5]) | {u for u in slowest if took[u] > 10 * median}
    grown = {u: round(_linear_growth(u, 20_000 // len(u)), 1) for u in sorted(suspects)}
    assert {u: g for u, g in grown.items() if g > NOT_LINEAR} == {}, grown


def test_redactor_cleans_a_message_whole_once_and_counts_it_once():
    from lsp_server.generation.transcript import Message, ToolCall
    from lsp_server.support.redaction import Redactor

    key_text, key, _ = SAMPLES["private-key"][0]
    token_text, token, _ = SAMPLES["github-token"][0]
    result = Message("tool", "error: deploy failed\n" + key_text, is_error=True)
    call = ToolCall("c1", "bash", {"command": f"echo {token_text}", "env": [token_text]})
    turn = Message("assistant", "Retrying.", tool_calls=[call])
    redactor = Redactor()
    # A line cut from the result after cleaning never holds a piece of the key.
    assert redactor.message(result) is result
    assert key not in result.text and "deploy failed" in result.text
    assert not any(key[:12] in line for line in result.text.splitlines())
    redactor.message(turn)
    assert token not in call.arguments["command"] and token not in call.arguments["env"][0]
    assert redactor.count == 3
    # Cleaning again changes nothing and counts nothing; strings count once each.
    redactor.message(result)
    redactor.message(turn)
    assert redactor.count == 3
    title = f"Rotate {token_text}"
    assert token not in redactor.text(title) and redactor.count == 4
    assert redactor.text(title) == redactor.text(title) and redactor.count == 4
    assert redactor.text(None) is None and redactor.text("") == ""


@pytest.mark.parametrize("limit", [400, 4000])
def test_clipping_never_halves_a_key_so_redaction_still_finds_it(limit):
    from lsp_server.generation.transcript import clip

    anthropic = "sk-ant-api03-" + "Q7x9" * 20
    github = "ghp_" + "R2d2C3po" * 5
    for shift in range(0, limit // 2, max(limit // 40, 3)):
        for key in (anthropic, github):
            head_pos = limit * 3 // 4 - len(key) // 2 - shift % 40  # straddles the head cut
            text = "w " * (head_pos // 2) + key + " " + "filler " * (limit // 2) + key + " z"
            out, _ = redact(clip(text, limit))
            pieces = {key[i : i + 12] for i in range(len(key) - 11)}
            assert not any(p in out for p in pieces), (limit, shift, key[:8])


def test_a_private_key_cut_by_clipping_leaves_no_line_of_it():
    from lsp_server.generation.transcript import clip

    body = [f"MIIEv{i:02d}QIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC{i:02d}" for i in range(30)]
    pem = "-----BEGIN PRIVATE KEY-----\n" + "\n".join(body) + "\n-----END PRIVATE KEY-----"
    for before in (0, 300, 900, 1500, 2600, 3300):
        text = "log line\n" * (before // 9) + pem + "\nafter the key\n" + "ok\n" * 20
        out, _ = redact(clip(text, 1000))
        assert not any(line in out for line in body), before
        assert "after the key" in out
