"""The language server over stdio (pygls lives here only)."""
