"""`facefuse doctor`: why the GPU is (not) used, which models are here, where things live."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..errors import ExitCode


def add_parser(commands: Any) -> None:
    doctor = commands.add_parser("doctor", help="why the GPU is (not) used, models, folders")
    doctor.add_argument("--models-dir", type=Path, help="where models live (default: "
                        "$FACEFUSE_MODELS, else the user cache folder)")
    doctor.add_argument("--json", action="store_true", help="print the report as one JSON line")
    doctor.set_defaults(handler=cmd_doctor)


def cmd_doctor(args: argparse.Namespace) -> int:
    from ..runtime.doctor import report  # ONNX Runtime loads when the doctor runs

    data = report(models_dir=args.models_dir)
    data["studio"] = _studio()
    if args.json:
        print(json.dumps(data, default=str, sort_keys=True))
        return ExitCode.OK
    _print_doctor(data)
    return ExitCode.OK


def _print_doctor(data: dict[str, Any]) -> None:
    ort_info = data["onnxruntime"]
    flavours = ", ".join(f"{k} {v}" for k, v in ort_info["distributions"].items()) or "none"
    print(f"facefuse {data['facefuse']} on Python {data['python']} ({data['platform']})")
    print(f"onnxruntime {ort_info['version']} (installed: {flavours}; device {ort_info['device']})")
    if data["conflict"]:
        print("  PROBLEM: several onnxruntime packages are installed and overwrite each other; "
              "keep one: pip uninstall -y onnxruntime onnxruntime-gpu && "
              "pip install onnxruntime-gpu")
    print(f"providers offered: {', '.join(ort_info['providers'])}")
    for probe in data["probes"]:
        verdict = "works" if probe["works"] else f"not used: {probe['why']}"
        print(f"  {probe['provider']:28} {verdict}")
    print(f"GPU: {data['gpu']}")
    if data["cuda_visible_devices"] is not None:
        print(f"CUDA_VISIBLE_DEVICES={data['cuda_visible_devices']}")
    print(f"models dir: {data['models_dir']}{' (offline)' if data['offline'] else ''}")
    print(f"cache dir:  {data['cache_dir']}")
    for model in data["models"]:
        state = "verified" if model["verified"] else ("present" if model["present"] else "missing")
        print(f"  {model['name']:22} {state}")
    studio = data["studio"]
    print(f"studio settings: {studio['path']} ({studio['state']})")


def _studio() -> dict[str, Any]:
    """The studio settings file (shot.contract.studio): where, and what it asks of renders."""
    from ..errors import InputError
    from ..shot.contract.studio import load_studio, studio_path

    path = studio_path()
    try:
        studio = load_studio()
    except InputError as exc:
        return {"path": str(path), "state": f"unreadable: {exc}"}
    if studio.path is None:
        return {"path": str(path), "state": "none: renders are research work by default, "
                "consent not required, outputs unsigned"}
    policy, signing = studio.policy, studio.signing
    words = [f"use {policy.use}",
             "consent required" if policy.require_consent else "consent not required",
             f"signing with {signing.cert}" if signing.signs else "no signing key"]
    return {"path": str(path), "state": ", ".join(words)}
