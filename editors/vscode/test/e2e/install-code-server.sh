#!/usr/bin/env bash
# Install a real VS Code for the end-to-end test of the extension: code-server from the
# npm registry, with its native modules rebuilt against the system's node headers, and
# nothing downloaded from anywhere but the package registries (apt and npm).
#
#   editors/vscode/test/e2e/install-code-server.sh [PREFIX]
#
# PREFIX defaults to ~/.cache/handoff-e2e/code-server. The last line printed is the path
# of the code-server launcher. A finished install is reused. Needs node 20 with npm,
# a C/C++ toolchain, python3; installs libkrb5-dev and ripgrep with apt-get if missing.
set -euo pipefail
VERSION=4.100.3   # the last code-server release that runs on node 20
PREFIX=${1:-$HOME/.cache/handoff-e2e/code-server}
LAUNCHER="$PREFIX/node_modules/.bin/code-server"
if [ -f "$PREFIX/.complete-$VERSION" ]; then echo "$LAUNCHER"; exit 0; fi

missing=()
[ -e /usr/include/krb5.h ] || [ -e /usr/include/gssapi/gssapi.h ] || missing+=(libkrb5-dev)
command -v rg >/dev/null || missing+=(ripgrep)
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -q >/dev/null && apt-get install -y -q "${missing[@]}" >/dev/null
fi
[ -e /usr/include/node/node.h ] || { echo "node headers are missing from /usr/include/node" >&2; exit 1; }

mkdir -p "$PREFIX" && cd "$PREFIX"
[ -f package.json ] || npm init -y >/dev/null
# code-server's postinstall fetches ripgrep and node headers from the internet: install
# without lifecycle scripts and do those steps here from local files.
npm install --no-audit --no-fund --ignore-scripts "code-server@$VERSION" >/dev/null
export npm_config_nodedir=/usr
npm rebuild argon2 >/dev/null
VS="$PREFIX/node_modules/code-server/lib/vscode"
( cd "$VS" && npm install --omit=dev --no-audit --no-fund --ignore-scripts >/dev/null )
mkdir -p "$VS/node_modules/@vscode/ripgrep/bin"
cp "$(command -v rg)" "$VS/node_modules/@vscode/ripgrep/bin/rg"
GYP="$(dirname "$(command -v npm)")/../lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js"
for module in kerberos @parcel/watcher @vscode/deviceid @vscode/spdlog native-watchdog node-pty; do
  ( cd "$VS/node_modules/$module" && node "$GYP" rebuild --nodedir=/usr >/dev/null 2>&1 ) \
    || ( cd "$VS/node_modules/$module" && npx --yes node-gyp rebuild --nodedir=/usr >/dev/null )
done
( cd "$VS" && ln -sfn node_modules node_modules.asar )
( cd "$VS/bin/remote-cli" && ln -sfn code-linux.sh code-server )
( cd "$VS/bin/helpers" && ln -sfn browser-linux.sh browser.sh )
( cd "$VS/extensions" && npm install --omit=dev --no-audit --no-fund --ignore-scripts >/dev/null )
touch "$PREFIX/.complete-$VERSION"
echo "$LAUNCHER"
