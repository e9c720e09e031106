"""facefuse for editorial timelines through OpenTimelineIO: `facefuse timeline swap EDIT.otio`
swaps the marked clips of an exported timeline and writes it back with the swaps on new tracks
(every editor that reads .otio: DaVinci Resolve 18.5+, and Premiere, Avid and others through
OTIO's adapters). Installed from the wheel as the package ``facefuse_otio`` (the extra
``facefuse[otio]`` brings the library); see docs/timeline.md.

Modules: `times` (exact rates and frame counts), `media` (a clip's media as the engine reads
it), `selection` (which clips, their used ranges, the refusals), `plan` (the versioned render
requests), `conform` (the swapped timeline), `flags` (review flags as markers) and `commands`
(what the command runs)."""

from facefuse import prefer_source_tree

prefer_source_tree(__name__, "addon.otio")
