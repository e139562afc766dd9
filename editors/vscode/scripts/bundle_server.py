"""Bundles the Handoff language server into the extension (``bundled/``).

    uv run --frozen python editors/vscode/scripts/bundle_server.py [--target linux-x64]

The server's wheel and the dependencies the language server needs, at the versions and
hashes in uv.lock (the MCP SDK and its tree are left out: the language server does not import
them; so is the PostgreSQL driver, 10 MB of native code per Python version that only a
team store needs: such a user points ``handoff.server.python`` at an environment with
``handoff-lsp[postgres]``), are installed for each supported CPython version and the VS Code target's
platform. Distributions without native code go to ``bundled/libs`` once; those with
native code (orjson) go to ``bundled/native/cp3XY``, one folder per version, which
``bundled/launch.py`` picks at start. The result is the content of one platform-specific
``.vsix`` (``vsce package --target``).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

EXTENSION = Path(__file__).resolve().parent.parent
REPO = EXTENSION.parent.parent
BUNDLED = EXTENSION / "bundled"

#: VS Code target -> uv's --python-platform (what the wheels must be built for).
PLATFORMS = {
    "linux-x64": "x86_64-manylinux_2_17",
    "linux-arm64": "aarch64-manylinux_2_17",
    "alpine-x64": "x86_64-unknown-linux-musl",
    "alpine-arm64": "aarch64-unknown-linux-musl",
    "darwin-x64": "x86_64-apple-darwin",
    "darwin-arm64": "aarch64-apple-darwin",
    "win32-x64": "x86_64-pc-windows-msvc",
    "win32-arm64": "aarch64-pc-windows-msvc",
}
PYTHONS = ("3.11", "3.12", "3.13", "3.14")
#: Left out of the bundle with everything only they need.
NOT_BUNDLED = ("mcp",)


def run(*args: str, cwd: Path = REPO) -> str:
    return subprocess.run(args, cwd=cwd, check=True, text=True, capture_output=True).stdout


def host_target() -> str:
    import platform

    machine = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}
    arch = machine.get(platform.machine().lower(), platform.machine().lower())
    system = {"linux": "linux", "darwin": "darwin", "win32": "win32"}.get(sys.platform, sys.platform)
    return f"{system}-{arch}"


def distributions(site: Path) -> dict[str, tuple[set[str], bool]]:
    """Each installed distribution: its top-level entries and whether it has native code."""
    found: dict[str, tuple[set[str], bool]] = {}
    for info in site.glob("*.dist-info"):
        tops: set[str] = {info.name}
        native = False
        for line in (info / "RECORD").read_text(encoding="utf8").splitlines():
            name = line.rsplit(",", 2)[0]
            if not name or name.startswith(("..", "/")):
                continue
            top = name.split("/", 1)[0]
            if top != "bin":
                tops.add(top)
            native = native or name.endswith((".so", ".pyd", ".dylib"))
        found[info.name] = (tops, native)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default=host_target(), choices=sorted(PLATFORMS))
    args = parser.parse_args()
    platform = PLATFORMS[args.target]

    requirements = run(
        "uv", "export", "--frozen", "--no-dev", "--no-emit-project", "--no-header", "--no-annotate", *[a for p in NOT_BUNDLED for a in ("--prune", p)],
    )
    for folder in ("libs", "native"):
        shutil.rmtree(BUNDLED / folder, ignore_errors=True)
    with tempfile.TemporaryDirectory(prefix="handoff-bundle-") as tmp:
        work = Path(tmp)
        (work / "requirements.txt").write_text(requirements, encoding="utf8")
        run("uv", "build", "--wheel", "--out-dir", str(work / "wheel"))
        wheel = next((work / "wheel").glob("*.whl"))
        built: list[str] = []
        for python in PYTHONS:
            site = work / python
            common = (
                "--quiet", "--no-deps", "--only-binary", ":all:", "--target", str(site),
                "--python-version", python, "--python-platform", platform,
            )
            try:
                # The dependencies exactly as locked (their hashes checked), then the server.
                run("uv", "pip", "install", *common, "--require-hashes", "-r", str(work / "requirements.txt"))
                run("uv", "pip", "install", *common, str(wheel))
            except subprocess.CalledProcessError as error:
                print(f"no bundle for Python {python} on {args.target}: {error.stderr.strip()}", file=sys.stderr)
                continue
            tag = "cp" + python.replace(".", "")
            for tops, native in distributions(site).values():
                into = BUNDLED / "native" / tag if native else BUNDLED / "libs"
                into.mkdir(parents=True, exist_ok=True)
                for top in tops:
                    source, dest = site / top, into / top
                    if dest.exists() or not source.exists():
                        continue
                    if source.is_dir():
                        shutil.copytree(source, dest, ignore=shutil.ignore_patterns("__pycache__"))
                    else:
                        shutil.copy2(source, dest)
            built.append(tag)
    if not built:
        print(f"nothing could be bundled for {args.target}", file=sys.stderr)
        return 1
    natives = sorted(p.name for p in (BUNDLED / "native").glob("*/*.dist-info"))
    print(f"bundled the server for {args.target}: {', '.join(built)}; native: {', '.join(sorted(set(natives)))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
