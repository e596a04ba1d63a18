-- Errors raised and caught, at shallow and at deep C stacks, for the Lua tests of `hood calls`
-- (crates/hood/tests/calls_trace/calls_runtime.rs). Every error() is one luaD_throw, a longjmp out of traced C
-- frames back to the pcall that catches it. Prints "THROWN CAUGHT".
local rounds = tonumber(ARG) or 2000
local thrown, caught = 0, 0

local function throw(msg)
  thrown = thrown + 1
  error(msg, 0)
end

-- Lua-to-Lua recursion: a shallow C stack (the VM does not recurse in C for these calls).
local function dive(d)
  if d == 0 then throw("bottom") end
  local r = dive(d - 1)
  return r + 1
end

-- Recursion through pcall, a C function: about ten C frames per level, so 150 levels put
-- the error well over 1,000 frames deep; each level catches and throws again.
local function deepc(d)
  if d == 0 then throw("deep") end
  local ok, e = pcall(deepc, d - 1)
  if not ok then caught = caught + 1 end
  throw(e)
end

local t = {}
for i = 1, rounds do
  if not pcall(dive, i % 40) then caught = caught + 1 end
  t[#t + 1] = string.rep("x", i % 17) .. i
  if i % 200 == 0 then
    if not pcall(deepc, 150) then caught = caught + 1 end
    table.sort(t)
  end
end
print(thrown, caught)
