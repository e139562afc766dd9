"""The ``handoff`` command line: the entry point, the ``call`` line, the verbs."""
