"""The figures of bench/peer_debezium.py, per pipeline and phase: commit-to-visible latency
(p50/p99/max, nearest rank), end-to-end throughput (row changes / first commit to last visible),
the micro-batches that made the phase visible, CPU seconds; and the report printed from them."""
from __future__ import annotations

import math
import statistics

from delta_visibility import PipelineVisibility
from peer_workload import Committed


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]  # nearest rank


def phase_figures(committed: list[Committed], visible: dict[int, float]) -> dict:
    lat = [visible[c.seq] - c.committed_at for c in committed if c.seq in visible]
    if len(lat) != len(committed):
        raise SystemExit(f"{len(committed) - len(lat)} transactions never became visible")
    changes = sum(c.changes for c in committed)
    span = visible[committed[-1].seq] - committed[0].committed_at
    return {"transactions": len(committed), "changes": changes,
            "p50_s": percentile(lat, 50), "p99_s": percentile(lat, 99), "max_s": max(lat),
            "mean_s": statistics.fmean(lat),
            "first_commit_to_last_visible_s": span, "changes_per_s": changes / span,
            "source_write_s": committed[-1].committed_at - committed[0].committed_at}


def batch_counts(batches: list[tuple[int, float, int]],
                 committed: dict[str, list[Committed]]) -> dict[str, int]:
    """How many micro-batches made a phase's transactions visible."""
    out = {}
    for phase, cs in committed.items():
        first, last = cs[0].seq, cs[-1].seq
        previous = [0] + [upto for _, _, upto in batches]
        out[phase] = sum(1 for (_, _, upto), before in zip(batches, previous)
                         if upto >= first and before < last)
    return out


def measure(visibilities: dict[str, PipelineVisibility], committed: dict, cpu: dict) -> dict:
    """Per pipeline (by name, read from its Delta log): each phase's figures, the phases' CPU
    seconds and micro-batches."""
    seqs = [c.seq for cs in committed.values() for c in cs]
    figures: dict = {}
    for name, visibility in visibilities.items():
        visible = visibility.visible_at(seqs)
        figures[name] = {phase: phase_figures(committed[phase], visible)
                         for phase in ("latency", "throughput")}
        figures[name]["cpu_s"] = {phase: cpu[phase][name] for phase in cpu}
        figures[name]["batches"] = batch_counts(visibility.batches(), committed)
    return figures


def print_report(report: dict) -> None:
    print(f"\nHEAD {report['commit']}; load average at start {report['load_start']}, "
          f"at end {report['load_end']}")
    figures = report["figures"]
    for phase in ("latency", "throughput"):
        print(f"\n{phase} phase:")
        print(f"  {'':6} {'trx':>7} {'changes':>8} {'p50 s':>7} {'p99 s':>7} {'max s':>7} "
              f"{'changes/s':>10} {'span s':>7} {'source s':>8} {'batches':>7} {'CPU s capture + job':>20}")
        for name, f in figures.items():
            x, c = f[phase], f["cpu_s"][phase]
            print(f"  {name:6} {x['transactions']:>7,} {x['changes']:>8,} {x['p50_s']:>7.2f} "
                  f"{x['p99_s']:>7.2f} {x['max_s']:>7.2f} {x['changes_per_s']:>10,.0f} "
                  f"{x['first_commit_to_last_visible_s']:>7.1f} {x['source_write_s']:>8.1f} "
                  f"{f['batches'][phase]:>7} {c['capture']:>8.1f} + {c['job']:>5.1f} = "
                  f"{c['capture'] + c['job']:>5.1f}")
    if {"ours", "peer"} <= figures.keys():
        o, p = figures["ours"], figures["peer"]
        ratio = o["throughput"]["changes_per_s"] / p["throughput"]["changes_per_s"]
        print(f"\nours / peer throughput: x{ratio:.2f} (goal >= 2); p99 latency ours "
              f"{o['latency']['p99_s']:.2f} s vs peer {p['latency']['p99_s']:.2f} s (goal: lower)")
    print("\ntables (Delta vs the server's SELECT *):")
    for name, tables in report["equal"].items():
        print(f"  {name}: " + "; ".join(f"{t} {v}" for t, v in tables.items()))
