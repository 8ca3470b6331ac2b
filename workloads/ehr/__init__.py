"""The EHR workload of Klein et al.: patients and lab results (workload.py says more)."""
