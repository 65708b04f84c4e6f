"""Per-example gradients of a Dask array on a local cluster of worker processes, with ``map_blocks``.

    pip install ".[dask]"
    python examples/dask_per_example.py --rows 200000 --workers 2

The transform is built in ``dask_model.py`` (a script's ``__main__`` is not
importable in a worker) and pickles by name. This process's first call
transforms, compiles and stores the entries in the disk cache
(``S2S_CACHE_DIR``, inherited by the workers); each worker's first call then
loads them from there and Numba compiles nothing. The data are drawn on the
workers; the gradients come back and are checked against the hand-written
ones, computed with NumPy here.
"""

import argparse
import time

import dask
import dask.array as da
import dask_model  # beside this script: on sys.path here, and in the workers, which inherit sys.path
import numpy as np
from dask.distributed import Client, LocalCluster


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=200_000, help="examples (rows of the Dask array)")
    parser.add_argument("--features", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2, help="worker processes, one thread each")
    parser.add_argument("--blocks", type=int, default=8, help="blocks of rows")
    args = parser.parse_args()

    w = np.random.default_rng(0).normal(size=args.features) * 0.3
    seconds, compiled = dask_model.first_call(w)   # transform + compile here (unless the cache has it already)
    print(f"first call in this process: {seconds:.2f} s, {compiled} functions compiled by Numba")

    chunk = -(-args.rows // args.blocks)
    rng = da.random.default_rng(1)
    xs = rng.normal(size=(args.rows, args.features), chunks=(chunk, args.features))
    ys = rng.normal(size=(args.rows, 1), chunks=(chunk, 1))
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        for address, (seconds, compiled) in sorted(client.run(dask_model.first_call, w).items()):
            print(f"first call on worker {address}: {seconds:.2f} s, {compiled} functions compiled by Numba")
        start = time.perf_counter()
        grads = da.map_blocks(dask_model.block_gradients, xs, ys, w, dtype=np.float64, chunks=xs.chunks)
        x, y, grads = dask.compute(xs, ys, grads)
        print(f"{args.rows} per-example gradients on {args.workers} workers: {time.perf_counter() - start:.2f} s")

    error = float(np.max(np.abs(grads - dask_model.analytic_gradients(w, x, y[:, 0]))))
    print(f"max abs difference from the hand-written gradients (NumPy): {error:.1e}")
    assert grads.shape == x.shape and error < 1e-12
    print("OK")


if __name__ == "__main__":
    main()
