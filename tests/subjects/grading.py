"""Course grading: a while loop whose trip count depends on the data (bounded by the
data's range), membership in a list, modulo, and a helper with early returns."""


def letter(points: int) -> str:
    if points >= 90:
        return "A"
    if points >= 75:
        return "B"
    if points >= 50:
        return "C"
    return "F"


def grade(score: int, attendance: float, late_days: int, track: str, honors: bool) -> str:
    penalty = 0
    remaining = late_days
    while remaining > 0:
        penalty = penalty + 4
        remaining = remaining - 2
    points = score - penalty
    if attendance < 0.6 and track not in ["audit", "exchange"]:
        return "F"
    result = letter(points)
    if honors and result == "A" and score % 2 == 0:
        return "A+"
    return result
