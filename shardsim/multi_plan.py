"""The multi-planner: which of several candidate plans wins, decided by running them (MultiPlanStage).

The server builds every candidate's stage tree and works them in turn, one
work each per round (round-robin), until one of them has returned
`numResults` documents (`internalQueryPlanEvaluationMaxResults`, 101, or the
query's limit if smaller), has reached EOF, or the rounds reach `maxWorks`
(`internalQueryPlanEvaluationWorks`, 10,000, or 0.3 of the collection's
documents if more).  Each candidate is then scored on what it did in those
rounds (`plan_ranker.score`) and the best one runs the query.

Round-robin gives every candidate the same number of works `W`, the round
in which the first candidate stopped.  Here each candidate runs alone instead,
its works counted and bounded (`plan_executor.Trial`): the first one runs to
its own stopping point, each next one with the smallest stopping point so
far as its budget.  `W` is the smallest stopping point of all; a candidate's
documents are those it returned within `W` works, its EOF bonus whether it
ended within `W` — what the round-robin would have left it with.  (Running
them one after the other does at most the work the rounds would do.)

This decides which plan wins, where counting keys cannot: a plan whose index
gives the sort returns its first documents at once, and with a limit it ends
there, while a plan with fewer keys but a blocking SORT returns nothing until
it has read them all.

Source: src/mongo/db/exec/multi_plan.cpp, trial_period_utils.cpp, plan_ranker.h.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Callable

from mongosim.oplog.errors import MongoError
from mongosim.shardsim import plan_ranker
from mongosim.shardsim.plan_executor import ExecContext, PlanStage, Trial, TrialOver

MAX_RESULTS = 101  # internalQueryPlanEvaluationMaxResults
EVALUATION_WORKS = 10_000  # internalQueryPlanEvaluationWorks
COLL_FRACTION = 0.3  # internalQueryPlanEvaluationCollFraction


def max_works(coll) -> int:
    """getTrialPeriodMaxWorks: max(10,000, 0.3 of the collection's documents)."""
    return max(EVALUATION_WORKS, int(COLL_FRACTION * len(coll.docs)))


def num_to_return(limit: int | None) -> int:
    """getTrialPeriodNumToReturn: 101, or the query's limit if smaller."""
    return min(limit, MAX_RESULTS) if limit else MAX_RESULTS


def _trial(root: PlanStage, coll, budget: int, want: int, limit: int | None = None
           ) -> tuple[list[int], int | None, int, bool]:
    """Run `root` within `budget` works: (the work count at each document it returned, the work count at
    its EOF or None, where it stopped: its `want`-th document, its EOF or the budget, whether it ran
    out of documents: a work answered IS_EOF).  A plan that has returned the query's `limit` is at EOF
    with its last document (its LIMIT, or its SORT's top `limit`, has nothing more: isEOF).  An error
    (a MongoError, e.g. from an `$expr`) propagates: the candidate failed."""
    trial = Trial(budget)
    at: list[int] = []
    eof = None
    ran_out = False
    rows = root.run(ExecContext(coll, trial=trial))
    try:
        for _ in rows:
            at.append(trial.spent)
            if limit and len(at) >= limit:
                eof = trial.spent
            if len(at) >= want:
                break
        else:
            eof = trial.spent + 1  # (the work that finds nothing more)
            ran_out = True
    except TrialOver:
        pass
    finally:
        rows.close()
    if len(at) >= want:
        return at, eof, at[-1], ran_out
    return at, eof, min(eof, budget) if eof is not None else budget, ran_out


def _race(roots: list[PlanStage], coll, limit: int | None) -> tuple[list[tuple[int, float]], int, set[int]]:
    """The candidates' (index in `roots`, score), best first, the works each did (the rounds), and
    those whose work answered IS_EOF within them."""
    want = num_to_return(limit)
    works = max_works(coll)
    traces: list[tuple[list[int], int | None, bool] | None] = []
    failed: MongoError | None = None
    for root in roots:
        try:
            at, eof, stop, ran_out = _trial(root, coll, works, want, limit)
        except MongoError as e:  # a failed candidate: ranked last, as the server drops it
            failed = failed or e
            traces.append(None)
            continue
        works = min(works, stop)
        traces.append((at, eof, ran_out))
    if failed is not None and all(t is None for t in traces):
        raise failed  # (every candidate failed: the query fails with the first error)
    scores = []
    ended_set: set[int] = set()
    for i, (root, trace) in enumerate(zip(roots, traces)):
        if trace is None:
            scores.append((i, 0.0))
            continue
        at, eof, ran_out = trace
        advanced = bisect_right(at, works)
        ended = eof is not None and eof <= works
        if ended and ran_out:
            ended_set.add(i)
        scores.append((i, plan_ranker.score(advanced, works, ended, {s.stage for s in root.walk()})))
    return sorted(scores, key=lambda s: -s[1]), works, ended_set


def ranked(roots: list[PlanStage], coll, limit: int | None) -> list[tuple[int, float]]:
    """The candidates' (index in `roots`, score), best first; equal scores keep the order of `roots`; a
    candidate that failed (an error in its trial) scores 0, below all others.

    Each root is run by the trial, which leaves its counters as it stopped: build fresh stage trees
    for the plan that runs the query."""
    return _race(roots, coll, limit)[0]


def race(roots: list[PlanStage], coll, limit: int | None) -> tuple[list[tuple[int, float]], bool]:
    """`ranked`, and whether the winner reached EOF in the trial.  The MultiPlanStage keeps what the
    winner returned in the trial and hands it out first; its isEOF is "that buffer is empty and the
    winner is at EOF" — so a winner that ended in the trial is at EOF with its last document."""
    order, _works, ended = _race(roots, coll, limit)
    return order, order[0][0] in ended


def trial_plans(build: Callable[[], list[PlanStage]], coll, limit: int | None) -> list[tuple[PlanStage, float]]:
    """Each candidate as the trial left it, with its score, best first (explain's allPlansExecution):
    `build` makes the candidates' stage trees; each is run again for the trial's rounds alone, so its
    counters are those of the round-robin's end."""
    order, works, _ended = _race(build(), coll, limit)
    roots = build()
    for root in roots:
        try:
            _trial(root, coll, works, num_to_return(limit), limit)
        except MongoError:
            pass
    return [(roots[i], score) for i, score in order]
