"""A volume's ``retention:``: how long a job directory is kept after its job (N14).

Written as a duration (``14d``, shorthand for ``{keep: 14d}``) or as a mapping that says
from which clock the TTL counts (the job's end, or the fetch of its outputs), how long a
directory whose outputs are never fetched is kept, and what becomes of directories whose
job the controller does not know. The planner evicts what is past it
(``reconciler/planner/rules_jobs.py``); the volume entry's spec carries it
(``Retention.spec``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BeforeValidator,
    ConfigDict,
    Field,
    GetJsonSchemaHandler,
    ValidationInfo,
    field_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, PydanticCustomError

from compiler.core import codes, forms
from compiler.core.forms import unset
from compiler.core.types import DaysDuration, Strict

Clock = Literal["job-end", "output-fetch"]
OrphanPolicy = Literal["report", "remove"]
JOB_END: Clock = "job-end"
OUTPUT_FETCH: Clock = "output-fetch"
REPORT: OrphanPolicy = "report"
_UNFETCHED_ALONE = (
    "'unfetched' bounds how long a job directory whose outputs were never fetched is kept, "
    "so it goes with 'from: output-fetch'"
)
# The pydantic error type of the rule above, and its code and hint (compiler/model/errors.py).
OWN_MESSAGES = {
    "retention_unfetched": (
        codes.UNFETCHED_WITHOUT_FETCH,
        "add 'from: output-fetch' to count the retention from the fetch of the outputs, or "
        "remove 'unfetched'",
    ),
}


def _unfetched_schema() -> dict[str, Any]:
    """``Retention._with_fetch_clock`` as a schema condition, so an editor flags it too."""
    from_fetch = {"required": ["from"], "properties": {"from": {"const": OUTPUT_FETCH}}}
    return {"if": {"not": from_fetch}, "then": unset("unfetched", why=_UNFETCHED_ALONE)}


class Retention(Strict):
    """The TTL of a volume's job directories, its clock, and the orphan policy."""

    model_config = ConfigDict(json_schema_extra=_unfetched_schema())

    keep: DaysDuration = Field(
        description="how long a job directory is kept after its job's end (or the fetch of "
        "its outputs)",
        examples=["7d"],
    )
    clock: Clock = Field(
        default=JOB_END,
        alias="from",
        description="what the retention counts from: the job's end or the fetch of its outputs",
        examples=[OUTPUT_FETCH],
    )
    unfetched: DaysDuration | None = Field(
        default=None,
        description="with from: output-fetch, how long after its job's end a directory whose "
        "outputs were never fetched is kept; without it, until fetched",
        examples=["30d"],
    )
    orphans: OrphanPolicy = Field(
        default=REPORT,
        description="job directories whose job the controller does not know: reported, or "
        "also removed once idle for the retention",
        examples=[REPORT],
    )

    @field_validator("unfetched")
    @classmethod
    def _with_fetch_clock(cls, value: int | None, info: ValidationInfo) -> int | None:
        """Only the fetch clock has unfetched outputs (a bad ``from`` is its own error)."""
        clock = info.data.get("clock", OUTPUT_FETCH)
        if value is not None and clock != OUTPUT_FETCH:
            raise PydanticCustomError("retention_unfetched", _UNFETCHED_ALONE)
        return value

    def spec(self) -> dict[str, Any]:
        """The volume entry's spec keys: ``retention`` (seconds), and only what is not the
        default besides, so a site written with the shorthand keeps its digest."""
        out: dict[str, Any] = {"retention": self.keep}
        if self.clock != JOB_END:
            out["retention_from"] = self.clock
        if self.unfetched is not None:
            out["retention_unfetched"] = self.unfetched
        if self.orphans != REPORT:
            out["orphans"] = self.orphans
        return out


def _shorthand(value: Any) -> Any:
    """``retention: 14d`` is ``retention: {keep: 14d}``."""
    return value if isinstance(value, dict) else {"keep": value}


class _OrDuration:
    """The schema of the field: a duration (the shorthand) or the mapping."""

    def __get_pydantic_json_schema__(
        self, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return {"anyOf": [{forms.REF_SLOT: "duration"}, handler(core_schema)]}


RetentionForm = Annotated[Retention, BeforeValidator(_shorthand), _OrDuration()]
