"""Per-example gradients of a Dask array on a local cluster of worker processes, with ``map_blocks``.

    pip install ".[dask]"
    python examples/dask_per_example.py --rows 200000 --workers 2

The transform is built in ``dask_model.py`` and pickles by name; every worker
process loads its compiled entry from the disk cache that this process filled
(``S2S_CACHE_DIR``, inherited by the workers) instead of compiling it again.
"""

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # workers inherit the path: dask_model imports

import dask.array as da  # noqa: E402
import dask_model  # noqa: E402
from dask.distributed import Client, LocalCluster  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--features", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--blocks", type=int, default=8)
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    w = rng.normal(size=args.features) * 0.3
    x = rng.normal(size=(args.rows, args.features))
    y = rng.normal(size=args.rows)

    cold = dask_model.first_call_seconds(w, args.features)   # transform + compile here, stored on disk
    print(f"first call in this process (builds the cache entry): {cold:.2f} s")

    chunk = -(-args.rows // args.blocks)
    xs = da.from_array(x, chunks=(chunk, args.features))
    ys = da.from_array(y[:, None], chunks=(chunk, 1))
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        warm = client.run(dask_model.first_call_seconds, w, args.features)   # each worker's first call
        for address, seconds in sorted(warm.items()):
            print(f"first call on worker {address}: {seconds:.2f} s (loaded from the disk cache)")
        start = time.perf_counter()
        grads = da.map_blocks(dask_model.block_gradients, xs, ys, w, dtype=np.float64,
                              chunks=xs.chunks).compute()
        print(f"{args.rows} per-example gradients on {args.workers} workers: {time.perf_counter() - start:.2f} s")

    error = float(np.max(np.abs(grads - dask_model.analytic_gradients(w, x, y))))
    print(f"max abs difference from the hand-written gradients: {error:.1e}")
    assert grads.shape == x.shape and error < 1e-12
    print("OK")


if __name__ == "__main__":
    main()
