"""Store bindings of the BG workload, one file each, registered as entry points
in pyproject.toml (group "bgbench.bg_stores")."""
