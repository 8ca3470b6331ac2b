"""Store bindings of the sensor-log workload, registered in "bgbench.sensorlog_stores"."""
