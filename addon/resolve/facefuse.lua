-- facefuse launcher for DaVinci Resolve: Workspace > Scripts > facefuse (Free and Studio).
--
-- A thin marshaller: it collects the raw facts of the timeline item under the playhead into a
-- job file, runs facefuse and waits for it (a menu script's threads die when it returns, so it
-- must block while the panel is open), then reads the result file and carries out the
-- placement it describes, step for step as addon/resolve/bridge.py does: the job's timeline made
-- current, the media imported into a bin, the track directly above the plate (inserted there
-- when it is busy, locked or disabled now), the imported clip's rate checked, the append, a
-- read-back of what was placed, then the plate's grade, Inspector settings and the review markers
-- onto the swap. Every decision, frame mapping included, is made by facefuse in Python
-- (addon/resolve/swaps.py). It makes no Studio-only call: on Free one raises a modal dialog that
-- makes later calls fail. Installed, with the command line below filled in, by `facefuse
-- resolve install`; $FACEFUSE_RESOLVE_COMMAND overrides it. Lua 5.1 (Resolve's LuaJIT) to 5.4.

local INSTALLED_COMMAND = ""
local JOB_SCHEMA, JOB_VERSION = "facefuse-resolve-job", 3
local RESULT_SCHEMA, RESULT_VERSION = "facefuse-resolve-result", 3
local CLIP_PROPERTIES = {"File Path", "Type", "FPS", "Frames", "Start", "End", "Clip Name"}
-- the item's source readers, job key -> method (addon/resolve/bridge.py's SOURCE_READERS)
local SOURCE_READERS = {source_start = "GetSourceStartFrame", source_end = "GetSourceEndFrame",
                        source_start_time = "GetSourceStartTime",
                        source_end_time = "GetSourceEndTime"}
local RATE_TOLERANCE = 0.01
local WINDOWS = package.config:sub(1, 1) == "\\"

local function say(text)
  print("facefuse: " .. text)
end

-- JSON ------------------------------------------------------------------------------------------

local encode

local function encode_string(s)
  s = s:gsub('[%c"\\]', function(c)
    local named = {['"'] = '\\"', ['\\'] = '\\\\', ['\n'] = '\\n', ['\r'] = '\\r', ['\t'] = '\\t'}
    return named[c] or string.format("\\u%04x", c:byte())
  end)
  return '"' .. s .. '"'
end

local function is_array(t)
  local n = 0
  for _ in pairs(t) do n = n + 1 end
  for i = 1, n do if t[i] == nil then return false end end
  return true
end

encode = function(v)
  local kind = type(v)
  if kind == "nil" then return "null" end
  if kind == "boolean" then return tostring(v) end
  if kind == "number" then
    if v == math.floor(v) and math.abs(v) < 2^53 then return string.format("%d", v) end
    return string.format("%.17g", v)
  end
  if kind == "string" then return encode_string(v) end
  if kind == "table" then
    local parts = {}
    if is_array(v) then
      for _, item in ipairs(v) do parts[#parts + 1] = encode(item) end
      return "[" .. table.concat(parts, ",") .. "]"
    end
    for key, item in pairs(v) do
      parts[#parts + 1] = encode_string(tostring(key)) .. ":" .. encode(item)
    end
    return "{" .. table.concat(parts, ",") .. "}"
  end
  return "null"
end

local function decode(text)
  local pos = 1
  local value
  local function space() pos = text:find("[^ \t\r\n]", pos) or #text + 1 end
  local function fail(what) error("facefuse result: " .. what .. " at byte " .. pos, 0) end
  local function utf8(code)
    if code < 0x80 then return string.char(code) end
    if code < 0x800 then
      return string.char(0xC0 + math.floor(code / 64), 0x80 + code % 64)
    end
    return string.char(0xE0 + math.floor(code / 4096), 0x80 + math.floor(code / 64) % 64,
                       0x80 + code % 64)
  end
  local function str()
    local out = {}
    pos = pos + 1
    while true do
      local c = text:sub(pos, pos)
      if c == "" then fail("unterminated string") end
      if c == '"' then pos = pos + 1; return table.concat(out) end
      if c == "\\" then
        local e = text:sub(pos + 1, pos + 1)
        local named = {b = "\b", f = "\f", n = "\n", r = "\r", t = "\t"}
        if e == "u" then
          out[#out + 1] = utf8(tonumber(text:sub(pos + 2, pos + 5), 16))
          pos = pos + 6
        else
          out[#out + 1] = named[e] or e
          pos = pos + 2
        end
      else
        out[#out + 1] = c
        pos = pos + 1
      end
    end
  end
  value = function()
    space()
    local c = text:sub(pos, pos)
    if c == "{" then
      local t = {}
      pos = pos + 1; space()
      if text:sub(pos, pos) == "}" then pos = pos + 1; return t end
      while true do
        space()
        if text:sub(pos, pos) ~= '"' then fail("key expected") end
        local key = str(); space()
        if text:sub(pos, pos) ~= ":" then fail("':' expected") end
        pos = pos + 1
        t[key] = value(); space()
        local sep = text:sub(pos, pos); pos = pos + 1
        if sep == "}" then return t end
        if sep ~= "," then fail("',' or '}' expected") end
      end
    elseif c == "[" then
      local t = {}
      pos = pos + 1; space()
      if text:sub(pos, pos) == "]" then pos = pos + 1; return t end
      while true do
        t[#t + 1] = value(); space()
        local sep = text:sub(pos, pos); pos = pos + 1
        if sep == "]" then return t end
        if sep ~= "," then fail("',' or ']' expected") end
      end
    elseif c == '"' then
      return str()
    end
    for word, result in pairs({["true"] = true, ["false"] = false, ["null"] = "__null"}) do
      if text:sub(pos, pos + #word - 1) == word then
        pos = pos + #word
        if result == "__null" then return nil end
        return result
      end
    end
    local number = text:match("^-?%d+%.?%d*[eE]?[-+]?%d*", pos)
    if not number or number == "" then fail("value expected") end
    pos = pos + #number
    return tonumber(number)
  end
  return value()
end

-- files and processes ---------------------------------------------------------------------------

local function read_file(path)
  local handle = io.open(path, "rb")
  if not handle then return nil end
  local text = handle:read("*a")
  handle:close()
  return text
end

local function write_file(path, text)
  local handle, err = io.open(path, "wb")
  if not handle then return false, err end
  handle:write(text)
  handle:close()
  return true
end

local function quote(text)
  if WINDOWS then return '"' .. text .. '"' end
  return "'" .. text:gsub("'", "'\\''") .. "'"
end

local function temp_base()
  local folder = os.getenv("TMPDIR") or os.getenv("TEMP") or os.getenv("TMP")
  if not folder or folder == "" then folder = WINDOWS and "." or "/tmp" end
  local sep = WINDOWS and "\\" or "/"
  math.randomseed(os.time())
  return folder .. sep .. string.format("facefuse-resolve-%d-%06d", os.time(),
                                        math.random(0, 999999))
end

local function platform()
  if WINDOWS then return "Windows" end
  if (jit and jit.os == "OSX") or package.cpath:match("%.dylib") then return "Mac" end
  return "Linux"
end

local function sandboxed()
  local home = os.getenv("HOME") or ""
  return os.getenv("APP_SANDBOX_CONTAINER_ID") ~= nil or home:find("/Library/Containers/", 1,
                                                                     true) ~= nil
end

-- runs `command`; (exited with 0, exit code). Lua 5.1 returns the raw wait status (the code
-- times 256 on POSIX), 5.2+ returns true/nil, "exit", code.
local function run(command)
  local a, _, code = os.execute(command)
  if type(a) == "number" then
    if not WINDOWS and a > 255 then a = math.floor(a / 256) end
    return a == 0, a
  end
  return a == true, code
end

local function command_line()
  local configured = os.getenv("FACEFUSE_RESOLVE_COMMAND")
  if configured and configured ~= "" then return configured end
  if INSTALLED_COMMAND ~= "" then return INSTALLED_COMMAND end
  return nil
end

-- facts -------------------------------------------------------------------------------------------

local function items_on(timeline, track)
  return timeline:GetItemListInTrack("video", track) or {}
end

-- obj:method(...), or nil where this Resolve has no such method (or reading it fails)
local function call(obj, method, ...)
  local found, f = pcall(function() return obj[method] end)
  if not found or f == nil then return nil end
  local ok, result = pcall(f, obj, ...)
  if ok then return result end
  return nil
end

local function track_locked(timeline, track)
  return call(timeline, "GetIsTrackLocked", "video", track) == true
end

local function track_enabled(timeline, track)
  local enabled = call(timeline, "GetIsTrackEnabled", "video", track)
  return enabled == nil or enabled == true
end

local function track_of(timeline, item)
  local found = call(item, "GetTrackTypeAndIndex")
  if found and found[2] then return found[2] end
  local wanted = item:GetUniqueId()
  for track = 1, timeline:GetTrackCount("video") or 0 do
    for _, other in ipairs(items_on(timeline, track)) do
      if other:GetUniqueId() == wanted then return track end
    end
  end
  return nil
end

local function timeline_facts(timeline)
  local count = timeline:GetTrackCount("video") or 0
  local busy, locked, disabled = {}, {}, {}
  for track = 1, count do
    local ranges = {}
    for _, other in ipairs(items_on(timeline, track)) do
      ranges[#ranges + 1] = {other:GetStart(), other:GetEnd()}
    end
    busy[tostring(track)] = ranges
    if track_locked(timeline, track) then locked[#locked + 1] = track end
    if not track_enabled(timeline, track) then disabled[#disabled + 1] = track end
  end
  return {name = timeline:GetName(), id = call(timeline, "GetUniqueId") or "",
          start_frame = timeline:GetStartFrame(), start_timecode = timeline:GetStartTimecode(),
          current_timecode = timeline:GetCurrentTimecode() or "",
          frame_rate = timeline:GetSetting("timelineFrameRate"),
          drop_frame = timeline:GetSetting("timelineDropFrameTimecode"),
          video_tracks = count, busy = busy, locked = locked, disabled = disabled}
end

local function item_facts(timeline, item)
  local facts = {name = item:GetName(), id = call(item, "GetUniqueId") or "",
                 start = item:GetStart(), ["end"] = item:GetEnd(),
                 duration = item:GetDuration(), left_offset = item:GetLeftOffset(),
                 track = track_of(timeline, item)}
  for key, method in pairs(SOURCE_READERS) do facts[key] = call(item, method) end
  local media = item:GetMediaPoolItem()
  if media then
    facts.media = {}
    for _, name in ipairs(CLIP_PROPERTIES) do facts.media[name] = media:GetClipProperty(name) end
  end
  return facts
end

local function collect(app)
  local job = {schema = JOB_SCHEMA, version = JOB_VERSION, product = app:GetProductName(),
               resolve_version = app:GetVersionString(), platform = platform(),
               sandboxed = sandboxed()}
  local manager = app:GetProjectManager()
  local project = manager and manager:GetCurrentProject()
  job.project = project and project:GetName() or nil
  local timeline = project and project:GetCurrentTimeline()
  if timeline then
    job.timeline = timeline_facts(timeline)
    local item = timeline:GetCurrentVideoItem()
    if item then job.item = item_facts(timeline, item) end
  end
  return job, project
end

-- placement (addon/resolve/bridge.py's place, step for step) ------------------------------------

local function job_timeline(project, p)
  local function is_job(timeline)
    local id = call(timeline, "GetUniqueId")
    if (p.timeline_id or "") ~= "" and id then return id == p.timeline_id end
    return timeline:GetName() == p.timeline
  end
  local current = project:GetCurrentTimeline()
  if current and is_job(current) then return current end
  for index = 1, project:GetTimelineCount() or 0 do
    local timeline = project:GetTimelineByIndex(index)
    if timeline and is_job(timeline) then
      if not project:SetCurrentTimeline(timeline) then
        return nil, "Resolve could not open the timeline '" .. p.timeline .. "'"
      end
      return timeline
    end
  end
  return nil, "The timeline '" .. p.timeline .. "' is no longer in the project: nothing placed"
end

local function find_plate(timeline, p)
  for track = 1, timeline:GetTrackCount("video") or 0 do
    for _, item in ipairs(items_on(timeline, track)) do
      local same
      if (p.plate_id or "") ~= "" then same = item:GetUniqueId() == p.plate_id
      else same = track == p.plate_track and item:GetStart() == p.record_frame end
      if same then
        if item:GetStart() ~= p.record_frame or item:GetDuration() ~= p.duration then
          return nil, nil, "The clip under " .. p.name .. " was moved or trimmed while " ..
                           "facefuse rendered: nothing placed (render it again)"
        end
        return item, track
      end
    end
  end
  return nil, nil, "The clip that " .. p.name .. " replaces is no longer on the timeline: " ..
                   "nothing placed"
end

local function find_bin(pool, name)
  local root = pool:GetRootFolder()
  for _, folder in ipairs(root:GetSubFolderList() or {}) do
    if folder:GetName() == name then return folder end
  end
  return pool:AddSubFolder(root, name)
end

local function sequence_path(p)
  if not p.sequence then return p.media end
  return (p.media:gsub("%%0(%d)d", function(d)
    local f = "%0" .. d .. "d"
    return "[" .. string.format(f, p.start_index) .. "-" .. string.format(f, p.end_index) .. "]"
  end))
end

local function import(pool, p)
  local items
  if p.sequence then
    items = pool:ImportMedia({{FilePath = p.media, StartIndex = p.start_index,
                               EndIndex = p.end_index}})
  else
    items = pool:ImportMedia({p.media})
  end
  if not items or not items[1] then
    -- a path Resolve knows imports nothing: the item already in the bin
    items = {}
    local shown = sequence_path(p)
    for _, clip in ipairs(pool:GetCurrentFolder():GetClipList() or {}) do
      if clip:GetClipProperty("File Path") == shown then items = {clip}; break end
    end
  end
  if not items[1] then
    return nil, "Resolve could not import " .. p.media .. " into the Media Pool"
  end
  if #items > 1 then
    pool:DeleteClips(items)
    return nil, string.format("Resolve imported %s as %d single frames: turn off Show " ..
                              "Individual Frames in the Media Pool's options menu and run " ..
                              "facefuse again", p.name, #items)
  end
  return items[1]
end

local function usable(timeline, track, first, last)
  if track > (timeline:GetTrackCount("video") or 0) or track_locked(timeline, track)
     or not track_enabled(timeline, track) then
    return false
  end
  for _, item in ipairs(items_on(timeline, track)) do
    if item:GetStart() < last and first < item:GetEnd() then return false end
  end
  return true
end

local function target_track(timeline, p, track)
  local first, last = p.record_frame, p.record_frame + p.duration
  if not p.insert and usable(timeline, track, first, last) then return track end
  local count = timeline:GetTrackCount("video") or 0
  if not timeline:AddTrack("video", {index = track}) and not timeline:AddTrack("video") then
    return nil, "Resolve could not add a video track for " .. p.name
  end
  for _, candidate in ipairs({track, count + 1}) do
    if usable(timeline, candidate, first, last) then return candidate end
  end
  return nil, "Resolve added no free video track for " .. p.name
end

-- nil, or why the swap is not placed: Resolve imported it at another rate than the timeline's,
-- and AppendToTimeline would floor its frames into timeline frames
local function wrong_rate(pool, clip, p)
  local fps = tonumber(tostring(clip:GetClipProperty("FPS")):match("^%s*([%d.]+)"))
  if not fps or not p.fps or p.fps == 0 or math.abs(fps - p.fps) < RATE_TOLERANCE then
    return nil
  end
  pool:DeleteClips({clip})
  return string.format("Resolve imported %s at %g fps but the timeline runs at %.5g fps: " ..
                       "nothing placed (Resolve would retime it; render a ProRes 4444 or " ..
                       "DNxHR 444 movie, which carries the clip's rate)", p.name, fps, p.fps)
end

local function append(pool, timeline, clip, p, track)
  local rate_problem = wrong_rate(pool, clip, p)
  if rate_problem then return nil, rate_problem end
  local base = math.floor((tonumber(clip:GetClipProperty("Start")) or 0) + 0.5)
  pool:AppendToTimeline({{mediaPoolItem = clip, startFrame = base + p.start_frame,
                          endFrame = base + p.end_frame, trackIndex = track,
                          recordFrame = p.record_frame, mediaType = 1}})
  local wanted = clip:GetUniqueId()
  for _, item in ipairs(items_on(timeline, track)) do
    local media = item:GetMediaPoolItem()
    if item:GetStart() == p.record_frame and media and media:GetUniqueId() == wanted then
      if item:GetDuration() ~= p.duration then
        local got = item:GetDuration()
        timeline:DeleteClips({item}, false)
        return nil, string.format("Resolve placed %d frames of %s instead of %d (read back on " ..
                                  "video track %d): removed again, nothing placed", got, p.name,
                                  p.duration, track)
      end
      return item
    end
  end
  return nil, string.format("Resolve could not place %s on video track %d at frame %d " ..
                            "(nothing there on reading back)", p.name, track, p.record_frame)
end

local function finish(plate, item, p)
  local notes = {}
  if not call(plate, "CopyGrades", {item}) then
    notes[#notes + 1] = "the plate's grade could not be copied"
  end
  local failed = {}
  for _, name in ipairs(p.properties or {}) do
    local value = plate:GetProperty(name)
    if value ~= nil and not item:SetProperty(name, value) then failed[#failed + 1] = name end
  end
  if #failed > 0 then
    notes[#notes + 1] = string.format("%d Inspector settings could not be copied (%s)", #failed,
                                      table.concat(failed, ", ", 1, math.min(#failed, 4)))
  end
  local markers, added = p.markers or {}, 0
  for _, m in ipairs(markers) do
    if item:AddMarker(m.frame, m.color, m.name, m.note, m.duration, m.custom) then
      added = added + 1
    end
  end
  if #markers > 0 then
    notes[#notes + 1] = string.format("%d of %d review markers added", added, #markers)
  end
  return notes
end

local function place(project, p)
  local timeline, problem = job_timeline(project, p)
  if not timeline then return false, problem end
  local plate, plate_track, lost = find_plate(timeline, p)
  if not plate then return false, lost end
  local pool = project:GetMediaPool()
  local bin = find_bin(pool, p.bin)
  if not bin or not pool:SetCurrentFolder(bin) then
    return false, "Resolve could not open the Media Pool bin '" .. p.bin .. "'"
  end
  local clip, why = import(pool, p)
  if not clip then return false, why end
  local track, none = target_track(timeline, p, plate_track + 1)
  if not track then return false, none end
  local item, wrong = append(pool, timeline, clip, p, track)
  if not item then return false, wrong end
  local message = string.format("placed %s on video track %d at frame %d (Media Pool bin '%s')",
                                p.name, track, p.record_frame, p.bin)
  for _, note in ipairs(finish(plate, item, p)) do message = message .. "; " .. note end
  return true, message
end

local function read_result(path)
  local text = read_file(path)
  if not text or text == "" then return nil, "facefuse wrote no result" end
  local ok, result = pcall(decode, text)
  if not ok then return nil, tostring(result) end
  if type(result) ~= "table" or result.schema ~= RESULT_SCHEMA then
    return nil, "the result file is not facefuse's"
  end
  if result.version ~= RESULT_VERSION then
    return nil, "this launcher is older than facefuse: run `facefuse resolve install` again"
  end
  return result
end

-- main --------------------------------------------------------------------------------------------

local function main(app)
  if not app then
    say("run this script from DaVinci Resolve's Workspace > Scripts menu")
    return false
  end
  if sandboxed() then
    say("Resolve from the Mac App Store is sandboxed and cannot start facefuse: run " ..
        "`facefuse panel CLIP` outside Resolve, or use Resolve from blackmagicdesign.com")
    return false
  end
  local command = command_line()
  if not command then
    say("this launcher was not installed: run `facefuse resolve install`")
    return false
  end
  local job, project = collect(app)
  local base = temp_base()
  local job_path, result_path, log_path = base .. "-job.json", base .. "-result.json",
                                           base .. ".log"
  local written, err = write_file(job_path, encode(job))
  if not written then
    say("cannot write the job file " .. job_path .. ": " .. tostring(err))
    return false
  end
  local line = command .. " --job " .. quote(job_path) .. " --result " .. quote(result_path) ..
               " 2> " .. quote(log_path)
  if WINDOWS then line = '"' .. line .. '"' end
  local ok, code = run(line)
  local result, problem = read_result(result_path)
  local log = read_file(log_path) or ""
  os.remove(job_path); os.remove(result_path); os.remove(log_path)
  if not result then
    say(string.format("facefuse did not finish (exit %s): %s", tostring(code),
                      problem or "no result"))
    if log ~= "" then say(log) end
    return false
  end
  if result.status ~= "place" or not result.placement then
    say(result.message or "nothing to place")
    return ok and result.status == "nothing"
  end
  if not project then
    say("the project was closed before the swap could be placed")
    return false
  end
  say(result.message or "rendered")
  local placed, message = place(project, result.placement)
  say(message)
  return placed
end

return main(resolve or (Resolve and Resolve()))
