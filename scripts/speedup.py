"""A speed-up that carries its noise: the paired per-seed ratio of two configurations' times to a
target, as the geometric mean of the ratios with a 95% Student t interval on their logarithms.
An interval that holds 1 is reported as no difference; one seed has no interval, and says so.
Used by scripts/report.py and scripts/time_to_accuracy.py. Python standard library only.
"""
import math
import statistics

# Student t's 0.975 quantile by degrees of freedom (two-sided 95%); beyond 30, the normal's 1.96.
T_975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
         2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)
METHOD = ("the baseline's time to the target over the configuration's, paired seed by seed: the geometric mean "
          "of the per-seed ratios with a 95% t interval on their logarithms; an interval that holds 1 is no "
          "difference, and one seed has no interval (the seed-to-seed spread of a time to target can exceed 10%)")


def paired_ratios(base_times, times):
    """base / time for each seed that both have and on which both reached the target ({seed: seconds})."""
    return [base_times[s] / times[s] for s in base_times
            if s in times and base_times[s] is not None and times[s] is not None and times[s] > 0]


def interval(ratios):
    """(geometric mean, low, high) of the ratios; low and high are None for fewer than two."""
    logs = [math.log(r) for r in ratios]
    centre = statistics.fmean(logs)
    if len(logs) < 2:
        return math.exp(centre), None, None
    t = T_975[len(logs) - 2] if len(logs) - 2 < len(T_975) else 1.96
    half = t * statistics.stdev(logs) / math.sqrt(len(logs))
    return math.exp(centre), math.exp(centre - half), math.exp(centre + half)


def speedup_text(ratios):
    """'1.18x (1.05-1.33, 3 seeds)', 'no difference (1.02x, 0.91-1.14, 3 seeds)', '1.02x (one seed)' or '-'."""
    if not ratios:
        return "-"
    centre, low, high = interval(ratios)
    if low is None:
        return f"{centre:.2f}x (one seed)"
    detail = f"{low:.2f}-{high:.2f}, {len(ratios)} seeds"
    if low <= 1 <= high:
        return f"no difference ({centre:.2f}x, {detail})"
    return f"{centre:.2f}x ({detail})"
