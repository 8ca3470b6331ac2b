"""Store bindings of the Micro workload, one file each, registered as entry points in
pyproject.toml (group "bgbench.micro_stores"); each satisfies store.MicroBinding."""
