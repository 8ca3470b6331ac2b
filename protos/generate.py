"""Regenerate worker_pb2.py and worker_pb2_grpc.py from worker.proto (needs grpcio-tools).

protoc names imports after the proto's path, so the proto is compiled from a
temporary tree where it sits at bgbench/protos/worker.proto.
"""

import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUTPUTS = ("worker_pb2.py", "worker_pb2_grpc.py", "worker_pb2.pyi")


def generate(out_dir: Path) -> list[Path]:
    from grpc_tools import protoc

    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "src" / "bgbench" / "protos"
        tree.mkdir(parents=True)
        shutil.copy(HERE / "worker.proto", tree / "worker.proto")
        gen = Path(tmp) / "gen"
        gen.mkdir()
        args = [
            "protoc",
            f"-I{Path(tmp) / 'src'}",
            f"--python_out={gen}",
            f"--pyi_out={gen}",
            f"--grpc_python_out={gen}",
            "bgbench/protos/worker.proto",
        ]
        if protoc.main(args) != 0:
            raise RuntimeError("protoc failed")
        out = []
        for name in OUTPUTS:
            target = out_dir / name
            shutil.copy(gen / "bgbench" / "protos" / name, target)
            out.append(target)
        return out


if __name__ == "__main__":
    for path in generate(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE):
        print(path)
