"""Authentication and authorization of the secure port: who a request comes from (authn, certs, tokens) and
what it may do (RBAC, the Node authorizer), as kube-apiserver decides them."""
