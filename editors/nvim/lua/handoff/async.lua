-- Coroutine plumbing: subcommands read top to bottom while prompts and requests wait.

local M = {}

--- A failure that ends a subcommand: `kind` is "refused", "cancelled" or "aborted".
---@class handoff.Failure
---@field kind string
---@field message string
---@field code? string
local Failure = {}
Failure.__index = Failure
Failure.__tostring = function(self)
  return self.message
end

function M.fail(kind, message, code)
  error(setmetatable({ kind = kind, message = message, code = code }, Failure), 0)
end

function M.is_failure(value)
  return getmetatable(value) == Failure
end

local steps = setmetatable({}, { __mode = "k" })

--- Runs `fn` in a new coroutine; `done(ok, value, trace)` gets its return value or its error.
function M.run(fn, done)
  local co = coroutine.create(fn)
  local function step(...)
    local ok, value = coroutine.resume(co, ...)
    if not ok then
      done(false, value, debug.traceback(co, tostring(value)))
    elseif coroutine.status(co) == "dead" then
      done(true, value)
    end
  end
  steps[co] = step
  step()
end

--- Waits inside a coroutine for `start(callback)` to call back; returns the callback's values.
function M.await(start)
  local co = coroutine.running()
  assert(co, "handoff: await outside a coroutine")
  local step = steps[co]
  local sync, finished, values = true, false, nil
  start(function(...)
    if sync then
      finished, values = true, vim.F.pack_len(...)
    else
      vim.schedule_wrap(step)(...)
    end
  end)
  sync = false
  if finished then
    return vim.F.unpack_len(values)
  end
  return coroutine.yield()
end

--- vim.ui.input, awaited; a dismissed prompt ends the subcommand quietly.
function M.input(opts)
  local value = M.await(function(cb)
    vim.ui.input(opts, cb)
  end)
  if value == nil then
    M.fail("aborted", "Prompt dismissed.")
  end
  return value
end

--- vim.ui.select, awaited; returns the chosen item and its index.
function M.select(items, opts)
  if #items == 0 then
    M.fail("refused", (opts.empty or "Nothing to choose from."))
  end
  local item, idx = M.await(function(cb)
    vim.ui.select(items, opts, cb)
  end)
  if item == nil then
    M.fail("aborted", "Selection dismissed.")
  end
  return item, idx
end

return M
