"""What the hosts of an experiment did: samples of CPU, memory, disk and network of every
host (and of the load's and the store's processes on it), their summary over the rated
window, and the resource that bound the experiment.

`model` holds the types (and their wire form); `host` and `processes` sample a host with
psutil, `node_exporter` a remote one through Prometheus' node_exporter; `summary` turns
series into figures and `bottleneck` names what bound the experiment. Nothing here knows a
workload or a store."""
