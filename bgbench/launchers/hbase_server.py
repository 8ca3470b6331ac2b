"""HBase 2.6.1 standalone (master, region server and ZooKeeper in one JVM) and its Thrift
server, on loopback from Maven Central jars, for happybase.

Ready means a probe table takes a put and gives it back over Thrift (`tables()` answers
before hbase:meta is assigned). The master takes 23-35 s to stop on SIGTERM: it is killed
after a grace period, and recovers from its WAL when started again.
"""

from pathlib import Path
from typing import Any

from bgbench.launchers.procs import fetch_jars, free_port, java, running, spawn, stop_pid, wait_for

VERSION = "2.6.1"
# From HBase's bin/hbase for JDK 11 and later.
JVM = [
    "-Dorg.apache.hbase.thirdparty.io.netty.tryReflectionSetAccessible=true",
    "--add-modules", "jdk.unsupported",
    *(f"--add-opens=java.base/{p}=ALL-UNNAMED" for p in (
        "java.io", "java.nio", "sun.nio.ch", "java.lang", "jdk.internal.ref",
        "java.lang.reflect", "java.util", "java.util.concurrent")),
    "--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED",
    "--add-exports=java.security.jgss/sun.security.krb5=ALL-UNNAMED",
    "--add-exports=java.base/sun.net.dns=ALL-UNNAMED",
    "--add-exports=java.base/sun.net.util=ALL-UNNAMED",
]  # fmt: skip


# reload4j (log4j 1.2) finds this on the classpath: INFO to the process's log file.
LOG4J = """log4j.rootLogger=INFO,out
log4j.appender.out=org.apache.log4j.ConsoleAppender
log4j.appender.out.layout=org.apache.log4j.PatternLayout
log4j.appender.out.layout.ConversionPattern=%d{ISO8601} %-5p [%t] %c{2}: %m%n
log4j.logger.org.apache.zookeeper=WARN
"""


def _site(data: Path, zk_port: int, master_port: int, rs_port: int) -> str:
    props = {
        "hbase.cluster.distributed": "false",
        "hbase.rootdir": f"file://{data}/hbase",
        "hbase.tmp.dir": f"{data}/tmp",
        "hbase.zookeeper.property.dataDir": f"{data}/zookeeper",
        "hbase.zookeeper.quorum": "127.0.0.1",
        "hbase.zookeeper.property.clientPort": str(zk_port),
        "hbase.unsafe.stream.capability.enforce": "false",
        "hbase.wal.provider": "filesystem",
        "hbase.master.hostname": "127.0.0.1",
        "hbase.regionserver.hostname": "127.0.0.1",
        "hbase.master.ipc.address": "127.0.0.1",
        "hbase.regionserver.ipc.address": "127.0.0.1",
        "hbase.master.port": str(master_port),
        "hbase.regionserver.port": str(rs_port),
        "hbase.master.info.port": "-1",
        "hbase.regionserver.info.port": "-1",
        "hbase.thrift.info.port": "-1",  # else a web UI on 0.0.0.0:9095, one per machine
        "hbase.master.wait.on.regionservers.maxtostart": "1",
        "hbase.regionserver.thrift.ipaddress": "127.0.0.1",
    }
    body = "".join(
        f"  <property><name>{k}</name><value>{v}</value></property>\n" for k, v in props.items()
    )
    return f'<?xml version="1.0"?>\n<configuration>\n{body}</configuration>\n'


def start(directory: Path, heap: str = "1g") -> dict[str, Any]:
    lib = fetch_jars("hbase", VERSION)
    conf = directory / "conf"
    conf.mkdir(parents=True, exist_ok=True)
    ports = [free_port() for _ in range(4)]
    while len(set(ports)) < 4:
        ports = [free_port() for _ in range(4)]
    zk_port, master_port, rs_port, thrift_port = ports
    (conf / "hbase-site.xml").write_text(_site(directory / "data", zk_port, master_port, rs_port))
    (conf / "log4j.properties").write_text(LOG4J)
    classpath = ":".join([str(conf), *(str(j) for j in sorted(lib.glob("*.jar")))])
    base = [java(), *JVM, "-cp", classpath, f"-Dhbase.log.dir={directory}"]
    master = spawn(
        [*base, f"-Xmx{heap}", "org.apache.hadoop.hbase.master.HMaster", "start"],
        directory, "hbase-master.log",
    )  # fmt: skip
    thrift = spawn(
        [*base, "-Xmx256m", "org.apache.hadoop.hbase.thrift.ThriftServer",
         "-b", "127.0.0.1", "-p", str(thrift_port), "start"],
        directory, "hbase-thrift.log",
    )  # fmt: skip
    info = {
        "server": "hbase", "name": f"HBase {VERSION}", "port": thrift_port,
        "zookeeper_port": zk_port, "pids": [thrift, master], "dir": str(directory),
    }  # fmt: skip
    try:
        wait_for(
            lambda: _put_and_get(thrift_port),
            f"HBase (logs: {directory}/hbase-*.log)",
            180,
            alive=lambda: running(master) and running(thrift),
        )
    except BaseException:
        stop(info)
        raise
    return info


def _put_and_get(port: int) -> bool:
    """A functional probe: a probe table takes a put and gives it back."""
    try:
        import happybase
    except ImportError:
        raise SystemExit("the HBase probe needs happybase: run from bgbench's venv") from None
    try:
        conn = happybase.Connection("127.0.0.1", port, timeout=5000, autoconnect=True)
        try:
            if b"bgbench_probe" not in conn.tables():
                conn.create_table("bgbench_probe", {"f": {}})
            table = conn.table("bgbench_probe")
            table.put(b"r", {b"f:c": b"ok"})
            return bool(table.row(b"r").get(b"f:c") == b"ok")
        finally:
            conn.close()
    except Exception:  # not ready yet: refused, a Thrift error, a region in transition
        return False


def stop(info: dict[str, Any]) -> None:
    thrift, master = info["pids"]
    stop_pid(thrift, 5)
    stop_pid(master, 8)
