"""A proxy's scoped allowlist, enforced where the calls arrive: deny by default.

The allowlist is the proxy's entry in the ``proxies`` section of ``allowlists.json``, as
the last apply recorded it in the store (N2a): the opcodes of the ``proxy`` role, those of a
provider-scoped category (provision, supply, lease) granted only for the providers the
proxy serves (docs/policies.md, "Proxies and scoped allowlists"). An opcode it does not
grant, for that provider, is refused, and the refusal names the rule that decided
(``refusals.py`` records it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Allowlist:
    """What one proxy may do: opcode -> the providers it is scoped to (None: any)."""

    proxy: str
    role: str = "proxy"
    granted: Mapping[str, frozenset[str] | None] = field(default_factory=dict)

    @classmethod
    def from_section(cls, proxy: str, section: Mapping[str, Any]) -> Allowlist:
        """The allowlist of ``proxy`` in the ``proxies`` section of allowlists.json; a proxy
        the section does not name (or a malformed entry) is granted nothing."""
        mine = section.get(proxy)
        if not isinstance(mine, Mapping):
            return cls(proxy)
        granted: dict[str, frozenset[str] | None] = {}
        for op in mine.get("opcodes") or ():
            if not isinstance(op, Mapping) or not isinstance(op.get("name"), str):
                continue
            scope = op.get("providers")
            granted[op["name"]] = (frozenset(p for p in scope if isinstance(p, str))
                                   if isinstance(scope, list) else None)
        return cls(proxy, str(mine.get("role") or "proxy"), granted)

    def refusal(self, opcode: str | None, provider: str, verb: str = "") -> str | None:
        """The rule that refuses ``opcode`` for ``provider``, or None when it is granted."""
        if opcode is None:
            return (f"no controller opcode for verb {verb!r} (reconciler/proxy/opcodes.py): "
                    "deny by default")
        if opcode not in self.granted:
            return (f"deny by default: the allowlist of proxy {self.proxy!r} (role "
                    f"{self.role!r}) does not grant {opcode}")
        scope = self.granted[opcode]
        if scope is not None and provider not in scope:
            among = ", ".join(sorted(scope)) or "none"
            return (f"{opcode} is scoped in the allowlist of proxy {self.proxy!r} to the "
                    f"providers it serves ({among}), not {provider!r}")
        return None

