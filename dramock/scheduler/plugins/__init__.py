"""The scheduling framework's plugins: node fit (NodeUnschedulable, NodeAffinity, TaintToleration,
NodeResourcesFit), DynamicResources and its extended-resource part (KEP-5004)."""
