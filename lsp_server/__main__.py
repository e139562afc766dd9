"""``python -m lsp_server`` starts the language server."""

import sys

from .server import main

sys.exit(main())
