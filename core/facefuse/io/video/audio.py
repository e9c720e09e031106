"""Audio copied packet for packet from a source file into a video being written (io.video.write):
no re-encode, optionally only the span under the frames written."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import av

from ...errors import InputError
from .common import open_input

logger = logging.getLogger(__name__)


class AudioCopy:
    """Copies the audio streams of one file packet for packet into an output container."""

    def __init__(self, path: Path, start_s: float, duration_s: float | None) -> None:
        self._path = path
        self._container = open_input(path, "media")
        self._streams = list(self._container.streams.audio)
        self._packets: Iterator[Any] = (self._container.demux(*self._streams)
                                        if self._streams else iter(()))
        self._start_s, self._end_s = start_s, (None if duration_s is None else start_s + duration_s)
        self._out: dict[int, Any] = {}
        self._drop_priming = False
        self._held: Any = None

    def check_fits(self, container: Any, suffix: str) -> None:
        """InputError when the output container cannot hold one of the audio codecs. Matroska
        cannot start below zero: there the priming packet (negative time, flagged discard, as
        AAC in mp4 has) is left out rather than shifting every stream later."""
        self._drop_priming = suffix.lower() == ".mkv"
        for stream in self._streams:
            name = stream.codec_context.name
            if name not in container.supported_codecs:
                raise InputError(f"the {name} audio of {self._path.name} cannot be stored in "
                                 f"{suffix}; write .mov or .mkv instead")

    def add_streams(self, container: Any) -> None:
        for stream in self._streams:
            self._out[stream.index] = container.add_stream_from_template(stream)

    def copy_until(self, container: Any, until_s: float | None) -> None:
        """Mux the packets that start before ``until_s`` seconds (None: all the rest)."""
        while True:
            packet = self._held if self._held is not None else self._next_packet()
            self._held = None
            if packet is None:
                return
            start = float(packet.pts * packet.time_base)
            if until_s is not None and start - self._start_s > until_s:
                self._held = packet
                return
            if self._keep(packet, start):
                self._mux(container, packet)

    def _next_packet(self) -> Any:
        try:
            while (packet := next(self._packets, None)) is not None:
                if packet.size and packet.pts is not None:
                    return packet
        except av.FFmpegError as exc:
            logger.warning("%s: audio copy stopped early (%s)", self._path, exc)
        return None

    def _keep(self, packet: Any, start: float) -> bool:
        if self._drop_priming and packet.is_discard and start < 0:
            return False
        half = float((packet.duration or 0) * packet.time_base) / 2
        after_start = self._start_s <= 0 or start + half >= self._start_s  # 0: keep priming too
        return after_start and (self._end_s is None or start < self._end_s)

    def _mux(self, container: Any, packet: Any) -> None:
        if self._start_s:
            shift = round(self._start_s / packet.time_base)
            packet.pts = max(0, packet.pts - shift)
            packet.dts = packet.pts
        packet.stream = self._out[packet.stream.index]
        container.mux(packet)

    def close(self) -> None:
        self._container.close()
