"""Before/after in one run: one scenario of bench/scenarios.toml rendered by several source
trees (checkouts of facefuse), interleaved round by round (the order reversed every other
round) so load on the machine hits them alike, and the median of each figure per tree.

    python bench/compare.py --scenario cpu-same-work-1080p-h264 --rounds 3 \\
        --tree before=/path/to/old/checkout --tree after=.

Each tree needs `facefuse bench` (the bench command itself); its core/ goes first on
PYTHONPATH for its runs. Writes one JSON object (every run, and the medians) to --out.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path

import run
import standins

FIGURES = ("fps", "ms_per_frame", "cpu_s_per_frame", "first_output_s", "outside_onnxruntime",
           "peak_rss_mib", "onnxruntime_cpu_ms_per_frame", "host_cpu_ms_per_frame")
STAGES = (("analysis", "decode"), ("analysis", "colour"), ("analysis", "detect"),
          ("swap", "colour"), ("swap", "paste"), ("swap", "encode"))


def medians(results: Sequence[dict]) -> dict[str, float]:
    """The median of each figure, and of each stage's median ms, over runs of one tree."""
    # a figure an older tree's bench does not give is left out
    out = {name: statistics.median(r[name] for r in results) for name in FIGURES
           if all(r.get(name) is not None for r in results)}
    for pass_name, stage in STAGES:
        values = [r["stages"][pass_name][stage]["median_ms"] for r in results
                  if r["stages"][pass_name][stage]]
        if values:
            out[f"{pass_name}.{stage}_ms"] = statistics.median(values)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Interleaved before/after of one scenario.")
    parser.add_argument("--scenario", required=True)
    parser.add_argument("--providers", default="cpu")
    parser.add_argument("--tree", action="append", required=True, metavar="NAME=PATH")
    parser.add_argument("--extra", action="append", default=[], metavar="NAME=ARGS",
                        help="more `facefuse bench` arguments for one tree's runs, e.g. "
                             "one='--threads 1' (a tree may be named twice with other arguments)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--work", type=Path, default=Path("/tmp/facefuse-bench-work"))
    parser.add_argument("--testdata", type=Path, default=os.environ.get("FACEFUSE_TESTDATA"))
    args = parser.parse_args(argv)
    trees = dict(t.split("=", 1) for t in args.tree)
    extras = {name: shlex.split(value) for name, value in
              (e.split("=", 1) for e in args.extra)}
    scenarios = run.load_scenarios(run.HERE / "scenarios.toml", args.providers)
    scenario = next(s for s in scenarios if s["name"] == args.scenario)
    built = {kind: standins.build_all(args.work / "models", light=kind == "light")
             for kind in ("standin", "light")}
    clip = run.clip_for(scenario, scenarios, args.testdata, args.work)
    models = run.models_for(scenario, built, args.testdata)
    runs: dict[str, list[dict]] = {name: [] for name in trees}
    for round_ in range(args.rounds):
        # every other round in the reverse order: an effect of a run's place in the sequence
        # (on the test VM, every second run's writes got slower fresh pages) falls on each alike
        order = list(trees.items()) if round_ % 2 == 0 else list(trees.items())[::-1]
        for name, tree in order:
            env = {**os.environ, "PYTHONPATH": f"{Path(tree).resolve() / 'core'}"}
            own = {**scenario, "extra": [*scenario.get("extra", []), *extras.get(name, [])]}
            result = run.run_scenario(own, clip, args.testdata / "media" / "obama.jpg",
                                      models, args.work, env)
            if "error" in result:
                print(f"{name}: {result['error']}", file=sys.stderr)
                return 1
            runs[name].append(result)
            print(f"round {round_ + 1} {name}: {run.summary_line(result)}", flush=True)
    summary = {name: medians(results) for name, results in runs.items()}
    print(json.dumps(summary, indent=1))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"scenario": scenario, "medians": summary, "runs": runs},
                                   indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
