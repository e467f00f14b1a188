-- Rotates POSTs of recordView over the eprint URIs listed (one per line) in the file named by
-- WRK_PATHS, as a browser would send them. With WRK_DISTINCT_VIEWERS set, every request
-- comes from another viewer (its User-Agent names the run, the wrk thread and a counter): no
-- view is then a double click of another, in this run or one before it, and each writes all
-- its rows. The run is WRK_RUN when set, else the second wrk started (docs/performance.md,
-- fifty-first and fifty-second sessions: viewers named without the thread, then without
-- the run, made most "distinct" views double clicks).
-- Each URI's request is formatted once, in init(): a request then costs wrk a concatenation
-- of the viewer's name between its two halves, as paths.lua's costs it a table lookup.
local uris = {}
for line in io.lines(os.getenv("WRK_PATHS")) do
  uris[#uris + 1] = line
end
local distinct = os.getenv("WRK_DISTINCT_VIEWERS") ~= nil
local browser = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"
-- Where the viewer's name goes in a formatted request.
local mark = "\0viewer\0"
-- setup() runs once per thread in the main Lua state: it names the run once for every
-- thread, and hands each thread its number.
local run = os.getenv("WRK_RUN") or tostring(os.time())
local threads = 0
setup = function(thread)
  threads = threads + 1
  thread:set("thread_id", threads)
  thread:set("run_id", run)
end
-- Each URI's request, up to where the viewer's name goes and from there on; and whole,
-- from the browser alone.
local heads, tails, whole = {}, {}, {}
init = function(args)
  for k, uri in ipairs(uris) do
    local headers = { ["Content-Type"] = "application/json", ["User-Agent"] = browser .. mark }
    local formatted = wrk.format("POST", "/xrpc/pub.svc.metrics.recordView", headers, '{"uri":"' .. uri .. '"}')
    local at = formatted:find(mark, 1, true)
    heads[k], tails[k] = formatted:sub(1, at - 1), formatted:sub(at + #mark)
    whole[k] = heads[k] .. tails[k]
  end
end
local i = 0
local n = 0
request = function()
  i = i % #uris + 1
  if distinct then
    n = n + 1
    return heads[i] .. " viewer/" .. run_id .. "-" .. thread_id .. "-" .. n .. tails[i]
  end
  return whole[i]
end
