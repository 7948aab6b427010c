"""Progress and time limit of the training loops (host loops over jit-compiled chunks).

Every solver logs on the logger ``attnlib.train``: at INFO level every 10 seconds
(steps done, the residual of its stopping test, time), and at WARNING level when it
stops at its ``time_limit`` (the result then has ``converged=False``). Show the
progress with ``logging.basicConfig(level=logging.INFO)``.
"""

from __future__ import annotations

import logging
import time

from attnlib import _limits

__all__ = ["Progress"]

log = logging.getLogger("attnlib.train")

LOG_EVERY_S = 10.0


class Progress:
    """Progress of one run of ``solver``: :meth:`stop` after each chunk says whether the
    time limit (``None``: none) is reached, and logs every :data:`LOG_EVERY_S` seconds."""

    def __init__(self, solver: str, total: int, time_limit: float | None):
        self.solver, self.total = solver, total
        self.limit = _limits.time_limit(time_limit)
        self.start = self.last = time.perf_counter()

    def stop(self, done: int, residual: float) -> bool:
        now = time.perf_counter()
        if now - self.last >= LOG_EVERY_S:
            self.last = now
            msg = "%s: %d of at most %d steps, residual %.3g, %.0f s"
            log.info(msg, self.solver, done, self.total, residual, now - self.start)
        if self.limit is not None and now - self.start >= self.limit:
            msg = "%s: stopped at time_limit = %g s after %d steps (residual %.3g)"
            log.warning(msg, self.solver, self.limit, done, residual)
            return True
        return False
