"""handoff-lsp: hand coding-agent work from one session or agent to the next, with a
record you can check. The parts and how they depend on each other: docs/architecture.md."""

__version__ = "0.1.0"
