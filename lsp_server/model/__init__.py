"""The handoff model and its rules: the contract's vocabulary, params and errors, the
typed records, evidence, the lifecycle and continue rules, and the storage port they
speak through. Free of every storage engine and of every protocol library."""
