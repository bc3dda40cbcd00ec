"""Shipping cost: a bounded loop over parcels, integer arithmetic (//, %), min/max,
string prefixes and suffixes, and membership in a set."""

EU = {"DE", "FR", "IT", "ES", "NL"}


def zone(country: str) -> int:
    if country in EU:
        return 1
    if country.startswith("U"):
        return 2
    return 3


def shipping_cost(weight: float, distance: int, country: str, express: bool,
                  parcels: int, postcode: str) -> float:
    if parcels <= 0 or weight <= 0:
        raise ValueError("nothing to ship")
    cost = 0.0
    for i in range(parcels):
        share = weight / parcels
        cost = cost + max(4.5, share * 1.2)
        if i >= 3:
            raise OverflowError("too many parcels for one order")
    legs = distance // 250
    if legs % 2 == 1 and zone(country) > 1:
        cost = cost + 7
    cost = cost + min(legs, 4) * 3.0
    if express and not postcode.endswith("0"):
        cost = cost * 1.5
    if cost > 60:
        return 60.0
    return cost
