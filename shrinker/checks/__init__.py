"""Static checks of a tree against its upstream: facts per file (names bound, attributes set, imports), the
module tree Python would import, platform names, and the static gate apply runs after every batch and verify
runs whole. They judge any tree, so they stand below apply and verify, which both call them."""
