-- wrk script for scripts/callgrind: unlocks a random lock of the held benchmark site
-- (bench-000001 … bench-N) with an employee's bearer token; TOKEN and LOCKS come from the environment.
local token = os.getenv("TOKEN")
local locks = tonumber(os.getenv("LOCKS"))
wrk.method = "POST"
wrk.headers["Authorization"] = "Bearer " .. token
wrk.headers["Content-Length"] = "0"

request = function()
  return wrk.format(nil, string.format("/api/v1/locks/bench-%06d/unlock", math.random(1, locks)))
end

done = function(summary, latency, requests)
  local errors = summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout
  io.write(string.format("unlocks %d errors %d rate %.0f/s p50 %.2f ms p99 %.2f ms\n", summary.requests, errors,
    summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end
