"""Signature checks against the shipped families, on tiny ONNX models built with onnx.helper."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, ValueInfoProto, helper, numpy_helper

from facefuse.errors import ModelContractError, ModelError
from facefuse.models.manifest import Family, Manifest, TensorSpec, load_manifest
from facefuse.runtime.signature import (
    Signature,
    TensorInfo,
    check,
    format_shape,
    pick_family,
    require,
    shape_matches,
)

Shape = Sequence[int | str | None]
INSWAPPER_OUT = [("output", [1, 3, 128, 128])]
SCRFD_OUT = [(f"o{c}_{n}", [n, c]) for c in (1, 4, 10) for n in (12800, 3200, 800)]
YUNET_OUT = [(f"{kind}_{stride}", [1, 6400 // (stride // 8) ** 2, c])
             for kind, c in (("cls", 1), ("obj", 1), ("bbox", 4), ("kps", 10))
             for stride in (8, 16, 32)]


def _value(name: str, shape: Shape) -> ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape))


def build_session(inputs: Sequence[tuple[str, Shape]],
                  outputs: Sequence[tuple[str, Shape]]) -> ort.InferenceSession:
    """A model whose outputs are constants of the given shapes (dynamic dims become 1),
    except that an output of the first input's exact shape is that input plus the sum of the
    others (so every input is used), like inswapper's target + source."""
    nodes = []
    first_name, first_shape = inputs[0]
    for out_name, out_shape in outputs:
        if list(out_shape) == list(first_shape) and len(inputs) > 1:
            nodes.append(helper.make_node("ReduceSum", [inputs[1][0]], ["extra"], keepdims=1))
            nodes.append(helper.make_node("Add", [first_name, "extra"], [out_name]))
            continue
        dims = [d if isinstance(d, int) else 1 for d in out_shape]
        value = numpy_helper.from_array(np.zeros(dims, np.float32), name=f"{out_name}_value")
        nodes.append(helper.make_node("Constant", [], [out_name], value=value))
    graph = helper.make_graph(nodes, "contract", [_value(n, s) for n, s in inputs],
                              [_value(n, s) for n, s in outputs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


@pytest.fixture(scope="module")
def manifest() -> Manifest:
    return load_manifest()


@pytest.fixture(scope="module")
def inswapper_like() -> Signature:
    return Signature.of_session(build_session(
        [("target", [1, 3, 128, 128]), ("source", [1, 512])], INSWAPPER_OUT))


def test_of_session_reads_names_and_dynamic_dims() -> None:
    session = build_session([("input.1", [1, 3, "height", None])], [("o", [2, 1])])
    signature = Signature.of_session(session)
    assert signature.inputs == (TensorInfo("input.1", (1, 3, "height", None)),)
    assert signature.outputs == (TensorInfo("o", (2, 1)),)


def test_inswapper_like_model_matches(manifest: Manifest,
                                               inswapper_like: Signature) -> None:
    family = manifest.families["inswapper"]
    assert check(inswapper_like, family) == []
    require(inswapper_like, family, "inswapper_like.onnx")


def test_inputs_are_matched_by_name_not_position(manifest: Manifest) -> None:
    swapped_order = Signature.of_session(build_session(
        [("source", [1, 512]), ("target", [1, 3, 128, 128])], [("output", [1, 3, 128, 128])]))
    assert check(swapped_order, manifest.families["inswapper"]) == []


def test_wrong_source_width_is_named(manifest: Manifest) -> None:
    wrong = Signature.of_session(build_session(
        [("target", [1, 3, 128, 128]), ("source", [1, 256])], INSWAPPER_OUT))
    assert check(wrong, manifest.families["inswapper"]) == [
        "input 'source' has shape [1, 256], expected [1, 512]"]
    with pytest.raises(ModelContractError) as info:
        require(wrong, manifest.families["inswapper"], "my_swapper.onnx")
    assert str(info.value) == ("my_swapper.onnx is not a swapper of family inswapper: "
                               "input 'source' has shape [1, 256], expected [1, 512]")
    assert isinstance(info.value, ModelError) and info.value.exit_code == 4


def test_missing_named_input_is_reported(manifest: Manifest) -> None:
    renamed = Signature.of_session(build_session(
        [("target", [1, 3, 128, 128]), ("identity", [1, 512])], INSWAPPER_OUT))
    assert check(renamed, manifest.families["inswapper"]) == ["has no input named 'source'"]


def test_dynamic_actual_dims_are_accepted(manifest: Manifest) -> None:
    dynamic = Signature.of_session(build_session(
        [("target", ["n", 3, None, 128]), ("source", [1, "d"])], [("output", [1, 3, 128, 128])]))
    assert check(dynamic, manifest.families["inswapper"]) == []


def test_scrfd_like_model_picks_scrfd_and_fails_yunet(manifest: Manifest) -> None:
    scrfd = Signature.of_session(build_session([("input.1", [1, 3, "?", "?"])], SCRFD_OUT))
    detectors = manifest.families_for_role("detector")
    assert pick_family(scrfd, detectors, "scrfd_like").name == "scrfd"
    assert check(scrfd, manifest.families["yunet"])[0] == "has 9 outputs, expected 12"


def test_yunet_like_model_picks_yunet(manifest: Manifest) -> None:
    yunet = Signature.of_session(build_session([("input", [1, 3, 640, 640])], YUNET_OUT))
    assert check(yunet, manifest.families["scrfd"]) == ["has 12 outputs, expected 9"]
    families = [manifest.families["scrfd"], manifest.families["yunet"]]
    assert pick_family(yunet, families, "yunet_like").name == "yunet"


def test_outputs_with_names_are_matched_by_name(manifest: Manifest) -> None:
    renamed = [("score_8" if name == "cls_8" else name, shape) for name, shape in YUNET_OUT]
    yunet = Signature.of_session(build_session([("input", [1, 3, 640, 640])], renamed))
    assert check(yunet, manifest.families["yunet"]) == ["has no output named 'cls_8'"]


def test_positional_shape_difference_names_the_tensor(manifest: Manifest) -> None:
    outputs = list(SCRFD_OUT)
    outputs[3] = ("bad", [12800, 5])
    scrfd = Signature.of_session(build_session([("input.1", [1, 3, 640, 640])], outputs))
    assert check(scrfd, manifest.families["scrfd"]) == [
        "output 'bad' has shape [12800, 5], expected [..., 4]"]


def test_pick_family_error_names_role_and_each_family(manifest: Manifest,
                                                      inswapper_like: Signature) -> None:
    with pytest.raises(ModelContractError) as info:
        pick_family(inswapper_like, manifest.families_for_role("detector"), "swap.onnx")
    message = str(info.value)
    assert message.startswith("swap.onnx matches no detector family")
    assert "scrfd (has 2 inputs, expected 1; has 1 output, expected 9)" in message
    assert ("yunet (has 2 inputs, expected 1; has 1 output, expected 12; has no outputs named "
            "'cls_8', 'cls_16', 'cls_32', 'obj_8'") in message


def test_pick_family_keeps_the_given_order() -> None:
    loose = Family("loose", "enhancer", "X", None, None, "rgb", 0.0, 1.0,
                   (TensorSpec((), ("...",)),), (TensorSpec((), ("...",)),))
    strict = Family("strict", "enhancer", "X", None, None, "rgb", 0.0, 1.0,
                    (TensorSpec((), (1, 3, 512, 512)),), (TensorSpec((), (1, 3, 512, 512)),))
    signature = Signature((TensorInfo("input", (1, 3, 512, 512)),),
                          (TensorInfo("output", (1, 3, 512, 512)),))
    assert pick_family(signature, [strict, loose], "m").name == "strict"
    assert pick_family(signature, [loose, strict], "m").name == "loose"
    with pytest.raises(ModelContractError):
        pick_family(signature, [], "m")


def test_codeformer_weight_accepts_a_scalar(manifest: Manifest) -> None:
    signature = Signature((TensorInfo("input", (1, 3, 512, 512)), TensorInfo("weight", ())),
                          (TensorInfo("output", (1, 3, 512, 512)),))
    assert check(signature, manifest.families["codeformer"]) == []
    assert pick_family(signature, manifest.families_for_role("enhancer"), "cf").name == "codeformer"


@pytest.mark.parametrize(("actual", "expected", "ok"), [
    ((1, 3, 640, 640), (1, 3, "height", "width"), True),
    ((1, 3, 640), (1, 3, "height", "width"), False),
    ((1, 4, 640, 640), (1, 3, "height", "width"), False),
    ((12800, 1), ("...", 1), True),
    ((1, 12800, 1), ("...", 1), True),
    ((1,), ("...", 1), True),
    ((), ("...", 1), False),
    ((12800, 4), ("...", 1), False),
    ((), ("...",), True),
    (("batch", None), (1, 512), True),
])
def test_shape_rules(actual: tuple[int | str | None, ...], expected: tuple[int | str, ...],
                     ok: bool) -> None:
    assert shape_matches(actual, expected) is ok


def test_format_shape() -> None:
    assert format_shape((1, 3, "height", None)) == "[1, 3, height, ?]"
    assert format_shape(("...", 4)) == "[..., 4]"


def test_real_detectors_pick_their_family(manifest: Manifest, testdata: Path) -> None:
    models = testdata / "models"
    detectors = manifest.families_for_role("detector")
    for file, family in (("face_detection_yunet_2023mar.onnx", "yunet"),
                         ("det_500m.onnx", "scrfd")):
        session = ort.InferenceSession(str(models / file), providers=["CPUExecutionProvider"])
        assert pick_family(Signature.of_session(session), detectors, file).name == family


def test_single_named_input_is_checked_by_position() -> None:
    family = Family("named", "enhancer", "X", None, None, "rgb", 0.0, 1.0,
                    (TensorSpec(("input", "input.1"), (1, 3, 512, 512)),),
                    (TensorSpec((), (1, 3, 512, 512)),))
    signature = Signature((TensorInfo("x", (1, 3, 256, 256)),),
                          (TensorInfo("y", (1, 3, 512, 512)),))
    assert check(signature, family) == [
        "input 1 is named 'x', expected 'input' or 'input.1'",
        "input 'x' has shape [1, 3, 256, 256], expected [1, 3, 512, 512]"]


# -- named dims: one family, several crop sizes (issue 12) ------------------------------------

@pytest.mark.parametrize("size", [128, 256, 512])
def test_an_inswapper_style_model_of_any_listed_size_matches(manifest: Manifest,
                                                             size: int) -> None:
    model = Signature.of_session(build_session(
        [("target", [1, 3, size, size]), ("source", [1, 512])],
        [("output", [1, 3, size, size])]))
    assert check(model, manifest.families["inswapper"]) == []


def test_a_named_dim_must_take_one_value(manifest: Manifest) -> None:
    model = Signature.of_session(build_session(
        [("target", [1, 3, 256, 256]), ("source", [1, 512])], [("output", [1, 3, 128, 128])]))
    assert check(model, manifest.families["inswapper"]) == [
        "dimension 'size' must take one value but is 128 and 256"]


def test_a_named_dim_outside_the_family_list_is_named(manifest: Manifest) -> None:
    model = Signature.of_session(build_session(
        [("target", [1, 3, 200, 200]), ("source", [1, 512])], [("output", [1, 3, 200, 200])]))
    assert check(model, manifest.families["inswapper"]) == [
        "dimension 'size' is 200, expected one of 128, 256, 512"]
    with pytest.raises(ModelContractError, match="dimension 'size' is 200"):
        pick_family(model, manifest.families_for_role("swapper"), "odd.onnx")


def test_hyperswap_and_inswapper_are_told_apart_by_their_outputs(manifest: Manifest) -> None:
    hyperswap = Signature.of_session(build_session(
        [("target", [1, 3, 256, 256]), ("source", [1, 512])],
        [("output", [1, 3, 256, 256]), ("mask", [1, 1, 256, 256])]))
    swappers = manifest.families_for_role("swapper")
    assert pick_family(hyperswap, swappers, "hs.onnx").name == "hyperswap"
    assert check(hyperswap, manifest.families["inswapper"]) == ["has 2 outputs, expected 1"]
    single = Signature.of_session(build_session(
        [("target", [1, 3, 256, 256]), ("source", [1, 512])], [("output", [1, 3, 256, 256])]))
    assert pick_family(single, swappers, "in.onnx").name == "inswapper"
    assert check(single, manifest.families["hyperswap"]) == ["has 1 output, expected 2",
                                                             "has no output named 'mask'"]
