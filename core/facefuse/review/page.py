"""index.html, made from a report's JSON alone (and the pictures it names, beside it): one
self-contained page, relative links, no script, every text escaped.

Sections: the shot (input, range, cuts, options, timings); the people (thumbnail, frames,
presence, swapped or not and with which source); a strip over the analysed frames (faces found,
each person swapped / filled in / seen but not swapped, flagged frames, cuts marked); the
flags; the before/after contact sheets (sampled frames, then one frame per flagged range);
per-person plots of jitter and mask-area change (matplotlib, the `report` extra: without it
the page says how to get them).
"""

from __future__ import annotations

import html
import io
from collections.abc import Collection, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from .records import WILL_FAIL

PLOTS_MISSING = ("The plots need matplotlib: <code>pip install -e \".[report]\"</code> in the "
                 "facefuse checkout (or <code>pip install matplotlib</code>), then run the "
                 "review again.")
_STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222;max-width:1400px}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid #ccc}
table{border-collapse:collapse}td,th{padding:3px 8px;border-bottom:1px solid #eee;
text-align:left;vertical-align:middle}
.strip{position:relative;margin:2px 0 2px 9em;height:16px;background:#f4f4f4;display:flex}
.strip span{display:block;height:100%}
.row{position:relative}.row b{position:absolute;left:0;top:0;width:8.6em;font-weight:normal;
font-size:12px;line-height:16px;overflow:hidden;white-space:nowrap}
.cut{position:absolute;top:0;bottom:0;border-left:2px solid #c00}
.s-none{background:#f4f4f4}.s-found1{background:#9ecae1}.s-found2{background:#3182bd}
.s-swapped{background:#31a354}.s-filled{background:#a1d99b}.s-seen{background:#bdbdbd}
.s-flagged{background:#e6550d}.s-clear{background:#f4f4f4}.s-fails{background:#67000d}
.key span{display:inline-block;width:1em;height:1em;vertical-align:middle;margin:0 .3em 0 1em}
.sheet{display:flex;flex-wrap:wrap;gap:12px}
figure{margin:0;border:1px solid #ddd;padding:4px;background:#fafafa}
figure img{display:block;width:220px;height:auto}
figure.flagged{border-color:#e6550d}.pair{display:flex;gap:4px}
figcaption{font-size:12px;max-width:444px}
.warn{color:#a63603}
"""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _ranges_text(ranges: Sequence[Sequence[int]]) -> str:
    return ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in ranges) or "none"


# -- plots ---------------------------------------------------------------------------------------

def plot_files(report: Mapping[str, Any]) -> dict[str, bytes]:
    """plots/PERSON.png per series (jitter and mask-area change over the frames, cuts and the
    person's flagged frames marked); empty without matplotlib."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        return {}
    files = {}
    for series in report["series"]:
        figure = Figure(figsize=(8.0, 3.4), dpi=80)
        FigureCanvasAgg(figure)
        flagged = [(f["first"], f["last"]) for f in report["flags"]
                   if f["person"] == series["person"]]
        for row, (key, label) in enumerate((("jitter", "jitter (face sizes)"),
                                            ("mask_area_change", "mask area change"))):
            axes = figure.add_subplot(2, 1, row + 1)
            _plot_series(axes, series["frames"], series[key], label, report["cuts"], flagged)
            axes.set_xlim(report["frames"]["first"] - 0.5, report["frames"]["last"] + 0.5)
        axes.set_xlabel("frame")
        figure.suptitle(f"person {series['person']}", fontsize=10)
        figure.tight_layout()
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png")
        files[f"plots/{series['person']}.png"] = buffer.getvalue()
    return files


def _plot_series(axes: Any, frames: Sequence[int], values: Sequence[float | None], label: str,
                 cuts: Sequence[int], flagged: Sequence[tuple[int, int]]) -> None:
    ys = [float("nan") if v is None else v for v in values]
    for first, last in flagged:
        axes.axvspan(first - 0.5, last + 0.5, color="#fdae6b", alpha=0.6, linewidth=0)
    for cut in cuts:
        axes.axvline(cut - 0.5, color="#c00", linestyle="--", linewidth=1)
    axes.plot(frames, ys, color="#3182bd", linewidth=1)
    axes.set_ylabel(label, fontsize=8)
    axes.tick_params(labelsize=8)


# -- the page ------------------------------------------------------------------------------------

def page_html(report: Mapping[str, Any], plots: Collection[str]) -> bytes:
    """The page (UTF-8 bytes); `plots`: the plot files written beside it."""
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>facefuse review: {_e(report['input'])}</title>",
        f"<style>{_STYLE}</style></head><body>",
        *_header(report), *_people(report), *_strip(report), *_flags(report),
        *_sheets(report), *_plots(report, plots), "</body></html>",
    ]
    return ("\n".join(parts) + "\n").encode("utf-8")


def _header(report: Mapping[str, Any]) -> Iterator[str]:
    frames, settings, timings = report["frames"], report["settings"], report["timings"]
    analysis, made = timings["analysis_s"], timings["report_s"]
    from_cache = bool(timings.get("analysis_cached"))
    share = f" ({made / analysis:.0%} of the analysis)" if analysis > 0 and not from_cache \
        else ""
    cached = " (from the cache)" if from_cache else ""
    yield f"<h1>Review of {_e(report['input'])}</h1>"
    yield (f"<p>Shot <code>{_e(report['shot_id'])}</code>: frames {_e(frames['first'])}-"
           f"{_e(frames['last'])} ({_e(frames['count'])} analysed), cuts at "
           f"{_e(', '.join(map(str, report['cuts'])) or 'none')}. "
           f"{_e(_flag_count(report))}.</p>")
    sources = ", ".join(settings.get("sources", ())) or "none"
    yield (f"<p>Sources {_e(sources)}; selector {_e(settings['selector'])}, swapper "
           f"{_e(settings['swapper'])} "
           f"({_e(settings['swapper_size_px'])} px), detector {_e(settings['detector'])}, "
           f"smoothing {'on' if settings['smoothing'] else 'off'}. Analysis and plan "
           f"{analysis:.1f} s{_e(cached)}, this report {made:.1f} s{_e(share)}. facefuse "
           f"{_e(report.get('facefuse', ''))}.</p>")
    if report.get("render"):
        render = report["render"]
        yield (f"<p>Render: {_e(render.get('frames'))} frames, {_e(render.get('swapped'))} "
               f"swapped, {len(render.get('failed', []))} failed.</p>")


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def _flag_count(report: Mapping[str, Any]) -> str:
    if not report["flags"]:
        return "No flags"
    return (f"{_plural(len(report['flags']), 'flag')} over frames "
            f"{_ranges_text(report['flagged_frames'])}")


def _people(report: Mapping[str, Any]) -> Iterator[str]:
    yield "<h2>People</h2><table><tr><th></th><th>person</th><th>frames</th><th>presence</th>"
    yield "<th>swapped</th><th>source</th><th>why</th></tr>"
    for person in report["people"]:
        thumb = (f'<img src="{_e(person["thumbnail"])}" alt="{_e(person["id"])}" height="72">'
                 if person.get("thumbnail") else "")
        swapped = "yes" if person["swapped"] else "no"
        yield (f"<tr><td>{thumb}</td><td>{_e(person['id'])}</td>"
               f"<td>{_e(_ranges_text(person['frames']))} ({_e(person['frame_count'])} frames,"
               f" {_e(_plural(person['tracks'], 'track'))},"
               f" {_e(person.get('filled_frames', 0))} filled)"
               f"</td><td>{_e(person['presence'])}</td><td>{swapped}</td>"
               f"<td>{_e(person['source'] or '')}</td><td>{_e(person['why'])}</td></tr>")
    yield "</table>"
    yield from _consent(report)


def _consent(report: Mapping[str, Any]) -> Iterator[str]:
    """Who is swapped to which source under which consent record (when records were given)."""
    rows = report.get("consent") or []
    if not rows:
        return
    yield "<h3>Consent</h3><table><tr><th>person</th><th>source</th><th>performer</th>"
    yield "<th>record</th><th>sha256</th></tr>"
    for row in rows:
        record = row["record"] or f"none: {row['problem']}"
        yield (f"<tr><td>{_e(row['person'])}</td><td>{_e(row['source'])}</td>"
               f"<td>{_e(row['performer'] or '')}</td><td>{_e(record)}</td>"
               f"<td>{_e((row['record_sha256'] or '')[:16])}</td></tr>")
    yield "</table>"


def _strip(report: Mapping[str, Any]) -> Iterator[str]:
    strip = report["strip"]
    if not strip:
        return
    yield "<h2>Frames</h2>"
    yield ('<p class="key"><span class="s-found1"></span>one face found<span class="s-found2">'
           '</span>several<span class="s-swapped"></span>swapped<span class="s-filled"></span>'
           'swapped, face filled in<span class="s-seen"></span>seen, not swapped'
           '<span class="s-flagged"></span>flagged<span class="s-fails"></span>the render '
           'fails it<span class="cut" style="position:static;'
           'display:inline-block;width:0;height:1em"></span> cut</p>')
    frames = [row["frame"] for row in strip]
    cuts = [frames.index(c) for c in report["cuts"] if c in frames]
    found = [("fails" if WILL_FAIL in r["flags"] else "found2" if r["found"] > 1
              else "found1" if r["found"] else "none") for r in strip]
    yield from _strip_row("faces found", frames, found, cuts)
    for person in report["people"]:
        yield from _strip_row(f"person {person['id']}", frames,
                              _person_states(person, strip), cuts)
    flagged = ["flagged" if r["flags"] else "clear" for r in strip]
    yield from _strip_row("flagged", frames, flagged, cuts)
    yield (f"<p>Frames {_e(frames[0])} (left) to {_e(frames[-1])} (right); hover a run for its "
           "frames.</p>")


def _person_states(person: Mapping[str, Any], strip: Sequence[Mapping[str, Any]]) -> list[str]:
    seen = {n for a, b in person["frames"] for n in range(a, b + 1)}
    pid = person["id"]
    return ["fails" if WILL_FAIL in r["flags"] else "filled" if pid in r["filled"] else
            "swapped" if pid in r["swapped"] else "seen" if r["frame"] in seen else "none"
            for r in strip]


_WORDS = MappingProxyType({
    "none": "no face", "found1": "one face found", "found2": "several faces found",
    "swapped": "swapped", "filled": "swapped, filled in", "seen": "seen, not swapped",
    "flagged": "flagged", "clear": "not flagged", "fails": "the render fails it"})


def _strip_row(label: str, frames: Sequence[int], states: Sequence[str],
               cuts: Sequence[int]) -> Iterator[str]:
    total = len(frames)
    runs = []
    start = 0
    for i in range(1, total + 1):
        if i == total or states[i] != states[start]:
            width = 100.0 * (i - start) / total
            title = f"frames {frames[start]}-{frames[i - 1]}: {_WORDS[states[start]]}"
            runs.append(f'<span class="s-{states[start]}" style="width:{width:.3f}%" '
                        f'title="{_e(title)}"></span>')
            start = i
    marks = "".join(f'<i class="cut" style="left:{100.0 * c / total:.3f}%" '
                    f'title="cut at frame {frames[c]}"></i>' for c in cuts)
    yield (f'<div class="row"><b>{_e(label)}</b><div class="strip">{"".join(runs)}{marks}'
           "</div></div>")


def _flags(report: Mapping[str, Any]) -> Iterator[str]:
    yield "<h2>Flags</h2>"
    if not report["flags"]:
        yield "<p>No flags: nothing measured crossed a threshold.</p>"
        return
    shown = {s["frame"] for s in report["samples"]}
    yield "<table><tr><th>frames</th><th>person</th><th>kind</th><th>reason</th><th></th></tr>"
    for flag in report["flags"]:
        frames = (f"{flag['first']}" if flag["first"] == flag["last"]
                  else f"{flag['first']}-{flag['last']}")
        link = (f'<a href="#f{_e(flag["sample"])}">frame {_e(flag["sample"])}</a>'
                if flag.get("sample") in shown else "")
        yield (f"<tr><td>{_e(frames)}</td><td>{_e(flag['person'] or '')}</td>"
               f"<td>{_e(flag['kind'])}</td><td>{_e(flag['reason'])}</td><td>{link}</td></tr>")
    yield "</table>"


def _sheets(report: Mapping[str, Any]) -> Iterator[str]:
    flags_at: dict[int, list[Mapping[str, Any]]] = {}
    for flag in report["flags"]:
        flags_at.setdefault(flag["sample"], []).append(flag)
    samples = report["samples"]
    for title, why in (("Before and after: sampled frames", "sampled"),
                       ("Before and after: one frame per flagged range", "flagged")):
        chosen = [s for s in samples if s["why"] == why]
        if not chosen:
            continue
        yield f"<h2>{_e(title)}</h2><div class=\"sheet\">"
        for sample in chosen:
            yield _figure(sample, flags_at.get(sample["frame"], ()))
        yield "</div>"


def _figure(sample: Mapping[str, Any], flags: Sequence[Mapping[str, Any]]) -> str:
    frame = sample["frame"]
    words = "; ".join(f"{f['kind']} ({f['person'] or 'all'}, {f['first']}-{f['last']})"
                      for f in flags)
    after = sample["after"]
    unsourced = ", ".join(sample.get("unsourced") or ())
    missing = f"{unsourced} without a source" if unsourced else "no source given"
    shown = "before, after" if after is not None else f"before (no after: {missing})"
    caption = f"frame {frame}: {shown}" + (f". {words}" if words else "")
    css = ' class="flagged"' if sample["why"] == "flagged" else ""
    second = (f'<img src="{_e(after)}" alt="frame {_e(frame)} after" loading="lazy">'
              if after is not None else "")
    return (f'<figure id="f{_e(frame)}"{css}><div class="pair">'
            f'<img src="{_e(sample["before"])}" alt="frame {_e(frame)} before" loading="lazy">'
            f"{second}</div><figcaption>{_e(caption)}</figcaption></figure>")


def _plots(report: Mapping[str, Any], plots: Collection[str]) -> Iterator[str]:
    if not report["series"]:
        return
    yield "<h2>Jitter and mask-area change</h2>"
    yield ("<p>Jitter: the landmarks' second difference per frame, in face sizes. Mask-area "
           "change: the relative change of the landmark hull's area from the frame before. "
           "Flagged frames shaded, cuts dashed.</p>")
    if not plots:
        yield f'<p class="warn">{PLOTS_MISSING}</p>'
        return
    for series in report["series"]:
        name = f"plots/{series['person']}.png"
        if name in plots:
            yield (f'<p><img src="{_e(name)}" alt="jitter and mask-area change of person '
                   f'{_e(series["person"])}"></p>')
