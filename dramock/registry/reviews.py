"""The review kinds of authentication.k8s.io and authorization.k8s.io: create-only, never stored
(apiserver/reviews.py answers them). They share everything but their names."""

from __future__ import annotations

from dramock.registry.kind import Kind

KINDS = (
    Kind("authentication.k8s.io", "v1", "SelfSubjectReview", "selfsubjectreviews", False, verbs=("create",)),
    Kind("authorization.k8s.io", "v1", "SelfSubjectAccessReview", "selfsubjectaccessreviews", False,
         verbs=("create",)),
    Kind("authorization.k8s.io", "v1", "SelfSubjectRulesReview", "selfsubjectrulesreviews", False,
         verbs=("create",)),
    Kind("authorization.k8s.io", "v1", "SubjectAccessReview", "subjectaccessreviews", False, verbs=("create",)),
)
