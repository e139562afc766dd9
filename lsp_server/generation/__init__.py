"""``/handoff`` generation from real agent sessions: readers, discovery, prompt,
providers, capture and the new-session writer (``docs/generation.md``)."""
