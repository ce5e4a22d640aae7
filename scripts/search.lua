-- wrk script: POST /v1/search for one user with varied queries.
-- usage: wrk -t2 -c16 -d20s -s scripts/search.lua http://127.0.0.1:8421
local queries = {
  "what drink does the user prefer", "when is the dentist appointment",
  "flight to Lisbon", "the quarterly report deadline", "vegetarian food",
  "gym membership", "trip to Kyoto", "running shoes", "book club", "summer holiday",
}
local i = 0
request = function()
  i = i + 1
  local q = queries[(i % #queries) + 1]
  local body = '{"user_id":"bench-user","query":"' .. q .. '","top_k":10}'
  return wrk.format("POST", "/v1/search", {["Content-Type"] = "application/json"}, body)
end
local errors = 0
response = function(status, headers, body)
  if status ~= 200 then errors = errors + 1 end
end
done = function(summary, latency, requests)
  io.write(string.format("requests %d, non-2xx %d, socket errors %d\n", summary.requests,
    summary.errors.status, summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
  for _, p in ipairs({50, 95, 99}) do
    io.write(string.format("p%d %.2f ms\n", p, latency:percentile(p) / 1000))
  end
end
