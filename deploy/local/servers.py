"""The local server launcher of a checkout: bgbench/launchers/servers.py (its docstring
lists the commands), runnable before bgbench is installed, e.g.

    python deploy/local/servers.py fetch cassandra hbase
    python deploy/local/servers.py start postgres DIR
    python deploy/local/servers.py stop DIR
    python deploy/local/servers.py node DIR n2 kill

tests/conftest.py loads this file and uses the launcher's functions through it.
"""

import sys
from pathlib import Path

# The checkout's bgbench package (standard library only, as far as the launchers go).
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bgbench.launchers import nodes
from bgbench.launchers.servers import *  # noqa: F403
from bgbench.launchers.servers import main

if __name__ == "__main__":
    if sys.argv[1:2] and sys.argv[1] in nodes.COMMANDS:  # nodes DIR, node DIR NAME ACTION
        nodes.main(sys.argv[1:])
    else:
        main(sys.argv[1:])
