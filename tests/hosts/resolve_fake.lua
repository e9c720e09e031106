-- A fake `resolve` global for running addon/resolve/facefuse.lua under lupa, behaving as a live
-- Resolve 19.1-21 was measured to behave, row by row of the facts table
-- tests/hosts/resolve_facts.json (its rows' `fake` parameters come in as `facts`, keyed by row
-- id), as resolve_fake.py does: methods called with ':', lists as 1-based tables, clip
-- properties as strings except FPS (a number), 1-based track indices. GetSourceEndFrame is
-- exclusive when the media's rate equals the timeline's and inclusive when they differ;
-- GetSourceStartTime/EndTime count in the media's timecode space (media `start_seconds`); under a
-- retime (item speed) the source span shows it while GetLeftOffset/GetRightOffset follow the
-- warped timing; a reversed item reads start > end, one of a timeline imported from XML 0/0,
-- `hair` whole frames a hair under. AppendToTimeline appends to the current timeline with an
-- exclusive endFrame in the clip's own frame space (Start..End: 0..N-1 for a movie, the file
-- numbers for an image sequence), floors a clip at another rate into timeline frames, and over
-- an occupied range or on a locked track it is dropped and returns an empty shell (no
-- GetUniqueId). A Studio-only call on Free returns false and raises the modal: every later call
-- fails. GetCurrentTimecode is "" off the edit pages; a path already in the pool imports
-- nothing; "Show Individual Frames" imports a sequence as stills; a sequence (and a movie) is
-- imported at the current timeline's rate (assumed); AddTrack("video", {index = n}) inserts at n.
-- An absent method reads nil (assumed for Lua). Failures return nil / false / an empty table,
-- never raise. `new(config, facts)` returns the resolve object and its state (what tests
-- inspect).
--
-- config: product, version, no_project, no_timeline, tracks (count), start_frame,
-- start_timecode, current_timecode, page, playhead, rate, drop, no_track_index (Resolve before
-- 19), absent = {method, ...} (an older build's items), refuse_add_track, no_insert_index
-- (AddTrack ignores the index), locked = {track, ...}, disabled = {track, ...},
-- individual_frames, sequence_fps (sequences imported at another rate), short_by (a build that
-- places fewer frames than asked),
-- items = {{name, start, duration, left_offset, source_start, track, speed, reverse,
--           xml_imported, hair, properties, media = {props}, start_seconds}}

local fake = {}
local facts = {}  -- the facts table's `fake` parameters, by row id (set by new)
local session = {studio = true, modal = false}
local RATE_TOLERANCE = 0.01

local function fps_of(rate)
  return tonumber(tostring(rate):match("^%s*([%d.]+)")) or 24
end

-- every method of obj fails once a Studio-only call on Free has raised the modal
local function guarded(obj)
  for name, method in pairs(obj) do
    if type(method) == "function" and name:match("^%u") then
      obj[name] = function(...)
        if session.modal then return facts.studio_only_modal.returns end
        return method(...)
      end
    end
  end
  return obj
end

local function studio_only()
  if session.studio then return true end
  session.modal = true
  return facts.studio_only_modal.returns
end

local next_id = 0
local function uid()
  next_id = next_id + 1
  return "fake-" .. next_id
end

local function exists(path)
  local handle = io.open(path, "rb")
  if handle then handle:close(); return true end
  return false
end

local EDIT_PAGES = {cut = true, edit = true, color = true, fairlight = true, deliver = true}
local INSPECTOR = {Pan = 0, Tilt = 0, ZoomX = 1, ZoomY = 1, ZoomGang = true, RotationAngle = 0,
                   AnchorPointX = 0, AnchorPointY = 0, Pitch = 0, Yaw = 0, FlipX = false,
                   FlipY = false, CropLeft = 0, CropRight = 0, CropTop = 0, CropBottom = 0,
                   CropSoftness = 0, CropRetain = false, DynamicZoomEase = 0, CompositeMode = 0,
                   Opacity = 100, Distortion = 0, RetimeProcess = 0, MotionEstimation = 0,
                   Scaling = 0, ResizeFilter = 0}

local function media_item(props, start_seconds)
  local item = {props = {}, id = uid(), start_seconds = start_seconds or 0}
  for k, v in pairs(props) do
    if k == "FPS" then item.props[k] = tonumber(v) or v else item.props[k] = tostring(v) end
  end
  function item:GetName() return self.props["Clip Name"] or "" end
  function item:GetClipProperty(name)
    if name == nil then return self.props end
    return self.props[name] or ""
  end
  function item:GetUniqueId() return self.id end
  function item:TranscribeAudio() return studio_only() end
  return guarded(item)
end

local function span_of(clip)
  local start = tonumber(clip:GetClipProperty("Start")) or 0
  local last = tonumber(clip:GetClipProperty("End"))
  if not last then last = start + (tonumber(clip:GetClipProperty("Frames")) or 0) - 1 end
  return start, last + 1
end

-- the source side (frames, seconds) of an item, as the facts table's rows say Resolve reads it
local function source_side(item)
  local timeline = item.timeline_fps
  local media = item.media and tonumber(item.media.props.FPS) or timeline
  if math.abs(media - timeline) < RATE_TOLERANCE then media = timeline end
  local first = item.source_start or item.left_offset
  local shown = item.duration * item.speed * media / timeline
  local row = media == timeline and facts.source_end_equal_rates or facts.source_end_differing_rates
  local last = math.ceil(first + shown - 1e-9) - row.end_minus
  local origin = 0
  if item.media and facts.source_time_origin.origin == "media_start_timecode" then
    origin = item.media.start_seconds
  end
  local frames = {first, last}
  local seconds = {origin + first / media, origin + (first + shown) / media}
  if item.reverse then
    frames, seconds = {last, first}, {seconds[2], seconds[1]}
  end
  if item.hair then
    local under = facts.hair_under_whole_frame.under_by
    frames = {frames[1] - under, frames[2] - under}
  end
  if item.xml_imported then
    frames, seconds = facts.xml_import_zero.frames, facts.xml_import_zero.seconds
  end
  return frames, seconds
end

local function timeline_item(config, rate, no_track_index, absent)
  local item = {name = config.name, start = config.start, duration = config.duration,
                left_offset = config.left_offset or 0, source_start = config.source_start,
                track = config.track, id = uid(), speed = config.speed or 1,
                reverse = config.reverse, xml_imported = config.xml_imported, hair = config.hair,
                timeline_fps = fps_of(rate), properties = {}, markers = {}, graded_onto = {}}
  for k, v in pairs(INSPECTOR) do item.properties[k] = v end
  for k, v in pairs(config.properties or {}) do item.properties[k] = v end
  if config.media then item.media = config.media.GetClipProperty and config.media
                                    or media_item(config.media, config.start_seconds) end
  function item:GetName() return self.name end
  function item:GetStart() return self.start end
  function item:GetEnd() return self.start + self.duration end
  function item:GetDuration() return self.duration end
  function item:GetLeftOffset()  -- warped under a retime (left_offset_warped)
    return math.floor((self.source_start or self.left_offset) / self.speed + 0.5)
  end
  function item:GetRightOffset() return self:GetLeftOffset() + self.duration end
  function item:GetSourceStartFrame() return source_side(self)[1] end
  function item:GetSourceEndFrame() return source_side(self)[2] end
  function item:GetSourceStartTime() local _, s = source_side(self); return s[1] end
  function item:GetSourceEndTime() local _, s = source_side(self); return s[2] end
  function item:GetMediaPoolItem() return self.media end
  function item:GetUniqueId() return self.id end
  function item:GetProperty(key)
    if key == nil then return self.properties end
    return self.properties[key]
  end
  function item:SetProperty(key, value)
    if INSPECTOR[key] == nil then return false end
    self.properties[key] = value
    return true
  end
  function item:CopyGrades(targets)
    if type(targets) ~= "table" or not targets[1] then return false end
    for _, target in ipairs(targets) do self.graded_onto[#self.graded_onto + 1] = target end
    return true
  end
  function item:AddMarker(frame, color, name, note, duration, custom)
    if self.markers[frame] or frame < 0 or frame >= self.duration or duration < 1 then
      return false
    end
    self.markers[frame] = {color = color, name = name, note = note, duration = duration,
                           customData = custom or ""}
    return true
  end
  function item:GetMarkers() return self.markers end
  if not no_track_index then
    function item:GetTrackTypeAndIndex() return {"video", self.track} end
  end
  for _, name in ipairs(absent or {}) do item[name] = nil end
  return guarded(item)
end

-- what a dropped append returns (append_returns_shells): on no track, no unique id
local function shell()
  local item = timeline_item({name = "", start = 0, duration = 0, track = 0}, 24, true)
  local kept = {}
  for _, name in ipairs(facts.append_returns_shells.shell_has) do kept[name] = true end
  if not kept.GetUniqueId then item.GetUniqueId = nil end
  return item
end

local function folder(name)
  local f = {name = name, clips = {}, subfolders = {}}
  function f:GetName() return self.name end
  function f:GetSubFolderList()
    local list = {}
    for i, sub in ipairs(self.subfolders) do list[i] = sub end
    return list
  end
  function f:GetClipList()
    local list = {}
    for i, clip in ipairs(self.clips) do list[i] = clip end
    return list
  end
  return guarded(f)
end

local function import_one(entry, individual, fps)
  if type(entry) == "table" then
    local paths = {}
    for n = entry.StartIndex, entry.EndIndex do
      local path = string.format(entry.FilePath, n)
      if not exists(path) then return nil end
      paths[#paths + 1] = path
    end
    if #paths == 0 then return nil end
    if individual then
      local stills = {}
      for i, path in ipairs(paths) do
        stills[i] = media_item({["File Path"] = path, ["Clip Name"] = path, Type = "Still",
                                Frames = 1, Start = 0, End = 0})
      end
      return stills
    end
    local shown = entry.FilePath:gsub("%%0(%d)d", function(d)
      local f = "%0" .. d .. "d"
      return "[" .. string.format(f, entry.StartIndex) .. "-" ..
             string.format(f, entry.EndIndex) .. "]"
    end)
    return {media_item({["File Path"] = shown, ["Clip Name"] = shown, Type = "Video",
                        Frames = #paths, FPS = fps, Start = entry.StartIndex,
                        End = entry.EndIndex})}
  end
  if not exists(entry) then return nil end
  local frames = fake.movie_frames or 0
  return {media_item({["File Path"] = entry, ["Clip Name"] = entry, Type = "Video",
                      Frames = frames, FPS = fps, Start = 0, End = frames - 1})}
end

local function make_timeline(config, state, name)
  local timeline = {name = name, id = uid(), tracks = {}, locked = {}, disabled = {},
                    rate = config.rate or "24"}
  for t = 1, config.tracks or 1 do timeline.tracks[t] = {} end
  for _, t in ipairs(config.locked or {}) do timeline.locked[t] = true end
  for _, t in ipairs(config.disabled or {}) do timeline.disabled[t] = true end
  local function log(call) state.calls[#state.calls + 1] = call end
  function timeline:GetName() log("GetName"); return self.name end
  function timeline:GetUniqueId() return self.id end
  function timeline:GetStartFrame() return config.start_frame or 86400 end
  function timeline:GetStartTimecode() return config.start_timecode or "01:00:00:00" end
  function timeline:GetCurrentTimecode()
    if not EDIT_PAGES[state.page] then return "" end
    return config.current_timecode or "01:00:00:00"
  end
  function timeline:GetSetting(setting)
    if setting == "timelineFrameRate" then return self.rate end
    if setting == "timelineDropFrameTimecode" then return config.drop or "0" end
    return ""
  end
  function timeline:GetTrackCount(kind)
    if kind ~= "video" then return 0 end
    return #self.tracks
  end
  function timeline:AddTrack(kind, options)
    log("AddTrack")
    if kind ~= "video" or config.refuse_add_track then return false end
    local index = #self.tracks + 1
    if type(options) == "table" and options.index and not config.no_insert_index then
      index = options.index
      if index < 1 or index > #self.tracks + 1 then return false end
    end
    table.insert(self.tracks, index, {})
    local locked, disabled = {}, {}
    for t = 1, #self.tracks do
      local old = t < index and t or t - 1
      if t ~= index then locked[t], disabled[t] = self.locked[old], self.disabled[old] end
    end
    self.locked, self.disabled = locked, disabled
    for t, items in ipairs(self.tracks) do
      for _, item in ipairs(items) do item.track = t end
    end
    return true
  end
  function timeline:GetIsTrackLocked(kind, index) return self.locked[index] == true end
  function timeline:GetIsTrackEnabled(kind, index)
    return self.tracks[index] ~= nil and not self.disabled[index]
  end
  function timeline:GetItemListInTrack(kind, index)
    if kind ~= "video" or not self.tracks[index] then return nil end
    local list = {}
    for i, item in ipairs(self.tracks[index]) do list[i] = item end
    table.sort(list, function(a, b) return a.start < b.start end)
    return list
  end
  function timeline:DeleteClips(items)
    local found = false
    for _, list in ipairs(self.tracks) do
      for i = #list, 1, -1 do
        for _, gone in ipairs(items) do
          if list[i] == gone then table.remove(list, i); found = true; break end
        end
      end
    end
    return found
  end
  function timeline:GetCurrentVideoItem()
    local here = config.playhead or 0
    for t = #self.tracks, 1, -1 do
      for _, item in ipairs(self.tracks[t]) do
        if item.start <= here and here < item.start + item.duration then return item end
      end
    end
    return nil
  end
  function timeline:CreateSubtitlesFromAudio() return studio_only() end
  function timeline:busy(track, first, last)
    for _, item in ipairs(self.tracks[track]) do
      if item.start < last and first < item.start + item.duration then return true end
    end
    return false
  end
  return guarded(timeline)
end

-- timeline frames `frames` source frames of a clip take (append_mixed_rate_floor)
local function record_length(frames, clip, timeline)
  local clip_fps, rate = tonumber(clip:GetClipProperty("FPS")), fps_of(timeline.rate)
  if not clip_fps or math.abs(clip_fps - rate) < RATE_TOLERANCE then return frames end
  assert(facts.append_mixed_rate_floor.record_frames == "floor")
  return math.floor(frames * rate / clip_fps + 1e-9)
end

function fake.new(config, known)
  facts = known
  session.studio = (config.product or "DaVinci Resolve"):lower():find("studio") ~= nil
  session.modal = false
  local state = {calls = {}, root = folder("Master"), page = config.page or "edit",
                 timelines = {}, session = session}
  local function log(name) state.calls[#state.calls + 1] = name end
  local timeline = make_timeline(config, state, "Timeline 1")
  state.timelines[1] = timeline
  state.current = timeline
  state.timeline = timeline
  state.tracks = timeline.tracks

  -- the user opens another timeline while facefuse renders
  function state.switch_timeline()
    local other = make_timeline({tracks = 3}, state, "Timeline 2")
    state.timelines[#state.timelines + 1] = other
    state.current = other
    return other
  end

  -- the user puts an item on a timeline
  function state.add_item(target, spec)
    local item = timeline_item(spec, target.rate)
    target.tracks[spec.track][#target.tracks[spec.track] + 1] = item
    return item
  end

  local function known_paths()
    local paths, folders = {}, {state.root}
    while #folders > 0 do
      local f = table.remove(folders)
      for _, sub in ipairs(f.subfolders) do folders[#folders + 1] = sub end
      for _, clip in ipairs(f.clips) do paths[clip:GetClipProperty("File Path")] = true end
    end
    return paths
  end

  local pool = {current = state.root}
  function pool:GetRootFolder() return state.root end
  function pool:AddSubFolder(parent, name)
    log("AddSubFolder")
    if not name or name == "" then return nil end
    local sub = folder(name)
    parent.subfolders[#parent.subfolders + 1] = sub
    return sub
  end
  function pool:SetCurrentFolder(f)
    if type(f) ~= "table" or not f.clips then return false end
    self.current = f
    return true
  end
  function pool:GetCurrentFolder() return self.current end
  function pool:ImportMedia(entries)
    log("ImportMedia")
    local imported, known = {}, known_paths()
    local fps = config.sequence_fps or fps_of(state.current.rate)
    for _, entry in ipairs(entries) do
      local clips = import_one(entry, config.individual_frames, fps)
      if not clips then return {} end
      for _, clip in ipairs(clips) do
        if not known[clip:GetClipProperty("File Path")] then imported[#imported + 1] = clip end
      end
    end
    for _, clip in ipairs(imported) do self.current.clips[#self.current.clips + 1] = clip end
    return imported
  end
  function pool:DeleteClips(clips)
    local folders, found = {state.root}, false
    while #folders > 0 do
      local f = table.remove(folders)
      for _, sub in ipairs(f.subfolders) do folders[#folders + 1] = sub end
      for i = #f.clips, 1, -1 do
        for _, gone in ipairs(clips) do
          if f.clips[i] == gone then table.remove(f.clips, i); found = true; break end
        end
      end
    end
    return found
  end
  function pool:AppendToTimeline(infos)
    log("AppendToTimeline")
    local target = state.current
    local placed = {}
    for i, info in ipairs(infos) do
      local clip, track = info.mediaPoolItem, info.trackIndex or 1
      if not clip or not target.tracks[track] then return {} end
      local first, last = info.startFrame, info.endFrame
      local lo, hi = span_of(clip)
      if first < lo or last <= first or last > hi then return {} end
      local length = record_length(last - first, clip, target) - (config.short_by or 0)
      local item = timeline_item({name = clip:GetName(), start = info.recordFrame,
                                  duration = length, left_offset = first - lo,
                                  track = track, media = clip}, target.rate)
      if target.locked[track] or target:busy(track, info.recordFrame,
                                             info.recordFrame + length) then
        placed[i] = shell()
      else
        target.tracks[track][#target.tracks[track] + 1] = item
        placed[i] = item
      end
    end
    return placed
  end

  local project = {}
  function project:GetName() return "Project 1" end
  function project:GetMediaPool() return pool end
  function project:GetCurrentTimeline()
    if config.no_timeline then return nil end
    return state.current
  end
  function project:GetTimelineCount() return #state.timelines end
  function project:GetTimelineByIndex(index) return state.timelines[index] end
  function project:SetCurrentTimeline(t)
    for _, known in ipairs(state.timelines) do
      if known == t then state.current = t; return true end
    end
    return false
  end

  local manager = {}
  function manager:GetCurrentProject()
    if config.no_project then return nil end
    return project
  end

  local resolve = {}
  function resolve:GetProductName() return config.product or "DaVinci Resolve" end
  function resolve:GetVersionString() return config.version or "19.1.3.7" end
  function resolve:GetVersion() return {19, 1, 3, 7, ""} end
  function resolve:GetProjectManager() return manager end
  function resolve:GetCurrentPage() return state.page end
  function resolve:OpenPage(name) state.page = name; return true end

  for _, spec in ipairs(config.items or {}) do
    local item = timeline_item(spec, timeline.rate, config.no_track_index, config.absent)
    timeline.tracks[spec.track][#timeline.tracks[spec.track] + 1] = item
  end
  guarded(pool); guarded(project); guarded(manager)
  return guarded(resolve), state
end

return fake
