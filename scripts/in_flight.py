#!/usr/bin/env python3
"""How full a client kept its in-flight slots, from a `headroom sim --log FILE` request log.

Each log line holds when a request arrived (`arrived`) and when it was answered (`time`);
between the two it was in flight. The script prints the makespan, the peak, and the
time-weighted average in flight as a share of the ceiling, from the first arrival until the
last CEILING requests arrive (after that no client can fill the slots).

    python3 scripts/in_flight.py sim.jsonl [--ceiling 10] [--identity alice] [--json]
"""

import argparse
import json
import sys
from datetime import datetime


def instant(text):
    """Milliseconds since the epoch of the log's RFC 3339 UTC instant."""
    return round(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


def spans_of(lines, identity):
    spans = []
    for number, line in enumerate(lines, 1):
        line = line.strip()
        if not line:
            continue
        try:
            entry = json.loads(line)
            if identity is not None and entry.get("identity") != identity:
                continue
            spans.append((instant(entry["arrived"]), instant(entry["time"])))
        except (ValueError, KeyError, TypeError) as e:
            raise SystemExit(f"line {number}: not a request log line with `arrived` and `time`: {e}")
    spans.sort()
    return spans


def measure(spans, ceiling):
    """The figures, or None for a log too short to have a part before its last `ceiling`."""
    if len(spans) <= ceiling:
        return None
    first = spans[0][0]
    last = max(end for _, end in spans)
    cutoff = spans[len(spans) - ceiling][0]
    covered = sum(max(0, min(end, cutoff) - start) for start, end in spans)
    edges = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])
    level = peak = busy = near_full = 0
    previous = None
    for at, step in edges:
        if previous is not None:
            if level > 0:
                busy += at - previous
            if level >= 0.8 * ceiling:
                near_full += at - previous
        level += step
        peak = max(peak, level)
        previous = at
    return {
        "requests": len(spans),
        "makespan_s": (last - first) / 1000,
        "peak_in_flight": peak,
        "ceiling": ceiling,
        "average_in_flight_share": covered / (cutoff - first) / ceiling if cutoff > first else None,
        "measured_until_s": (cutoff - first) / 1000,
        "near_full_share_of_busy": near_full / busy if busy else None,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log", help="the simulator's --log file (JSON lines)")
    parser.add_argument("--ceiling", type=int, default=10, help="the client's in-flight ceiling")
    parser.add_argument("--identity", help="only this identity's requests (a login)")
    parser.add_argument("--json", action="store_true", help="one JSON object")
    args = parser.parse_args()
    if args.ceiling < 1:
        raise SystemExit("--ceiling must be at least 1")
    try:
        with open(args.log, encoding="utf-8") as f:
            spans = spans_of(f, args.identity)
    except OSError as e:
        raise SystemExit(f"cannot read {args.log}: {e}")
    figures = measure(spans, args.ceiling)
    if figures is None:
        raise SystemExit(f"{len(spans)} requests: no more than the ceiling, nothing to measure")
    if args.json:
        json.dump(figures, sys.stdout)
        print()
        return
    average = figures["average_in_flight_share"]
    print(
        f"{figures['requests']} requests in {figures['makespan_s']:.1f} s, peak {figures['peak_in_flight']} in flight; "
        f"average in flight {average * 100:.0f} % of {args.ceiling} over the first "
        f"{figures['measured_until_s']:.1f} s (until the last {args.ceiling} requests); "
        f"≥ {0.8 * args.ceiling:g} in flight {figures['near_full_share_of_busy'] * 100:.0f} % of the busy time"
    )


if __name__ == "__main__":
    main()
