-- wrk script: POST /v1/search for one user, every request a different query
-- (so that, with the query cache off, every search embeds its query), built
-- from the vocabulary of scripts/bench-corpus.py: about 15 tokens each.
-- At the end it prints wrk's client-side latency and the server's own
-- figures from each response body: `took_ms`, `embed_ms`, and the part of
-- the search outside the embedder (took − embed), as p50/p95/p99.
-- With BENCH_USERS=N in the environment each request searches a random user
-- of `u0` … `u<N-1>` (scripts/scale-bench.sh), otherwise `bench-user`.
-- usage: wrk -t2 -c16 -d20s -s scripts/search.lua http://127.0.0.1:8421
local subjects = { "the user", "my sister", "the team", "our landlord", "the dentist", "my manager" }
local verbs = { "prefer", "book", "cancel", "mention", "ask about", "buy", "forget", "enjoy" }
local objects = { "green tea", "a flight to Lisbon", "the quarterly report", "oat milk", "a new laptop",
  "vegetarian food", "a dentist appointment", "the gym membership", "a trip to Kyoto",
  "running shoes", "the book club", "the summer holiday" }
local whens = { "on Monday", "last week", "every morning", "next month", "in the evening", "at the weekend" }

local threads = {}
function setup(thread)
  thread:set("id", #threads)
  table.insert(threads, thread)
end

local users = tonumber(os.getenv("BENCH_USERS") or "")
function init(args)
  math.randomseed(7 + id)
end

local i = 0
-- globals: done() reads them from every thread with thread:get
took, embed, outside = {}, {}, {}
function request()
  i = i + 1
  local n = id * 1000003 + i
  local q = string.format("when did %s %s %s %s, request %d", subjects[n % #subjects + 1],
    verbs[math.floor(n / 7) % #verbs + 1], objects[math.floor(n / 59) % #objects + 1], whens[math.floor(n / 709) % #whens + 1], n)
  local user = users and ("u" .. math.random(0, users - 1)) or "bench-user"
  local body = '{"user_id":"' .. user .. '","query":"' .. q .. '","top_k":10}'
  return wrk.format("POST", "/v1/search", { ["Content-Type"] = "application/json" }, body)
end

function response(status, headers, body)
  if status ~= 200 then return end
  local t = tonumber(string.match(body, '"took_ms":([%d%.eE+-]+)'))
  local e = tonumber(string.match(body, '"embed_ms":([%d%.eE+-]+)'))
  if t and e then
    took[#took + 1] = t
    embed[#embed + 1] = e
    outside[#outside + 1] = t - e
  end
end

local function percentile(xs, p)
  if #xs == 0 then return 0 end
  table.sort(xs)
  return xs[math.max(1, math.ceil(#xs * p / 100))]
end

function done(summary, latency, requests)
  io.write(string.format("requests %d, non-2xx %d, socket errors %d\n", summary.requests,
    summary.errors.status, summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
  for _, p in ipairs({ 50, 95, 99 }) do
    io.write(string.format("p%d %.2f ms\n", p, latency:percentile(p) / 1000))
  end
  local all = { took = {}, embed = {}, outside = {} }
  for _, t in ipairs(threads) do
    for name, xs in pairs(all) do
      for _, x in ipairs(t:get(name)) do xs[#xs + 1] = x end
    end
  end
  for _, name in ipairs({ "took", "embed", "outside" }) do
    local xs = all[name]
    io.write(string.format("server %s_ms p50 %.2f p95 %.2f p99 %.2f (n %d)\n", name,
      percentile(xs, 50), percentile(xs, 95), percentile(xs, 99), #xs))
  end
end
