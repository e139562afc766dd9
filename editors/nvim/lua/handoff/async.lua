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

--- Subcommands take turns, in the order they were issued, so that `:Handoff current`
--- then `:Handoff commit` commit what current prepared. A subcommand gives up its turn
--- while it waits for a prompt (and generate while the model works).
local turn = { holder = nil, waiting = {} }

--- Runs `fn` in a new coroutine; `done(ok, value, trace)` gets its return value or its error.
function M.run(fn, done)
  local co = coroutine.create(fn)
  local function step(...)
    local ok, value = coroutine.resume(co, ...)
    if not ok or coroutine.status(co) == "dead" then
      if turn.holder == co then
        M.release_turn()
      end
      if not ok then
        done(false, value, debug.traceback(co, tostring(value)))
      else
        done(true, value)
      end
    end
  end
  steps[co] = step
  step()
end

--- Waits (in a coroutine) until it is this subcommand's turn.
function M.take_turn()
  local co = coroutine.running()
  if turn.holder == co then
    return
  end
  if turn.holder == nil then
    turn.holder = co
    return
  end
  M.await(function(cb)
    table.insert(turn.waiting, { co = co, resume = cb })
  end)
end

--- Gives the turn to the next subcommand waiting for it.
function M.release_turn()
  local nxt = table.remove(turn.waiting, 1)
  turn.holder = nxt and nxt.co or nil
  if nxt then
    nxt.resume()
  end
end

--- Runs `fn` without the turn (prompts, long work); takes it back afterwards.
local function without_turn(fn)
  local co = coroutine.running()
  if turn.holder ~= co then
    return fn()
  end
  M.release_turn()
  local values = vim.F.pack_len(fn())
  M.take_turn()
  return vim.F.unpack_len(values)
end
M.without_turn = without_turn

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
  local value = without_turn(function()
    return M.await(function(cb)
      vim.ui.input(opts, cb)
    end)
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
  local item, idx = without_turn(function()
    return M.await(function(cb)
      vim.ui.select(items, opts, cb)
    end)
  end)
  if item == nil then
    M.fail("aborted", "Selection dismissed.")
  end
  return item, idx
end

return M
