// @kubernetes/client-node against dramock, with the kubeconfig `dramock kubeconfig` writes (argv[2]):
// list namespaces, create/read/delete a ConfigMap and a ResourceClaim, and read an error as an ApiException.
// Prints one JSON line of results for tests/test_clients.py.
import * as k8s from '@kubernetes/client-node';

const kc = new k8s.KubeConfig();
kc.loadFromFile(process.argv[2]);
const core = kc.makeApiClient(k8s.CoreV1Api);
const custom = kc.makeApiClient(k8s.CustomObjectsApi);
const ns = process.argv[3];
const out = {};

const namespaces = await core.listNamespace();
out.namespaces = namespaces.items.map((n) => n.metadata.name);
const created = await core.createNamespacedConfigMap({
  namespace: ns, body: { metadata: { name: 'from-node' }, data: { lang: 'js' } },
});
out.created = created.metadata.name;
const read = await core.readNamespacedConfigMap({ name: 'from-node', namespace: ns });
out.data = read.data;
const claim = await custom.createNamespacedCustomObject({
  group: 'resource.k8s.io', version: 'v1', namespace: ns, plural: 'resourceclaims',
  body: {
    apiVersion: 'resource.k8s.io/v1', kind: 'ResourceClaim', metadata: { name: 'node-claim' },
    spec: { devices: { requests: [{ name: 'gpu', exactly: { deviceClassName: 'gpu.example.com' } }] } },
  },
});
out.claim = claim.metadata.name;
await core.deleteNamespacedConfigMap({ name: 'from-node', namespace: ns });
try {
  await core.readNamespacedConfigMap({ name: 'from-node', namespace: ns });
  out.error = 'none';
} catch (e) {
  out.error = e instanceof k8s.ApiException ? e.code : String(e);
}
console.log(JSON.stringify(out));
