-- Rotates over the request paths listed (one per line) in the file named by WRK_PATHS.
local paths = {}
for line in io.lines(os.getenv("WRK_PATHS")) do
  paths[#paths + 1] = line
end
local i = 0
request = function()
  i = i % #paths + 1
  return wrk.format("GET", paths[i])
end
