"""The anonymization methods, registered once: behind ``anonymize``, ``release publish``,
the job file and :func:`anonkit.anonymize`.

Each method declares (:class:`Method`) its typed options (:mod:`anonkit.methods.options`),
whether it is one-shot or sequential, its release kind and the threat model it claims
against repeated releases; a one-shot method names its run (one module per method here:
:mod:`~anonkit.methods.mondrian`, :mod:`~anonkit.methods.compression`,
:mod:`~anonkit.methods.ke`, :mod:`~anonkit.methods.stream_tree`), loaded when it first
runs, so that listing the methods and parsing a job load neither pandas nor an algorithm.
A sequential method's engine lives with the history (:mod:`anonkit.history.engines`).
"""

from __future__ import annotations

from anonkit.methods.options import (
    ACCEPT_HEURISTIC,
    ALLOW_MISSING,
    BUILD,
    DOMAIN,
    GENERALIZATION,
    GROUP_COLUMN,
    HISTORY_CHECK,
    METRIC,
    MODELS,
    POPULATION_OPTIONS,
    REMOVE_CUT,
    SEED,
    SINGLE_DIMENSIONAL,
    STRATEGY,
    SUMMARY,
    SUPPRESSION,
    THRESHOLD,
    TREE,
    UNWEIGHTED_SPLIT,
    E,
    K,
    L,
    M,
    Option,
    T,
    column_values,
    split_csv,
)
from anonkit.methods.registry import (
    Method,
    all_options,
    get,
    method_help,
    methods,
    names,
    parse_job_options,
    register,
    unregister,
)

register(Method(
    "mondrian", "Strict multidimensional Mondrian (LeFevre et al. 2006); every privacy model "
    "is a cut constraint. One-shot: re-running it on a changed table is refused by the "
    "history's gate almost always.", "generalized", sequential=False,
    threat_model="one-shot",
    options=(K, L, T, MODELS, *POPULATION_OPTIONS, GENERALIZATION, STRATEGY, REMOVE_CUT,
             SINGLE_DIMENSIONAL, ALLOW_MISSING, SEED),
    runner="anonkit.methods.mondrian:run"))
register(Method(
    "global", "Full-domain global recoding with a suppression limit (Samarati; Flash, "
    "Kohlmayer et al. 2012, as ARX): every QI at one level of its hierarchy for the whole "
    "table, the level vector optimal under --metric; the rows of classes that break a model "
    "are suppressed (every QI *), at most --suppression of them. One-shot.", "generalized",
    sequential=False, threat_model="one-shot",
    options=(K, L, T, MODELS, *POPULATION_OPTIONS, SUPPRESSION, METRIC, BUILD),
    runner="anonkit.methods.global_recoding:run"))
register(Method(
    "ke", "(k,e)-anonymity (Zhang et al. 2007): the optimal partition by sensitive value "
    "(least sum of group ranges), QIs exact, values permuted within groups. Suits one "
    "numeric sensitive attribute (salaries, amounts) that must stay hidden among k values "
    "spanning e while QIs stay exact for aggregate queries; also a table republished as "
    "people join and leave. Sequential: groups last, the values of those who left stay as "
    "placeholder rows (counted per group), newcomers form groups of their own, and no "
    "release intersects an earlier one below k values or range e (--history-check pruned: "
    "Srisungsittisunti & Natwichai's covering partition instead).",
    "permuted", sequential=True, threat_model="incremental-(k,e)",
    options=(K, E, GROUP_COLUMN, HISTORY_CHECK, SEED), runner="anonkit.methods.ke:anonymize",
    auxiliary=("groups",)))
for _name, _summary, _options in (
        ("huffman", "k-anonymity by truncating the Huffman tree of the QI values (Kidney 2018): a "
         "value is released as the summary of the node where its walk from the root stops. "
         "Nodes may mix distant values.", (K, L, SUMMARY)),
        ("alphabetic", "k-anonymity by truncating an order-preserving (alphabetic) tree of the "
         "QI values (Kidney 2018): classes are disjoint ranges; the optimal tree (Garsia-Wachs) "
         "by default, Kidney's weight-halving tree with --tree halving.",
         (K, L, TREE, SUMMARY))):
    register(Method(_name, _summary, "generalized", sequential=False,
                    threat_model="one-shot", options=_options,
                    runner=f"anonkit.methods.compression:run_{_name}",
                    auxiliary=("summaries",)))
register(Method(
    "randomized", "Randomised representative release (Kidney 2018, diffAnonymize): each value "
    "is replaced by one drawn, weighted by counts, from a subtree of the alphabetic tree. "
    "HEURISTIC: no formal privacy guarantee (its balance measure is not differential "
    "privacy); refused without --accept-heuristic.", "generalized", sequential=False,
    threat_model="one-shot", options=(THRESHOLD, TREE, ACCEPT_HEURISTIC, SEED),
    runner="anonkit.methods.compression:run_randomized"))
register(Method(
    "stream-tree", "The streaming counting tree (Kidney 2018): a perfect binary tree of counts "
    "over an integer domain (declared, or grown with the data); each row is released as "
    "the span where the walk from the root stops. Sequential: counts live in the history, "
    "spans only narrow, so intersecting releases narrows nothing.", "generalized", sequential=True,
    threat_model="monotone-generalization", options=(K, DOMAIN),
    runner="anonkit.methods.stream_tree:anonymize"))
register(Method(
    "m-invariance", "m-invariance (Xiao & Tao 2007) with a perimeter-sum split (ISWC 2022): "
    "every release m-unique, and a record keeps its signature (its class's values) in every "
    "release, also after leaving and coming back; counterfeit rows fill in, their count per "
    "class published beside the release. Sequential only.", "generalized", sequential=True,
    threat_model="m-invariance", options=(M, UNWEIGHTED_SPLIT, SEED),
    auxiliary=("counterfeits",)))

__all__ = [
    "MODELS",
    "POPULATION_OPTIONS",
    "SEED",
    "K",
    "L",
    "M",
    "Method",
    "Option",
    "T",
    "all_options",
    "column_values",
    "get",
    "method_help",
    "methods",
    "names",
    "parse_job_options",
    "register",
    "split_csv",
    "unregister",
]
