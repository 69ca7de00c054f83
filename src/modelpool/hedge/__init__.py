"""Hedged first token (SPEC §3.7): a second attempt when the first is slow to produce its first event.

`policy` says when (the delay from `pool.hedge.after`) and whether (the budget); `race` runs racing
attempts so that only the winner ever writes to the client; `walk` is the walker that starts the hedge.
"""

from modelpool.hedge.policy import HedgeBudget, hedge_delay
from modelpool.hedge.race import RACER, Race, Racer

__all__ = ["RACER", "HedgeBudget", "Race", "Racer", "hedge_delay"]
