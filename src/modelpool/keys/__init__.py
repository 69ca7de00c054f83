"""Client keys with names and limits (SPEC §12, §14)."""

from modelpool.keys.limits import Limits, Refused, Ticket
from modelpool.keys.ring import ClientKey, KeyRing, presented_key, short_hash

__all__ = ["ClientKey", "KeyRing", "Limits", "Refused", "Ticket", "presented_key", "short_hash"]
