"""Helpers with no handoff knowledge: plain JSON, fault points for tests, the
garbage-collector pause, secret redaction."""
