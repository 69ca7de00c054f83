"""Prices, the cost of a call and the expected cost of a candidate (SPEC §14)."""

from modelpool.pricing.book import PriceBook
from modelpool.pricing.prices import Price, RoutePricing

__all__ = ["Price", "PriceBook", "RoutePricing"]
