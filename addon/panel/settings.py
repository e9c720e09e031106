"""The settings form, built from facefuse.tunable_options(): one control per tunable, in a
group box per Tunable.group, so a Settings field added to the engine appears here with no panel
code. Kinds: model -> line edit; optional-model -> check box + line edit; choice -> combo box;
choices -> a check box per choice; float / int -> spin boxes bounded by the tunable's range;
bool -> check box. A choice shows the words every host uses for it (CHOICE_LABELS: the
selector's "Main Person" is `one` on the command line).

The wheel scrolls the form: a spin box or combo box takes wheel turns only once it has been
clicked (it has the keyboard focus), so a turn over the list never changes a value under the
pointer.
"""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType
from typing import Any

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtWidgets import (
    QAbstractScrollArea,
    QAbstractSpinBox,
    QApplication,
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLineEdit,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from facefuse import Settings, Tunable, tunable_options

SPIN_LIMIT = 1e9
CHOICE_COLUMNS = 3
# (field, choice) -> the words shown; the same as the Blender add-on's (addon/blender/properties)
CHOICE_LABELS = MappingProxyType({("selector", "one"): "Main Person",
                                  ("selector", "many"): "All",
                                  ("selector", "reference"): "Reference"})


class WheelGuard(QObject):
    """Hands wheel turns over an unfocused spin box or combo box to the scroll area the form
    sits in (the nearest QAbstractScrollArea above the control), which scrolls."""

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() != QEvent.Type.Wheel or not isinstance(watched, QWidget) \
                or watched.hasFocus():
            return False
        area = watched.parentWidget()
        while area is not None and not isinstance(area, QAbstractScrollArea):
            area = area.parentWidget()
        if area is not None:
            QApplication.sendEvent(area.viewport(), event)
        event.accept()
        return True


class SettingsForm(QWidget):
    """Every tunable Settings field as a control; `changed` when any of them changes."""

    changed = Signal()

    def __init__(self, initial: Settings, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.options = tunable_options()
        self.controls: dict[str, QWidget] = {}
        self.wheel_guard = WheelGuard(self)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        groups: dict[str, QFormLayout] = {}
        for option in self.options:
            if option.group not in groups:
                box = QGroupBox(option.group.capitalize(), self)
                groups[option.group] = QFormLayout(box)
                layout.addWidget(box)
            control = self._control(option, getattr(initial, option.name))
            control.setToolTip(option.help)
            control.setObjectName(f"setting-{option.name}")
            self.controls[option.name] = control
            groups[option.group].addRow(option.label, control)
        wheeled: list[QWidget] = [*self.findChildren(QAbstractSpinBox),
                                  *self.findChildren(QComboBox)]
        for widget in wheeled:
            widget.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
            widget.installEventFilter(self.wheel_guard)

    def _control(self, option: Tunable, value: Any) -> QWidget:
        builders = {"model": _model, "optional-model": _optional_model, "choice": _choice,
                    "choices": _choices, "float": _float, "int": _int, "bool": _bool}
        control, signal = builders[option.kind](option, value, self)
        signal.connect(self.changed)
        return control

    def values(self) -> dict[str, Any]:
        """The tunable field values the controls hold, by Settings field name."""
        return {option.name: _read(option, self.controls[option.name])
                for option in self.options}

    def settings(self, base: Settings) -> Settings:
        """`base` with the form's values (Settings checks their ranges: InputError)."""
        return replace(base, **self.values())

    def set_value(self, name: str, value: Any) -> None:
        option = next(o for o in self.options if o.name == name)
        _write(option, self.controls[name], value)

    def apply(self, values: dict[str, Any], keep: frozenset[str] = frozenset()) -> list[str]:
        """Set the controls of the fields in `values` (saved ones) but those in `keep`; the
        names of the values that do not fit their control (left as they were)."""
        refused = []
        for option in self.options:
            if option.name not in values or option.name in keep:
                continue
            try:
                _check(option, values[option.name])
                _write(option, self.controls[option.name], values[option.name])
            except (TypeError, ValueError):
                refused.append(option.name)
        return refused


def _model(option: Tunable, value: Any, parent: QWidget) -> tuple[QWidget, Any]:
    edit = QLineEdit(str(value or ""), parent)
    edit.setPlaceholderText("manifest name or .onnx path")
    return edit, edit.textChanged


def _optional_model(option: Tunable, value: Any, parent: QWidget) -> tuple[QWidget, Any]:
    box = QWidget(parent)
    row = QHBoxLayout(box)
    row.setContentsMargins(0, 0, 0, 0)
    use = QCheckBox(box)
    edit = QLineEdit(str(value or option.suggestion), box)
    use.setChecked(value is not None)
    edit.setEnabled(value is not None)
    use.toggled.connect(edit.setEnabled)
    row.addWidget(use)
    row.addWidget(edit)
    box.use, box.edit = use, edit  # type: ignore[attr-defined]
    use.toggled.connect(lambda _: edit.textChanged.emit(edit.text()))
    return box, edit.textChanged


def _choice(option: Tunable, value: Any, parent: QWidget) -> tuple[QWidget, Any]:
    combo = QComboBox(parent)
    for choice in option.choices:
        combo.addItem(CHOICE_LABELS.get((option.name, choice), choice), choice)
    combo.setCurrentIndex(combo.findData(str(value)))
    return combo, combo.currentIndexChanged


class ChoiceChecks(QWidget):
    """Some of a tunable's choices: a check box each; `changed` when any is toggled."""

    changed = Signal()

    def __init__(self, option: Tunable, value: Any, parent: QWidget) -> None:
        super().__init__(parent)
        grid = QGridLayout(self)
        grid.setContentsMargins(0, 0, 0, 0)
        self.boxes: dict[str, QCheckBox] = {}
        for index, choice in enumerate(option.choices):
            box = QCheckBox(choice, self)
            box.setChecked(choice in value)
            box.toggled.connect(self.changed)
            grid.addWidget(box, index // CHOICE_COLUMNS, index % CHOICE_COLUMNS)
            self.boxes[choice] = box

    def chosen(self) -> tuple[str, ...]:
        return tuple(choice for choice, box in self.boxes.items() if box.isChecked())

    def choose(self, value: Any) -> None:
        for choice, box in self.boxes.items():
            box.setChecked(choice in value)


def _choices(option: Tunable, value: Any, parent: QWidget) -> tuple[QWidget, Any]:
    checks = ChoiceChecks(option, value, parent)
    return checks, checks.changed


def _float(option: Tunable, value: Any, parent: QWidget) -> tuple[QWidget, Any]:
    spin = QDoubleSpinBox(parent)
    spin.setDecimals(3)
    spin.setSingleStep(0.05)
    spin.setRange(_bound(option.minimum, -SPIN_LIMIT), _bound(option.maximum, SPIN_LIMIT))
    spin.setValue(float(value))
    return spin, spin.valueChanged


def _int(option: Tunable, value: Any, parent: QWidget) -> tuple[QWidget, Any]:
    spin = QSpinBox(parent)
    spin.setRange(int(_bound(option.minimum, -2**31)), int(_bound(option.maximum, 2**31 - 1)))
    spin.setValue(int(value))
    return spin, spin.valueChanged


def _bool(option: Tunable, value: Any, parent: QWidget) -> tuple[QWidget, Any]:
    check = QCheckBox(parent)
    check.setChecked(bool(value))
    return check, check.toggled


def _bound(value: float | None, default: float) -> float:
    return float(value) if value is not None else default


def _read(option: Tunable, control: Any) -> Any:
    kind = option.kind
    if kind == "model":
        return control.text().strip()
    if kind == "optional-model":
        return control.edit.text().strip() if control.use.isChecked() else None
    if kind == "choice":
        return control.currentData()
    if kind == "choices":
        return control.chosen()
    if kind in ("float", "int"):
        return control.value()
    return control.isChecked()


def _write(option: Tunable, control: Any, value: Any) -> None:
    kind = option.kind
    if kind == "model":
        control.setText(str(value))
    elif kind == "optional-model":
        control.use.setChecked(value is not None)
        if value is not None:
            control.edit.setText(str(value))
    elif kind == "choice":
        control.setCurrentIndex(control.findData(str(value)))
    elif kind == "choices":
        control.choose(value)
    elif kind in ("float", "int"):
        control.setValue(value)
    else:
        control.setChecked(bool(value))


def _check(option: Tunable, value: Any) -> None:
    """ValueError unless `value` (a saved one, from JSON) fits the option's control."""
    kind = option.kind
    if kind == "choice" and value not in option.choices:
        raise ValueError(value)
    if kind == "choices" and not (isinstance(value, list) and set(value) <= set(option.choices)):
        raise ValueError(value)
    if kind in ("float", "int") and (isinstance(value, bool) or
                                     not isinstance(value, (int, float))):
        raise ValueError(value)
    if kind == "int" and not isinstance(value, int):
        raise ValueError(value)
    if kind == "model" and not isinstance(value, str):
        raise ValueError(value)
    if kind == "optional-model" and value is not None and not isinstance(value, str):
        raise ValueError(value)
    if kind == "bool" and not isinstance(value, bool):
        raise ValueError(value)
