"""What the Python benchmark scripts (s3_file.py, export.py, neon_status.py) share: report
lines, and timing a call `runs` times after warmups into mean, stddev,
median and min."""
import statistics
import time


def say(msg=""):
    print(msg, flush=True)


def stats(xs):
    return {"mean": statistics.fmean(xs), "stddev": statistics.stdev(xs) if len(xs) > 1 else 0.0,
            "median": statistics.median(xs), "min": min(xs), "runs": len(xs)}


def fmt(s):
    return f"{s['mean'] * 1000:.1f} ms ± {s['stddev'] * 1000:.1f} (median {s['median'] * 1000:.1f}, min {s['min'] * 1000:.1f})"


def timed(fn, runs, warmup=1):
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return stats(out)
