"""Insurance premium: abs and round, chained comparisons, nested conditions, string
equality, and an error path."""


def risk_points(age: int, bmi: float, smoker: bool) -> int:
    points = 0
    if smoker:
        points = points + 3
    if abs(bmi - 22.5) > 7.5:
        points = points + 2
    if not 25 <= age <= 60:
        points = points + 1
    return points


def premium(age: int, bmi: float, smoker: bool, region: str, claims: int) -> float:
    if claims < 0:
        raise ValueError("claims cannot be negative")
    points = risk_points(age, bmi, smoker)
    base = 200.0 if region == "urban" else 150.0
    rate = base + points * 40 + round(bmi) * 2
    if claims > 2 and points >= 3:
        raise PermissionError("refer to an underwriter")
    if rate > 320 or (claims >= 2 and region != "rural"):
        return rate * 1.25
    return rate
