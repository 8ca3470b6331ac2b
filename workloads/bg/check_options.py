"""`python -m bgbench.workloads.bg.check_options NAME` validates store options read as JSON
from stdin, in its own process, so the coordinator never imports a binding."""

import json
import sys

from bgbench.errors import UserError
from bgbench.workloads.bg.store import make_options


def main() -> int:
    try:
        make_options(sys.argv[1], json.load(sys.stdin))
    except UserError as exc:
        print(exc, file=sys.stderr)
        return 2
    except ImportError as exc:
        print(f"store {sys.argv[1]!r} cannot be loaded here: {exc}", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
