"""ONNX input/output signatures, checked against a model family's contract from the manifest.

A family states what its tensors look like (``TensorSpec``: acceptable names and a shape). This
module reads what a loaded model actually offers and lists the differences in words, so that a
model given for the wrong role fails with a typed error instead of a shape error deep in a stage.

Shape rules: an int in the contract must equal the model's dim, unless the model leaves that dim
dynamic (a string or None from ONNX Runtime); a string in the contract is a free dim; "..." as the
first entry matches any number of leading dims (none included). A name used in several places of
a family's contract must take one value across the model's fixed dims, and when the family's
`dims` table lists values for a name, the model's fixed dim must be one of them.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from ..errors import ModelContractError
from ..models.manifest import Family, TensorSpec

log = logging.getLogger(__name__)

Dim = int | str | None
ELLIPSIS = "..."


class _NodeArg(Protocol):
    name: str
    shape: Sequence[Dim]


class _HasSignature(Protocol):
    def get_inputs(self) -> Sequence[_NodeArg]: ...

    def get_outputs(self) -> Sequence[_NodeArg]: ...


@dataclass(frozen=True, slots=True)
class TensorInfo:
    """One model input or output: its name and shape (int, or str/None for a dynamic dim)."""

    name: str
    shape: tuple[Dim, ...]


@dataclass(frozen=True, slots=True)
class Signature:
    """What a model takes and returns, in graph order."""

    inputs: tuple[TensorInfo, ...]
    outputs: tuple[TensorInfo, ...]

    @classmethod
    def of_session(cls, session: _HasSignature) -> Signature:
        """Read the signature of an onnxruntime.InferenceSession (or anything with its methods)."""
        return cls(tuple(_info(arg) for arg in session.get_inputs()),
                   tuple(_info(arg) for arg in session.get_outputs()))


def _info(arg: _NodeArg) -> TensorInfo:
    shape = arg.shape if arg.shape is not None else ()
    return TensorInfo(str(arg.name), tuple(_dim(d) for d in shape))


def _dim(value: object) -> Dim:
    if value is None or isinstance(value, str):
        return value
    number = int(value)  # type: ignore[call-overload]
    return number if number >= 0 else None


def check(signature: Signature, family: Family) -> list[str]:
    """Differences between a model's signature and a family's contract; empty when it matches.

    Inputs are matched by name when the family has more than one input and names them, otherwise
    by position; outputs by name when the family names every output, otherwise by position.
    """
    inputs_by_name = len(family.inputs) > 1 and all(spec.names for spec in family.inputs)
    outputs_by_name = bool(family.outputs) and all(spec.names for spec in family.outputs)
    differences = (_compare("input", signature.inputs, family.inputs, inputs_by_name)
                   + _compare("output", signature.outputs, family.outputs, outputs_by_name))
    if differences:
        return differences
    pairs = (_pairs(signature.inputs, family.inputs, inputs_by_name)
             + _pairs(signature.outputs, family.outputs, outputs_by_name))
    return _named_dim_problems(pairs, family.dims)


def _pairs(actual: tuple[TensorInfo, ...], specs: tuple[TensorSpec, ...],
           by_name: bool) -> list[tuple[TensorInfo, TensorSpec]]:
    """Each contract spec with the model tensor it was matched to (see check)."""
    if not by_name:
        return list(zip(actual, specs))
    found = {info.name: info for info in actual}
    matched = ((next((found[n] for n in spec.names if n in found), None), spec) for spec in specs)
    return [(info, spec) for info, spec in matched if info is not None]


def _bindings(pairs: list[tuple[TensorInfo, TensorSpec]]) -> dict[str, set[int]]:
    bound: dict[str, set[int]] = {}
    for info, spec in pairs:
        expected = tuple(spec.shape)
        if expected and expected[0] == ELLIPSIS:
            expected = expected[1:]
            actual = info.shape[len(info.shape) - len(expected):] if expected else ()
        else:
            actual = info.shape
        for dim, want in zip(actual, expected):
            if isinstance(want, str) and isinstance(dim, int):
                bound.setdefault(want, set()).add(dim)
    return bound


def _named_dim_problems(pairs: list[tuple[TensorInfo, TensorSpec]],
                        allowed: Mapping[str, tuple[int, ...]]) -> list[str]:
    problems = []
    for name, values in sorted(_bindings(pairs).items()):
        if len(values) > 1:
            shown = " and ".join(str(v) for v in sorted(values))
            problems.append(f"dimension '{name}' must take one value but is {shown}")
        elif name in allowed and not values <= set(allowed[name]):
            choices = ", ".join(str(v) for v in allowed[name])
            problems.append(f"dimension '{name}' is {min(values)}, expected one of {choices}")
    return problems


def require(signature: Signature, family: Family, model_label: str) -> None:
    """Raise ModelContractError naming every difference when the signature does not fit family."""
    differences = check(signature, family)
    if differences:
        raise ModelContractError(f"{model_label} is not a {family.role} of family {family.name}: "
                                 + "; ".join(differences))


def pick_family(signature: Signature, families: Sequence[Family], model_label: str) -> Family:
    """The first family (in the order given) whose contract the signature meets.

    Raises ModelContractError naming the role and, for each family, what differs.
    """
    if not families:
        raise ModelContractError(f"{model_label} cannot be checked: no model family was given")
    reasons = []
    for family in families:
        differences = check(signature, family)
        if not differences:
            log.debug("%s matches family %s", model_label, family.name)
            return family
        reasons.append(f"{family.name} ({'; '.join(differences)})")
    roles = "/".join(dict.fromkeys(f.role for f in families))
    raise ModelContractError(f"{model_label} matches no {roles} family: " + ", ".join(reasons))


def _compare(kind: str, actual: tuple[TensorInfo, ...], specs: tuple[TensorSpec, ...],
             by_name: bool) -> list[str]:
    count = [] if len(actual) == len(specs) else [_count_message(kind, len(actual), len(specs))]
    if by_name:
        return count + _compare_by_name(kind, actual, specs)
    if count:  # by position the pairs are meaningless once the counts differ
        return count
    return [msg for index, (info, spec) in enumerate(zip(actual, specs))
            for msg in _compare_one(kind, info, spec, index)]


def _compare_by_name(kind: str, actual: tuple[TensorInfo, ...],
                     specs: tuple[TensorSpec, ...]) -> list[str]:
    by_name = {info.name: info for info in actual}
    missing, differences = [], []
    for spec in specs:
        found = next((by_name[n] for n in spec.names if n in by_name), None)
        if found is None:
            missing.append(_names(spec.names))
        elif not shape_matches(found.shape, spec.shape):
            differences.append(_shape_message(kind, found, spec))
    if missing:
        plural = "s" if len(missing) > 1 else ""
        differences.insert(0, f"has no {kind}{plural} named {', '.join(missing)}")
    return differences


def _compare_one(kind: str, info: TensorInfo, spec: TensorSpec, index: int) -> list[str]:
    differences = []
    if spec.names and info.name not in spec.names:
        differences.append(f"{kind} {index + 1} is named '{info.name}', "
                           f"expected {_names(spec.names)}")
    if not shape_matches(info.shape, spec.shape):
        differences.append(_shape_message(kind, info, spec))
    return differences


def shape_matches(actual: Sequence[Dim], expected: Sequence[int | str]) -> bool:
    """Whether a model's shape meets a contract shape (see the module docstring for the rules)."""
    if expected and expected[0] == ELLIPSIS:
        tail = tuple(expected[1:])
        if len(actual) < len(tail):
            return False
        actual = tuple(actual[len(actual) - len(tail):])
        expected = tail
    if len(actual) != len(expected):
        return False
    return all(_dim_matches(a, e) for a, e in zip(actual, expected))


def _dim_matches(actual: Dim, expected: int | str) -> bool:
    if isinstance(expected, str) or actual is None or isinstance(actual, str):
        return True
    return actual == expected


def _count_message(kind: str, got: int, expected: int) -> str:
    return f"has {got} {kind}{'' if got == 1 else 's'}, expected {expected}"


def _shape_message(kind: str, info: TensorInfo, spec: TensorSpec) -> str:
    return (f"{kind} '{info.name}' has shape {format_shape(info.shape)}, "
            f"expected {format_shape(spec.shape)}")


def _names(names: tuple[str, ...]) -> str:
    return " or ".join(f"'{n}'" for n in names)


def format_shape(shape: Sequence[Dim]) -> str:
    """A shape as "[1, 3, height, width]" (a dynamic dim without a name shows as "?")."""
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"
