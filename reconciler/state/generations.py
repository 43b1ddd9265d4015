"""Provider generations: the highest inventory generation a gather trusted, per provider of
a site, so a provider that answers with an older world is noticed (docs/plan.md, "Providers
that did not answer")."""

from __future__ import annotations

from collections.abc import Mapping

from reconciler.state.connection import Connection, reconnecting


class Generations(Connection):
    """Provider generations, over the store's connection."""

    @reconnecting
    def provider_generations(self, site: str) -> dict[str, int]:
        """The highest inventory generation recorded per provider of ``site``."""
        with self._transaction(write=False):
            rows = self._query(
                "SELECT provider, generation FROM provider_generations WHERE site = ?", site
            )
        return {provider: int(generation) for provider, generation in rows}

    def record_generations(self, site: str, generations: Mapping[str, int]) -> None:
        """Remember generations a gather trusted; a recorded generation never goes down."""
        self._put_generations(site, generations, lower=False)

    def accept_generation(self, site: str, provider: str, generation: int) -> None:
        """Record ``generation`` even if lower: the provider was replaced on purpose."""
        self._put_generations(site, {provider: generation}, lower=True)

    @reconnecting
    def _put_generations(self, site: str, generations: Mapping[str, int], lower: bool) -> None:
        # one upsert decides, so two runners recording at once never lower the record
        keep = "" if lower else " WHERE excluded.generation > provider_generations.generation"
        rows = [(site, p, _padded(g)) for p, g in sorted(generations.items())]
        if not rows:
            return
        with self._write() as now:
            self._execute_many(
                "INSERT INTO provider_generations (site, provider, generation, recorded) "
                "VALUES (?, ?, ?, ?) ON CONFLICT (site, provider) DO UPDATE SET "
                f"generation = excluded.generation, recorded = excluded.recorded{keep}",
                [(*row, now) for row in rows],
            )


def _padded(generation: int) -> str:
    """20 digits hold any generation (0 .. 2**64-1); padded, text order is number order."""
    if not 0 <= generation < 2**64:
        raise ValueError(f"a generation is a whole number from 0 to 2**64-1, not {generation}")
    return f"{generation:020d}"
