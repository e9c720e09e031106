"""facefuse for editorial timelines through OpenTimelineIO: `facefuse timeline swap EDIT.otio`
swaps the marked clips of an exported timeline and writes it back with the swaps on new tracks
(every editor that reads .otio: DaVinci Resolve 18.5+; Premiere's FCP 7 XML and Avid's AAF
through OTIO's adapters, read and written as they are). Installed from the wheel as the package
``facefuse_otio`` (the extra ``facefuse[otio]`` brings the library and its adapters); see
docs/timeline.md.

Modules, in dependency order: `times` (exact rates and frame counts), `paths` (how a timeline
names its files, from another folder), `media` (a clip's media as the engine reads it),
`versions` (facefuse's own swaps in a timeline, and where a new version goes), `selection`
(which clips, their used ranges, the refusals), `renders` (the versioned render requests), `flags`
(review flags as markers), `conform` (the swapped timeline, and writing it) and `commands`
(what the command runs)."""

from facefuse import prefer_source_tree

prefer_source_tree(__name__, "addon.otio")
