"""A session defined in a settings file, without code, run end to end on SQLite."""

import json
import subprocess
import sys
from pathlib import Path

SETTINGS = """\
bg:
  database:
    confperc: 0.8
  workload:
    mix: {BrowseFriends: 1}
    sessions:
      BrowseFriends:
        start: home
        states:
          home: {step: "VP(self)", next: "LF(self)"}
          "LF(self)":
            next: {"VP(friend)": 0.9, end: 0.1}
          "VP(friend)":
            next: {"VTR(friend)": {p: 1, think: 1}}
          "VTR(friend)":
            next: {"LF(self)": 0.4, "AFR": 0.3, end: 0.3}
          "AFR": {}
"""


def test_a_user_session_from_a_settings_file_runs(tmp_path: Path) -> None:
    settings = tmp_path / "browse.yaml"
    settings.write_text(SETTINGS)
    proc = subprocess.run(
        [
            sys.executable, "-m", "bgbench", "run", "--config", str(settings),
            "--store", "sqlite", "--threads", "2", "--duration", "2", "--users", "300",
            "--results", str(tmp_path / "results"), "--json",
            "-p", f"store.options.path={tmp_path / 'bg.sqlite'}",
        ],
        capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["sessions"] > 0 and result["errors"] == 0 and not result["fault"]
    assert result["reads"] > 0 and result["unpredictable_reads"] == 0
    performed = {a["action"]: a["count"] for a in result["per_action"]}
    # Only the session's actions, each of them: nothing else is in the mix.
    assert set(performed) == {"VP", "LF", "VTR", "AFR"}
    # Every session starts with the socialite's own profile.
    assert performed["VP"] >= result["sessions"]
