"""A loan-approval rule set: mixed fields, short-circuit logic, membership, a helper,
arithmetic that feeds later branches, and an exception for invalid input."""


class ApplicationError(ValueError):
    pass


def debt_ratio(income: float, debts: float) -> float:
    if income <= 0:
        raise ApplicationError("income must be positive")
    return debts / income


def approve(age: int, income: float, debts: float, credit_score: int, employment: str,
            has_default: bool) -> str:
    if age < 18:
        raise ApplicationError("applicant is a minor")
    ratio = debt_ratio(income, debts)
    if has_default and credit_score < 650:
        return "reject"
    if employment in ("unemployed", "student"):
        return "review" if income > 20000 else "reject"
    monthly = income / 12 - debts / 12
    if ratio > 0.45 or monthly < 1500:
        return "reject"
    if credit_score >= 740 and employment == "permanent":
        return "approve-premium"
    if credit_score >= 680 or (employment == "self-employed" and ratio < 0.2):
        return "approve"
    return "review"
