"""The scripts under bench/: the production-compute stand-ins have the production contracts and
about the production compute, behave as documented (identity swap and restore, fixed faces), and
bench/gpu.sh stops with one clear line where onnxruntime offers no CUDA."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import onnxruntime as ort
import pytest

from facefuse.config import Settings
from facefuse.pipeline import Pipeline
from facefuse.types import AlignedCrop
from tests.render_media import arrays

ROOT = Path(__file__).resolve().parents[2]


def _standins() -> ModuleType:
    spec = importlib.util.spec_from_file_location("standins", ROOT / "bench" / "standins.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("standins", module)  # dataclasses look their module up there
    spec.loader.exec_module(sys.modules["standins"])
    return sys.modules["standins"]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    standins = _standins()
    root = tmp_path_factory.mktemp("standins")
    return {"full": standins.build_all(root / "full"), "light": standins.build_all(root / "light",
                                                                                  light=True)}


def _settings(models: dict, root: Path, detector: str = "detector") -> Settings:
    return Settings(detector=models[detector]["path"], recogniser=models["recogniser"]["path"],
                    swapper=models["swapper"]["path"], enhancer=models["enhancer"]["path"],
                    providers=("CPUExecutionProvider",), models_dir=root / "m",
                    cache_dir=root / "c", offline=True)


def test_full_standins_have_about_the_production_compute_and_contracts(
        built: dict[str, dict], tmp_path: Path) -> None:
    for role, facts in built["full"].items():
        assert 0.5 <= facts["gflop"] / facts["production_gflop"] <= 2.0, role
    with Pipeline(_settings(built["full"], tmp_path)) as pipeline:
        families = {role: pipeline.models.load(role).family.name
                    for role in ("detector", "recogniser", "swapper", "enhancer")}
    assert families == {"detector": "scrfd", "recogniser": "arcface", "swapper": "inswapper",
                        "enhancer": "gfpgan"}


@pytest.mark.parametrize(("detector", "expected"), [("detector", 1), ("detector_3faces", 3)])
def test_the_standin_detector_finds_its_fixed_faces_in_any_picture(
        built: dict[str, dict], tmp_path: Path, detector: str, expected: int) -> None:
    kind = "full" if detector == "detector" else "light"  # one full-compute run is enough
    frame = np.random.default_rng(0).integers(0, 255, (1080, 1920, 3), np.uint8)
    with Pipeline(_settings(built[kind], tmp_path, detector)) as pipeline:
        faces = pipeline.detect(frame)
    assert len(faces) == expected
    widths = [float(f.bbox_xyxy[2] - f.bbox_xyxy[0]) for f in faces]
    assert all(250 <= w <= 310 for w in widths)  # 90-100 canvas px, x3 for 1920 wide
    for face in faces:  # landmarks inside their box, eyes above the mouth
        x1, y1, x2, y2 = face.bbox_xyxy
        assert np.all((face.kps5 >= [x1, y1]) & (face.kps5 <= [x2, y2]))
        assert face.kps5[0, 1] < face.kps5[3, 1]


def test_the_light_standins_swap_and_restore_as_identities(built: dict[str, dict],
                                                           tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    with Pipeline(_settings(built["light"], tmp_path)) as pipeline:
        swapper, restorer = pipeline.models.swapper(), pipeline.models.restorer()
        crop = rng.uniform(0, 255, (128, 128, 3)).astype(np.float32)
        latent = swapper.latent(np.ones(512, np.float32) / np.sqrt(512))
        swapped = swapper.swap(AlignedCrop(crop, np.eye(2, 3), "arcface_128", 128), latent)
        big = rng.uniform(0, 255, (512, 512, 3)).astype(np.float32)
        restored = restorer.enhance(AlignedCrop(big, np.eye(2, 3), "ffhq_512", 512))
        crops = [AlignedCrop(rng.uniform(0, 255, (112, 112, 3)).astype(np.float32),
                             np.eye(2, 3), "arcface_112_v2", 112) for _ in range(2)]
        a, b = pipeline.models.embedder().embed_many(crops)
    np.testing.assert_allclose(swapped, crop, atol=1e-3)
    np.testing.assert_allclose(restored, big, atol=1e-3)
    assert abs(float(a @ b)) < 0.99  # different faces, different embeddings


def test_gpu_script_stops_cleanly_without_cuda(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHON": sys.executable, "OUT": str(tmp_path)}
    require = "CUDAExecutionProvider"
    if require in ort.get_available_providers():  # a CUDA build: insist on what none offers
        require = env["REQUIRE"] = "NoSuchExecutionProvider"
    done = subprocess.run(["bash", str(ROOT / "bench" / "gpu.sh")], env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 3
    lines = done.stdout.strip().splitlines()
    assert lines[0].startswith("onnxruntime ") and "CPUExecutionProvider" in lines[0]
    assert lines[-1].startswith(f"{require} is not offered")
    assert (tmp_path / "providers.txt").is_file() and not (tmp_path / "results.json").exists()


def test_colour_script_reports_both_paths_against_the_reference(testdata: Path,
                                                                 tmp_path: Path) -> None:
    """bench/colour.py: the reader is its float64 formula rounded on a limited-range clip and on
    the BT.709 copy (tagged BT.709), and differs from the conversions through swscale's 4:4:4
    planes (their chroma sits elsewhere); costs are there."""
    clip = testdata / "media" / "head-pose-face-detection-female.mp4"
    out = tmp_path / "colour.json"
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "colour.py"), "--clip", str(clip),
                           "--frames", "2", "--bt709", "--cost", str(clip), "--out", str(out)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    limited, bt709 = result["accuracy"]
    assert limited["reader_vs_reference"] == {"share_off": 0.0, "max_error": 0, "mean_error": 0.0}
    assert limited["reader_vs_444"]["share_off"] > 0
    assert limited["reader_vs_swscale"]["max_error"] > 0
    assert "kr=0.2126" in bt709["tags"] and bt709["reader_vs_reference"]["max_error"] == 0
    assert set(result["cost"][0]["ms"]) >= {"reader_swscale", "reader_444", "reader_io_yuv",
                                            "writer_yuv420p_io_yuv"}


def test_the_scenario_clip_builder_stores_a_rotated_clip_sideways(testdata: Path,
                                                                  tmp_path: Path) -> None:
    """bench/run.py's rotation option: stored turned, shown upright at the size asked, the
    same pictures as the unrotated clip."""
    from facefuse.io.video import VideoSource

    _standins()  # run.py imports it by name
    spec = importlib.util.spec_from_file_location("bench_run", ROOT / "bench" / "run.py")
    assert spec is not None and spec.loader is not None
    run = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run)
    base = testdata / "media" / "asl_yes.mp4"
    clips = {rotation: run.build_clip(base, tmp_path / f"r{rotation}.mp4", (96, 64), 2,
                                      rotation=rotation) for rotation in (0, 90)}
    with VideoSource(clips[90]) as turned, VideoSource(clips[0]) as upright:
        assert (turned.info.width, turned.info.height, turned.info.rotation_deg) == (96, 64, 90)
        for (_, a), (_, b) in zip(arrays(turned.read([1, 2])), arrays(upright.read([1, 2])),
                                  strict=True):
            assert isinstance(a, np.ndarray) and isinstance(b, np.ndarray)
            assert a.shape == b.shape == (64, 96, 3)
            assert np.abs(a.astype(int) - b).mean() < 3  # x264's own loss apart


def test_the_scenarios_run_once_per_swap_worker_count_as_gpu_sh_asks() -> None:
    """bench/run.py --swap-workers 1,2,4 (gpu.sh stage 2's default): each scenario three
    times, named -wN, with `facefuse bench --swap-workers N`."""
    _standins()  # run.py imports it by name
    spec = importlib.util.spec_from_file_location("bench_run", ROOT / "bench" / "run.py")
    assert spec is not None and spec.loader is not None
    run = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run)
    scenarios = run.load_scenarios(ROOT / "bench" / "scenarios.toml", "cuda",
                                   ["cuda-standin-1080p-1face-swap",
                                    "cuda-standin-1080p-1face-gfpgan"])
    assert len(scenarios) == 2
    counts = run.worker_counts("1,2,4")
    expanded = run.with_workers(scenarios, counts)
    assert [s["name"] for s in expanded] == [f"{s['name']}-w{n}" for s in scenarios
                                             for n in (1, 2, 4)]
    assert all(s["extra"][-2:] == ["--swap-workers", str(s["swap_workers"])] for s in expanded)
    assert expanded[0]["extra"][:2] == ["--codec", "rawvideo"]
    assert run.with_workers(scenarios, []) == scenarios
    script = (ROOT / "bench" / "gpu.sh").read_text()
    assert '--swap-workers "${SWAP_WORKERS-1,2,4}"' in script


def test_the_stand_ins_build_with_a_free_batch_and_as_fp16_twins(tmp_path: Path) -> None:
    standins = _standins()
    standins.build_swapper(tmp_path / "s.onnx", light=True, batch="n", dtype="float16")
    standins.build_enhancer(tmp_path / "e.onnx", light=True, batch="n")
    swapper = ort.InferenceSession(str(tmp_path / "s.onnx"), providers=["CPUExecutionProvider"])
    assert swapper.get_inputs()[0].shape == ["n", 3, 128, 128]
    assert swapper.get_inputs()[0].type == "tensor(float16)"
    target = np.random.default_rng(0).uniform(-1, 1, (3, 3, 128, 128)).astype(np.float16)
    (out,) = swapper.run(None, {"target": target, "source": np.zeros((3, 512), np.float16)})
    assert np.array_equal(out, target)


def _gpu_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "FACEFUSE_TESTDATA"}
    return {**env, "PYTHON": sys.executable, "OUT": str(tmp_path / "out"),
            "WORK": str(tmp_path / "work"), "SITE": str(tmp_path / "no-site"), **extra}


def test_gpu_script_stage_one_measures_the_models_and_stage_two_says_why_it_is_skipped(
        tmp_path: Path) -> None:
    """Stage 1 on the CPU provider with the light stand-ins (REQUIRE / PROVIDERS stand in for
    CUDA here): every model in fp32 and fp16, IOBinding on and off; stage 2 names what is
    missing (here FACEFUSE_TESTDATA)."""
    env = _gpu_env(tmp_path, REQUIRE="CPUExecutionProvider", PROVIDERS="cpu",
                   MODELS_ARGS="--light --runs 2 --batches 1,2")
    done = subprocess.run(["bash", str(ROOT / "bench" / "gpu.sh")], env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads((tmp_path / "out" / "models.json").read_text())
    rows = result["rows"]
    assert {(r["role"], r["precision"]) for r in rows} == {
        (role, p) for role in ("swapper", "enhancer", "detector", "recogniser")
        for p in ("fp32", "fp16")}
    assert {r["batch"] for r in rows if r["role"] == "swapper"} == {1, 2}
    assert all(r["run_ms"] > 0 and r["iobinding_ms"] > 0 for r in rows)
    assert all(r["fp16_ok"] for r in rows if r["precision"] == "fp16")
    assert [p["pool"] for p in result["pools"]] == [1, 2, 4]  # detector sessions side by side
    assert all(p["frames_per_s"] > 0 for p in result["pools"])
    assert done.stdout.strip().splitlines()[-1] == \
        "stage 2 skipped: FACEFUSE_TESTDATA is not set"


def _transfer() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_transfer", ROOT / "bench" / "transfer.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _tiny_wheel(folder: Path) -> Path:
    """A minimal pure wheel: package `tinyfacefuse` plus a .data/purelib module."""
    import base64
    import hashlib
    import zipfile

    files = {"tinyfacefuse/__init__.py": b"VALUE = 42\n" * 2000,
             "tinyfacefuse-1.0.data/purelib/tinyextra.py": b"EXTRA = 7\n" * 2000,
             "tinyfacefuse-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: tinyfacefuse\n"
                                                    b"Version: 1.0\n",
             "tinyfacefuse-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\n"
                                                 b"Root-Is-Purelib: true\nTag: py3-none-any\n"}
    def record(name: str, data: bytes) -> str:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        return f"{name},sha256={digest},{len(data)}"

    rows = [record(name, data) for name, data in files.items()]
    files["tinyfacefuse-1.0.dist-info/RECORD"] = ("\n".join(
        [*rows, "tinyfacefuse-1.0.dist-info/RECORD,,"]) + "\n").encode()
    path = folder / "tinyfacefuse-1.0-py3-none-any.whl"
    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return path


def test_transfer_pieces_are_checked_one_by_one_and_joined_into_the_wheels(
        tmp_path: Path) -> None:
    transfer = _transfer()
    wheel = _tiny_wheel(tmp_path / "wheels")
    manifest = transfer.pack(tmp_path / "wheels", tmp_path / "out", "tiny", piece_mib=1,
                             xz_preset=0)
    assert manifest["compression"] == "xz" and len(manifest["pieces"]) >= 1
    first = tmp_path / "out" / manifest["pieces"][0]["file"]
    good = first.read_bytes()
    first.write_bytes(b"x" + good[1:])
    with pytest.raises(SystemExit, match="arrived damaged"):
        transfer.receive(tmp_path / "out", tmp_path / "store")
    first.write_bytes(good)
    assert transfer.receive(tmp_path / "out", tmp_path / "store") == [
        p["file"] for p in manifest["pieces"]]
    wheels = transfer.unpack(tmp_path / "store", "tiny", tmp_path / "unpacked")
    assert [w.name for w in wheels] == [wheel.name]
    how = transfer.install(wheels, tmp_path / "site", python=str(tmp_path / "no-python"))
    assert how == "unzip"
    assert (tmp_path / "site" / "tinyextra.py").read_bytes().startswith(b"EXTRA = 7")
    lines = transfer.plan(tmp_path / "out")
    assert len(lines) == len(manifest["pieces"]) and "gpu.sh" in lines[-1]
    assert "install" in lines[-1] and f"{tmp_path / 'out'}/tiny.manifest.json" in lines[0]


def test_transfer_takes_the_cpu_onnxruntime_wheel_across_and_installs_it(
        tmp_path: Path) -> None:
    """The whole path on the real CPU onnxruntime wheel for this Python: download (skipped
    without network), split into pieces under the limit, receive, join, check, and install
    with pip --no-index --target; the installed copy is the one imported."""
    transfer = _transfer()
    wheels = tmp_path / "wheels"
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    done = subprocess.run(transfer.download_command([f"onnxruntime=={ort.__version__}"], wheels,
                                                    python), capture_output=True, text=True,
                          timeout=300, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot download the onnxruntime wheel here: {done.stderr.strip()[-200:]}")
    (wheel,) = wheels.glob("*.whl")
    manifest = transfer.pack(wheels, tmp_path / "out", "models", piece_mib=8)
    assert len(manifest["pieces"]) == -(-wheel.stat().st_size // (8 << 20))
    assert all(p["bytes"] <= 8 << 20 for p in manifest["pieces"])
    arrived = tmp_path / "arrived"  # what one transfer brings: the manifest and one piece
    arrived.mkdir()
    for piece in manifest["pieces"]:
        shutil.copy2(tmp_path / "out" / "models.manifest.json", arrived)
        shutil.copy2(tmp_path / "out" / piece["file"], arrived)
        assert transfer.receive(arrived, tmp_path / "store") == [piece["file"]]
        assert not (arrived / piece["file"]).exists()
    code = transfer.main(["install", str(tmp_path / "store"), "--name", "models",
                          "--target", str(tmp_path / "site")])
    assert code == 0
    code_line = "import onnxruntime as o; print(o.__file__, o.__version__)"
    probe = subprocess.run([sys.executable, "-c", code_line],
                           env={**os.environ, "PYTHONPATH": str(tmp_path / "site")},
                           capture_output=True, text=True, timeout=60, check=True)
    where, version = probe.stdout.split()
    assert where.startswith(str(tmp_path / "site")) and version == ort.__version__
