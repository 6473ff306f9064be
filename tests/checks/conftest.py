"""The static checks run on the fixture trees the verify tests use: the same fixtures."""

from tests.verify.conftest import (  # noqa: F401  (pytest finds fixtures by name in a conftest)
    _isolated_cache,
    fake_env,
    pinned_upstream,
    surface,
    trees,
    upstream_clone,
    verify_env,
    verify_rules,
)
