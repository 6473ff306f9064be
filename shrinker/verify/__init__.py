"""Stage: verify a pruned tree against upstream (static references, imports, CLI, behaviour).

`verify_tree(tree, upstream_root, checks=..., jobs=2, report_dir=None) -> VerifyResult` is the API
`shrink apply` calls as its gate after each batch (checks=["static"] for the quick subset).
"""

from shrinker.verify.result import CheckResult, VerifyResult
from shrinker.verify.run import ALL_CHECKS, GROUPS, resolve_checks, verify_tree

__all__ = ["ALL_CHECKS", "GROUPS", "CheckResult", "VerifyResult", "resolve_checks", "verify_tree"]
