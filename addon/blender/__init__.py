"""facefuse for Blender's Video Sequencer: the "Face Swap" sidebar tab. Registration only.

Modules: properties.py (settings on each strip) · strips.py (4.2/5.0 names, the active strip)
· settings.py (strip settings -> Settings) · convert.py (strip -> RenderRequest) · frames.py
(timeline frames <-> engine numbers) · result.py (frames -> image strip) · jobs.py (worker
threads + timer drain) · swap.py (the swap job) · tasks.py (the look jobs) · words.py
(progress in words) · review.py (review markers, people, corrections) · operators.py ·
review_operators.py (review, corrections) · panels.py · preferences.py (model downloads) ·
headless.py (farm and scripts).
"""

from __future__ import annotations

from . import jobs, operators, panels, preferences, properties, review_operators

_MODULES = (properties, jobs, operators, review_operators, panels, preferences)


def register() -> None:
    """Register every module in order; on a failure undo the ones done, then raise."""
    done = []
    try:
        for module in _MODULES:
            module.register()
            done.append(module)
    except BaseException:
        for module in reversed(done):
            module.unregister()
        raise


def unregister() -> None:
    for module in reversed(_MODULES):
        module.unregister()
