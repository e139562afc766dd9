"""The secret corpus of issue 21: fake secrets of every kind that leaked, each in the
forms a transcript shows them (shell lines, config files, JSON, code, prose), and
gitleaks' own literal examples (``data/gitleaks-examples.json``).

Every secret is made here from a seeded random generator, so the corpus is the same
on every run and none of it is a real credential. ``CORPUS`` maps a kind to a list of
``(text, secret)``: the text a transcript would carry, and the part that must not
survive redaction.
"""

from __future__ import annotations

import json
import random
import string
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
GITLEAKS_EXAMPLES = HERE / "data" / "gitleaks-examples.json"

_rng = random.Random(21)
ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"


def rand(n: int, alphabet: str = ALNUM) -> str:
    """``n`` random characters, with at least one digit and one letter when the alphabet
    has both (so no sample is a run of one letter)."""
    while True:
        s = "".join(_rng.choice(alphabet) for _ in range(n))
        digit = not set(alphabet) & set(string.digits) or any(c.isdigit() for c in s)
        letter = not set(alphabet) & set(string.ascii_letters) or any(c.isalpha() for c in s)
        if digit and letter:
            return s


def _aws_secret() -> str:
    return rand(40, B64)


def _words() -> str:
    words = ["correct", "horse", "battery", "staple", "blue", "river", "sunset", "maple"]
    return " ".join(_rng.sample(words, 3)) + f" {_rng.randint(10, 99)}"


def _azure_key() -> str:
    return rand(86, B64) + "=="


def _kind(templates: list[str], make: Callable[[], str]) -> list[tuple[str, str]]:
    out = []
    for t in templates:
        s = make()
        out.append((t.replace("{s}", s), s))
    return out


def _pairs(pairs: list[tuple[str, Callable[[], str]]]) -> list[tuple[str, str]]:
    out = []
    for template, make in pairs:
        s = make()
        out.append((template.replace("{s}", s), s))
    return out


CORPUS: dict[str, list[tuple[str, str]]] = {
    "aws-configure": _kind(
        [
            "$ aws configure\nAWS Access Key ID [None]: AKIA" + rand(16, string.ascii_uppercase + string.digits)
            + "\nAWS Secret Access Key [None]: {s}\nDefault region name [None]: eu-west-1",
            "AWS Secret Access Key [****************" + rand(4, string.ascii_uppercase) + "]: {s}",
            "aws configure set aws_secret_access_key {s} --profile ci",
            "[default]\naws_access_key_id = AKIA" + rand(16, string.ascii_uppercase + string.digits)
            + "\naws_secret_access_key = {s}\n",
            "export AWS_SECRET_ACCESS_KEY={s}",
            "env:\n  AWS_SECRET_ACCESS_KEY: {s}\n  AWS_REGION: us-east-1",
        ],
        _aws_secret,
    ),
    "password-with-blanks": _kind(
        [
            'PASSWORD="{s}"',
            "export DB_PASSWORD='{s}'",
            'ADMIN_PASSWORD="{s}"\nADMIN_USER=root',
            'docker run -e POSTGRES_PASSWORD="{s}" -p 5432:5432 postgres:16',
            'echo "SMTP_PASSWORD=\\"{s}\\"" >> .env',
        ],
        _words,
    ),
    "secret-key": _pairs(
        [
            ("SECRET_KEY={s}", lambda: rand(50, ALNUM + "!@#%^*-_")),
            ("SECRET_KEY = 'django-insecure-{s}'", lambda: rand(40, ALNUM + "!@#%^*-_")),
            ("export DJANGO_SECRET_KEY={s}", lambda: rand(50)),
            ("JWT_SECRET_KEY: {s}", lambda: rand(32)),
            ("  secret_key_base: {s}", lambda: rand(128, HEX)),
            ('{"secret_key": "{s}", "debug": false}', lambda: rand(32)),
            ("app.config['SECRET_KEY'] = '{s}'", lambda: rand(24)),
        ]
    ),
    "gcp-private-key-id": _kind(
        [
            '{"type": "service_account", "project_id": "demo-42", "private_key_id": "{s}",\n'
            ' "client_email": "bot@demo-42.iam.gserviceaccount.com"}',
            '  "private_key_id": "{s}",',
            "gcp:\n  private_key_id: {s}\n  client_email: bot@demo.iam.gserviceaccount.com",
            '{\\"type\\": \\"service_account\\", \\"private_key_id\\": \\"{s}\\"}',
        ],
        lambda: rand(40, HEX),
    ),
    "pgpassword": _pairs(
        [
            ("PGPASSWORD={s} psql -h db.internal -U app -d app -c 'select 1'", lambda: rand(14)),
            ("export PGPASSWORD='{s}'", lambda: rand(12, ALNUM + "!#%")),
            ('PGPASSWORD="{s}" pg_dump -h localhost -U postgres app > dump.sql', lambda: rand(16)),
            ("env PGPASSWORD={s} pg_restore -d app dump", lambda: rand(10)),
            ("PGPASSWORD=hunter psql -U admin", lambda: "hunter"),
        ]
    ),
    "mysql-p": _pairs(
        [
            ("mysql -uroot -p{s} app < schema.sql", lambda: rand(12)),
            ("mysql -h 127.0.0.1 -u root -p'{s}' -e 'show databases'", lambda: rand(10, ALNUM + "!#%")),
            ('mysqldump -u admin -p"{s}" shop > shop.sql', lambda: rand(14)),
            ("mysqladmin -uroot -p{s} status", lambda: rand(8)),
            ("docker exec -it db mysql -uroot -p{s} -e 'select 1'", lambda: rand(16)),
        ]
    ),
    "curl-user": _pairs(
        [
            ("curl -u admin:{s} https://ci.example.com/api/json", lambda: rand(14)),
            ('curl --user "deploy:{s}" https://nexus.example.com/repository/', lambda: rand(12)),
            ("curl -s -X POST -u 'ci-bot:{s}' https://api.example.com/hooks", lambda: rand(20)),
            ("curl https://registry.example.com/v2/_catalog --user api:{s}", lambda: rand(16)),
            ("curl -fsSL -u AC" + rand(32, HEX) + ":{s} https://api.twilio.com/2010-04-01/Accounts.json",
             lambda: rand(32, HEX)),
        ]
    ),
    "url-user-password": _pairs(
        [
            ("DATABASE_URL=postgres://app:{s}@db.internal:5432/app", lambda: rand(16)),
            ("git clone https://oauth2:{s}@gitlab.example.com/team/repo.git", lambda: rand(20)),
            ("REDIS_URL=redis://:{s}@cache:6379/0", lambda: rand(24)),
            ("amqp://guest:{s}@rabbit.internal:5672/", lambda: rand(12)),
            ('client = MongoClient("mongodb+srv://admin:{s}@cluster0.ab1cd.mongodb.net/")', lambda: rand(18)),
        ]
    ),
    "sendgrid": _kind(
        [
            "SENDGRID_API_KEY=SG.{s}",
            "sg = SendGridAPIClient('SG.{s}')",
            "the key SG.{s} was pasted in the ticket",
            '{"sendgrid": {"api_key": "SG.{s}"}}',
        ],
        lambda: rand(22, ALNUM + "-_") + "." + rand(43, ALNUM + "-_"),
    ),
    "twilio": _pairs(
        [
            ("TWILIO_API_KEY=SK{s}", lambda: rand(32, HEX)),
            ("api key SK{s} created", lambda: rand(32, HEX)),
            ("TWILIO_AUTH_TOKEN={s}", lambda: rand(32, HEX)),
            ("client = Client('AC" + rand(32, HEX) + "', '{s}')", lambda: rand(32, HEX)),
            ("TWILIO_API_SECRET={s}", lambda: rand(32)),
        ]
    ),
    "digitalocean": _pairs(
        [
            ("DIGITALOCEAN_ACCESS_TOKEN=dop_v1_{s}", lambda: rand(64, HEX)),
            ("doctl auth init -t dop_v1_{s}", lambda: rand(64, HEX)),
            ("oauth token doo_v1_{s}", lambda: rand(64, HEX)),
            ('{"refresh_token": "dor_v1_{s}"}', lambda: rand(64, HEX)),
        ]
    ),
    "shopify": _pairs(
        [
            ("SHOPIFY_ACCESS_TOKEN=shpat_{s}", lambda: rand(32, HEX)),
            ("X-Shopify-Access-Token: shpca_{s}", lambda: rand(32, HEX)),
            ("private app password shppa_{s}", lambda: rand(32, HEX)),
            ("webhook secret shpss_{s}", lambda: rand(32, HEX)),
        ]
    ),
    "pypi": _pairs(
        [
            ("[pypi]\nusername = __token__\npassword = pypi-AgEIcHlwaS5vcmc{s}", lambda: rand(120, ALNUM + "-_")),
            ("twine upload -u __token__ -p pypi-AgEIcHlwaS5vcmc{s} dist/*", lambda: rand(90, ALNUM + "-_")),
            ("UV_PUBLISH_TOKEN=pypi-AgEIcHlwaS5vcmc{s} uv publish", lambda: rand(100, ALNUM + "-_")),
            ("test token pypi-AgENdGVzdC5weXBpLm9yZw{s}", lambda: rand(80, ALNUM + "-_")),
        ]
    ),
    "vault": _pairs(
        [
            ("export VAULT_TOKEN=hvs.{s}", lambda: rand(24)),
            ("vault login hvs.CAESI{s}", lambda: rand(90, ALNUM + "-_")),
            ("X-Vault-Token: s.{s}", lambda: rand(24)),
            ("batch token hvb.{s}", lambda: rand(140, ALNUM + "-_")),
            ('curl -H "X-Vault-Token: hvs.{s}" https://vault:8200/v1/secret/data/app', lambda: rand(24)),
        ]
    ),
    "age": _pairs(
        [
            ("# created: 2026-11-30T10:00:00Z\n# public key: age1" + rand(58, BECH32.lower())
             + "\nAGE-SECRET-KEY-1{s}", lambda: rand(58, BECH32)),
            ("SOPS_AGE_KEY=AGE-SECRET-KEY-1{s}", lambda: rand(58, BECH32)),
            ("echo AGE-SECRET-KEY-1{s} > key.txt", lambda: rand(58, BECH32)),
        ]
    ),
    "telegram": _pairs(
        [
            ("TELEGRAM_BOT_TOKEN=" + str(_rng.randint(10**8, 10**10 - 1)) + ":AA{s}", lambda: rand(33, ALNUM + "_-")),
            ("curl https://api.telegram.org/bot" + str(_rng.randint(10**8, 10**10 - 1)) + ":AA{s}/getUpdates",
             lambda: rand(33, ALNUM + "_-")),
            ("bot = telebot.TeleBot('" + str(_rng.randint(10**8, 10**10 - 1)) + ":AA{s}')", lambda: rand(33, ALNUM + "_-")),
            ("the bot token is " + str(_rng.randint(10**8, 10**10 - 1)) + ":AA{s}", lambda: rand(33, ALNUM + "_-")),
        ]
    ),
    "azure-storage": _pairs(
        [
            ("DefaultEndpointsProtocol=https;AccountName=demo;AccountKey={s};EndpointSuffix=core.windows.net",
             _azure_key),
            ("AZURE_STORAGE_KEY={s}", _azure_key),
            ("az storage container list --account-name demo --account-key {s}", _azure_key),
            ('{"keyName": "key1", "permissions": "FULL", "value": "{s}"}', _azure_key),
            ("https://demo.blob.core.windows.net/c/f.txt?sv=2022-11-02&ss=b&srt=o&sp=r&se=2026-12-01"
             "&sig={s}%3D", lambda: rand(43, ALNUM + "%")),
        ]
    ),
    "google-oauth-client-secret": _pairs(
        [
            ('{"installed": {"client_id": "1234-abc.apps.googleusercontent.com", "client_secret": "GOCSPX-{s}"}}',
             lambda: rand(28, ALNUM + "-_")),
            ("GOOGLE_CLIENT_SECRET=GOCSPX-{s}", lambda: rand(28, ALNUM + "-_")),
            ("client secret GOCSPX-{s} from the console", lambda: rand(28, ALNUM + "-_")),
            ('"client_secret": "{s}"', lambda: rand(24, ALNUM + "-_")),
        ]
    ),
}


def gitleaks_examples() -> dict[str, dict[str, list[str]]]:
    """gitleaks' literal examples per rule: ``tps`` (must be caught), ``fps`` (gitleaks'
    rule must not fire; informative only — redaction may still catch a look-alike)."""
    data = json.loads(GITLEAKS_EXAMPLES.read_text(encoding="utf-8"))
    return data["rules"]


def samples() -> list[tuple[str, str, str]]:
    """Every ``(kind, text, secret)`` of the corpus."""
    return [(kind, text, secret) for kind, items in CORPUS.items() for text, secret in items]
