-- A mixed interpreter workload for bench/trace/lua.sh: recursion, tables, strings, sorting,
-- closures, and (unless MODE is "noerr") errors raised and caught (luaD_throw: longjmp out of
-- the interpreter's frames).
local n = tonumber(ARG) or 1
local errors = MODE ~= "noerr"
local function fib(k) if k < 2 then return k end return fib(k - 1) + fib(k - 2) end
local sum = 0
for round = 1, n do
  sum = sum + fib(20)
  local t = {}
  for i = 1, 2000 do t[i] = (i * 7919) % 1000 end
  table.sort(t)
  local parts = {}
  for i = 1, 300 do parts[#parts + 1] = string.format("%d:%s", i, tostring(t[i])) end
  sum = sum + #table.concat(parts, ",")
  for i = 1, errors and 200 or 0 do
    local ok = pcall(function() error("boom " .. i) end)
    if not ok then sum = sum + 1 end
  end
end
print(sum)
