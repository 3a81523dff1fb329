"""Until branch s16-values is merged, libs.snapshot.values is a test-only stand-in
(tests/unit/snapshot/values_fallback.py); the real module wins as soon as it exists."""
from tests.unit.snapshot.values_fallback import install

install()
