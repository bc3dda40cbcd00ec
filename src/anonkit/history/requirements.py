"""What a release promised across releases: the cross-release requirements its models
declared (:class:`~anonkit.models.base.CrossReleaseRequirement`), read back from the
history. The audit and the intersection attack judge by these."""

from __future__ import annotations

from anonkit.errors import HistoryError
from anonkit.history.records import ReleaseInfo
from anonkit.models.base import CrossReleaseRequirement, format_parameters

#: one type for what a model promises across releases
Requirement = CrossReleaseRequirement


def requirements_of(info: ReleaseInfo) -> list[Requirement]:
    """What a release promised across releases: the requirements its models declared."""
    try:
        return [Requirement.from_dict(d) for d in info.requirements]
    except (KeyError, TypeError, ValueError) as exc:
        raise HistoryError(f"release {info.seq} of {info.dataset!r} has a malformed "
                           f"cross-release requirement ({exc}); the history is damaged"
                           ) from None


def exact_only_models(info: ReleaseInfo) -> list[str]:
    """The release's models that declared no cross-release requirement (named with their
    parameters): the audit checks them only for exact disclosure."""
    covered = {r.model for r in requirements_of(info)}
    out = []
    for m in info.models:
        name = str(m.get("model", ""))
        params = m.get("parameters") or {}
        if name not in covered:
            title = (f"{name} ({format_parameters(params)})"
                     if isinstance(params, dict) and params else name)
            if title not in out:
                out.append(title)
    return out
