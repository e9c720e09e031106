"""Consent in Blender's casting, with bpy 5.0 as a module: each person's Consent Record (relative
to the .blend, as their Own Source), the strip's Require Consent and Project go into the request's
policy (a skipped person's record left out, a look carries none), the same after the .blend is
saved and opened again and after a new review; the People panel draws them. A missing record is
one sentence: tests/hosts/addon/test_blender_errors.py.

Fixtures in tests/hosts/addon/conftest.py (`shot`) and tests/hosts/conftest.py
(`consent_record`).
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

# tests/hosts/conftest.py points BLENDER_USER_* at a temporary folder before bpy is imported.
bpy = pytest.importorskip("bpy", reason="bpy (Blender as a Python module) is not installed")

from facefuse import PersonId, PolicyChoices
from tests.hosts.addon.blender_helpers import FakeLayout, add_source, module


def test_the_strips_consent_goes_into_its_policy_and_stays_with_the_blend(
        shot: SimpleNamespace, testdata: Path, consent_record) -> None:
    jane, john = consent_record(), consent_record("John Roe", "john.consent.json")
    assert jane.parent == shot.blend.parent
    add_source(shot.strip, testdata / "media" / "obama.jpg")
    props = shot.strip.facefuse
    for person_id in ("p1", "p2"):
        props.people.add().person_id = person_id
    props.people[0].consent = f"//{jane.name}"  # relative to the .blend, as Blender keeps it
    props.people[1].consent, props.people[1].skip = str(john), True
    props.require_consent, props.project = True, " NIGHTFALL "
    convert = module("convert")
    before = convert.strip_swap(shot.scene, shot.strip).request
    assert before.policy == PolicyChoices(consent=((PersonId("p1"), jane),),
                                          require_consent=True, project="NIGHTFALL")
    assert convert.strip_swap(shot.scene, shot.strip, look=True).request.policy == \
        PolicyChoices()

    layout = FakeLayout()
    module("panels").SEQUENCER_PT_facefuse_people.draw(SimpleNamespace(layout=layout),
                                                       bpy.context)
    drawn = {call["name"] for kind, call in layout.calls if kind == "prop"}
    assert {"require_consent", "project", "consent"} <= drawn

    module("review").update_people(None, props, [  # a new review keeps the casting
        {"id": "p1", "frame_count": 3, "frames": [], "swapped": True, "why": "main person"},
        {"id": "p3", "frame_count": 1, "frames": [], "swapped": False, "why": ""}])
    assert [(p.person_id, p.consent) for p in props.people] == [("p1", f"//{jane.name}"),
                                                                 ("p3", "")]
    props.people.add().person_id = "p2"
    props.people[2].consent, props.people[2].skip = str(john), True

    assert bpy.ops.wm.save_mainfile() == {'FINISHED'}
    assert bpy.ops.wm.open_mainfile(filepath=str(shot.blend)) == {'FINISHED'}
    scene = bpy.context.scene
    after = convert.strip_swap(scene, scene.sequence_editor.strips["plate"]).request
    assert after == before
