"""Store bindings of the EHR workload, one file each, registered as entry points in
pyproject.toml (group "bgbench.ehr_stores"); each satisfies store.EHRBinding."""
