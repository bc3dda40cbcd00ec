"""What an adversary has accumulated about each record over a dataset's releases, in three
modules, dependencies one way (view and state on the engine, never back):

- :mod:`~anonkit.history.knowledge.engine`: the accumulation itself (:class:`Accumulated`,
  updated one release at a time; :func:`fold`) and what each adversary is left with per
  record (:class:`Measures`);
- :mod:`~anonkit.history.knowledge.state`: the knowledge as the history keeps it
  (:func:`to_bytes`, :func:`from_bytes`) and :func:`accumulated`, the one kept after a
  dataset's latest release, or rebuilt (:class:`KnowledgeRebuiltWarning`);
- :mod:`~anonkit.history.knowledge.view`: the per-record view a user or a report reads
  (:func:`knowledge`, :func:`knowledge_views`, :class:`Knowledge`).
"""

from anonkit.history.knowledge.engine import ROW_VALUE_KINDS, Accumulated, Measures, fold
from anonkit.history.knowledge.state import (
    PRIVATE,
    KnowledgeRebuiltWarning,
    accumulated,
    from_bytes,
    to_bytes,
)
from anonkit.history.knowledge.view import (
    QI_KINDS,
    AttributeKnowledge,
    Knowledge,
    QIKnowledge,
    cell_members,
    knowledge,
    knowledge_views,
    sorted_values,
)

__all__ = [
    "PRIVATE",
    "QI_KINDS",
    "ROW_VALUE_KINDS",
    "Accumulated",
    "AttributeKnowledge",
    "Knowledge",
    "KnowledgeRebuiltWarning",
    "Measures",
    "QIKnowledge",
    "accumulated",
    "cell_members",
    "fold",
    "from_bytes",
    "knowledge",
    "knowledge_views",
    "sorted_values",
    "to_bytes",
]
