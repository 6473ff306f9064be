"""The standard library's top-level module names: an import of one needs no distribution (requirements) and is
no third-party import (verify's static checks)."""

from __future__ import annotations

import sys

STDLIB = frozenset(sys.stdlib_module_names) | {"__future__"}
