"""Generated gRPC stubs for the kubelet plugin APIs (sources: protos/*.proto; regenerate: python protos/generate.py).

- `dra_v1_pb2*`, `dra_v1beta1_pb2*`: k8s.io.kubelet.pkg.apis.dra.{v1,v1beta1}.DRAPlugin
- `pluginregistration_v1_pb2*`: pluginregistration.Registration
"""
