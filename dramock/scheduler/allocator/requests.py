"""The claims' requests (and firstAvailable subrequests) as the search takes them: validated, with their
device class, count and constraints, and their candidate devices."""

from __future__ import annotations

from dramock.scheduler.allocator.constraints import _Constraint
from dramock.scheduler.allocator.model import ALLOCATION_RESULTS_MAX_SIZE, _Dev, _Error, _kobj, _Req
from dramock.scheduler.allocator.tracing import _Tracing
from dramock.scheduler.types import Obj


class _Requests(_Tracing):
    def _with_derived(self, req: _Req, spec: Obj) -> _Req:
        if self.inp.gates.enabled("DRADerivedAttributes"):
            req.derived = {d["name"]: d.get("expression", "") for d in spec.get("derivedAttributes") or []
                           if isinstance(d, dict) and d.get("name")}
        return req

    def prepare(self) -> None:
        gates = self.inp.gates
        for ci, claim in enumerate(self.claims):
            devices = (claim.get("spec") or {}).get("devices") or {}
            per_claim: list[list[_Req]] = []
            min_total = 0
            for request in devices.get("requests") or []:
                name = request.get("name", "")
                first = request.get("firstAvailable") or []
                if first:
                    if not gates.enabled("DRAPrioritizedList"):
                        raise _Error(f"claim {_kobj(claim)}, request {name}: has subrequests, but the "
                                     "DRAPrioritizedList feature is disabled")
                    alts = []
                    for sub in first:
                        if not self.consumable and sub.get("capacity"):
                            raise _Error(f"claim {_kobj(claim)}, subrequest {sub.get('name', '')}: has capacity "
                                         "requests, but the DRAConsumableCapacity feature is disabled")
                        alts.append(self.validate(ci, self._with_derived(_Req(name, sub.get("name", ""), sub, False),
                                                                         sub)))
                    min_total += min(r.num for r in alts)
                else:
                    exactly = request.get("exactly") or {}
                    if not self.consumable and exactly.get("capacity"):
                        raise _Error(f"claim {_kobj(claim)}, request {name}: has capacity requests, but the "
                                     "DRAConsumableCapacity feature is disabled")
                    req = self.validate(ci, self._with_derived(
                        _Req(name, None, exactly, bool(exactly.get("adminAccess"))), exactly))
                    alts = [req]
                    min_total += req.num
                per_claim.append(alts)
            if min_total > ALLOCATION_RESULTS_MAX_SIZE:
                raise _Error(f"claim {_kobj(claim)}: number of requested devices {min_total} exceeds the claim "
                             f"limit of {ALLOCATION_RESULTS_MAX_SIZE}")
            self.requests.append(per_claim)
            self.selected.append([0] * len(per_claim))
            constraints = []
            for i, c in enumerate(devices.get("constraints") or []):
                sets = gates.enabled("DRAListTypeAttributes")
                if c.get("matchAttribute"):
                    constraints.append(_Constraint(c.get("requests") or [], c["matchAttribute"], False, sets))
                elif c.get("distinctAttribute"):
                    constraints.append(_Constraint(c.get("requests") or [], c["distinctAttribute"], True, sets))
                else:
                    raise _Error(f"claim {_kobj(claim)}, constraint #{i}: empty constraint (unsupported constraint "
                                 "type?)")
            self.constraints.append(constraints)
            self.results.append([])

    def validate(self, ci: int, req: _Req) -> _Req:
        claim = self.claims[ci]
        for i, sel in enumerate(req.selectors):
            if not (sel.get("cel") or {}).get("expression"):
                raise _Error(f"claim {_kobj(claim)}, request {req.base if req.sub is None else req.sub}, "
                             f"selector #{i}: CEL expression empty (unsupported selector type?)")
        rname = req.base if req.sub is None else req.sub
        if not req.class_name:
            raise _Error(f"claim {_kobj(claim)}, request {rname}: missing device class name (unsupported request "
                         "type?)")
        cls = self.inp.classes.get(req.class_name)
        if cls is None:
            raise _Error(f"claim {_kobj(claim)}, request {rname}: could not retrieve device class "
                         f"{req.class_name}: deviceclass.resource.k8s.io \"{req.class_name}\" not found")
        req.class_obj = cls
        if req.mode == "ExactCount":
            req.num = req.count
        elif req.mode == "All":
            for pool in self.pools:
                if pool.incomplete:
                    raise _Error(f"claim {_kobj(claim)}, request {rname}: asks for all devices, but resource pool "
                                 f"{pool.pool_id} is currently being updated")
                if pool.invalid:
                    raise _Error(f"claim {_kobj(claim)}, request {rname}: asks for all devices, but resource pool "
                                 f"{pool.pool_id} is currently invalid")
            req.all_devs = [d for d in self.candidates(ci, req) if self.capacity_fits(req, d)[0]]
            req.num = len(req.all_devs)
        else:
            raise _Error(f"claim {_kobj(claim)}, request {rname}: unsupported count mode {req.mode}")
        return req

    def candidates(self, ci: int, req: _Req) -> list[_Dev]:
        """Devices matching class + request selectors (static, so computed once per request; and, for the same
        selection key, once per view of the pools, which nodes seeing the same pools share)."""
        if req.cands is not None:
            return req.cands
        key = self.selection_key(req)
        view = self.view
        out = view.cands.get(key)
        if out is None:
            out = []
            for pool in self.pools:
                if pool.invalid:
                    continue  # skipped; reported only if nothing else can satisfy the pod (see run)
                # A built pool is shared by every node and pod until its slices change (see built_pool), and
                # whether its devices are selectable depends only on the key: remember the answer on the pool.
                chosen = pool.selections.get(key)
                if chosen is None:
                    chosen = [dev for dev in pool.devices if self.selectable(ci, req, dev)]
                    if len(pool.selections) >= 64:
                        pool.selections.clear()
                    pool.selections[key] = chosen
                out.extend(chosen)
            if len(view.cands) >= 64:
                view.cands.clear()
                view.groups.clear()
            view.cands[key] = out
        req.cands = out
        if self.trace is not None:
            self.trace_unselectable(ci, req)
        return out
