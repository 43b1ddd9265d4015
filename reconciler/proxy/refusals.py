"""The allowlist applied where the calls arrive: each refusal is logged, counted and recorded
in the store (``proxy_refusals``), so an admin sees what a proxy was asked and would not do."""

from __future__ import annotations

from reconciler.proxy.allowlist import Allowlist
from reconciler.proxy.context import Context


class Gate:
    """Checks each act of the proxy against its allowlist; records what it refuses."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.allowlist = Allowlist(ctx.me.proxy)
        self._told: set[tuple[str, str]] = set()  # (provider, opcode) refused once already

    def follow(self, allowlist: Allowlist) -> None:
        """A new applied configuration: its allowlist, and its refusals told anew."""
        self.allowlist = allowlist
        self._told.clear()

    def refused(self, opcode: str | None, provider: str, *, op_id: str = "", verb: str = "",
                once: bool = False) -> str | None:
        """The rule refusing ``opcode`` for ``provider`` (recorded), or None if granted.
        ``once``: a periodic act (a lease, a publication) is recorded once per configuration,
        not at every try."""
        rule = self.allowlist.refusal(opcode, provider, verb)
        if rule is None:
            return None
        shown = opcode or f"(none for verb {verb!r})"
        if once and (provider, shown) in self._told:
            return rule
        self._told.add((provider, shown))
        ctx = self.ctx
        ctx.store.record_refusal(ctx.site, ctx.me.proxy, provider, shown, rule, op_id)
        ctx.metrics.refusals.labels(provider, shown).inc()
        ctx.log.event("refusal", provider=provider, opcode=shown, rule=rule, op_id=op_id,
                      verb=verb)
        return rule
