#!/usr/bin/env python3
"""Where a look-back tile's time goes: reads the per-tile records of one launch of the look-back
rows kernel compiled with SCANC_CUDA_TUNING=...,stamps=1 and written to SCANC_CUDA_STAMPS
(layout: src/backends/cuda/stamps.h), prints each phase's duration, the tiles in flight, and the
chain of published prefixes.

    STAMPS="sum 1-D 2^28[|TUNING]" scripts/gpu.sh OUT     # runs this on OUT/stamps-0.bin
    python3 bench/lookback_stamps.py OUT/stamps-0.bin [--clock-ghz 1.98]
"""
import argparse
import sys

import numpy as np

PHASES = ["loaded", "barrier1", "window", "prefix", "published", "barrier2", "stored"]


def read(path):
    raw = np.fromfile(path, dtype="<u8")
    if raw.size < 8 or raw[:1].tobytes() != b"SCSTAMP1":
        sys.exit(f"{path}: not a stamps file")
    tiles, chunks, outer, length, window, tile_elems, words = (int(v) for v in raw[1:8])
    rec = raw[8:].reshape(tiles, 8)
    head = dict(tiles=tiles, chunks=chunks, outer=outer, len=length, window=window,
                tile_elements=tile_elems, state_words=words)
    return head, rec


def stats(x):
    x = np.asarray(x, dtype=np.float64)
    if x.size == 0:
        return "-"
    return f"median {np.median(x):9.0f}  mean {x.mean():9.0f}  p10 {np.percentile(x, 10):9.0f}  " \
           f"p90 {np.percentile(x, 90):9.0f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--clock-ghz", type=float, default=1.98, help="SM clock, to print cycles as ns")
    args = ap.parse_args()
    head, rec = read(args.file)
    print("launch:", ", ".join(f"{k} {v}" for k, v in head.items()))
    g0, gpub, gend = (rec[:, j].astype(np.int64) for j in range(3))
    sm = rec[:, 3] & 0xFFFFFFFF
    cyc = np.stack([rec[:, 3] >> 32, rec[:, 4] & 0xFFFFFFFF, rec[:, 4] >> 32, rec[:, 5] & 0xFFFFFFFF,
                    rec[:, 5] >> 32, rec[:, 6] & 0xFFFFFFFF, rec[:, 6] >> 32], axis=1).astype(np.int64)
    chunk = (rec[:, 7] & 0xFFFFFFFF).astype(np.int64)
    pos = ((rec[:, 7] >> 32) & 0xFFFF).astype(np.int64)  # the tile's place in its window
    a_rounds = ((rec[:, 7] >> 48) & 0xFF).astype(np.int64)  # rounds of polls after the first loads
    p_rounds = (rec[:, 7] >> 56).astype(np.int64)
    # Each tile's row: tile t is chunk t / outer of row t % outer (chunk-major, the default) or
    # chunk t % chunks of row t / chunks (cmajor=0); the records' chunks tell which.
    t = np.arange(len(rec))
    major = np.array_equal(chunk, t // head["outer"])
    row = t % head["outer"] if major else t // head["chunks"]
    t0 = g0.min()
    span = gend.max() - t0
    steps = np.diff(np.unique(g0))
    print(f"global timer: smallest step between dispatch times {steps.min() if steps.size else 0} ns")
    print(f"kernel span {span / 1e3:.1f} us, {head['tiles'] / (span / 1e3):.1f} tiles/us, "
          f"{head['len'] * head['outer'] * 4 * (head['state_words'] + 1) / span:.0f} GB/s "
          f"(f32 leaves in, one out), "
          f"{len(np.unique(sm))} SMs")
    life = gend - g0
    print(f"tile life (ns): {stats(life)}")
    print(f"tiles in flight (Little): {life.sum() / span:.0f}")
    # Phases: cycles from dispatch to each phase's end, as ns; a phase's own time is the step
    # from the previous phase that ran (tiles of chunk 0 skip the look-back phases).
    lb = chunk > 0
    prev = np.zeros(len(rec), dtype=np.int64)
    print(f"phase durations, ns at {args.clock_ghz} GHz, over tiles with a look-back ({lb.sum()}):")
    for j, name in enumerate(PHASES):
        ran = lb & (cyc[:, j] > 0)
        d = (cyc[:, j] - prev) / args.clock_ghz
        print(f"  {name:10s} {stats(d[ran])}")
        prev = np.where(cyc[:, j] > 0, cyc[:, j], prev)
    # The prefix wait by place in the window, and how many of those tiles polled P again (a
    # window's first tiles may poll before the previous window's end has published it).
    wait = (cyc[:, 3] - cyc[:, 2]) / args.clock_ghz
    for lo, hi in ((0, 8), (8, 32), (32, head["window"])):
        sel = lb & (cyc[:, 3] > 0) & (pos >= lo) & (pos < hi)
        if not sel.any():  # a window of 32 has no places 32 and up
            continue
        print(f"  prefix, tiles {lo}-{hi - 1} of a window: {stats(wait[sel])}; P polled again "
              f"by {(p_rounds[sel] > 0).mean():.0%}")
    # Rounds of polls after the first loads (issued at dispatch): 0 = already published then.
    has_p = lb & (pos < chunk)  # tiles past their row's first window poll a P
    for name, r in (("A window", a_rounds[lb]), ("P", p_rounds[has_p])):
        print(f"  {name}: polled again by {(r > 0).mean():.0%} of tiles; rounds {stats(r)}")
    # In flight over time: how many tiles are between dispatch and end at 200 sample times.
    ts = np.linspace(t0, gend.max(), 200)[1:-1]
    inflight = np.searchsorted(np.sort(g0), ts) - np.searchsorted(np.sort(gend), ts)
    print(f"tiles in flight over time: {stats(inflight)}")
    # Chains, one per row: when each window-end tile published P, against the previous window
    # end of its row.
    w = head["window"]
    ends = np.nonzero((chunk % w == w - 1) & (gpub > 0))[0]
    ends = ends[np.lexsort((chunk[ends], row[ends]))]  # by row, then chunk
    linked = row[ends[1:]] == row[ends[:-1]]  # pairs (previous, this) of one row
    cur, prv = ends[1:][linked], ends[:-1][linked]
    if cur.size:
        print(f"P chains: {len(np.unique(row[ends]))} rows, {ends.size} window ends, "
              f"link (ns): {stats(gpub[cur] - gpub[prv])}")
        print(f"  window-end tile, dispatch to publish (ns): {stats(gpub[ends] - g0[ends])}")
        # The chain's critical input: did the previous window end's P come after this window
        # end's own aggregates were all seen? And how long after a word is published is it seen?
        clock = lambda j: g0 + cyc[:, j] / args.clock_ghz  # global ns of phase j's end (approx.)
        own, prev_p = clock(2)[cur], gpub[prv]
        print(f"  window ends whose previous P came after their own window was seen: "
              f"{(prev_p > own).mean():.0%} (by {np.median(prev_p - own):.0f} ns median)")
        seen = clock(3)[cur] - np.maximum(prev_p, own)
        print(f"  P seen after it was published and the window was seen (ns): {stats(seen)}")
    pub = np.nonzero(gpub > 0)[0]
    if pub.size > 1:
        print(f"publish after dispatch, all tiles (ns): {stats(gpub[pub] - g0[pub])}")
        print(f"end after publish, all tiles (ns): {stats(gend[pub] - gpub[pub])}")


if __name__ == "__main__":
    main()
