"""Signed reasoning belongs to its signer (SPEC §3.10).

Anthropic `thinking` blocks carry a `signature`, Responses reasoning items `encrypted_content`, Gemini parts
a `thoughtSignature`; a provider rejects another provider's. modelpool remembers which route produced each
signature it relayed (`book`, by a digest, shared through the state backend), prefers that route for a
conversation whose history carries it (the planner), and strips the signatures of other routes from what
it sends anywhere else (`strip`). `scan` finds signatures in upstream reads and request bodies without
parsing them.
"""

from modelpool.signers.book import SignerBook
from modelpool.signers.scan import SignatureScan, digest, request_digests
from modelpool.signers.strip import FOREIGN_REASONING, strip_foreign

__all__ = ["FOREIGN_REASONING", "SignatureScan", "SignerBook", "digest", "request_digests", "strip_foreign"]
