"""The allowlists document (build/allowlists.json) the controller loads.

Per role: the sorted opcode names and ids it may call (deny by default). Per proxy instance:
the proxy role's opcodes, those of provider-scoped categories limited to the providers the
instance serves (active or standby); a scoped opcode with no provider is left out. Plain
sorted data, so the same policies always give the same bytes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from compiler.contract.build_files import ALLOWLISTS
from compiler.core.problems import Problems
from compiler.core.times import format_date
from compiler.policy import codes
from compiler.policy.enforce import WaiverKey
from compiler.policy.model import PROXY_ROLE, Catalog, Proxy, Waiver
from compiler.policy.resolve import ResolvedRole

SCHEMA = 1
FILENAME = ALLOWLISTS


def build_document(
    catalog: Catalog,
    roles: Mapping[str, ResolvedRole],
    waivers: Mapping[WaiverKey, Waiver],
    proxies: Sequence[Proxy],
    problems: Problems,
) -> dict[str, Any]:
    waived: dict[str, tuple[Waiver, list[str]]] = {}
    for (_, _, op), w in sorted(waivers.items()):
        waived.setdefault(w.name, (w, []))[1].append(op)
    return {
        "schema": SCHEMA,
        "catalog": [
            {
                "name": op.name,
                "id": op.id,
                "category": op.category,
                "risk": op.risk.value,
                **({"unused": True} if op.unused else {}),
            }
            for op in sorted(catalog.opcodes.values(), key=lambda o: o.id)
        ],
        "roles": {
            name: {
                "origin": "site" if role.from_site else "policies",
                "opcodes": [_ref(catalog, op) for op in sorted(role.granted)],
                "denied": sorted(role.denied),
            }
            for name, role in sorted(roles.items())
        },
        "proxies": _proxies(catalog, roles, proxies, problems),
        "waivers": [
            {
                "name": w.name,
                "guardrail": w.guardrail.text,
                "role": w.role.text,
                "opcodes": ops,
                "reason": w.reason,
                "expires": format_date(w.expires),
            }
            for _, (w, ops) in sorted(waived.items())
        ],
    }


def _ref(catalog: Catalog, name: str) -> dict[str, Any]:
    return {"name": name, "id": catalog.opcodes[name].id}


def _proxies(
    catalog: Catalog,
    roles: Mapping[str, ResolvedRole],
    proxies: Sequence[Proxy],
    problems: Problems,
) -> dict[str, Any]:
    if not proxies:
        return {}
    role = roles.get(PROXY_ROLE)
    if role is None:
        problems.error(
            codes.NO_PROXY_ROLE,
            f"the site has proxies but no role '{PROXY_ROLE}' is defined",
            f"define the role '{PROXY_ROLE}' in policies/roles.yaml",
            proxies[0].where,
        )
        return {}
    out: dict[str, Any] = {}
    for proxy in proxies:
        if proxy.name in out:
            continue  # the site compiler reports duplicate proxies
        opcodes: list[dict[str, Any]] = []
        for name in sorted(role.granted):
            op = catalog.opcodes[name]
            if not catalog.categories[op.category].provider_scoped:
                opcodes.append(_ref(catalog, name))
            elif proxy.providers:
                opcodes.append({**_ref(catalog, name), "providers": list(proxy.providers)})
        out[proxy.name] = {
            "role": PROXY_ROLE,
            "host": proxy.host,
            "providers": list(proxy.providers),
            "opcodes": opcodes,
        }
    return dict(sorted(out.items()))
