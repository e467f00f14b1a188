-- Rotates POSTs of recordView over the eprint URIs listed (one per line) in the file named by
-- WRK_PATHS, as a browser would send them. With WRK_DISTINCT_VIEWERS set, every request
-- comes from another viewer (its User-Agent names the wrk thread and a counter): no view is
-- then a double click of another, and each writes all its rows. (Until the fifty-first
-- session the counter alone named the viewer, so wrk's two threads sent the same viewers
-- in the same order and about half the "distinct" views were double clicks.)
local uris = {}
for line in io.lines(os.getenv("WRK_PATHS")) do
  uris[#uris + 1] = line
end
local distinct = os.getenv("WRK_DISTINCT_VIEWERS") ~= nil
local browser = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"
-- Each thread's Lua state gets its own `thread_id` from setup(), run once per thread.
local threads = 0
setup = function(thread)
  threads = threads + 1
  thread:set("thread_id", threads)
end
local i = 0
local n = 0
local headers = {
  ["Content-Type"] = "application/json",
  ["User-Agent"] = browser,
}
request = function()
  i = i % #uris + 1
  if distinct then
    n = n + 1
    headers["User-Agent"] = browser .. " viewer/" .. thread_id .. "-" .. n
  end
  return wrk.format("POST", "/xrpc/pub.svc.metrics.recordView", headers, '{"uri":"' .. uris[i] .. '"}')
end
