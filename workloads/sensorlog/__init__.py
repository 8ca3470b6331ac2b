"""The sensor-log workload of Mahmood, Risch and Zhu (workload.py, study.py)."""
