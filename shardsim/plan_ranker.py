"""The plan ranker's score: how good a candidate plan looked during its trial (plan_ranker.h).

    score = 1 + advanced / works + EOF bonus + tie-breakers

- *productivity*, `advanced / works`: results per unit of work.  A plan that
  must read everything before its first result (a blocking SORT) scores 0
  until its input ends;
- the *EOF bonus*, 1: a plan that produced all its results within the trial
  beats every plan that did not (productivity and tie-breakers stay below 1);
- the *tie-breakers*, epsilon = min(1 / (10 works), 1e-4) each: no FETCH (a
  covered plan), no blocking SORT, no index intersection (mongosim plans none).

Scores are rounded to four places, as explain prints them.
"""

from __future__ import annotations

EOF_BONUS = 1.0
BONUS_EPSILON = 1e-4


def score(advanced: int, works: int, eof: bool, stages: set[str]) -> float:
    """The score of a plan that advanced `advanced` times in `works` works (`stages`: its stage names)."""
    works = max(1, works)
    epsilon = min(1.0 / (10 * works), BONUS_EPSILON)
    tie_breakers = epsilon * (("FETCH" not in stages) + ("SORT" not in stages) + 1)
    return round(1 + advanced / works + (EOF_BONUS if eof else 0.0) + tie_breakers, 4)
