"""Runs the Handoff language server bundled in the extension.

``bundled/libs`` holds the server and its pure-Python dependencies; the packages with
native code sit in ``bundled/native/cp3XY`` per CPython version. Both go first on
``sys.path`` (this file is run with ``python -I``, so nothing from the user's
environment variables or user site shadows them). ``--probe`` imports everything the
server needs and prints its version instead of starting it.
"""

import os
import runpy
import sys

MINIMUM = (3, 11)

# (No f-strings in this file: an old Python must parse it to say it is too old.)
if sys.version_info < MINIMUM:
    sys.exit(
        "Handoff needs Python %d.%d or newer; %s is %s"  # noqa: UP031
        % (MINIMUM[0], MINIMUM[1], sys.executable, sys.version.split()[0])
    )

here = os.path.dirname(os.path.abspath(__file__))
tag = "cp%d%d" % sys.version_info[:2]  # noqa: UP031
native = os.path.join(here, "native", tag)
if not os.path.isdir(native):
    built = sorted(os.listdir(os.path.join(here, "native"))) if os.path.isdir(os.path.join(here, "native")) else []
    sys.exit(
        "this Handoff extension bundles its server for %s, not for %s (%s)"  # noqa: UP031
        % (", ".join(built) or "no Python", tag, sys.executable)
    )
sys.path[0:0] = [os.path.join(here, "libs"), native]

if sys.argv[1:] == ["--probe"]:
    import orjson  # noqa: F401  (native)

    import lsp_server
    import lsp_server.surfaces.lsp.server  # noqa: F401  (pygls, lsprotocol, cattrs)

    sys.stdout.write(getattr(lsp_server, "__version__", "unknown"))
else:
    runpy.run_module("lsp_server", run_name="__main__", alter_sys=True)
