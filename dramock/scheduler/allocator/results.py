"""The allocation results of a successful search: per claim its device results, config and node selector."""

from __future__ import annotations

from dramock import timefmt
from dramock.scheduler.allocator.capacity import _format
from dramock.scheduler.allocator.model import _Error
from dramock.scheduler.allocator.requests import _Requests
from dramock.scheduler.types import Obj


class _Results(_Requests):
    def node_selector(self, results: list) -> Obj | None:
        exprs: list[Obj] = []
        fields: list[Obj] = []
        for _, dev, _, _ in results:
            spec = dev.slice["spec"]
            if spec.get("perDeviceNodeSelection"):
                node_name, selector = dev.device.get("nodeName"), dev.device.get("nodeSelector")
            else:
                node_name, selector = spec.get("nodeName"), spec.get("nodeSelector")
            if node_name or (self.binding_on and dev.device.get("bindsToNode")):
                return {"nodeSelectorTerms": [{"matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": [self.node_name]}]}]}
            if selector:
                terms = selector.get("nodeSelectorTerms") or []
                if len(terms) > 1:
                    raise _Error(f"unsupported ResourceSlice.NodeSelector with {len(terms)} terms")
                if terms:
                    for src, dst in ((terms[0].get("matchFields") or [], fields),
                                     (terms[0].get("matchExpressions") or [], exprs)):
                        for r in src:
                            if not any(_same_requirement(r, x) for x in dst):
                                dst.append(r)
        if not exprs and not fields:
            return None
        term: Obj = {}
        if exprs:
            term["matchExpressions"] = exprs
        if fields:
            term["matchFields"] = fields
        return {"nodeSelectorTerms": [term]}

    def build(self) -> list[Obj]:
        out = []
        for ci, claim in enumerate(self.claims):
            results = []
            any_binding = False
            for req, dev, share_id, consumed in self.results[ci]:
                r: Obj = {"request": req.name, "driver": dev.driver, "pool": dev.pool, "device": dev.name}
                if req.admin:
                    r["adminAccess"] = True
                if req.tolerations:
                    r["tolerations"] = [dict(t) for t in req.tolerations]
                if self.binding_on and dev.device.get("bindingConditions"):
                    any_binding = True
                    r["bindingConditions"] = list(dev.device["bindingConditions"])
                    r["bindingFailureConditions"] = list(dev.device.get("bindingFailureConditions") or [])
                if self.skip_ops_on and dev.slice["spec"].get("skipNodeOperations"):
                    r["skipNodeOperations"] = list(dev.slice["spec"]["skipNodeOperations"])
                if share_id:
                    r["shareID"] = share_id
                if consumed:
                    r["consumedCapacity"] = {spelling: _format(v, hint) for spelling, v, hint in consumed.values()}
                results.append(r)
            config: list[Obj] = []
            spec_devices = (claim.get("spec") or {}).get("devices") or {}
            chosen_names: set[str] = set()
            for ri, alts in enumerate(self.requests[ci]):
                req = alts[self.selected[ci][ri]]
                chosen_names.add(req.base)
                if req.sub is not None:
                    chosen_names.add(req.name)
                for c in ((req.class_obj or {}).get("spec") or {}).get("config") or []:
                    config.append({"source": "FromClass", **{k: v for k, v in c.items() if k != "requests"}})
            for c in spec_devices.get("config") or []:
                names = c.get("requests") or []
                if names and not any(n in chosen_names for n in names):
                    continue
                entry: Obj = {"source": "FromClaim"}
                if names:
                    entry["requests"] = list(names)
                entry.update({k: v for k, v in c.items() if k != "requests"})
                config.append(entry)
            devices: Obj = {"results": results}
            if config:
                devices["config"] = config
            allocation: Obj = {"devices": devices}
            ns = self.node_selector(self.results[ci])
            if ns is not None:
                allocation["nodeSelector"] = ns
            if any_binding:
                allocation["allocationTimestamp"] = timefmt.now()
            out.append(allocation)
        return out


def _same_requirement(a: Obj, b: Obj) -> bool:
    return (a.get("key") == b.get("key") and a.get("operator") == b.get("operator")
            and set(a.get("values") or []) == set(b.get("values") or []))
