"""Regenerate dramock/apiserver/pb/ (Kubernetes and gnostic OpenAPI v2 messages) from protos/k8s/.

    pip install grpcio-tools && python protos/generate_k8s.py

The .proto files keep upstream's import paths (`k8s.io/api/core/v1/generated.proto`), so protoc writes
modules such as `k8s.io.api.core.v1.generated_pb2`; their imports are rewritten to live under
`dramock.apiserver.pb`, and every directory gets an `__init__.py` so setuptools packages them.
"""

from __future__ import annotations

import re
import sys
from importlib import resources
from pathlib import Path

from grpc_tools import protoc

HERE = Path(__file__).resolve().parent / "k8s"
OUT = HERE.parent.parent / "dramock" / "apiserver" / "pb"
PACKAGE = "dramock.apiserver.pb"


def main() -> int:
    protos = sorted(str(p.relative_to(HERE)) for p in HERE.rglob("*.proto"))
    for old in OUT.rglob("*_pb2.py"):
        old.unlink()
    well_known = resources.files("grpc_tools") / "_proto"  # google/protobuf/any.proto for gnostic
    if protoc.main(["grpc_tools.protoc", f"-I{HERE}", f"-I{well_known}", f"--python_out={OUT}", *protos]) != 0:
        return 1
    for f in sorted(OUT.rglob("*_pb2.py")):
        text = re.sub(r"^from ((?:k8s|openapiv2)[\w.]*) import ", rf"from {PACKAGE}.\1 import ", f.read_text(),
                      flags=re.M)
        f.write_text("# ruff: noqa\n" + text.removeprefix("# ruff: noqa\n"))
        for d in f.relative_to(OUT).parents:
            init = OUT / d / "__init__.py"
            if not init.exists():
                init.write_text("")
    return 0


if __name__ == "__main__":
    sys.exit(main())
