"""cdc-ship: not implemented yet (issue #6). Exits 2 with a clear message rather than pretending."""
from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    print("cdc-ship: not implemented yet (issue #6)", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
