"""Binomial checkpointing: Griewank's revolve schedule, one action at a time.

A checkpointed loop of ``n`` steps keeps at most ``snaps`` snapshots of its
state. ``revolve_start(n, snaps)`` makes the schedule's state (a small int64
array) and each ``revolve_next(state)`` says what to do next:

- ``ADVANCE``: run the plain steps ``state[OLDCAPO]`` to ``state[CAPO] - 1``;
- ``TAKESHOT``: store the state (now at step ``state[CAPO]``) in slot ``state[CHECK]``;
- ``RESTORE``: load slot ``state[CHECK]`` (the state at step ``state[CAPO]``);
- ``FIRSTURN``, ``YOUTURN``: run step ``state[CAPO]`` recording its tape, then its adjoint;
- ``TERMINATE``: every step has had its adjoint.

The split points are Griewank's binomial ones (A. Griewank, A. Walther,
"Algorithm 799: revolve", ACM TOMS 26(1), 2000): with ``s`` snapshots and
``r`` repetitions at most ``C(s + r, s)`` steps are reversed, and no schedule
runs fewer forward steps.

    >>> state, actions = revolve_start(4, 2), []
    >>> while (a := revolve_next(state)) != TERMINATE:
    ...     actions.append(NAMES[a] + str(int(state[CAPO])))
    >>> " ".join(actions)
    'takeshot0 advance2 takeshot2 advance3 firsturn3 restore2 youturn2 restore0 advance1 youturn1 restore0 youturn0'
"""

from __future__ import annotations

import numpy as np

from .helper_cache import overload, register_jitable

__all__ = ["ADVANCE", "TAKESHOT", "RESTORE", "FIRSTURN", "YOUTURN", "TERMINATE", "CHECK", "CAPO", "OLDCAPO",
           "revolve_start", "revolve_next", "snapshot_count", "trip_count", "snapshot_slots", "snapshot_of"]

ADVANCE, TAKESHOT, RESTORE, FIRSTURN, YOUTURN, TERMINATE = 1, 2, 3, 4, 5, 6
NAMES = {ADVANCE: "advance", TAKESHOT: "takeshot", RESTORE: "restore", FIRSTURN: "firsturn", YOUTURN: "youturn",
         TERMINATE: "terminate"}
# the schedule's state: the latest snapshot's slot, the current step, the end of the steps left to reverse,
# the number of slots, whether the first turn is done, the step before the last advance, then each slot's step
CHECK, CAPO, FINE, SNAPS, TURNED, OLDCAPO, SLOTS = 0, 1, 2, 3, 4, 5, 6


@register_jitable
def revolve_start(n, snaps):
    """The schedule's state for ``n`` steps and ``snaps`` (at least 1) snapshot slots."""
    state = np.zeros(SLOTS + snaps, np.int64)
    state[CHECK] = -1
    state[FINE] = n
    state[SNAPS] = snaps
    return state


@register_jitable
def _binomial(n, k):
    """C(n, k), 0 outside 0 <= k <= n."""
    if k < 0 or k > n:
        return 0
    k = min(k, n - k)
    out = 1
    for j in range(1, k + 1):
        out = out * (n - k + j) // j
    return out


@register_jitable
def revolve_next(state):
    """The next action of the schedule, updating ``state``."""
    check, capo, fine = state[CHECK], state[CAPO], state[FINE]
    if fine == capo:  # the steps from the latest snapshot on are reversed: go back to it, or stop
        if check == -1 or capo == state[SLOTS]:
            state[CHECK] = check - 1
            return TERMINATE
        state[CAPO] = state[SLOTS + check]
        return RESTORE
    if fine - capo == 1:  # the step at capo: record it and run its adjoint
        state[FINE] = fine - 1
        if check >= 0 and state[SLOTS + check] == capo:
            state[CHECK] = check - 1  # its snapshot is not needed again
        if state[TURNED] == 0:
            state[TURNED] = 1
            return FIRSTURN
        return YOUTURN
    if check == -1 or state[SLOTS + check] != capo:
        state[CHECK] = check + 1
        state[SLOTS + check + 1] = capo
        return TAKESHOT
    # advance as far as the binomial bound allows with the snapshots left
    free = state[SNAPS] - check  # the snapshots left, counting the one at capo
    reps, reach = 0, 1
    while reach < fine - capo:  # the fewest repetitions r with C(free + r, free) >= the steps left
        reps += 1
        reach = reach * (reps + free) // reps
    # the largest first advance of an optimal schedule: the steps before the next snapshot are reversed with one
    # repetition fewer, the steps after it with one snapshot fewer
    state[OLDCAPO] = capo
    target = capo + min(_binomial(free + reps - 1, free), fine - capo - _binomial(free + reps - 2, free - 1))
    state[CAPO] = max(target, capo + 1)
    return ADVANCE


@register_jitable
def snapshot_count(n, budget, snapshot_bytes, most):
    """How many snapshots of ``snapshot_bytes`` fit in ``budget`` bytes beside the one the first turn keeps:
    at least 1, at most ``most`` and ``n``.

    >>> snapshot_count(1000, 10 ** 6, 800, 10 ** 9)
    1000
    >>> snapshot_count(1000, 8000, 800, 20), snapshot_count(1000, 8000, 800, 3)
    (9, 3)
    """
    k = budget // max(snapshot_bytes, 1) - 1
    return max(1, min(k, most, max(n, 1)))


@register_jitable
def trip_count(start, stop, step):
    """The number of items of ``range(start, stop, step)``.

    >>> trip_count(0, 10, 3), trip_count(5, 0, -2), trip_count(3, 1, 1)
    (4, 3, 0)
    """
    if step > 0:
        return max(0, (stop - start + step - 1) // step)
    return max(0, (start - stop - step - 1) // -step)


def snapshot_slots(x, k):
    """Room for ``k`` snapshots of ``x``: an array for a scalar, an array with a leading axis of ``k`` for an
    array (whose shape the loop keeps).

    >>> snapshot_slots(1.5, 2).shape, snapshot_slots(np.ones(3), 2).shape
    ((2,), (2, 3))
    """
    if isinstance(x, np.ndarray):
        return np.empty((k,) + x.shape, x.dtype)
    return np.empty(k, np.asarray(x).dtype)


@overload(snapshot_slots)
def _snapshot_slots_nb(x, k):
    from numba.core import types

    if isinstance(x, types.Array):
        return lambda x, k: np.empty((k,) + x.shape, x.dtype)
    if isinstance(x, types.Boolean):
        return lambda x, k: np.empty(k, np.bool_)
    return lambda x, k: np.empty(k, type(x))


def snapshot_of(x, slot):
    """A copy of the array ``x`` to store in ``slot``, which has the shape ``x`` had when the loop began.

    >>> snapshot_of(np.ones(2), np.zeros(2))
    array([1., 1.])
    >>> snapshot_of(np.ones(3), np.zeros(2))
    Traceback (most recent call last):
    ValueError: a checkpointed loop changed the shape of an array in its state
    """
    if np.shape(x) != np.shape(slot):
        raise ValueError("a checkpointed loop changed the shape of an array in its state")
    return np.copy(x)


@overload(snapshot_of)
def _snapshot_of_nb(x, slot):
    def impl(x, slot):
        if x.shape != slot.shape:
            raise ValueError("a checkpointed loop changed the shape of an array in its state")
        return np.copy(x)

    return impl
