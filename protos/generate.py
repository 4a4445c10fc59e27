"""Regenerate dramock/kubelet/proto/*_pb2*.py from protos/*.proto.

    pip install grpcio-tools && python protos/generate.py

protoc writes absolute imports (`import dra_v1_pb2`); they are rewritten to package-relative ones so the
stubs live inside `dramock.kubelet.proto`. A `# ruff: noqa` header keeps the linter off generated code.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from grpc_tools import protoc

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "dramock" / "kubelet" / "proto"


def main() -> int:
    protos = sorted(p.name for p in HERE.glob("*.proto"))
    args = ["grpc_tools.protoc", f"-I{HERE}", f"--python_out={OUT}", f"--pyi_out={OUT}",
            f"--grpc_python_out={OUT}", *protos]
    if protoc.main(args) != 0:
        return 1
    modules = [Path(p).stem + "_pb2" for p in protos]
    for f in sorted(OUT.glob("*_pb2*.py*")):
        text = f.read_text()
        for m in modules:
            text = re.sub(rf"^import {m} as ", f"from . import {m} as ", text, flags=re.M)
        if not text.startswith("# ruff: noqa"):
            text = "# ruff: noqa\n" + text
        f.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
