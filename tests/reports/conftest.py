"""Fixtures of the report tests."""

from __future__ import annotations

from typing import Any

import pytest

from lsp_server.surfaces.service import HandoffService
from tests.reports.support import commit_walkthrough


@pytest.fixture
def walk(svc: HandoffService) -> dict[str, Any]:
    """The walkthrough up to a committed ``@1`` (no receipt, no outcome yet)."""
    return commit_walkthrough(svc)
