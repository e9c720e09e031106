-- A fake `resolve` global for running addon/resolve/facefuse.lua under lupa, behaving as Resolve's
-- documented Lua API does: methods called with ':', lists as 1-based tables, clip properties as
-- strings, 1-based track indices, AppendToTimeline with clip-info tables (startFrame, endFrame
-- inclusive, trackIndex, recordFrame), and failures returned as nil / false / an empty table,
-- never raised. `new(config)` returns the resolve object and its state (what tests inspect).
--
-- config: product, version, no_project, no_timeline, tracks (count), start_frame,
-- start_timecode, current_timecode, playhead, rate, drop, no_track_index (Resolve before 19),
-- refuse_add_track, items = {{name, start, duration, left_offset, track, media = {props}}}

local fake = {}

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

local function media_item(props)
  local item = {props = {}, id = uid()}
  for k, v in pairs(props) do item.props[k] = tostring(v) end
  function item:GetName() return self.props["Clip Name"] or "" end
  function item:GetClipProperty(name)
    if name == nil then return self.props end
    return self.props[name] or ""
  end
  function item:GetUniqueId() return self.id end
  return item
end

local function timeline_item(config, no_track_index)
  local item = {name = config.name, start = config.start, duration = config.duration,
                left_offset = config.left_offset or 0, track = config.track, id = uid()}
  if config.media then item.media = config.media.GetClipProperty and config.media
                                    or media_item(config.media) end
  function item:GetName() return self.name end
  function item:GetStart() return self.start end
  function item:GetEnd() return self.start + self.duration end
  function item:GetDuration() return self.duration end
  function item:GetLeftOffset() return self.left_offset end
  function item:GetMediaPoolItem() return self.media end
  function item:GetUniqueId() return self.id end
  if not no_track_index then
    function item:GetTrackTypeAndIndex() return {"video", self.track} end
  end
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
  return f
end

local function import_one(entry)
  if type(entry) == "table" then
    local count = 0
    for n = entry.StartIndex, entry.EndIndex do
      if not exists(string.format(entry.FilePath, n)) then return nil end
      count = count + 1
    end
    if count == 0 then return nil end
    return media_item({["File Path"] = entry.FilePath, ["Clip Name"] = entry.FilePath,
                       Type = "Video", Frames = count})
  end
  if not exists(entry) then return nil end
  return media_item({["File Path"] = entry, ["Clip Name"] = entry, Type = "Video",
                     Frames = fake.movie_frames or 0})
end

function fake.new(config)
  local state = {tracks = {}, calls = {}, root = folder("Master")}
  for t = 1, config.tracks or 1 do state.tracks[t] = {} end
  local function log(name) state.calls[#state.calls + 1] = name end

  local timeline = {}
  function timeline:GetName() log("GetName"); return "Timeline 1" end
  function timeline:GetStartFrame() return config.start_frame or 86400 end
  function timeline:GetStartTimecode() return config.start_timecode or "01:00:00:00" end
  function timeline:GetCurrentTimecode() return config.current_timecode or "01:00:00:00" end
  function timeline:GetSetting(name)
    if name == "timelineFrameRate" then return config.rate or "24" end
    if name == "timelineDropFrameTimecode" then return config.drop or "0" end
    return ""
  end
  function timeline:GetTrackCount(kind)
    if kind ~= "video" then return 0 end
    return #state.tracks
  end
  function timeline:AddTrack(kind)
    log("AddTrack")
    if kind ~= "video" or config.refuse_add_track then return false end
    state.tracks[#state.tracks + 1] = {}
    return true
  end
  function timeline:GetItemListInTrack(kind, index)
    if kind ~= "video" or not state.tracks[index] then return nil end
    local list = {}
    for i, item in ipairs(state.tracks[index]) do list[i] = item end
    table.sort(list, function(a, b) return a.start < b.start end)
    return list
  end
  function timeline:GetCurrentVideoItem()
    local here = config.playhead or 0
    for t = #state.tracks, 1, -1 do
      for _, item in ipairs(state.tracks[t]) do
        if item.start <= here and here < item.start + item.duration then return item end
      end
    end
    return nil
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
    local imported = {}
    for i, entry in ipairs(entries) do
      local clip = import_one(entry)
      if not clip then return {} end
      imported[i] = clip
    end
    for _, clip in ipairs(imported) do self.current.clips[#self.current.clips + 1] = clip end
    return imported
  end
  function pool:AppendToTimeline(infos)
    log("AppendToTimeline")
    local placed = {}
    for i, info in ipairs(infos) do
      local clip, track = info.mediaPoolItem, info.trackIndex or 1
      local frames = tonumber(clip and clip:GetClipProperty("Frames")) or 0
      if not state.tracks[track] or info.startFrame < 0 or info.endFrame < info.startFrame
         or info.endFrame >= frames then
        return {}
      end
      local item = timeline_item({name = clip:GetName(), start = info.recordFrame,
                                  duration = info.endFrame - info.startFrame + 1,
                                  left_offset = info.startFrame, track = track, media = clip})
      state.tracks[track][#state.tracks[track] + 1] = item
      placed[i] = item
    end
    return placed
  end

  local project = {}
  function project:GetName() return "Project 1" end
  function project:GetMediaPool() return pool end
  function project:GetCurrentTimeline()
    if config.no_timeline then return nil end
    return timeline
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

  for _, spec in ipairs(config.items or {}) do
    local item = timeline_item(spec, config.no_track_index)
    state.tracks[spec.track][#state.tracks[spec.track] + 1] = item
  end
  return resolve, state
end

return fake
