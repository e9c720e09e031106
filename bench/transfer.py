"""Wheels for the GPU test machine, in pieces small enough for one transfer each.

The GPU machine has no network and takes at most 64 MiB per transfer (the working tree
included), while onnxruntime-gpu's wheel is 255 MB. So, here:

    python bench/transfer.py download WHEELS --bundle models      # onnxruntime-gpu, cp312
    python bench/transfer.py download WHEELS/media --bundle media # PyAV, OpenImageIO, ...
    python bench/transfer.py pack WHEELS dist/gpu-wheels --name models [--xz 6] [--piece-mib 56]
    python bench/transfer.py plan dist/gpu-wheels                 # the transfers, in order

`pack` puts a bundle's wheels in one tar (each wheel re-zipped uncompressed first when --xz is
given, same members and RECORD, so xz sees the raw libraries: the 244 MiB onnxruntime-gpu wheel
becomes 193 MiB at xz -9e), splits it into pieces of at most --piece-mib MiB (56 by default: a
64 MiB transfer also carries the 3 MiB working tree) and writes NAME.manifest.json with the
sha256 of every piece, of the whole bundle and of every wheel as sent. There, after each transfer:

    python3 bench/transfer.py receive dist/gpu-wheels --store /tmp/facefuse-gpu/pieces
    python3 bench/transfer.py install /tmp/facefuse-gpu/pieces --name models \\
        --target /tmp/facefuse-gpu/site

`receive` checks each piece that arrived against its manifest and moves it into the store
(files there are kept while the machine stays up); `install` checks that every piece is there
and intact, joins them, checks the bundle, unpacks and checks each wheel, and installs them
with `pip install --no-index --no-deps --target` (or, where that machine's Python has no pip,
unzips them there, which is what pip does for these wheels). Put the target first on
PYTHONPATH (bench/gpu.sh does): its onnxruntime then shadows the machine's CPU build.
Standard library only.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import lzma
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO

MIB = 1 << 20
PIECE_MIB = 56
CHUNK = 4 * MIB
BUNDLES = {
    "models": ["onnxruntime-gpu==1.31.1"],
    "media": ["av", "OpenImageIO", "opencolorio", "platformdirs", "threadpoolctl"],
}
TESTDATA_FILES = ("media/asl_yes.mp4", "media/obama.jpg",
                  "models/face_detection_yunet_2023mar.onnx")
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux2014_x86_64")


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def download_command(requirements: Sequence[str], dest: Path, python: str = "3.12",
                     platforms: Sequence[str] = PLATFORMS) -> list[str]:
    """The pip command that downloads binary wheels for CPython `python` on Linux x86_64."""
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
               "--python-version", python, "--implementation", "cp", "--dest", str(dest)]
    for platform_tag in platforms:
        command += ["--platform", platform_tag]
    return command + list(requirements)


def stored_copy(wheel: Path) -> bytes:
    """The wheel re-zipped without compression (same members, same bytes: RECORD holds)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(wheel) as source, \
            zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as target:
        for info in source.infolist():
            data = source.read(info)
            copy = zipfile.ZipInfo(info.filename, info.date_time)
            copy.external_attr, copy.compress_type = info.external_attr, zipfile.ZIP_STORED
            target.writestr(copy, data)
    return buffer.getvalue()


def pack(wheels_dir: Path, out_dir: Path, name: str, piece_mib: int = PIECE_MIB,
         xz_preset: int | None = None) -> dict[str, Any]:
    """Bundle every .whl of wheels_dir into out_dir/NAME.tar[.xz].partNN pieces and
    NAME.manifest.json; returns the manifest."""
    wheels = sorted(wheels_dir.glob("*.whl"))
    if not wheels:
        raise SystemExit(f"no .whl files in {wheels_dir}")
    out_dir.mkdir(parents=True, exist_ok=True)
    bundle = out_dir / f"{name}.tar{'.xz' if xz_preset is not None else ''}"
    sent = []
    with bundle.open("wb") as raw, contextlib.ExitStack() as stack:
        stream: BinaryIO = raw
        if xz_preset is not None:
            stream = stack.enter_context(lzma.LZMAFile(raw, "wb", preset=xz_preset))
        with tarfile.open(fileobj=stream, mode="w|") as tar:
            for wheel in wheels:
                data = stored_copy(wheel) if xz_preset is not None else wheel.read_bytes()
                sent.append({"file": wheel.name, "bytes": wheel.stat().st_size,
                             "sha256": sha256_file(wheel), "stored": xz_preset is not None,
                             "sent_sha256": hashlib.sha256(data).hexdigest()})
                info = tarfile.TarInfo(wheel.name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    manifest = {
        "name": name, "bundle": bundle.name, "bundle_bytes": bundle.stat().st_size,
        "bundle_sha256": sha256_file(bundle), "compression": "xz" if xz_preset is not None
        else "none", "wheels": sent,
        "pieces": list(_split(bundle, piece_mib * MIB)),
    }
    bundle.unlink()
    (out_dir / f"{name}.manifest.json").write_text(json.dumps(manifest, indent=1))
    return manifest


def _split(bundle: Path, size: int) -> Iterator[dict[str, Any]]:
    with bundle.open("rb") as handle:
        for index, data in enumerate(iter(lambda: handle.read(size), b""), 1):
            piece = bundle.with_name(f"{bundle.name}.part{index:02d}")
            piece.write_bytes(data)
            yield {"file": piece.name, "bytes": len(data),
                   "sha256": hashlib.sha256(data).hexdigest()}


def _manifests(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(path.read_text()) for path in sorted(folder.glob("*.manifest.json"))]


def receive(folder: Path, store: Path) -> list[str]:
    """Move each piece (and manifest) in `folder` that matches its manifest into `store`;
    SystemExit naming a piece that arrived damaged. Returns the pieces moved."""
    store.mkdir(parents=True, exist_ok=True)
    moved = []
    for manifest in _manifests(folder):
        shutil.copy2(folder / f"{manifest['name']}.manifest.json", store)
        for piece in manifest["pieces"]:
            path = folder / piece["file"]
            if not path.is_file():
                continue
            if sha256_file(path) != piece["sha256"]:
                raise SystemExit(f"{path.name} arrived damaged (sha256 differs): send it again")
            shutil.move(str(path), store / piece["file"])
            moved.append(piece["file"])
    return moved


def missing_pieces(store: Path, name: str) -> list[str]:
    manifest = json.loads((store / f"{name}.manifest.json").read_text())
    return [p["file"] for p in manifest["pieces"] if not (store / p["file"]).is_file()]


def unpack(store: Path, name: str, wheels_dir: Path) -> list[Path]:
    """Join the pieces of bundle `name` in `store` (each checked), check the bundle, and
    unpack its wheels (each checked) into wheels_dir."""
    manifest = json.loads((store / f"{name}.manifest.json").read_text())
    missing = missing_pieces(store, name)
    if missing:
        raise SystemExit(f"bundle {name} lacks {', '.join(missing)}: transfer them first")
    bundle = wheels_dir / manifest["bundle"]
    wheels_dir.mkdir(parents=True, exist_ok=True)
    whole = hashlib.sha256()
    with bundle.open("wb") as out:
        for piece in manifest["pieces"]:
            data = (store / piece["file"]).read_bytes()
            if hashlib.sha256(data).hexdigest() != piece["sha256"]:
                raise SystemExit(f"{piece['file']} is damaged (sha256 differs): send it again")
            whole.update(data)
            out.write(data)
    if whole.hexdigest() != manifest["bundle_sha256"]:
        raise SystemExit(f"bundle {name} joined with another sha256 than packed")
    opener = lzma.open if manifest["compression"] == "xz" else open
    with opener(bundle, "rb") as stream, tarfile.open(fileobj=stream, mode="r|") as tar:
        tar.extractall(wheels_dir, filter="data")
    bundle.unlink()
    wheels = []
    for wheel in manifest["wheels"]:
        path = wheels_dir / wheel["file"]
        if sha256_file(path) != wheel["sent_sha256"]:
            raise SystemExit(f"{wheel['file']} unpacked with another sha256 than packed")
        wheels.append(path)
    return wheels


def install(wheels: Sequence[Path], target: Path, python: str = sys.executable) -> str:
    """Install wheels into target without index or dependencies; "pip" or "unzip" (how)."""
    target.mkdir(parents=True, exist_ok=True)
    try:
        has_pip = subprocess.run([python, "-m", "pip", "--version"], capture_output=True,
                                 check=False).returncode == 0
    except OSError:  # no such interpreter: unzip for the Python running this
        has_pip = False
    if has_pip:
        subprocess.run([python, "-m", "pip", "install", "--no-index", "--no-deps",
                        "--disable-pip-version-check", "--no-compile", "--upgrade",
                        "--target", str(target), *map(str, wheels)], check=True)
        return "pip"
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as archive:
            for member in archive.namelist():
                parts = Path(member).parts
                if len(parts) > 2 and parts[0].endswith(".data") and \
                        parts[1] in ("purelib", "platlib"):
                    destination = target.joinpath(*parts[2:])
                elif parts and parts[0].endswith(".data"):
                    continue  # scripts and headers: nothing a benchmark imports
                else:
                    destination = target / member
                if member.endswith("/"):
                    continue
                destination.parent.mkdir(parents=True, exist_ok=True)
                destination.write_bytes(archive.read(member))
                if destination.suffix == ".so" or ".so." in destination.name:
                    os.chmod(destination, 0o755)
    return "unzip"


def copy_testdata(source: Path, out: Path) -> list[Path]:
    """The test data files stage 2 of bench/gpu.sh reads (the clip, the source photo, YuNet),
    copied from `source` into out/testdata (under 1 MiB: they travel with any transfer)."""
    copied = []
    for relative in TESTDATA_FILES:
        target = out / "testdata" / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / relative, target)
        copied.append(target)
    return copied


def plan(folder: Path, store: str = "/tmp/facefuse-gpu/pieces",
         target: str = "/tmp/facefuse-gpu/site") -> list[str]:
    """The transfers in order, one `run` each: what it carries and what it runs there (the
    call with a bundle's last piece also installs it; the last call runs bench/gpu.sh)."""
    calls: list[tuple[list[str], int, list[str]]] = []
    for manifest in _manifests(folder):
        name = manifest["name"]
        for index, piece in enumerate(manifest["pieces"], 1):
            command = [f"python3 bench/transfer.py receive {folder} --store {store}"]
            if index == len(manifest["pieces"]):
                command.append(f"python3 bench/transfer.py install {store} --name {name} "
                               f"--target {target}")
            calls.append(([f"{folder}/{name}.manifest.json", f"{folder}/{piece['file']}"],
                          piece["bytes"], command))
    if not calls:
        return []
    testdata = folder / "testdata"
    bench = "SITE=" + target
    if testdata.is_dir():
        calls[-1][0].append(str(testdata))
        bench += f" FACEFUSE_TESTDATA=$PWD/{testdata}"
    calls[-1][2].append(f'{bench} bash bench/gpu.sh "$OUT"')
    return [f"{n}. carry {json.dumps(carry)} ({size / MIB:.1f} MiB); run: {' && '.join(cmd)}"
            for n, (carry, size, cmd) in enumerate(calls, 1)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    down = commands.add_parser("download", help="pip download a bundle's wheels")
    down.add_argument("dest", type=Path)
    down.add_argument("--bundle", choices=sorted(BUNDLES), default="models")
    down.add_argument("--python", default="3.12")
    down.add_argument("--requirements", nargs="+", help="instead of the bundle's")
    packer = commands.add_parser("pack", help="bundle, compress and split wheels")
    packer.add_argument("wheels", type=Path)
    packer.add_argument("out", type=Path)
    packer.add_argument("--name", required=True)
    packer.add_argument("--piece-mib", type=int, default=PIECE_MIB)
    packer.add_argument("--xz", type=int, default=None, help="xz preset 0-9 (default: none)")
    rec = commands.add_parser("receive", help="check arrived pieces and move them to a store")
    rec.add_argument("folder", type=Path)
    rec.add_argument("--store", type=Path, required=True)
    inst = commands.add_parser("install", help="join, check and install a bundle")
    inst.add_argument("store", type=Path)
    inst.add_argument("--name", required=True)
    inst.add_argument("--target", type=Path, required=True)
    inst.add_argument("--python", default=sys.executable)
    data = commands.add_parser("testdata", help="copy the test data stage 2 reads")
    data.add_argument("source", type=Path, help="the test data folder (FACEFUSE_TESTDATA)")
    data.add_argument("out", type=Path)
    show = commands.add_parser("plan", help="print the transfers in order")
    show.add_argument("folder", type=Path)
    args = parser.parse_args(argv)
    if args.command == "download":
        subprocess.run(download_command(args.requirements or BUNDLES[args.bundle], args.dest,
                                        args.python), check=True)
    elif args.command == "pack":
        manifest = pack(args.wheels, args.out, args.name, args.piece_mib, args.xz)
        print(f"{manifest['name']}: {len(manifest['pieces'])} pieces, "
              f"{manifest['bundle_bytes'] / MIB:.1f} MiB ({manifest['compression']})")
    elif args.command == "receive":
        moved = receive(args.folder, args.store)
        print(f"received {', '.join(moved) or 'nothing'}")
    elif args.command == "install":
        with tempfile.TemporaryDirectory(dir=args.store) as scratch:
            wheels = unpack(args.store, args.name, Path(scratch))
            how = install(wheels, args.target, args.python)
        print(f"installed {', '.join(w.name for w in wheels)} into {args.target} ({how})")
    elif args.command == "testdata":
        print("\n".join(str(p) for p in copy_testdata(args.source, args.out)))
    else:
        print("\n".join(plan(args.folder)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
