# Same as `shrink gpu-bundle --which upstream --upstream pypi:sglang==0.5.23`, written to .gpu-bundle/carry-up23
from pathlib import Path
from shrinker import paths
from shrinker.gpu import bundle
from shrinker.upstream import load
up = "pypi:sglang==0.5.23"
spec = bundle.release_spec(load(up))
kernel = paths.cache_dir() / "downloads" / spec["kernel"]["wheel"]
roots = bundle.tree_roots(["upstream"], upstream=up)
m = bundle.build_bundle(roots, kernel, spec=spec, out=bundle.bundle_dir() / "carry-up23")
print("upstream", spec["upstream"], "deps_from_release", spec["deps_from_release"])
for a in m["archives"]:
    print(f"  {a['file']:28} {a['bytes']/2**20:7.1f} MiB {a['sha256'][:12]} {a['wheels']} dropped={ {k: len(v) for k,v in a['dropped'].items()} }")
print("total MiB", m["total_bytes"]/2**20)
