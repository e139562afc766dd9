-- :Handoff cancel stops a slow generation: the provider is a command that sleeps 60 s.

local H = dofile(os.getenv("HANDOFF_HARNESS"))
local SESSION = assert(os.getenv("HANDOFF_SESSION"))
local MARKER = assert(os.getenv("HANDOFF_MARKER"))

--- Pids of processes whose command line carries the marker (read from /proc).
local function marked()
  local pids = {}
  for _, name in ipairs(vim.fn.readdir("/proc")) do
    if name:match("^%d+$") then
      local file = io.open("/proc/" .. name .. "/cmdline", "rb")
      if file then
        local cmdline = file:read("*a") or ""
        file:close()
        if cmdline:find(MARKER, 1, true) then
          pids[#pids + 1] = tonumber(name)
        end
      end
    end
  end
  return pids
end

H.main(function()
  local R = H.record
  -- No root marker here: :Handoff starts the client for the current directory.
  local listed = function()
    return #vim.fn.getbufinfo({ buflisted = 1 })
  end
  R("buffers_before", listed())
  vim.g.handoff_ui = { progress_echo = true }
  H.track_messages()
  local wait, finished = H.start("generate --session " .. vim.fn.fnameescape(SESSION))
  H.wait(function()
    return #marked() > 0 or finished()
  end, 20000, "the generation subprocess to start")
  if finished() then
    error("generate ended before it could be cancelled: " .. vim.inspect(wait(0)))
  end
  R("pids_before", marked())
  vim.wait(300)
  vim.cmd("redraw")
  R("progress_echoed", vim.deepcopy(H.area_events))
  R("busy_before", require("handoff").busy())

  local t0 = vim.uv.hrtime()
  vim.cmd("Handoff cancel")
  local done = wait(15000)
  R("elapsed_ms", (vim.uv.hrtime() - t0) / 1e6)
  R("done", done)
  R("busy_after", require("handoff").busy())
  R("buffers_after", listed())
  R("gone", vim.wait(10000, function()
    return #marked() == 0
  end, 20))
  R("cancel_again", H.handoff("cancel"))
end)
