"""`timeouts` (SPEC §3.2, §3.9: at top level, per provider, per `model_info` entry) and `quota` (SPEC §3.8:
the upstreams' announced limits). Kept apart from `schema` like `hedge` and `prices`."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from modelpool.config.units import parse_duration

Duration = Annotated[float, BeforeValidator(parse_duration)]

__all__ = ["TIMEOUT_KEYS", "QuotaConfig", "QuotaReserve", "TimeoutsConfig", "TimeoutsOverride"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class TimeoutsConfig(_Model):
    """Per-attempt upstream timeouts (SPEC §3.2). Not in the SPEC's sample; defaults suit chat models."""

    connect: Duration = 10.0
    first_byte: Duration = 60.0  # streaming: until the first reasoning/answer event
    idle: Duration = 120.0  # between two reads of a stream
    response: Duration = 600.0  # non-streaming: until the whole answer arrived


TIMEOUT_KEYS = ("connect", "first_byte", "idle", "response")


class TimeoutsOverride(_Model):
    """A provider's or a model's own limits (SPEC §3.9): each key it sets wins over the layer below it,
    the keys it leaves out are inherited (`catalog.timeouts`)."""

    connect: Duration | None = None
    first_byte: Duration | None = None
    idle: Duration | None = None
    response: Duration | None = None


class QuotaReserve(_Model):
    """What a route must keep of its announced quota to stay first (SPEC §3.8): with fewer requests left
    than `requests`, or fewer tokens than `tokens` + the call's estimate, it is demoted until its reset."""

    requests: int = Field(default=1, ge=0)
    tokens: int = Field(default=0, ge=0)


class QuotaConfig(_Model):
    """SPEC §3.8: read the upstreams' rate-limit headers and move calls before the 429."""

    enabled: bool = True
    reserve: QuotaReserve = Field(default_factory=QuotaReserve)
