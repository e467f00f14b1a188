-- Rotates POSTs of recordView over the eprint URIs listed (one per line) in the file named by
-- WRK_PATHS, as a browser would send them.
local uris = {}
for line in io.lines(os.getenv("WRK_PATHS")) do
  uris[#uris + 1] = line
end
local i = 0
local headers = {
  ["Content-Type"] = "application/json",
  ["User-Agent"] = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0",
}
request = function()
  i = i % #uris + 1
  return wrk.format("POST", "/xrpc/pub.svc.metrics.recordView", headers, '{"uri":"' .. uris[i] .. '"}')
end
