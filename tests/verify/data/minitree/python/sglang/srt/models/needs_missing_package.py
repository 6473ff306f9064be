# Fails to import in upstream too (its package is not installed): never a regression.
import fixture_package_nobody_installed

EntryClass = None
