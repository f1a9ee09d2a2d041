"""Self-similarity from the sum of unit vectors, O(n·d), against the n×n Gram matrix, O(n²·d).

Prints one row per group size: both times, their ratio, and the largest absolute difference.
"""

from __future__ import annotations

import time

import numpy as np

from vlbias.metrics import self_similarity


def gram_matrix_self_similarity(x: np.ndarray) -> float:
    x = x / np.linalg.norm(x, axis=1, keepdims=True)
    gram = x @ x.T
    n = len(x)
    return float((gram.sum() - np.trace(gram)) / (n * (n - 1)))


def best_of(function, x, repeats=3):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        value = function(x)
        times.append(time.perf_counter() - start)
    return min(times), value


def main() -> None:
    rng = np.random.default_rng(0)
    print(f"{'n':>7} {'d':>4} {'closed form s':>14} {'gram s':>10} {'ratio':>8} {'|diff|':>9}")
    for n in (1_000, 5_000, 12_000):  # FairFace's largest race group has about 16,500 train images
        x = rng.normal(size=(n, 512)).astype(np.float32)
        fast, a = best_of(self_similarity, x)
        slow, b = best_of(gram_matrix_self_similarity, x, repeats=1)
        print(f"{n:>7} {512:>4} {fast:>14.4f} {slow:>10.4f} {slow / fast:>7.0f}x {abs(a - b):>9.1e}")


if __name__ == "__main__":
    main()
