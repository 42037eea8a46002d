"""Which interleavings a mutant's search runs: its pairs, each interleaving at most once, the pairs
drawn in proportion to how many interleavings each has.

A pair's interleavings are the ways two attempts' storage calls can order: C(a + b, a) for a and b
calls (fewer when a losing attempt stops early). A step with one call per attempt has 2; a leased
step with a provider (the sample's payment: a claim, the provider's call, its write and the
completion) has 70. Drawing pairs
round-robin spends as much on the first as on the second, and a random walk through a pair's
choices repeats interleavings already run. Here a pair is drawn with probability proportional to
the interleavings it has not run yet (estimated from its function's calls in the recorded
catalogue), each run takes a random branch that still leads somewhere new (`Unexplored`), and a
pair whose every interleaving has run is not drawn again: its share goes to the others, and when
none is left, to random schedules.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from math import comb

from chaos.interleave import HAPPY_PATH, Pair
from chaos.mutant import Mutant
from chaos.points import PointHit
from chaos.scheduler import Chooser
from reliability.declaration import function_name

# The pair whose attempts run each function's code (every step on the workflow's happy path).
_PAIR_TARGET = {"api": "api", "worker": "worker", **{function_name(s): s for s in HAPPY_PATH}}
Prefix = tuple[int, ...]


def pairs_for(mutant: Mutant) -> list[Pair]:
    """Two attempts of each piece of work the mutant's functions do. None for a mutant of a use
    case, a setting or the template: those guards act across runs, days and operators, which
    two concurrent attempts of one piece of work never reach."""
    if mutant.runtime is not None or mutant.template is not None:
        return []
    targets = sorted(
        {_PAIR_TARGET[f] for f in mutant.functions if f in _PAIR_TARGET},
        key=("api", "worker", *HAPPY_PATH).index,
    )
    return [Pair(t, late=late) for t in targets for late in (False, True)]


def calls_of(target: str, by_kind: Mapping[str, Sequence[PointHit]]) -> int:
    """How many AWS calls the pair's function makes in one clean run (the most any outcome's)."""
    function = next(f for f, t in _PAIR_TARGET.items() if t == target)
    return max(
        (
            sum(1 for h in hits if h.function == function and h.point.startswith("before:"))
            for hits in by_kind.values()
        ),
        default=1,
    )


@dataclass
class Unexplored:
    """One pair's interleavings run so far, as a tree of choices: a prefix is done when every
    branch under it has been run."""

    done: set[Prefix] = field(default_factory=set)
    runs: int = 0

    @property
    def exhausted(self) -> bool:
        return () in self.done

    def chooser(self, rng: random.Random) -> Chooser:
        return _Fresh(self, rng)

    def ran(self, trace: Sequence[tuple[list[int], int]]) -> None:
        """Mark a finished interleaving (its `Chooser.trace`) and every prefix it completes."""
        self.runs += 1
        picks = tuple(pick for _, pick in trace)
        self.done.add(picks)
        for depth in range(len(picks) - 1, -1, -1):
            prefix, enabled = picks[:depth], trace[depth][0]
            if not all((*prefix, e) in self.done for e in enabled):
                return
            self.done.add(prefix)


class _Fresh(Chooser):
    """At each choice, a random attempt among those whose branch still holds an interleaving not
    run yet (any, once everything under here has run)."""

    def __init__(self, tree: Unexplored, rng: random.Random) -> None:
        super().__init__([])
        self._tree, self._rng = tree, rng

    def __call__(self, enabled: list[int]) -> int:
        prefix = tuple(pick for _, pick in self.trace)
        fresh = [e for e in enabled if (*prefix, e) not in self._tree.done]
        pick = self._rng.choice(fresh or enabled)
        self.trace.append((list(enabled), pick))
        return pick


@dataclass
class PairDraw:
    """The pairs of one search and what each has run."""

    pairs: Sequence[Pair]
    sizes: Mapping[Pair, int]  # estimated interleavings per pair
    trees: dict[Pair, Unexplored] = field(default_factory=dict)

    @classmethod
    def of(cls, pairs: Sequence[Pair], by_kind: Mapping[str, Sequence[PointHit]]) -> PairDraw:
        sizes = {}
        for pair in pairs:
            calls = calls_of(pair.target, by_kind)
            sizes[pair] = comb(2 * calls, calls)
        return cls(list(pairs), sizes, {pair: Unexplored() for pair in pairs})

    @property
    def left(self) -> list[Pair]:
        return [p for p in self.pairs if not self.trees[p].exhausted]

    def next(self, rng: random.Random) -> Pair | None:
        """A pair in proportion to its interleavings not run yet; None once every one has run."""
        left = self.left
        if not left:
            return None
        weights = [max(1, self.sizes[p] - self.trees[p].runs) for p in left]
        return rng.choices(left, weights=weights)[0]
