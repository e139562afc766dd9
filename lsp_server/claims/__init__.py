"""The claims of a handoff document, found line by line and checked against the session
it came from and the live workspace: supported, contradicted, stale, unverifiable, dropped."""
