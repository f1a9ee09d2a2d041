"""Part I's tables on FairFace-sized synthetic embeddings: vlbias against the released code's approach.

Synthetic data: 86,744 unit vectors in 512 dimensions with FairFace train's race, gender and age
proportions and a planted group structure. Times, in one run on this machine:

* vlbias: every self-similarity table of the part (race, age, gender, gender×age, race×age,
  White Male vs Black Female by age, race×gender×age) with the balanced estimator at R = 10,000
  (``interval="auto"``: Monte Carlo draws where cheap, exact moments elsewhere), the released-code
  estimator at R = 10,000 for the 126 groups, and every markedness table (balanced, R = 10,000);
* the released code's approach: per repetition and group, a pandas query, a random draw and
  scipy ``pdist``; timed for a few repetitions and scaled to 10,000 (it would take hours);
* image embedding: images per second of ``embed_images`` (batched, parallel decoding) against
  one image at a time, on the same tiny model and 448×448 JPEG files.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from PIL import Image
from scipy.spatial.distance import pdist

from vlbias import markedness as mk

REPETITIONS = 10_000
RACE_SHARES = {"East Asian": 12287, "Indian": 12319, "Southeast Asian": 10795, "White": 16527,
               "Middle Eastern": 9216, "Latino_Hispanic": 13367, "Black": 12233}
GENDER_SHARES = {"Female": 40758, "Male": 45986}
AGE_SHARES = {"0-2": 1792, "3-9": 10408, "10-19": 9103, "20-29": 25598, "30-39": 19250, "40-49": 10744,
              "50-59": 6228, "60-69": 2779, "more than 70": 842}


def synthetic_fairface(n: int = 86_744, dim: int = 512, seed: int = 0):
    rng = np.random.default_rng(seed)
    columns = {}
    for name, shares in (("race", RACE_SHARES), ("gender", GENDER_SHARES), ("age", AGE_SHARES)):
        labels, counts = list(shares), np.array(list(shares.values()), float)
        columns[name] = rng.choice(labels, size=n, p=counts / counts.sum())
    records = pd.DataFrame(columns)
    common = rng.normal(size=dim)
    offsets = {label: rng.normal(size=dim) * 0.6 for shares in (RACE_SHARES, GENDER_SHARES, AGE_SHARES) for label in shares}
    x = np.tile(common, (n, 1)) + rng.normal(size=(n, dim)) * 1.2
    for name in ("race", "gender", "age"):
        x += np.stack([offsets[label] for label in records[name]])
    return records, (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def vlbias_tables(records, x, flags) -> dict[str, float]:
    """Every Part I table; seconds spent per stage."""
    times = {}
    start = time.perf_counter()
    cells = mk.cell_moments(records, x)
    times["cell moments (one pass)"] = time.perf_counter() - start
    pair = mk.select(records, race="White", gender="Male") | mk.select(records, race="Black", gender="Female")
    start = time.perf_counter()
    for by, mask in (("race", None), ("age", None), ("gender", None), (["gender", "age"], None),
                     (["race", "age"], None), (["race", "gender", "age"], pair), (["race", "gender", "age"], None)):
        mask = np.ones(len(records), bool) if mask is None else mask
        mk.self_similarity_table(records[mask], x[mask], by, repetitions=REPETITIONS, cells=cells)
    times["balanced self-similarity, 7 tables"] = time.perf_counter() - start
    start = time.perf_counter()
    mk.self_similarity_table(records, x, ["race", "gender", "age"], estimator="released-code",
                             repetitions=REPETITIONS, cells=cells)
    times["released-code self-similarity, 126 groups"] = time.perf_counter() - start
    start = time.perf_counter()
    for family in mk.FAMILIES:
        for by in (family, ["gender", "age"], ["race", "gender", "age"]):
            mk.unmarked_table(records, flags[family].to_numpy(), by, balance=True, repetitions=REPETITIONS)
    times["markedness, 9 balanced tables"] = time.perf_counter() - start
    return times


def released_code_repetition(frame: pd.DataFrame, x: np.ndarray, by: list[str], groups, rng, draws: int = 22):
    """One repetition the released script's way: query each group, draw, pdist."""
    values = []
    for key in groups:
        query = " and ".join(f"{column} == {label!r}" for column, label in zip(by, key))
        rows = frame.query(query)
        picked = rows.sample(n=draws, replace=True, random_state=int(rng.integers(1 << 31)))
        values.append(np.mean(1 - pdist(x[picked["position"].to_numpy()], "cosine")))
    return values


def balanced_pandas_repetition(frame, x, by, rng):
    """One balanced repetition with pandas: drop rows of every group down to the smallest, pdist each."""
    sizes = frame.groupby(by).size()
    smallest = sizes.min()
    values = []
    for key in sizes.index:
        key = key if isinstance(key, tuple) else (key,)
        rows = frame.query(" and ".join(f"{c} == {k!r}" for c, k in zip(by, key)))
        kept = rows.drop(rows.sample(n=len(rows) - smallest, random_state=int(rng.integers(1 << 31))).index)
        values.append(np.mean(1 - pdist(x[kept["position"].to_numpy()], "cosine")))
    return values


def time_it(function, *args):
    start = time.perf_counter()
    function(*args)
    return time.perf_counter() - start


def embedding_throughput(n_images: int = 192):
    from vlbias.data.base import LazyImages, open_rgb
    from vlbias.embeddings import embed_images
    from vlbias.models import load_image_text_model

    model = load_image_text_model("tiny:clip", device="cpu")
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as folder:
        paths = []
        for i in range(n_images):  # FairFace 1.25-padding images are 448×448 JPEGs
            pixels = rng.integers(0, 256, size=(56, 56, 3), dtype=np.uint8)
            image = Image.fromarray(pixels).resize((448, 448), Image.BILINEAR)
            path = Path(folder) / f"{i}.jpg"
            image.save(path, quality=90)
            paths.append(path)
        images = LazyImages(lambda i: open_rgb(paths[i]), np.arange(n_images), None)
        model.encode_images([images[0]], progress=False)  # warm up
        start = time.perf_counter()
        for i in range(n_images):
            model.encode_images([images[i]], batch_size=1, progress=False)
        one_at_a_time = n_images / (time.perf_counter() - start)
        start = time.perf_counter()
        embed_images(model, images, dataset_identity="bench", batch_size=64, chunk_size=n_images,
                     cache=False, progress=False)
        loader = n_images / (time.perf_counter() - start)
        start = time.perf_counter()
        embed_images(model, images, dataset_identity="bench", batch_size=64, chunk_size=n_images,
                     cache=False, progress=False, decode_workers=0)
        batched_serial = n_images / (time.perf_counter() - start)
    return one_at_a_time, batched_serial, loader


def main() -> None:
    records, x = synthetic_fairface()
    # markedness flags from a planted score: enough to time the tables
    rng = np.random.default_rng(1)
    flags = pd.DataFrame({family: rng.random(len(records)) < 0.3 for family in mk.FAMILIES})
    print(f"{len(records):,} × {x.shape[1]} synthetic embeddings, {records.groupby(['race', 'gender', 'age']).ngroups} "
          f"race×gender×age groups (smallest {records.groupby(['race', 'gender', 'age']).size().min()}), "
          f"{os.cpu_count()} CPU cores")

    stages = vlbias_tables(records, x, flags)
    ours = sum(stages.values())
    print(f"vlbias, all Part I tables at R = {REPETITIONS:,}: {ours:.1f} s")
    for stage, seconds in stages.items():
        print(f"    {stage}: {seconds:.1f} s")

    frame = records.assign(position=np.arange(len(records)))
    by = ["race", "gender", "age"]
    groups = list(records.groupby(by).groups)
    reps = 3
    released = time_it(lambda: [released_code_repetition(frame, x, by, groups, rng) for _ in range(reps)]) / reps
    print(f"released code's approach, race×gender×age (126 groups, 22 draws): {released:.2f} s per repetition, "
          f"{released * REPETITIONS / 60:.0f} min for {REPETITIONS:,}")
    balanced_reps = {"race×gender×age": (by, 3), "age": (["age"], 1)}
    pandas_balanced = 0.0
    for name, (columns, count) in balanced_reps.items():
        per = time_it(lambda: [balanced_pandas_repetition(frame, x, columns, rng) for _ in range(count)]) / count
        pandas_balanced += per
        print(f"pandas + pdist balanced repetition, {name}: {per:.2f} s per repetition")
    # race, gender and the larger intersections would need pdist over 9,000-40,000 rows per group and
    # repetition (tens of GB of pair distances for gender): not run; the ratio below leaves them out
    slow = (released + pandas_balanced) * REPETITIONS
    print(f"released approach for just these three tables at R = {REPETITIONS:,}: {slow / 3600:.1f} h "
          f"-> ratio {slow / ours:,.0f}x (vlbias did every table)")

    one, batched, loader = embedding_throughput()
    print(f"image embedding (tiny:clip, 448×448 JPEGs): one at a time {one:.0f} img/s, batched {batched:.0f} img/s, "
          f"batched with parallel decoding {loader:.0f} img/s -> {loader / one:.1f}x over one at a time")


if __name__ == "__main__":
    main()
