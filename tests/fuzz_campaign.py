"""A long fuzzing campaign that keeps going: every program checked, every outcome logged, progress printed.

``tests/test_fuzz.py`` under pytest stops at the first failure and shrinks it,
and prints nothing until it ends. A campaign of thousands of programs wants
the opposite: this script draws programs from the same strategy
(``test_fuzz.cases``; ``--seed`` names a stream of its own), checks each with
``test_fuzz.run_case``, appends one JSON line per program to ``--log`` (its
outcome; the source and point of a failure), and prints a progress line every
``--every`` programs, so a stopped run still says how far it got. Failures are
not shrunk: rerun one with pytest and its seed, or paste its source into
``tests/test_fuzz_regressions.py``.

    S2S_FUZZ_FEATURES=all S2S_FUZZ_TARGETS=python \\
        python tests/fuzz_campaign.py --seed 8 --count 500 --log campaign.jsonl

The environment variables are ``test_fuzz``'s (families, targets, the Hessian's size bound). A process
keeps every program it imported: run long campaigns as chunks of a few hundred programs, one seed each.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from collections import Counter

from hypothesis import HealthCheck, Phase, given, seed, settings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("S2S_CACHE_DIR", tempfile.mkdtemp(prefix="s2s-campaign-cache-"))

import test_fuzz  # noqa: E402 (after the cache folder is chosen)

# the commit of the s2s under test (the checkout this script is in), recorded with every program
COMMIT = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=os.path.dirname(os.path.abspath(__file__)),
                        capture_output=True, text=True).stdout.strip() or None


def campaign(seed_value: int, count: int, log_path: str, every: int) -> Counter:
    """Check ``count`` programs of stream ``seed_value``; the tally of outcomes (``passed``, ``failed``, ...)."""
    test_fuzz._FOLDER = tempfile.mkdtemp(prefix="s2s-campaign-programs-")
    tally: Counter = Counter()
    start = time.perf_counter()

    @seed(seed_value)
    @settings(max_examples=count, deadline=None, database=None, phases=(Phase.generate,),
              suppress_health_check=list(HealthCheck))
    @given(test_fuzz.cases())
    def one(case):
        program, n, k = case
        t0 = time.perf_counter()
        outcome = test_fuzz.run_case(program, n, k)
        bug = test_fuzz.known_bug(outcome, program.features) if outcome.failure else None
        kind = ("rejected" if outcome.reject else "refused" if outcome.refused else
                "known bug" if bug else "failed" if outcome.failure else "passed")
        tally[kind] += 1
        record = {"seed": seed_value, "index": sum(tally.values()), "outcome": kind, "commit": COMMIT,
                  "seconds": round(time.perf_counter() - t0, 3)}
        if kind != "passed":
            record["why"] = outcome.reject or outcome.refused or bug or outcome.kind
        if kind == "failed":
            record["failure"] = outcome.failure
        with open(log_path, "a") as fh:
            fh.write(json.dumps(record) + "\n")
        if sum(tally.values()) % every == 0:
            print(f"seed {seed_value}: {sum(tally.values())} programs in {time.perf_counter() - start:.0f} s: "
                  + ", ".join(f"{v} {k}" for k, v in sorted(tally.items())), flush=True)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        one()
    return tally


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, required=True, help="the stream of programs")
    parser.add_argument("--count", type=int, default=500, help="programs to draw (rejected ones count)")
    parser.add_argument("--log", required=True, help="JSON lines, one per program, appended")
    parser.add_argument("--every", type=int, default=25, help="print progress every this many programs")
    args = parser.parse_args(argv)
    tally = campaign(args.seed, args.count, args.log, args.every)
    print(f"seed {args.seed} done: " + ", ".join(f"{v} {k}" for k, v in sorted(tally.items())), flush=True)
    return 1 if tally["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
