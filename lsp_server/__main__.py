"""``python -m lsp_server`` starts the language server."""

import sys

from .surfaces.lsp.server import main

sys.exit(main())
