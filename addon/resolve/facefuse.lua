-- facefuse launcher for DaVinci Resolve: Workspace > Scripts > facefuse (Free and Studio).
--
-- A thin marshaller: it collects the raw facts of the timeline item under the playhead into a
-- job file, runs facefuse and waits for it (a menu script's threads die when it returns, so it
-- must block while the panel is open), then reads the result file and carries out the
-- placement it describes (import into a bin, add tracks, append at a record frame). Every
-- decision, frame mapping included, is made by facefuse in Python. Installed, with the command
-- line below filled in, by `facefuse resolve install`; $FACEFUSE_RESOLVE_COMMAND overrides it.
-- Lua 5.1 (Resolve's LuaJIT) to 5.4.

local INSTALLED_COMMAND = ""
local JOB_SCHEMA, JOB_VERSION = "facefuse-resolve-job", 1
local RESULT_SCHEMA = "facefuse-resolve-result"
local CLIP_PROPERTIES = {"File Path", "Type", "FPS", "Frames", "Clip Name"}
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

local function track_of(timeline, item)
  if item.GetTrackTypeAndIndex then
    local found = item:GetTrackTypeAndIndex()
    if found and found[2] then return found[2] end
  end
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
  local busy = {}
  for track = 1, count do
    local ranges = {}
    for _, other in ipairs(items_on(timeline, track)) do
      ranges[#ranges + 1] = {other:GetStart(), other:GetEnd()}
    end
    busy[tostring(track)] = ranges
  end
  return {name = timeline:GetName(), start_frame = timeline:GetStartFrame(),
          start_timecode = timeline:GetStartTimecode(),
          current_timecode = timeline:GetCurrentTimecode(),
          frame_rate = timeline:GetSetting("timelineFrameRate"),
          drop_frame = timeline:GetSetting("timelineDropFrameTimecode"),
          video_tracks = count, busy = busy}
end

local function item_facts(timeline, item)
  local facts = {name = item:GetName(), start = item:GetStart(), ["end"] = item:GetEnd(),
                 duration = item:GetDuration(), left_offset = item:GetLeftOffset(),
                 track = track_of(timeline, item)}
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
  return job, project, timeline
end

-- placement ---------------------------------------------------------------------------------------

local function find_bin(pool, name)
  local root = pool:GetRootFolder()
  for _, folder in ipairs(root:GetSubFolderList() or {}) do
    if folder:GetName() == name then return folder end
  end
  return pool:AddSubFolder(root, name)
end

local function place(project, timeline, p)
  local pool = project:GetMediaPool()
  local bin = find_bin(pool, p.bin)
  if not bin or not pool:SetCurrentFolder(bin) then
    return false, "Resolve could not open the Media Pool bin '" .. p.bin .. "'"
  end
  local imported
  if p.sequence then
    imported = pool:ImportMedia({{FilePath = p.media, StartIndex = p.start_index,
                                  EndIndex = p.end_index}})
  else
    imported = pool:ImportMedia({p.media})
  end
  if not imported or not imported[1] then
    return false, "Resolve could not import " .. p.media .. " into the Media Pool"
  end
  while (timeline:GetTrackCount("video") or 0) < p.track do
    if not timeline:AddTrack("video") then
      return false, "Resolve could not add video track " .. p.track
    end
  end
  local placed = pool:AppendToTimeline({{mediaPoolItem = imported[1], startFrame = p.start_frame,
                                         endFrame = p.end_frame, trackIndex = p.track,
                                         recordFrame = p.record_frame}})
  if not placed or not placed[1] then
    return false, string.format("Resolve could not place %s on video track %d at frame %d",
                                p.name, p.track, p.record_frame)
  end
  return true, string.format("placed %s on video track %d at frame %d (Media Pool bin '%s')",
                             p.name, p.track, p.record_frame, p.bin)
end

local function read_result(path)
  local text = read_file(path)
  if not text or text == "" then return nil, "facefuse wrote no result" end
  local ok, result = pcall(decode, text)
  if not ok then return nil, tostring(result) end
  if type(result) ~= "table" or result.schema ~= RESULT_SCHEMA then
    return nil, "the result file is not facefuse's"
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
  local job, project, timeline = collect(app)
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
  if not project or not timeline then
    say("the timeline was closed before the swap could be placed")
    return false
  end
  local placed, message = place(project, timeline, result.placement)
  say(message)
  return placed
end

return main(resolve or (Resolve and Resolve()))
