"""OpenAPI documents served at /openapi/v2 and /openapi/v3, built from the 1.37 definitions.

`schemas.defs` holds the definitions in kubernetes-validate's "local" JSON-schema flavour (nullable
type lists, `#/$defs/` refs, `oneOf` for Quantity/IntOrString, apiVersion/kind enums). This module turns
them back into what a kube-apiserver publishes: Swagger 2.0 with `#/definitions/` refs, and one OpenAPI
3.0 document per group-version with `#/components/schemas/` refs, `allOf` wrappers around refs that carry
siblings, and paths whose operations carry `x-kubernetes-action` / `x-kubernetes-group-version-kind`
(kubectl explain finds a resource's schema through them; kubectl's server-side field validation check
looks for the `fieldValidation` query parameter on the kind's PATCH operation).

Documents are large: they are built once per process and cached with their ETag/hash.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import re
from typing import Any

from dramock import KUBERNETES_VERSION
from dramock.apiserver import openapi_proto
from dramock.schemas import defs, registry
from dramock.schemas.registry import Kind

Obj = dict[str, Any]

META = "io.k8s.apimachinery.pkg.apis.meta.v1."
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"

V2_CONTENT_TYPE = "application/json"
V3_CONTENT_TYPE = "application/json"

# The upstream definitions of the two "oneOf" types (kubernetes-validate rewrites them as oneOf).
_SPECIAL_DEFINITIONS: dict[str, Obj] = {
    QUANTITY: {
        "description": (
            "Quantity is a fixed-point representation of a number. It provides convenient "
            "marshaling/unmarshaling in JSON and YAML, in addition to String() and AsInt64() accessors.\n\n"
            "The serialization format is:\n\n```\n<quantity>        ::= <signedNumber><suffix>\n\n"
            "\t(Note that <suffix> may be empty, from the \"\" case in <decimalSI>.)\n\n"
            "<digit>           ::= 0 | 1 | ... | 9 <digits>          ::= <digit> | <digit><digits> "
            "<number>          ::= <digits> | <digits>.<digits> | <digits>. | .<digits> <sign>            "
            "::= \"+\" | \"-\" <signedNumber>    ::= <number> | <sign><number> <suffix>          "
            "::= <binarySI> | <decimalExponent> | <decimalSI> <binarySI>        ::= Ki | Mi | Gi | Ti | Pi | Ei\n\n"
            "\t(International System of units; See: http://physics.nist.gov/cuu/Units/binary.html)\n\n"
            "<decimalSI>       ::= m | \"\" | k | M | G | T | P | E\n\n"
            "\t(Note that 1024 = 1Ki but 1000 = 1k; I didn't choose the capitalization.)\n\n"
            "<decimalExponent> ::= \"e\" <signedNumber> | \"E\" <signedNumber>\n```\n\n"
            "No matter which of the three exponent forms is used, no quantity may represent a number "
            "greater than 2^63-1 in magnitude, nor may it have more than 3 decimal places. Numbers larger "
            "or more precise will be capped or rounded up. (E.g.: 0.1m will rounded up to 1m.) This may be "
            "extended in the future if we require larger or smaller quantities.\n\n"
            "When a Quantity is parsed from a string, it will remember the type of suffix it had, and will "
            "use the same type again when it is serialized.\n\n"
            "Before serializing, Quantity will be put in \"canonical form\". This means that "
            "Exponent/suffix will be adjusted up or down (with a corresponding increase or decrease in "
            "Mantissa) such that:\n\n- No precision is lost - No fractional digits will be emitted - The "
            "exponent (or suffix) is as large as possible.\n\nThe sign will be omitted unless the number "
            "is negative.\n\nExamples:\n\n- 1.5 will be serialized as \"1500m\" - 1.5Gi will be "
            "serialized as \"1536Mi\"\n\nNote that the quantity will NEVER be internally represented by "
            "a floating point number. That is the whole point of this exercise.\n\nNon-canonical values "
            "will still parse as long as they are well formed, but will be re-emitted in their canonical "
            "form. (So always use canonical form, or don't diff.)\n\nThis format is intended to make it "
            "difficult to use these numbers without writing some sort of special handling code in the "
            "hopes that that will cause implementors to also use a fixed point implementation."
        ),
        "type": "string",
    },
    INT_OR_STRING: {
        "description": (
            "IntOrString is a type that can hold an int32 or a string.  When used in JSON or YAML "
            "marshalling and unmarshalling, it produces or consumes the inner type.  This allows you to "
            "have, for example, a JSON field that can accept a name or number."
        ),
        "format": "int-or-string",
        "type": "string",
    },
}

# Meta types every group-version document carries (used by the paths' request/response bodies).
_PATH_DEFINITIONS = (
    META + "APIResourceList",
    META + "DeleteOptions",
    META + "Patch",
    META + "Status",
    META + "WatchEvent",
)

# ---------------------------------------------------------------------------------------------------
# Schema conversion


def _convert(schema: Any, ref_prefix: str, v3: bool, prop_name: str | None = None) -> Any:
    """Convert one local-flavour schema node (recursively) to OpenAPI v2 or v3."""
    if isinstance(schema, list):
        return [_convert(s, ref_prefix, v3) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: Obj = {}
    for key, value in schema.items():
        if key == "$ref":
            out[key] = ref_prefix + value[len(defs.REF_PREFIX):]
        elif key == "type":
            types = [value] if isinstance(value, str) else [t for t in value if t != "null"]
            if types:
                out[key] = types[0]
        elif key == "enum" and prop_name in ("apiVersion", "kind"):
            continue  # added by the JSON-schema generator; upstream publishes no enum here
        elif key == "properties":
            out[key] = {name: _convert(sub, ref_prefix, v3, name) for name, sub in value.items()}
        elif key in ("items", "additionalProperties", "not"):
            out[key] = _convert(value, ref_prefix, v3)
        elif key in ("allOf", "anyOf", "oneOf"):
            out[key] = [_convert(s, ref_prefix, v3) for s in value]
        else:
            out[key] = copy.deepcopy(value)
    if v3 and "$ref" in out and len(out) > 1:
        # OpenAPI 3.0 ignores siblings of $ref: upstream wraps the ref in allOf.
        ref = out.pop("$ref")
        out = {"allOf": [{"$ref": ref}], **out}
    return dict(sorted(out.items()))


def _definition(name: str, ref_prefix: str, v3: bool) -> Obj:
    if name in _SPECIAL_DEFINITIONS:
        return copy.deepcopy(_SPECIAL_DEFINITIONS[name])
    return _convert(defs.definition(name), ref_prefix, v3)


def _refs_in(schema: Any, out: set[str]) -> None:
    if isinstance(schema, dict):
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith(defs.REF_PREFIX):
            out.add(ref[len(defs.REF_PREFIX):])
        for v in schema.values():
            _refs_in(v, out)
    elif isinstance(schema, list):
        for v in schema:
            _refs_in(v, out)


def closure(roots: list[str]) -> list[str]:
    """All definition names reachable from `roots` (roots included), sorted."""
    seen: set[str] = set()
    stack = list(roots)
    while stack:
        name = stack.pop()
        if name in seen or name not in defs.definitions():
            continue
        seen.add(name)
        if name in _SPECIAL_DEFINITIONS:
            continue
        refs: set[str] = set()
        _refs_in(defs.definition(name), refs)
        stack.extend(refs - seen)
    return sorted(seen)


def _kind_roots(kinds: list[Kind]) -> list[str]:
    roots = list(_PATH_DEFINITIONS)
    for k in kinds:
        roots.append(k.definition)
        lst = defs.kind_definition(k.group, k.version, k.list_kind)
        if lst:
            roots.append(lst)
        if "binding" in k.subresources:
            roots.append("io.k8s.api.core.v1.Binding")
    return roots


# ---------------------------------------------------------------------------------------------------
# Paths (a neutral model rendered as v2 or v3)

_P = {
    "allowWatchBookmarks": ("boolean", (
        "allowWatchBookmarks requests watch events with type \"BOOKMARK\". Servers that do not implement "
        "bookmarks may ignore this flag and bookmarks are sent at the server's discretion. Clients should "
        "not assume bookmarks are returned at any specific interval, nor may they assume the server will "
        "send any BOOKMARK event during a session. If this is not a watch, this field is ignored.")),
    "continue": ("string", (
        "The continue option should be set when retrieving more results from the server. Since this value "
        "is server defined, clients may only use the continue value from a previous query result with "
        "identical query parameters (except for the value of continue) and the server may reject a "
        "continue value it does not recognize. If the specified continue value is no longer valid whether "
        "due to expiration (generally five to fifteen minutes) or a configuration change on the server, "
        "the server will respond with a 410 ResourceExpired error together with a continue token. If the "
        "client needs a consistent list, it must restart their list without the continue field. "
        "Otherwise, the client may send another list request with the token received with the 410 error, "
        "the server will respond with a list starting from the next key, but from the latest snapshot, "
        "which is inconsistent from the previous list results - objects that are created, modified, or "
        "deleted after the first list request will be included in the response, as long as their keys "
        "are after the \"next key\".\n\nThis field is not supported when watch is true. Clients may start "
        "a watch from the last resourceVersion value returned by the server and not miss any "
        "modifications.")),
    "dryRun": ("string", (
        "When present, indicates that modifications should not be persisted. An invalid or unrecognized "
        "dryRun directive will result in an error response and no further processing of the request. "
        "Valid values are: - All: all dry run stages will be processed")),
    "fieldManager": ("string", (
        "fieldManager is a name associated with the actor or entity that is making these changes. The "
        "value must be less than or 128 characters long, and only contain printable characters, as "
        "defined by https://golang.org/pkg/unicode/#IsPrint.")),
    "fieldManager.patch": ("string", (
        "fieldManager is a name associated with the actor or entity that is making these changes. The "
        "value must be less than or 128 characters long, and only contain printable characters, as "
        "defined by https://golang.org/pkg/unicode/#IsPrint. This field is required for apply requests "
        "(application/apply-patch) but optional for non-apply patch types (JsonPatch, MergePatch, "
        "StrategicMergePatch).")),
    "fieldSelector": ("string", (
        "A selector to restrict the list of returned objects by their fields. Defaults to everything.")),
    "fieldValidation": ("string", (
        "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) "
        "containing unknown or duplicate fields. Valid values are: - Ignore: This will ignore any unknown "
        "fields that are silently dropped from the object, and will ignore all but the last duplicate "
        "field that the decoder encounters. This is the default behavior prior to v1.23. - Warn: This "
        "will send a warning via the standard warning response header for each unknown field that is "
        "dropped from the object, and for each duplicate field that is encountered. The request will "
        "still succeed if there are no other errors, and will only persist the last of any duplicate "
        "fields. This is the default in v1.23+ - Strict: This will fail the request with a BadRequest "
        "error if any unknown fields would be dropped from the object, or if any duplicate fields are "
        "present. The error returned from the server will contain all unknown and duplicate fields "
        "encountered.")),
    "force": ("boolean", (
        "Force is going to \"force\" Apply requests. It means user will re-acquire conflicting fields "
        "owned by other people. Force flag must be unset for non-apply patch requests.")),
    "gracePeriodSeconds": ("integer", (
        "The duration in seconds before the object should be deleted. Value must be non-negative "
        "integer. The value zero indicates delete immediately. If this value is nil, the default grace "
        "period for the specified type will be used. Defaults to a per object value if not specified. "
        "zero means delete immediately.")),
    "ignoreStoreReadErrorWithClusterBreakingPotential": ("boolean", (
        "if set to true, it will trigger an unsafe deletion of the resource in case the normal deletion "
        "flow fails with a corrupt object error. A resource is considered corrupt if it can not be "
        "retrieved from the underlying storage successfully because of a) its data can not be "
        "transformed e.g. decryption failure, or b) it fails to decode into an object. NOTE: unsafe "
        "deletion ignores finalizer constraints, skips precondition checks, and removes the object from "
        "the storage. WARNING: This may potentially break the cluster if the workload associated with "
        "the resource being unsafe-deleted relies on normal deletion flow. Use only if you REALLY know "
        "what you are doing. The default value is false, and the user must opt in to enable it")),
    "labelSelector": ("string", (
        "A selector to restrict the list of returned objects by their labels. Defaults to everything.")),
    "limit": ("integer", (
        "limit is a maximum number of responses to return for a list call. If more items exist, the "
        "server will set the `continue` field on the list metadata to a value that can be used with the "
        "same initial query to retrieve the next set of results. Setting a limit may return fewer than "
        "the requested amount of items (up to zero items) in the event all requested objects are "
        "filtered out and clients should only use the presence of the continue field to determine "
        "whether more results are available. Servers may choose not to support the limit argument and "
        "will return all of the available results. If limit is specified and the continue field is "
        "empty, clients may assume that no more results are available. This field is not supported if "
        "watch is true.\n\nThe server guarantees that the objects returned when using continue will be "
        "identical to issuing a single list call without a limit - that is, no objects created, "
        "modified, or deleted after the first request is issued will be included in any subsequent "
        "continued requests. This is sometimes referred to as a consistent snapshot, and ensures that a "
        "client that is using limit to receive smaller chunks of a very large result can ensure they see "
        "all possible objects. If objects are updated during a chunked list the version of the object "
        "that was present at the time the first list result was calculated is returned.")),
    "orphanDependents": ("boolean", (
        "Deprecated: please use the PropagationPolicy, this field will be deprecated in 1.7. Should the "
        "dependent objects be orphaned. If true/false, the \"orphan\" finalizer will be added "
        "to/removed from the object's finalizers list. Either this field or PropagationPolicy may be "
        "set, but not both.")),
    "propagationPolicy": ("string", (
        "Whether and how garbage collection will be performed. Either this field or OrphanDependents may "
        "be set, but not both. The default policy is decided by the existing finalizer set in the "
        "metadata.finalizers and the resource-specific default policy. Acceptable values are: 'Orphan' "
        "- orphan the dependents; 'Background' - allow the garbage collector to delete the dependents "
        "in the background; 'Foreground' - a cascading policy that deletes all dependents in the "
        "foreground.")),
    "resourceVersion": ("string", (
        "resourceVersion sets a constraint on what resource versions a request may be served from. See "
        "https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for "
        "details.\n\nDefaults to unset")),
    "resourceVersionMatch": ("string", (
        "resourceVersionMatch determines how resourceVersion is applied to list calls. It is highly "
        "recommended that resourceVersionMatch be set for list calls where resourceVersion is set See "
        "https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for "
        "details.\n\nDefaults to unset")),
    "sendInitialEvents": ("boolean", (
        "`sendInitialEvents=true` may be set together with `watch=true`. In that case, the watch stream "
        "will begin with synthetic events to produce the current state of objects in the collection. "
        "Once all such events have been sent, a synthetic \"Bookmark\" event  will be sent. The bookmark "
        "will report the ResourceVersion (RV) corresponding to the set of objects, and be marked with "
        "`\"k8s.io/initial-events-end\": \"true\"` annotation. Afterwards, the watch stream will proceed "
        "as usual, sending watch events corresponding to changes (subsequent to the RV) to objects "
        "watched.\n\nWhen `sendInitialEvents` option is set, we require `resourceVersionMatch` option "
        "to also be set. The semantic of the watch request is as following: - `resourceVersionMatch` = "
        "NotOlderThan\n  is interpreted as \"data at least as new as the provided `resourceVersion`\"\n"
        "  and the bookmark event is send when the state is synced\n  to a `resourceVersion` at least as "
        "fresh as the one provided by the ListOptions.\n  If `resourceVersion` is unset, this is "
        "interpreted as \"consistent read\" and the\n  bookmark event is send when the state is synced "
        "at least to the moment\n  when request started being processed.\n- `resourceVersionMatch` set "
        "to any other value or unset\n  Invalid error is returned.\n\nDefaults to true if "
        "`resourceVersion=\"\"` or `resourceVersion=\"0\"` (for backward compatibility reasons) and to "
        "false otherwise.")),
    "timeoutSeconds": ("integer", (
        "Timeout for the list/watch call. This limits the duration of the call, regardless of any "
        "activity or inactivity.")),
    "watch": ("boolean", (
        "Watch for changes to the described resources and return them as a stream of add, update, and "
        "remove notifications. Specify resourceVersion.")),
    "pretty": ("string", (
        "If 'true', then the output is pretty printed. Defaults to 'false' unless the user-agent "
        "indicates a browser or command-line HTTP tool (curl and wget).")),
}

_LIST_PARAMS = ("allowWatchBookmarks", "continue", "fieldSelector", "labelSelector", "limit",
                "resourceVersion", "resourceVersionMatch", "sendInitialEvents", "timeoutSeconds", "watch")
_DELETECOLLECTION_PARAMS = ("continue", "dryRun", "fieldSelector", "gracePeriodSeconds",
                            "ignoreStoreReadErrorWithClusterBreakingPotential", "labelSelector", "limit",
                            "orphanDependents", "propagationPolicy", "resourceVersion", "resourceVersionMatch",
                            "sendInitialEvents", "timeoutSeconds")
_WRITE_PARAMS = ("dryRun", "fieldManager", "fieldValidation")
_PATCH_PARAMS = ("dryRun", "fieldManager.patch", "fieldValidation", "force")
_DELETE_PARAMS = ("dryRun", "gracePeriodSeconds", "ignoreStoreReadErrorWithClusterBreakingPotential",
                  "orphanDependents", "propagationPolicy")

PATCH_CONTENT_TYPES = ("application/apply-patch+cbor", "application/apply-patch+yaml",
                       "application/json-patch+json", "application/merge-patch+json",
                       "application/strategic-merge-patch+json")
_OBJECT_MEDIA = ("application/cbor", "application/json", "application/vnd.kubernetes.protobuf",
                 "application/yaml")
_LIST_MEDIA = ("application/cbor", "application/cbor-seq", "application/json", "application/json;stream=watch",
               "application/vnd.kubernetes.protobuf", "application/vnd.kubernetes.protobuf;stream=watch",
               "application/yaml")
_WATCH_MEDIA = ("application/cbor-seq", "application/json", "application/json;stream=watch",
                "application/vnd.kubernetes.protobuf", "application/vnd.kubernetes.protobuf;stream=watch")


def _camel(s: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in re.split(r"[.\-]", s) if p)


def _group_camel(group: str) -> str:
    if not group:
        return "Core"
    return _camel(group.removesuffix(".k8s.io").removesuffix(".io"))


def _tag(group: str, version: str) -> str:
    g = group.removesuffix(".k8s.io").replace(".", "_").replace("-", "_") if group else "core"
    return f"{g}_{version}"


def _gv_prefix(group: str, version: str) -> str:
    return f"/apis/{group}/{version}" if group else f"/api/{version}"


def _op(method: str, action: str, description: str, op_id: str, kind: Kind | None, *, query=(),
        body: str | None = None, body_required: bool = True, body_media=("*/*",),
        responses: tuple[tuple[str, str | None], ...] = (), media=_OBJECT_MEDIA,
        gvk: tuple[str, str, str] | None = None) -> Obj:
    if gvk is None and kind is not None:
        gvk = (kind.group, kind.version, kind.kind)
    return {
        "method": method, "action": action, "description": description, "operationId": op_id,
        "query": tuple(query), "body": body, "body_required": body_required, "body_media": body_media,
        "responses": responses, "media": media, "gvk": gvk,
    }


def _kind_paths(k: Kind) -> list[tuple[str, list[str], list[str], list[Obj]]]:
    """(path, path params, extra path-level query params, operations) for one kind."""
    base = _gv_prefix(k.group, k.version)
    prefix = _group_camel(k.group) + _camel(k.version)
    ns = "Namespaced" if k.namespaced else ""
    obj = k.definition
    lst = defs.kind_definition(k.group, k.version, k.list_kind) or obj
    status = META + "Status"
    deleted = obj if k.return_deleted_object else status
    coll = f"{base}/namespaces/{{namespace}}/{k.plural}" if k.namespaced else f"{base}/{k.plural}"
    coll_params = ["namespace"] if k.namespaced else []
    item_params = ["name", *coll_params]
    out: list[tuple[str, list[str], list[str], list[Obj]]] = []

    out.append((coll, coll_params, [], [
        _op("delete", "deletecollection", f"delete collection of {k.kind}",
            f"delete{prefix}Collection{ns}{k.kind}", k, query=_DELETECOLLECTION_PARAMS,
            body=META + "DeleteOptions", body_required=False, responses=(("200", status),)),
        _op("get", "list", f"list or watch objects of kind {k.kind}", f"list{prefix}{ns}{k.kind}", k,
            query=_LIST_PARAMS, responses=(("200", lst),), media=_LIST_MEDIA),
        _op("post", "post", f"create a {k.kind}", f"create{prefix}{ns}{k.kind}", k, query=_WRITE_PARAMS,
            body=obj, responses=(("200", obj), ("201", obj), ("202", obj))),
    ]))
    out.append((f"{coll}/{{name}}", item_params, [], [
        _op("delete", "delete", f"delete a {k.kind}", f"delete{prefix}{ns}{k.kind}", k,
            query=_DELETE_PARAMS, body=META + "DeleteOptions", body_required=False,
            responses=(("200", deleted), ("202", deleted))),
        _op("get", "get", f"read the specified {k.kind}", f"read{prefix}{ns}{k.kind}", k,
            responses=(("200", obj),)),
        _op("patch", "patch", f"partially update the specified {k.kind}", f"patch{prefix}{ns}{k.kind}", k,
            query=_PATCH_PARAMS, body=META + "Patch", body_media=PATCH_CONTENT_TYPES,
            responses=(("200", obj), ("201", obj))),
        _op("put", "put", f"replace the specified {k.kind}", f"replace{prefix}{ns}{k.kind}", k,
            query=_WRITE_PARAMS, body=obj, responses=(("200", obj), ("201", obj))),
    ]))
    for sub in k.subresources:
        path = f"{coll}/{{name}}/{sub}"
        sub_camel = _camel(sub)
        if sub == "status":
            out.append((path, item_params, [], [
                _op("get", "get", f"read status of the specified {k.kind}",
                    f"read{prefix}{ns}{k.kind}Status", k, responses=(("200", obj),)),
                _op("patch", "patch", f"partially update status of the specified {k.kind}",
                    f"patch{prefix}{ns}{k.kind}Status", k, query=_PATCH_PARAMS, body=META + "Patch",
                    body_media=PATCH_CONTENT_TYPES, responses=(("200", obj), ("201", obj))),
                _op("put", "put", f"replace status of the specified {k.kind}",
                    f"replace{prefix}{ns}{k.kind}Status", k, query=_WRITE_PARAMS, body=obj,
                    responses=(("200", obj), ("201", obj))),
            ]))
        elif sub == "finalize":
            out.append((path, item_params, [], [
                _op("put", "put", f"replace finalize of the specified {k.kind}",
                    f"replace{prefix}{ns}{k.kind}{sub_camel}", k, query=_WRITE_PARAMS, body=obj,
                    responses=(("200", obj), ("201", obj))),
            ]))
        elif sub == "scale":
            scale = "io.k8s.api.autoscaling.v1.Scale"
            gvk = ("autoscaling", "v1", "Scale")
            out.append((path, item_params, [], [
                _op("get", "get", f"read scale of the specified {k.kind}", f"read{prefix}{ns}{k.kind}Scale",
                    None, responses=(("200", scale),), gvk=gvk),
                _op("patch", "patch", f"partially update scale of the specified {k.kind}",
                    f"patch{prefix}{ns}{k.kind}Scale", None, query=_PATCH_PARAMS, body=META + "Patch",
                    body_media=PATCH_CONTENT_TYPES, responses=(("200", scale), ("201", scale)), gvk=gvk),
                _op("put", "put", f"replace scale of the specified {k.kind}", f"replace{prefix}{ns}{k.kind}Scale",
                    None, query=_WRITE_PARAMS, body=scale, responses=(("200", scale), ("201", scale)), gvk=gvk),
            ]))
        elif sub == "binding":
            binding = "io.k8s.api.core.v1.Binding"
            out.append((path, item_params, [], [
                _op("post", "post", f"create binding of a {k.kind}", f"create{prefix}{ns}{k.kind}Binding",
                    None, query=_WRITE_PARAMS, body=binding,
                    responses=(("200", binding), ("201", binding), ("202", binding)),
                    gvk=("", "v1", "Binding")),
            ]))
    if k.namespaced:
        out.append((f"{base}/{k.plural}", [], list(_LIST_PARAMS), [
            _op("get", "list", f"list or watch objects of kind {k.kind}",
                f"list{prefix}{k.kind}ForAllNamespaces", k, responses=(("200", lst),), media=_LIST_MEDIA),
        ]))
    watch_event = META + "WatchEvent"
    wcoll = (f"{base}/watch/namespaces/{{namespace}}/{k.plural}" if k.namespaced
             else f"{base}/watch/{k.plural}")
    out.append((wcoll, coll_params, list(_LIST_PARAMS), [
        _op("get", "watchlist",
            f"watch individual changes to a list of {k.kind}. deprecated: use the 'watch' parameter with a "
            "list operation instead.", f"watch{prefix}{ns}{k.kind}List", k,
            responses=(("200", watch_event),), media=_WATCH_MEDIA),
    ]))
    out.append((f"{wcoll}/{{name}}", item_params, list(_LIST_PARAMS), [
        _op("get", "watch",
            f"watch changes to an object of kind {k.kind}. deprecated: use the 'watch' parameter with a "
            "list operation instead, filtered to a single item with the 'fieldSelector' parameter.",
            f"watch{prefix}{ns}{k.kind}", k, responses=(("200", watch_event),), media=_WATCH_MEDIA),
    ]))
    if k.namespaced:
        out.append((f"{base}/watch/{k.plural}", [], list(_LIST_PARAMS), [
            _op("get", "watchlist",
                f"watch individual changes to a list of {k.kind}. deprecated: use the 'watch' parameter "
                "with a list operation instead.", f"watch{prefix}{k.kind}ListForAllNamespaces", k,
                responses=(("200", watch_event),), media=_WATCH_MEDIA),
        ]))
    return _served_operations(k, out)


# Operation action -> the verb a kind must serve for it (subresource operations are kept as they are).
_ACTION_VERBS = {"deletecollection": "deletecollection", "list": "list", "post": "create", "delete": "delete",
                 "get": "get", "patch": "patch", "put": "update", "watch": "watch", "watchlist": "watch"}


def _served_operations(k: Kind, paths: list[tuple[str, list[str], list[str], list[Obj]]]) -> list:
    """Only the operations of the kind's verbs (e.g. create alone for the self reviews)."""
    if set(k.verbs) >= set(_ACTION_VERBS.values()):
        return paths
    out = []
    for path, params, query, ops in paths:
        is_sub = path.count("{name}/") > 0
        kept = [op for op in ops if is_sub or _ACTION_VERBS.get(op["action"], op["action"]) in k.verbs]
        if kept:
            out.append((path, params, query, kept))
    return out


def _path_param_desc(name: str, kind: Kind, path: str) -> str:
    if name == "namespace":
        return "object name and auth scope, such as for teams and projects"
    if path.endswith("/binding"):
        return "name of the Binding"
    return f"name of the {kind.kind}"


_STATUS_TEXT = {"200": "OK", "201": "Created", "202": "Accepted"}


def _render_param_v3(name: str) -> Obj:
    typ, desc = _P[name]
    return {"description": desc, "in": "query", "name": name.split(".")[0],
            "schema": {"type": typ, "uniqueItems": True}}


def _render_param_v2(name: str) -> Obj:
    typ, desc = _P[name]
    return {"description": desc, "in": "query", "name": name.split(".")[0], "type": typ,
            "uniqueItems": True}


def _render_paths(kinds: list[Kind], group: str, version: str, v3: bool) -> Obj:
    prefix = "#/components/schemas/" if v3 else "#/definitions/"
    tag = _tag(group, version)
    paths: dict[str, Obj] = {}

    root_op = {
        "description": "get available resources",
        "operationId": f"get{_group_camel(group)}{_camel(version)}APIResources",
        "tags": [tag],
    }
    root_schema = {"$ref": prefix + META + "APIResourceList"}
    if v3:
        root_op["responses"] = {
            "200": {"content": {m: {"schema": root_schema} for m in
                                ("application/json", "application/vnd.kubernetes.protobuf", "application/yaml")},
                    "description": "OK"},
            "401": {"description": "Unauthorized"},
        }
    else:
        root_op.update({
            "consumes": ["application/json", "application/yaml", "application/vnd.kubernetes.protobuf"],
            "produces": ["application/json", "application/yaml", "application/vnd.kubernetes.protobuf"],
            "responses": {"200": {"description": "OK", "schema": root_schema},
                          "401": {"description": "Unauthorized"}},
            "schemes": ["https"],
        })
        root_op = dict(sorted(root_op.items()))
    paths[_gv_prefix(group, version) + "/"] = {"get": root_op}

    for k in kinds:
        for path, path_params, level_query, ops in _kind_paths(k):
            item: Obj = {}
            for op in ops:
                item[op["method"]] = _render_op(op, prefix, tag, v3)
            params: list[Obj] = []
            for pp in path_params:
                p: Obj = {"description": _path_param_desc(pp, k, path), "in": "path", "name": pp,
                          "required": True}
                if v3:
                    p["schema"] = {"type": "string", "uniqueItems": True}
                else:
                    p.update({"type": "string", "uniqueItems": True})
                params.append(p)
            render = _render_param_v3 if v3 else _render_param_v2
            params.append(render("pretty"))
            params.extend(render(q) for q in level_query)
            params.sort(key=lambda p: p["name"])
            item["parameters"] = params
            paths[path] = dict(sorted(item.items()))
    return dict(sorted(paths.items()))


def _render_op(op: Obj, prefix: str, tag: str, v3: bool) -> Obj:
    render = _render_param_v3 if v3 else _render_param_v2
    out: Obj = {"description": op["description"], "operationId": op["operationId"]}
    params = [render(q) for q in op["query"]]
    if v3:
        if params:
            out["parameters"] = params
        if op["body"]:
            rb: Obj = {"content": {m: {"schema": {"$ref": prefix + op["body"]}} for m in op["body_media"]}}
            if op["body_required"]:
                rb["required"] = True
            out["requestBody"] = rb
        responses: Obj = {}
        for code, schema in op["responses"]:
            resp: Obj = {"description": _STATUS_TEXT[code]}
            if schema:
                resp = {"content": {m: {"schema": {"$ref": prefix + schema}} for m in op["media"]}, **resp}
            responses[code] = resp
        responses["401"] = {"description": "Unauthorized"}
        out["responses"] = responses
    else:
        if op["body"]:
            body: Obj = {"in": "body", "name": "body", "schema": {"$ref": prefix + op["body"]}}
            if op["body_required"]:
                body["required"] = True
            params.insert(0, body)
        if params:
            out["parameters"] = params
        out["consumes"] = list(op["body_media"]) if op["body"] else ["*/*"]
        out["produces"] = [m for m in op["media"] if m != "application/cbor-seq"]
        responses = {}
        for code, schema in op["responses"]:
            resp = {"description": _STATUS_TEXT[code]}
            if schema:
                resp["schema"] = {"$ref": prefix + schema}
            responses[code] = resp
        responses["401"] = {"description": "Unauthorized"}
        out["responses"] = responses
        out["schemes"] = ["https"]
    out["tags"] = [tag]
    out["x-kubernetes-action"] = op["action"]
    if op["gvk"]:
        g, v, kd = op["gvk"]
        out["x-kubernetes-group-version-kind"] = {"group": g, "kind": kd, "version": v}
    return dict(sorted(out.items()))


# ---------------------------------------------------------------------------------------------------
# Documents

_SECURITY_SCHEME = {"BearerToken": {"description": "Bearer Token authentication", "in": "header",
                                    "name": "authorization", "type": "apiKey"}}


def _digest(body: bytes) -> str:
    """Upstream's OpenAPI hash: uppercase hex SHA-512 of the serialized document."""
    return hashlib.sha512(body).hexdigest().upper()


def _serialize(doc: Obj) -> bytes:
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode()


def v2_document() -> Obj:
    """Swagger 2.0 for every served kind."""
    kinds = list(registry.KINDS)
    paths: Obj = {}
    for g, v in registry.GROUP_VERSIONS:
        paths.update(_render_paths(registry.kinds_in(g, v), g, v, v3=False))
    return {
        "definitions": {n: _definition(n, "#/definitions/", False) for n in closure(_kind_roots(kinds))},
        "info": {"title": "Kubernetes", "version": KUBERNETES_VERSION},
        "paths": dict(sorted(paths.items())),
        "security": [{"BearerToken": []}],
        "securityDefinitions": _SECURITY_SCHEME,
        "swagger": "2.0",
    }


def v3_path_of(group: str, version: str) -> str:
    """The /openapi/v3/<path> key of a group-version: "api/v1" or "apis/resource.k8s.io/v1"."""
    return f"apis/{group}/{version}" if group else f"api/{version}"


# Documents for the discovery endpoints themselves: path -> (URL, operationId, tag, response definition).
def _discovery_docs() -> dict[str, tuple[str, str, str, str]]:
    out = {
        "api": ("/api/", "getCoreAPIVersions", "core", META + "APIVersions"),
        "apis": ("/apis/", "getAPIVersions", "apis", META + "APIGroupList"),
        "version": ("/version/", "getCodeVersion", "version", "io.k8s.apimachinery.pkg.version.Info"),
    }
    for g in registry.groups():
        tag = g.removesuffix(".k8s.io").replace(".", "_").replace("-", "_")
        out[f"apis/{g}"] = (f"/apis/{g}/", f"get{_group_camel(g)}APIGroup", tag, META + "APIGroup")
    return out


def v3_paths() -> list[str]:
    """Every key of the /openapi/v3 index, sorted as upstream serializes it."""
    return sorted([v3_path_of(g, v) for g, v in registry.GROUP_VERSIONS] + list(_discovery_docs()))


def _gv_of(path: str) -> tuple[str, str] | None:
    path = path.strip("/")
    for g, v in registry.GROUP_VERSIONS:
        if v3_path_of(g, v) == path:
            return g, v
    return None


def _discovery_document(path: str) -> Obj | None:
    entry = _discovery_docs().get(path.strip("/"))
    if entry is None:
        return None
    url, op_id, tag, schema = entry
    prefix = "#/components/schemas/"
    media = ("application/json",) if path == "version" else (
        "application/json", "application/vnd.kubernetes.protobuf", "application/yaml")
    description = "get the version information for this server" if path == "version" else (
        "get available API versions" if path in ("api", "apis") else "get information of a group")
    return {
        "components": {
            "schemas": {n: _definition(n, prefix, True) for n in closure([schema])},
            "securitySchemes": _SECURITY_SCHEME,
        },
        "info": {"title": "Kubernetes", "version": KUBERNETES_VERSION},
        "openapi": "3.0.0",
        "paths": {url: {"get": {
            "description": description,
            "operationId": op_id,
            "responses": {
                "200": {"content": {m: {"schema": {"$ref": prefix + schema}} for m in media},
                        "description": "OK"},
                "401": {"description": "Unauthorized"},
            },
            "tags": [tag],
        }}},
    }


def v3_document(path: str) -> Obj | None:
    """The OpenAPI 3.0 document at /openapi/v3/<path> (`api/v1`, `apis/resource.k8s.io/v1`, `apis`, ...)."""
    gv = _gv_of(path)
    if gv is None:
        return _discovery_document(path)
    kinds = registry.kinds_in(*gv)
    prefix = "#/components/schemas/"
    return {
        "components": {
            "schemas": {n: _definition(n, prefix, True) for n in closure(_kind_roots(kinds))},
            "securitySchemes": _SECURITY_SCHEME,
        },
        "info": {"title": "Kubernetes", "version": KUBERNETES_VERSION},
        "openapi": "3.0.0",
        "paths": _render_paths(kinds, gv[0], gv[1], v3=True),
    }


@functools.cache
def v2_bytes() -> tuple[bytes, str]:
    """(JSON body, quoted ETag) of /openapi/v2. Built once."""
    body = _serialize(v2_document())
    return body, f'"{_digest(body)}"'


@functools.cache
def v3_bytes(path: str) -> tuple[bytes, str] | None:
    """(JSON body, hash) of /openapi/v3/<path>; the hash is the `?hash=` value and, quoted, the ETag."""
    doc = v3_document(path.strip("/"))
    if doc is None:
        return None
    body = _serialize(doc)
    return body, _digest(body)


def v3_index() -> Obj:
    """GET /openapi/v3: every group-version document with its content-addressed URL."""
    out: Obj = {}
    for p in v3_paths():
        res = v3_bytes(p)
        assert res is not None
        out[p] = {"serverRelativeURL": f"/openapi/v3/{p}?hash={res[1]}"}
    return {"paths": out}


@functools.cache
def v3_index_bytes() -> tuple[bytes, str]:
    body = _serialize(v3_index())
    return body, f'"{_digest(body)}"'


def v3_response(path: str, query_hash: str | None) -> tuple[int, dict[str, str], bytes]:
    """Status, headers and body for GET /openapi/v3/<path>[?hash=...], as kube-openapi's handler answers.

    A stale hash redirects (301) to the current URL; a matching hash makes the response immutable.
    """
    res = v3_bytes(path)
    if res is None:
        return 404, {"Content-Type": "text/plain; charset=utf-8"}, b"404 page not found\n"
    body, digest = res
    path = path.strip("/")
    if query_hash and query_hash != digest:
        return 301, {"Location": f"/openapi/v3/{path}?hash={digest}"}, b""
    headers = {"Content-Type": V3_CONTENT_TYPE, "ETag": f'"{digest}"', "Vary": "Accept"}
    if query_hash:
        headers["Cache-Control"] = "public, immutable"
        headers["Expires"] = "Thu, 31 Dec 2099 23:59:59 GMT"
    return 200, headers, body


# kube-openapi serves the gnostic protobuf for both spellings of its media type (the "@" one is older and
# not a valid MIME token), answering with the first.
_V2_PROTOBUF_TYPES = ("application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
                      "application/com.github.proto-openapi.spec.v2@v1.0+protobuf")


def _v2_media_type(accept: str | None) -> str | None:
    """The media type /openapi/v2 answers for `accept` (highest q first, then the client's order), or None."""
    if not accept:
        return V2_CONTENT_TYPE
    ranked = []
    for i, clause in enumerate(accept.split(",")):
        parts = [p.strip() for p in clause.split(";")]
        q = next((p.split("=", 1)[1] for p in parts[1:] if p.replace(" ", "").startswith("q=")), "1")
        try:
            weight = float(q)
        except ValueError:
            weight = 1.0
        if weight > 0:
            ranked.append((-weight, i, parts[0].lower()))
    for _w, _i, mime in sorted(ranked):
        if mime in ("application/json", "application/*", "*/*"):
            return V2_CONTENT_TYPE
        if mime in _V2_PROTOBUF_TYPES:
            return _V2_PROTOBUF_TYPES[0]
    return None


@functools.cache
def v2_protobuf_bytes() -> tuple[bytes, str]:
    """The whole v2 document as gnostic's openapi.v2.Document, with its ETag."""
    body = openapi_proto.document(json.loads(v2_bytes()[0]))
    return body, f'"{_digest(body)}"'


def v2_response(accept: str | None, if_none_match: str | None = None) -> tuple[int, dict[str, str], bytes]:
    """Status, headers and body for GET /openapi/v2: JSON, or gnostic protobuf (what client-go's
    `OpenAPISchema()` asks for: kubectl explain's plaintext-openapiv2 output and kubectl's fallbacks)."""
    mime = _v2_media_type(accept)
    if mime is None:
        return 406, {"Content-Type": "text/plain; charset=utf-8"}, b"406 Not Acceptable\n"
    if mime != V2_CONTENT_TYPE:
        body, etag = v2_protobuf_bytes()
        headers = {"Content-Type": mime, "ETag": etag, "Vary": "Accept"}
        if if_none_match and if_none_match.strip() == etag:
            return 304, headers, b""
        return 200, headers, body
    body, etag = v2_bytes()
    headers = {"Content-Type": V2_CONTENT_TYPE, "ETag": etag, "Vary": "Accept"}
    if if_none_match and if_none_match.strip() == etag:
        return 304, headers, b""
    return 200, headers, body
