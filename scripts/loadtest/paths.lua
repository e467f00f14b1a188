-- Rotates over the request paths listed (one per line) in the file named by WRK_PATHS,
-- with WRK_BEARER (when set) as the bearer token of every request, and accepting gzip
-- (as browsers and HTTP libraries do) when WRK_GZIP is set. Each path's request is
-- formatted once, in init().
local paths = {}
for line in io.lines(os.getenv("WRK_PATHS")) do
  paths[#paths + 1] = line
end
local headers = {}
local bearer = os.getenv("WRK_BEARER")
if bearer ~= nil and bearer ~= "" then
  headers["Authorization"] = "Bearer " .. bearer
end
if os.getenv("WRK_GZIP") ~= nil and os.getenv("WRK_GZIP") ~= "" then
  headers["Accept-Encoding"] = "gzip"
end
local requests = {}
init = function(args)
  for k, path in ipairs(paths) do
    requests[k] = wrk.format("GET", path, headers)
  end
end
local i = 0
request = function()
  i = i % #requests + 1
  return requests[i]
end
