"""Local HTTP servers speaking the OpenAI Chat Completions, OpenAI Responses, Anthropic
Messages and Gemini API wire protocols (streamed), scripted per test, recording what they
were sent and whether the client went away mid-stream."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Stream:
    """A streamed answer: each event written and flushed, ``delay`` seconds apart."""

    events: list[bytes]
    delay: float = 0.0
    content_type: str = "text/event-stream"


@dataclass
class Reply:
    """A whole answer with a status (errors, or a server that does not stream)."""

    status: int
    body: Any
    content_type: str = "application/json"


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class WireServer:
    """One scripted model server on 127.0.0.1 (a random port)."""

    script: Callable[[Received], Stream | Reply]
    requests: list[Received] = field(default_factory=list)
    first_event_sent: threading.Event = field(default_factory=threading.Event)
    client_gone: threading.Event = field(default_factory=threading.Event)
    finished: threading.Event = field(default_factory=threading.Event)
    events_sent: int = 0

    def __post_init__(self) -> None:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = raw
                got = Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                server.requests.append(got)
                plan = server.script(got)
                if isinstance(plan, Reply):
                    data = (
                        plan.body
                        if isinstance(plan.body, bytes)
                        else json.dumps(plan.body).encode()
                    )
                    self.send_response(plan.status)
                    self.send_header("Content-Type", plan.content_type)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    server.finished.set()
                    return
                self.send_response(200)
                self.send_header("Content-Type", plan.content_type)
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                try:
                    for i, event in enumerate(plan.events):
                        if i and plan.delay:
                            time.sleep(plan.delay)
                        self.wfile.write(event)
                        self.wfile.flush()
                        server.events_sent += 1
                        server.first_event_sent.set()
                    server.finished.set()
                except (BrokenPipeError, ConnectionResetError, OSError):
                    server.client_gone.set()
                self.close_connection = True

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


# -- OpenAI Chat Completions -----------------------------------------------------------


def sse(obj: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(obj)}\n\n".encode()


def openai_chunk(
    delta: dict[str, Any], finish: str | None = None, model: str = "wire-model"
) -> bytes:
    return sse(
        {
            "id": "chatcmpl-wire",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
    )


def openai_text(text: str, pieces: int = 4, reasoning: str | None = None) -> list[bytes]:
    """A streamed text answer in ``pieces`` chunks (plus optional reasoning deltas)."""
    events = [openai_chunk({"role": "assistant", "content": ""})]
    if reasoning:
        events.append(openai_chunk({"reasoning_content": reasoning}))
    step = max(1, len(text) // pieces + 1)
    for i in range(0, len(text), step):
        events.append(openai_chunk({"content": text[i : i + step]}))
    events.append(openai_chunk({}, finish="stop"))
    events.append(b"data: [DONE]\n\n")
    return events


def openai_tool_call(call_id: str, name: str, arguments: dict[str, Any]) -> list[bytes]:
    """A streamed answer that asks for one tool call."""
    args = json.dumps(arguments)
    half = len(args) // 2
    return [
        openai_chunk({"role": "assistant", "content": None}),
        openai_chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": call_id,
                        "type": "function",
                        "function": {"name": name, "arguments": args[:half]},
                    }
                ]
            }
        ),
        openai_chunk({"tool_calls": [{"index": 0, "function": {"arguments": args[half:]}}]}),
        openai_chunk({}, finish="tool_calls"),
        b"data: [DONE]\n\n",
    ]


# -- Anthropic Messages -----------------------------------------------------------------


def anthropic_events(blocks: list[dict[str, Any]], pieces: int = 3) -> list[bytes]:
    """A streamed Messages answer with the given content blocks (text/thinking)."""
    events = [
        sse(
            {
                "type": "message_start",
                "message": {
                    "id": "msg_wire",
                    "type": "message",
                    "role": "assistant",
                    "model": "wire-claude",
                    "content": [],
                    "stop_reason": None,
                    "usage": {"input_tokens": 10, "output_tokens": 1},
                },
            },
            "message_start",
        ),
        sse({"type": "ping"}, "ping"),
    ]
    for index, block in enumerate(blocks):
        kind = block["type"]
        start = {"type": kind, "text": ""} if kind == "text" else {"type": kind, "thinking": ""}
        events.append(
            sse(
                {"type": "content_block_start", "index": index, "content_block": start},
                "content_block_start",
            )
        )
        value = block["text"] if kind == "text" else block["thinking"]
        step = max(1, len(value) // pieces + 1)
        for i in range(0, len(value), step):
            delta = (
                {"type": "text_delta", "text": value[i : i + step]}
                if kind == "text"
                else {"type": "thinking_delta", "thinking": value[i : i + step]}
            )
            events.append(
                sse(
                    {"type": "content_block_delta", "index": index, "delta": delta},
                    "content_block_delta",
                )
            )
        events.append(sse({"type": "content_block_stop", "index": index}, "content_block_stop"))
    events.append(
        sse(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": 5},
            },
            "message_delta",
        )
    )
    events.append(sse({"type": "message_stop"}, "message_stop"))
    return events


def anthropic_message(text: str, model: str = "wire-claude") -> dict[str, Any]:
    """A whole (not streamed) Messages answer holding one text block."""
    return {
        "id": "msg_wire",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


# -- OpenAI Responses ---------------------------------------------------------------------


def responses_text(text: str, pieces: int = 3, response_id: str = "resp_wire") -> list[bytes]:
    """A streamed Responses answer: one assistant message item whose text arrives in
    ``pieces`` deltas, then ``response.completed`` with its usage."""
    item_id = "msg_wire"
    done = {
        "type": "message",
        "id": item_id,
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    events = [
        {"type": "response.created", "response": {"id": response_id, "status": "in_progress"}},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {**done, "status": "in_progress", "content": []},
        },
    ]
    step = max(1, len(text) // pieces + 1)
    for i in range(0, len(text), step):
        events.append(
            {
                "type": "response.output_text.delta",
                "item_id": item_id,
                "output_index": 0,
                "content_index": 0,
                "delta": text[i : i + step],
            }
        )
    events.append({"type": "response.output_item.done", "output_index": 0, "item": done})
    usage = {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 15,
    }
    events.append(
        {
            "type": "response.completed",
            "response": {"id": response_id, "status": "completed", "output": [done], "usage": usage},
        }
    )
    return [sse(event, event["type"]) for event in events]


# -- Gemini API (generateContent / streamGenerateContent) --------------------------------


def gemini_response(parts: list[dict[str, Any]], model: str = "wire-gemini") -> dict[str, Any]:
    """One ``GenerateContentResponse``: a model turn of ``parts`` (text, function calls)."""
    return {
        "candidates": [
            {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
        "modelVersion": model,
    }


def schema_sample(schema: Any) -> Any:
    """The smallest value a JSON schema (the Gemini API's, types in capitals) accepts."""
    if not isinstance(schema, dict):
        return None
    if schema.get("enum"):
        return schema["enum"][0]
    kind = str(schema.get("type", "OBJECT")).upper()
    if kind == "OBJECT":
        props = schema.get("properties") or {}
        return {k: schema_sample(props.get(k)) for k in schema.get("required") or []}
    return {"STRING": "wire", "INTEGER": 1, "NUMBER": 1, "BOOLEAN": False, "ARRAY": []}.get(kind)


def gemini_answer(got: Received, parts: list[dict[str, Any]]) -> Stream | Reply:
    """``parts`` as the Gemini API sends them: streamed (``?alt=sse``) or whole. A
    request for JSON (Gemini CLI's routing and checks) gets the smallest object its
    schema accepts instead."""
    config = got.body.get("generationConfig") if isinstance(got.body, dict) else None
    if isinstance(config, dict) and config.get("responseMimeType") == "application/json":
        sample = schema_sample(config.get("responseJsonSchema") or config.get("responseSchema"))
        parts = [{"text": json.dumps(sample)}]
    body = gemini_response(parts)
    if "streamGenerateContent" in got.path:
        return Stream([f"data: {json.dumps(body)}\r\n\r\n".encode()])
    return Reply(200, body)


def gemini_results(got: Received) -> int:
    """How many tool results (``functionResponse`` parts) a Gemini request carries."""
    contents = got.body.get("contents", []) if isinstance(got.body, dict) else []
    return sum(
        1
        for c in contents
        for p in c.get("parts", [])
        if isinstance(p, dict) and "functionResponse" in p
    )


def gemini_prompts(got: Received) -> list[str]:
    """The text parts of the user turns of a Gemini request."""
    contents = got.body.get("contents", []) if isinstance(got.body, dict) else []
    return [
        p["text"]
        for c in contents
        if c.get("role") == "user"
        for p in c.get("parts", [])
        if isinstance(p, dict) and isinstance(p.get("text"), str)
    ]
